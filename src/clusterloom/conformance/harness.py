"""The one interface the suite drives implementations through, and the packet-level one.

An implementation under test is any object with

- ``name`` (str) and ``features`` (a set of feature names, :data:`FEATURES`): the optional
  behaviours it claims; checks needing a feature it lacks are reported not applicable;
- ``parameters`` (a mapping, may be empty): e.g. ``evs``, the entropy values it sprays over;
- ``run(scenario) -> Outcome``: run one check's :class:`Scenario` and return what happened.

:class:`PacketImplementation` runs a packet-level transport of :mod:`clusterloom.sim.packet`
on a small multi-plane fabric with the scenario's impairments injected at the receiving host
(the last hop), failures applied to the fabric and actions (EV denial, a receiver rate, a
forged packet) at their times.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from clusterloom.conformance.trace import Trace
from clusterloom.errors import ClusterloomError, Problem
from clusterloom.sim.packet.base import Connection, ConnSpec
from clusterloom.sim.packet.engine import DATA, Packet, PacketConfig, PacketSim
from clusterloom.sim.packet.run import config_for
from clusterloom.units import PS_PER_US

__all__ = [
    "FEATURES",
    "Action",
    "ConformanceInputError",
    "FlowOutcome",
    "FlowSpec",
    "Implementation",
    "Outcome",
    "PacketImplementation",
    "Rule",
    "Scenario",
    "check_implementation",
]

#: Optional behaviours an implementation may claim (``features``).
FEATURES = frozenset(
    {
        "spray",
        "multi_plane",
        "sack",
        "path_sack",
        "selective_retransmit",
        "ecn_per_ev",
        "ev_deny",
        "probe",
        "trim",
        "window",
        "path_windows",
        "ordered_completions",
        "keys",
        "retry_budget",
        "out_of_order",
        "rate_hint",
        "receiver_credit",
        "ecn_cc",
    }
)


class ConformanceInputError(ClusterloomError):
    """Input the suite cannot use: a malformed script or capture, an implementation missing a
    required method. ``problems`` say where (``line 12``, ``packet 3``, ``implementation``)."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in problems))


@dataclass(frozen=True)
class FlowSpec:
    src: int
    dst: int
    nbytes: int
    start_ps: int = 0
    messages: tuple[int, ...] = ()


@dataclass(frozen=True)
class Rule:
    """An impairment applied to data packets of ``flow`` as they reach the receiving host.

    ``action``: ``drop``, ``trim`` (deliver only the header), ``dup`` (deliver twice),
    ``delay`` (by ``delay_ps``: reordering) or ``mark`` (set ECN). ``seq`` selects one
    sequence (-1: any), ``every`` every n-th data packet, ``ev_mod`` packets whose EV is
    ``ev_mod[1]`` modulo ``ev_mod[0]``; ``first_only`` only the first transmission of a
    sequence; ``from_ps`` not before that time.
    """

    action: str
    flow: int = 0
    seq: int = -1
    every: int = 0
    ev_mod: tuple[int, int] | None = None
    first_only: bool = True
    delay_ps: int = 0
    from_ps: int = 0


@dataclass(frozen=True)
class Action:
    """Something done at ``time_ps``: ``fail`` (``arg``: a failure like ``link:3@0``, its own
    times are shifted by ``time_ps``), ``deny-ev`` (deny the EV ``flow`` used last),
    ``rx-rate`` (host ``flow`` takes ``arg`` bits/s), ``forge`` (deliver a data packet of
    ``flow`` with sequence ``seq`` and a wrong ``arg`` = ``key`` or ``job``)."""

    time_ps: int
    kind: str
    flow: int = 0
    seq: int = 0
    arg: str = ""


@dataclass(frozen=True)
class Scenario:
    """The setup of one check: a fabric, flows, impairments, actions and a time limit."""

    flows: tuple[FlowSpec, ...]
    hosts: int = 8
    planes: int = 2
    radix: int = 8
    rules: tuple[Rule, ...] = ()
    actions: tuple[Action, ...] = ()
    duration_ps: int = 20_000 * PS_PER_US
    config: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, float] = field(default_factory=dict)
    #: the largest queue is measured from this time on (after the initial burst)
    queue_from_ps: int = 0


@dataclass
class FlowOutcome:
    nbytes: int
    finish_ps: int
    failed: bool
    errors: list[str]
    placed_bytes: int


@dataclass
class Outcome:
    trace: Trace
    flows: list[FlowOutcome]
    max_queue_bytes: int = 0
    drops: int = 0
    base_rtt_ps: int = 0
    ports_per_plane: int = 1
    end_ps: int = 0


class Implementation(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def features(self) -> frozenset[str]: ...

    @property
    def parameters(self) -> Mapping[str, float]: ...

    def run(self, scenario: Scenario) -> Outcome: ...


def check_implementation(impl: object) -> None:
    """Refuse an object that lacks what the suite calls (exit 2 at the command line)."""
    problems = []
    for attr in ("name", "features", "run"):
        if not hasattr(impl, attr):
            problems.append(Problem("implementation", f"missing required attribute '{attr}'"))
    if hasattr(impl, "run") and not callable(impl.run):
        problems.append(Problem("implementation", "'run' is not callable"))
    if hasattr(impl, "features"):
        unknown = set(impl.features) - FEATURES
        if unknown:
            problems.append(
                Problem("implementation", f"unknown feature(s): {', '.join(sorted(unknown))}")
            )
    if problems:
        raise ConformanceInputError(problems)


def _impairment(rules: tuple[Rule, ...], header: int) -> Callable[[Packet, int], Any]:
    seen: set[tuple[int, int, int]] = set()
    counts = [0] * len(rules)

    def impair(pkt: Packet, now: int) -> list[tuple[int, Packet]] | None:
        if pkt.kind != DATA or pkt.trimmed:
            return None
        for i, r in enumerate(rules):
            if r.flow != pkt.flow or now < r.from_ps:
                continue
            if r.seq >= 0 and pkt.seq != r.seq:
                continue
            if r.ev_mod is not None and pkt.ev % r.ev_mod[0] != r.ev_mod[1]:
                continue
            key = (i, pkt.flow, pkt.seq)
            if r.first_only and key in seen:
                continue
            seen.add(key)
            if r.every:
                counts[i] += 1
                if counts[i] % r.every:
                    continue
            if r.action == "drop":
                return []
            if r.action == "trim":
                pkt.trimmed = True
                pkt.size = header
                return [(0, pkt)]
            if r.action == "dup":
                return [(0, pkt), (0, pkt.copy())]
            if r.action == "delay":
                return [(r.delay_ps, pkt)]
            if r.action == "mark":
                pkt.ecn = True
                return [(0, pkt)]
        return None

    return impair


def _shift(text: str, at_ps: int) -> str:
    """``link:3@0`` at ``at_ps``: the failure's times become absolute picoseconds."""
    import re

    from clusterloom.sim.failures import parse_time

    head, _, rest = text.partition("@")
    m = re.match(r"([\d.]+[a-z]*)(?:-([\d.]+[a-z]*))?(.*)$", rest)
    if not m:
        return text
    start = parse_time(m.group(1), text) + at_ps
    end = f"-{parse_time(m.group(2), text) + at_ps}" if m.group(2) else ""
    return f"{head}@{start}{end}{m.group(3)}"


class PacketImplementation:
    """A packet-level transport of this package as an implementation under test."""

    def __init__(
        self,
        transport: str | type[Connection],
        *,
        options: Mapping[str, float] | None = None,
        name: str | None = None,
    ) -> None:
        from clusterloom.sim.packet.transports import transport_class

        self.cls = transport_class(transport) if isinstance(transport, str) else transport
        self.name = name or self.cls.name
        self.features = frozenset(self.cls.features)
        self.options = dict(options or {})
        merged = {**self.cls.defaults, **self.options}
        self.parameters = {k: v for k, v in merged.items() if k in ("evs", "paths")}

    def run(self, scenario: Scenario) -> Outcome:
        from clusterloom.sim.failures import parse_failure
        from clusterloom.sim.packet.fabrics import small_fabric
        from clusterloom.sim.packet.transports import set_receiver_rate

        topo = small_fabric(scenario.hosts, planes=scenario.planes, radix=scenario.radix)
        cfg = config_for(self.cls, PacketConfig(max_time_ps=scenario.duration_ps))
        cfg = replace(cfg, **dict(scenario.config))
        trace = Trace()
        sim = PacketSim(topo, cfg, seed=0, tracer=trace)
        conns: list[Connection] = []
        options = {**self.options, **scenario.options}
        for f in scenario.flows:
            spec = ConnSpec(messages=f.messages, options=dict(options))
            conn = self.cls(sim, len(sim.conns), f.src, f.dst, f.nbytes, f.start_ps, spec)
            sim.add(conn)
            conns.append(conn)
        keys = [k for c in conns for k in c.path_keys()]
        sim.prefetch([k[:4] for k in keys if not k[4]])
        sim.prefetch([k[:4] for k in keys if k[4]], static=True)
        if scenario.rules:
            sim.impair = _impairment(scenario.rules, cfg.header)
        for a in scenario.actions:
            self._schedule(sim, conns, a, trace, parse_failure, set_receiver_rate, topo)
        if scenario.queue_from_ps:
            sim.at(
                scenario.queue_from_ps,
                lambda: sim.max_qbytes.__setitem__(slice(None), [0] * len(sim.max_qbytes)),
            )
        for c in conns:
            c.start()

        def stop() -> bool:
            return all(c.finish_ps >= 0 or c.failed for c in conns)

        sim.run(scenario.duration_ps, stop)
        base = conns[0].base_rtt_ps() if conns else 0
        return Outcome(
            trace=trace,
            flows=[
                FlowOutcome(c.nbytes, c.finish_ps, c.failed, list(c.errors), c.placed_bytes)
                for c in conns
            ],
            max_queue_bytes=sim.max_queue_bytes(),
            drops=sim.stats.drops,
            base_rtt_ps=base,
            ports_per_plane=max(topo.plan.ports_per_host, 1),
            end_ps=sim.now,
        )

    @staticmethod
    def _schedule(
        sim: PacketSim,
        conns: list[Connection],
        a: Action,
        trace: Trace,
        parse_failure: Any,
        set_rate: Any,
        topo: Any,
    ) -> None:
        if a.kind == "fail":
            sim.schedule_failure(parse_failure(_shift(a.arg, a.time_ps), topo))
        elif a.kind == "deny-ev":
            conn = conns[a.flow]

            def deny() -> None:
                used = [
                    r.ev
                    for r in trace.records
                    if r.where == "tx" and r.flow == a.flow and r.kind == DATA
                ]
                if used and hasattr(conn, "deny_ev"):
                    trace.event(sim.now, a.flow, "denied", 0, used[-1])
                    conn.deny_ev(used[-1])

            sim.at(a.time_ps, deny)
        elif a.kind == "rx-rate":
            sim.at(a.time_ps, lambda: set_rate(sim, a.flow, float(a.arg)))
        elif a.kind == "forge":
            conn = conns[a.flow]

            def forge() -> None:
                pkt = Packet(
                    DATA, a.flow, conn.src, conn.dst, a.seq, conn.pay[a.seq], sim.cfg.header
                )
                pkt.key, pkt.job = conn.spec.key, conn.spec.job
                if a.arg == "key":
                    pkt.key ^= 0xBAD
                else:
                    pkt.job += 7
                trace.event(sim.now, a.flow, "forged", a.seq, 1 if a.arg == "key" else 2)
                sim.deliver_later(pkt, 0)

            sim.at(a.time_ps, forge)
