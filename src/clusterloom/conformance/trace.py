"""What the conformance checks look at: a trace of packets at the endpoints and the events an
implementation reports, the same whether it came from the packet engine, a script or a capture.

A packet record is what a wire tap at a host sees (``where`` is ``tx`` when the host sends it,
``rx`` when it arrives), with the transport header fields the checks read. ``route`` (the
directed links of the packet's path) is known only inside the simulator (empty otherwise).
Events are what an implementation reports about itself: ``complete`` (message number),
``place`` (sequence, bytes), ``error`` (sequence, 1 bad key / 2 bad job / 3 gave up),
``cwnd`` (path or -1, bytes), ``ev-down``/``ev-up``/``ev-deny``/``path-down``/``path-up``
(index, entropy value), ``spec-window``/``spec-extra`` (bytes), ``lost`` (sequence), and the
network's ``drop``/``trim``/``link-down``/``link-rate``/``rx-rate``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from clusterloom.sim.packet.engine import Packet

__all__ = ["Event", "Record", "Trace"]


class Record(NamedTuple):
    t: int
    where: str  # "tx" | "rx"
    host: int
    flow: int
    kind: int
    seq: int
    ev: int
    port: int
    path: int
    pseq: int
    payload: int
    ecn: bool
    trimmed: bool
    cum: int
    sack: int
    echo: int
    hint: int
    key: int
    job: int
    msg: int
    route: tuple[int, ...]


class Event(NamedTuple):
    t: int
    flow: int
    what: str
    a: int
    b: int


@dataclass
class Trace:
    """Records and events of one run (also a ``Tracer`` for the packet engine)."""

    records: list[Record] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)

    def packet(self, now: int, where: str, host: int, pkt: Packet) -> None:
        self.records.append(
            Record(
                now,
                where,
                host,
                pkt.flow,
                pkt.kind,
                pkt.seq,
                pkt.ev,
                pkt.port,
                pkt.path,
                pkt.pseq,
                pkt.payload,
                pkt.ecn,
                pkt.trimmed,
                pkt.cum,
                pkt.sack,
                pkt.echo,
                pkt.hint,
                pkt.key,
                pkt.job,
                pkt.msg,
                (),
            )
        )

    def routed(self, pkt: Packet) -> None:
        """Attach the route the engine chose to the last tx record of ``pkt``."""
        if self.records and self.records[-1].where == "tx":
            self.records[-1] = self.records[-1]._replace(route=pkt.route)

    def event(self, now: int, flow: int, what: str, a: int = 0, b: int = 0) -> None:
        self.events.append(Event(now, flow, what, a, b))

    def of(self, what: str, flow: int | None = None) -> list[Event]:
        return [e for e in self.events if e.what == what and (flow is None or e.flow == flow)]
