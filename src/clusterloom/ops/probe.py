"""The probe agent (``clusterloom ops probe``): Pingmesh-style UDP probes between hosts, one
UDP source port per entropy value (EV), so that every EV of a target follows the path the
fabric's ECMP hash gives that 5-tuple; results per (source, target, EV, interval) in
:data:`clusterloom.ops.model.PROBE_SCHEMA`.

The pieces, each usable alone:

- the packet (:func:`encode`, :func:`decode`, :func:`echo`): a 28-byte header (magic ``CLPR``,
  version, kind, EV, session, sequence number, the sender's monotonic send time in ns), padded
  to the probe size; the responder echoes the same bytes with the kind set to reply;
- :class:`Ledger`: the accounting, pure (no clock, no socket): a probe sent in interval ``k``
  (``[start + k * interval, start + (k + 1) * interval)``) is answered if its reply comes back
  within ``timeout``, else lost; interval ``k`` closes at ``start + (k + 1) * interval +
  timeout``, when every probe it sent is answered or lost, and its rows are handed out then
  (``ts_ms`` the interval's end, ``rtt_us`` the mean and ``rtt_max_us`` the largest RTT of the
  answered ones). A reply after its timeout, a duplicate and an unknown sequence number are
  counted (``late``, ``unknown``) and change no row;
- :class:`Prober`: the sockets (one per EV and address family, bound to the EV as source
  port), the schedule (every EV of every target ``per_interval`` times an interval, spread
  evenly over it), a token bucket that never lets the sends exceed ``rate_pps``, and
  :meth:`Prober.run`, which stops at the duration or when asked (SIGINT/SIGTERM through
  :func:`stop_on_signals`), then waits (one timeout at most) for the replies in flight and
  closes the last intervals: no result is dropped; memory is bounded by the probes in flight
  (``rate_pps x (interval + timeout)``) and the open intervals, the rows going to the sink as
  they close;
- :class:`Responder`: echoes every well-formed request (nothing else), rate-limited;
- sinks (:func:`open_sink`): Parquet, CSV or OpenMetrics text, streamed to a hidden file beside
  the target and moved into place atomically when the run ends (``clusterloom.atomic``);
- path discovery (:func:`trace`, :func:`discover`): hop-limited probes (``IPV6_UNICAST_HOPS``
  / ``IP_TTL``) with the same 5-tuple as the EV's probes, the routers' ICMP time-exceeded
  replies read on a raw socket (root): the address of every hop of every EV's path, so
  tomography knows which links each EV crossed (:func:`tomography_input`).

Assumptions: the RTT is measured in user space on the prober (monotonic clock around
``sendto`` and ``recvfrom``), so it includes both hosts' stacks and the responder's scheduling
(tens of microseconds on an idle host); the path of a probe is its forward path, as traced (the
reply's path, chosen by the fabric's hash of the reversed 5-tuple, is not traced); a path is
that of the trace, so a fabric that rehashes later needs a new trace.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import selectors
import signal
import socket
import struct
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, TYPE_CHECKING, Any, Protocol

import pyarrow as pa

from clusterloom.errors import ClusterloomError, Problem, SpecError
from clusterloom.ops.model import PROBE_SCHEMA

if TYPE_CHECKING:
    from clusterloom.ops.fabric import OpsFabric

__all__ = [
    "DEFAULT_PORT",
    "EV_BASE",
    "HEADER",
    "Ledger",
    "Packet",
    "ProbeConfig",
    "ProbeError",
    "Prober",
    "Responder",
    "RunSummary",
    "Target",
    "Trace",
    "check_names",
    "decode",
    "discover",
    "echo",
    "encode",
    "new_session",
    "open_sink",
    "parse_duration_ms",
    "parse_target",
    "read_targets",
    "stop_on_signals",
    "tomography_input",
    "trace",
]

MAGIC = b"CLPR"
VERSION = 1
REQUEST, REPLY = 0, 1
#: magic, version, kind, EV, session, sequence number, send time (ns, the sender's clock)
HEADER = struct.Struct("!4sBBHIQQ")
#: the responder's UDP port unless a target says otherwise
DEFAULT_PORT = 7471
#: the first EV (UDP source port) of a target: the start of the dynamic range (RFC 6335)
EV_BASE = 49152
MAX_SIZE = 1400  #: largest probe (bytes of UDP payload): below any fabric's MTU
ICMP6_TIME_EXCEEDED, ICMP6_UNREACHABLE = 3, 1
ICMP_TIME_EXCEEDED, ICMP_UNREACHABLE = 11, 3
NS_PER_MS, NS_PER_US = 1_000_000, 1_000


class ProbeError(ClusterloomError):
    """A probe agent that cannot run here: a port in use, no permission for a raw socket."""

    def __init__(self, message: str) -> None:
        self.problems = (message,)
        super().__init__(message)


# -- the packet ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Packet:
    """A probe's header; ``sent_ns`` is the sender's monotonic clock at send time."""

    kind: int
    ev: int
    session: int
    seq: int
    sent_ns: int


def encode(p: Packet, size: int = HEADER.size) -> bytes:
    """The probe's bytes, zero-padded to ``size`` (at least the header)."""
    head = HEADER.pack(MAGIC, VERSION, p.kind, p.ev, p.session, p.seq, p.sent_ns)
    return head + bytes(max(0, size - HEADER.size))


def decode(data: bytes) -> Packet | None:
    """The header of a probe or reply; None for anything else (short, wrong magic, version or
    kind)."""
    if len(data) < HEADER.size:
        return None
    magic, version, kind, ev, session, seq, sent = HEADER.unpack_from(data)
    if magic != MAGIC or version != VERSION or kind not in (REQUEST, REPLY):
        return None
    return Packet(kind, ev, session, seq, sent)


def echo(data: bytes) -> bytes | None:
    """The responder's reply to ``data``: the same bytes with the kind set to reply; None when
    ``data`` is not a request (a reply is never answered, so two responders cannot loop)."""
    p = decode(data)
    if p is None or p.kind != REQUEST:
        return None
    return data[:5] + bytes([REPLY]) + data[6:]


# -- configuration -------------------------------------------------------------------------

_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}


def parse_duration_ms(text: str, where: str) -> int:
    """``500ms``, ``1s``, ``1.5s``, ``2m``, ``1h`` (or a bare number of seconds) in ms."""
    t = text.strip().lower()
    for unit in ("ms", "s", "m", "h"):
        if t.endswith(unit):
            number, scale = t[: -len(unit)], _UNITS_MS[unit]
            break
    else:
        number, scale = t, 1000
    try:
        value = float(number)
    except ValueError:
        raise SpecError(
            [Problem(where, f"{text!r} is not a duration; e.g. 500ms, 1s, 2m")]
        ) from None
    if not value > 0 or value * scale > 365 * 86_400_000:
        raise SpecError([Problem(where, f"{text!r}: a duration above 0 and at most a year")])
    return max(1, round(value * scale))


@dataclass(frozen=True)
class Target:
    """A responder to probe: its address and port, the design's names of its endpoint (the
    ``dst_device`` and ``dst_interface`` of its rows) and the EVs (UDP source ports) to use."""

    address: str
    port: int
    device: str
    interface: str
    evs: tuple[int, ...]

    @property
    def family(self) -> socket.AddressFamily:
        return socket.AF_INET6 if ":" in self.address else socket.AF_INET


def _evs(count: int, base: int) -> tuple[int, ...]:
    return tuple(range(base, base + count))


def _address(text: str, where: str) -> str:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise SpecError([Problem(where, f"{text!r} is not an IPv4 or IPv6 address")]) from None


def _port(text: str, where: str, lowest: int = 1) -> int:
    if not text.isdigit() or not lowest <= int(text) <= 65535:
        raise SpecError([Problem(where, f"port {text!r}: a number {lowest}..65535")])
    return int(text)


def parse_target(
    text: str, evs: Sequence[int], *, where: str = "--targets", lowest_port: int = 1
) -> Target:
    """A target from ``ADDR``, ``ADDR:PORT`` (IPv4), ``[ADDR]:PORT`` (IPv6), each optionally
    followed by ``=DEVICE:INTERFACE`` (the design's names; without them the address is the
    device and ``-`` the interface). A responder's address may give port 0 (``lowest_port``
    0: the kernel picks one)."""
    spec, _, names = text.strip().partition("=")
    port = DEFAULT_PORT
    if spec.startswith("["):
        addr, close, rest = spec[1:].partition("]")
        if not close or (rest and not rest.startswith(":")):
            raise SpecError([Problem(where, f"{text!r}: write an IPv6 target as [ADDR]:PORT")])
        if rest:
            port = _port(rest[1:], where, lowest_port)
    elif spec.count(":") == 1:
        addr, _, p = spec.partition(":")
        port = _port(p, where, lowest_port)
    else:
        addr = spec
    address = _address(addr, where)
    device, interface = address, "-"
    if names:
        device, colon, interface = names.partition(":")
        if not colon or not device or not interface:
            raise SpecError([Problem(where, f"{text!r}: name the endpoint as =DEVICE:INTERFACE")])
    return Target(address, port, device, interface, tuple(evs))


def read_targets(path: Path, evs: Sequence[int]) -> tuple[Target, ...]:
    """Targets from a file: one :func:`parse_target` text a line (``#`` comments), or YAML, a
    list of mappings with ``address`` and optional ``port``, ``device``, ``interface`` and
    ``evs`` (a count, from :data:`EV_BASE`, or a list of ports)."""
    import yaml

    try:
        text = path.read_text()
    except OSError as exc:
        raise SpecError([Problem(str(path), f"cannot read the targets: {exc.strerror}")]) from exc
    if path.suffix in (".yaml", ".yml"):
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise SpecError([Problem(str(path), f"not YAML: {exc}")]) from exc
        if not isinstance(doc, list):
            raise SpecError([Problem(str(path), "a list of targets (mappings with address)")])
        out: list[Target] = []
        problems: list[Problem] = []
        for n, item in enumerate(doc):
            where = f"{path}[{n}]"
            try:
                out.append(_yaml_target(item, evs, where))
            except SpecError as exc:
                problems += exc.problems
        if problems:
            raise SpecError(problems)
        return tuple(out)
    out = []
    problems = []
    for n, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if line:
            try:
                out.append(parse_target(line, evs, where=f"{path}:{n}"))
            except SpecError as exc:
                problems += exc.problems
    if problems:
        raise SpecError(problems)
    return tuple(out)


def _yaml_target(item: object, evs: Sequence[int], where: str) -> Target:
    if not isinstance(item, dict) or "address" not in item:
        raise SpecError([Problem(where, "a mapping with address (and port, device, interface)")])
    address = _address(str(item["address"]), f"{where}.address")
    port = _port(str(item.get("port", DEFAULT_PORT)), f"{where}.port")
    mine = item.get("evs")
    if mine is None:
        chosen = tuple(evs)
    elif isinstance(mine, int) and not isinstance(mine, bool):
        chosen = _evs(mine, EV_BASE)
    elif isinstance(mine, list) and all(isinstance(e, int) for e in mine):
        chosen = tuple(mine)
    else:
        raise SpecError([Problem(f"{where}.evs", "a count or a list of UDP source ports")])
    return Target(
        address,
        port,
        str(item.get("device", address)),
        str(item.get("interface", "-")),
        chosen,
    )


@dataclass(frozen=True)
class ProbeConfig:
    """What an agent probes and how. ``device`` and ``interface`` are the design's names of the
    endpoint the agent runs on (its rows' ``src_device`` and ``src_interface``); ``source`` the
    address to send from (None: the kernel's choice); ``session`` tells this run's replies from
    an earlier run's; ``per_interval`` probes per EV and target per interval; ``rate_pps`` the
    most probes per second the agent ever sends; ``size`` the UDP payload of a probe."""

    device: str
    interface: str
    targets: tuple[Target, ...]
    interval_ms: int = 1000
    timeout_ms: int = 500
    per_interval: int = 1
    rate_pps: float = 1000.0
    size: int = 64
    source: str | None = None
    session: int = 0

    @property
    def probes_per_interval(self) -> int:
        return self.per_interval * sum(len(t.evs) for t in self.targets)

    def check(self) -> ProbeConfig:
        """SpecError naming every field that cannot work; the config itself when all hold."""
        p: list[Problem] = []
        if not self.device or not self.interface:
            p.append(Problem("--device/--interface", "name the endpoint the agent runs on"))
        if not self.targets:
            p.append(Problem("--targets", "give at least one target"))
        for n, t in enumerate(self.targets):
            if not t.evs:
                p.append(Problem(f"targets[{n}].evs", "at least one EV"))
            bad = [e for e in t.evs if not 1 <= e <= 65535]
            if bad:
                p.append(Problem(f"targets[{n}].evs", f"{bad[0]} is not a UDP port (1..65535)"))
            if len(set(t.evs)) != len(t.evs):
                p.append(Problem(f"targets[{n}].evs", "an EV listed twice"))
        if self.interval_ms <= 0:
            p.append(Problem("--interval", "above 0"))
        if not 0 < self.timeout_ms <= 60_000:
            p.append(Problem("--timeout", "above 0 and at most 60 s"))
        if self.per_interval < 1:
            p.append(Problem("--per-interval", "at least 1"))
        if not self.rate_pps > 0:
            p.append(Problem("--rate", "above 0 probes per second"))
        elif self.interval_ms > 0 and self.targets:
            need = self.probes_per_interval * 1000 / self.interval_ms
            if need > self.rate_pps:
                p.append(
                    Problem(
                        "--rate",
                        f"the schedule sends {need:,.0f} probes/s, above the limit of "
                        f"{self.rate_pps:,.0f}: fewer EVs or targets, a longer --interval or "
                        "a higher --rate",
                    )
                )
        if not HEADER.size <= self.size <= MAX_SIZE:
            p.append(Problem("--size", f"{HEADER.size}..{MAX_SIZE} bytes"))
        if self.source is not None:
            try:
                ipaddress.ip_address(self.source)
            except ValueError:
                p.append(Problem("--source", f"{self.source!r} is not an address"))
        if p:
            raise SpecError(p)
        return self


def check_names(config: ProbeConfig, fabric: OpsFabric) -> ProbeConfig:
    """SpecError naming every endpoint of ``config`` (the agent's own and each target's) that
    is not a host NIC port of ``fabric``'s design, so the rows join the design's telemetry;
    the config itself when all are."""
    problems = []
    if fabric.host_of(config.device, config.interface) is None:
        problems.append(
            Problem(
                "--device/--interface",
                f"{config.device}:{config.interface} is not a host NIC port of the design "
                f"(e.g. {':'.join(fabric.endpoint(0, 0))})",
            )
        )
    for n, t in enumerate(config.targets):
        if fabric.host_of(t.device, t.interface) is None:
            problems.append(
                Problem(
                    f"targets[{n}]",
                    f"{t.device}:{t.interface} is not a host NIC port of the design; name it "
                    "as ADDR=DEVICE:INTERFACE",
                )
            )
    if problems:
        raise SpecError(problems)
    return config


# -- accounting ----------------------------------------------------------------------------


@dataclass
class _Cell:
    sent: int = 0
    answered: int = 0
    rtt_sum_ns: int = 0
    rtt_max_ns: int = 0


@dataclass
class Ledger:
    """The loss and RTT accounting of one run; times in ns of the prober's monotonic clock,
    ``start_ms`` the wall clock (ms since the epoch) at ``start_ns``."""

    config: ProbeConfig
    start_ns: int
    start_ms: int
    outstanding: dict[tuple[int, int, int], tuple[int, int]] = field(default_factory=dict)
    cells: dict[tuple[int, int, int], _Cell] = field(default_factory=dict)
    closed_upto: int = 0  #: intervals below this one are closed
    late: int = 0
    unknown: int = 0

    @property
    def interval_ns(self) -> int:
        return self.config.interval_ms * NS_PER_MS

    @property
    def timeout_ns(self) -> int:
        return self.config.timeout_ms * NS_PER_MS

    def interval_of(self, now_ns: int) -> int:
        return max(0, (now_ns - self.start_ns) // self.interval_ns)

    def sent(self, target: int, ev: int, seq: int, now_ns: int) -> None:
        k = max(self.interval_of(now_ns), self.closed_upto)
        self.outstanding[target, ev, seq] = (k, now_ns)
        self.cells.setdefault((k, target, ev), _Cell()).sent += 1

    def answered(
        self, target: int, ev: int, seq: int, now_ns: int, echoed_ns: int | None = None
    ) -> int | None:
        """The RTT in ns of the probe this reply answers; None for a late, duplicate or
        unknown reply (counted, no row changes). ``echoed_ns``, the send time the reply
        carries back, must be the probe's (else the reply is not an echo of it: unknown)."""
        got = self.outstanding.get((target, ev, seq))
        if got is None or (echoed_ns is not None and echoed_ns != got[1]):
            self.unknown += 1
            return None
        k, sent_ns = got
        rtt = now_ns - sent_ns
        if rtt > self.timeout_ns:
            self.late += 1  # lost: its interval counts it when it closes
            return None
        del self.outstanding[target, ev, seq]
        cell = self.cells[k, target, ev]
        cell.answered += 1
        cell.rtt_sum_ns += rtt
        cell.rtt_max_ns = max(cell.rtt_max_ns, rtt)
        return rtt

    def due(self, now_ns: int) -> list[dict[str, Any]]:
        """Rows of the intervals whose probes are all answered or timed out at ``now_ns``."""
        upto = max(0, (now_ns - self.start_ns - self.timeout_ns) // self.interval_ns)
        return self._close(upto)

    def finish(self) -> list[dict[str, Any]]:
        """Rows of every open interval, probes still outstanding counted lost (call it one
        timeout after the last send)."""
        last = max((k for k, _, _ in self.cells), default=self.closed_upto - 1)
        return self._close(last + 1)

    def _close(self, upto: int) -> list[dict[str, Any]]:
        if upto <= self.closed_upto:
            return []
        for key, (k, _) in list(self.outstanding.items()):
            if k < upto:
                del self.outstanding[key]
        rows: list[dict[str, Any]] = []
        for key in sorted(c for c in self.cells if c[0] < upto):
            k, t, ev = key
            cell = self.cells.pop(key)
            target = self.config.targets[t]
            got = cell.answered
            rows.append(
                {
                    "ts_ms": self.start_ms + (k + 1) * self.config.interval_ms,
                    "src_device": self.config.device,
                    "src_interface": self.config.interface,
                    "dst_device": target.device,
                    "dst_interface": target.interface,
                    "ev": ev,
                    "sent": cell.sent,
                    "lost": cell.sent - got,
                    "rtt_us": cell.rtt_sum_ns / got / NS_PER_US if got else None,
                    "rtt_max_us": cell.rtt_max_ns / NS_PER_US if got else None,
                }
            )
        self.closed_upto = upto
        return rows


def rows_table(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Rows as a table in :data:`PROBE_SCHEMA`."""
    return pa.Table.from_pylist(list(rows), schema=PROBE_SCHEMA)


# -- output --------------------------------------------------------------------------------


class ProbeSink(Protocol):
    """Where a run's rows go, as the intervals close; the file appears at :meth:`close`."""

    path: Path

    def write(self, rows: Sequence[Mapping[str, Any]]) -> None: ...

    def close(self) -> None: ...

    def abort(self) -> None: ...


class _Staged:
    """A file written through ``clusterloom.atomic``: it appears under its name only at
    :meth:`commit`; :meth:`discard` leaves nothing."""

    def __init__(self, path: Path) -> None:
        from clusterloom.atomic import atomic_open

        self.path = path
        self._stack = contextlib.ExitStack()
        self.handle: IO[bytes] = self._stack.enter_context(atomic_open(path, "wb"))

    def commit(self) -> None:
        self._stack.close()

    def discard(self) -> None:
        err = RuntimeError("discarded")
        with contextlib.suppress(RuntimeError):
            self._stack.__exit__(type(err), err, None)


class _TableSink:
    """Rows streamed through a pyarrow table writer into a staged file, moved into place on
    ``close`` (Parquet and CSV differ only in the writer)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = _Staged(path)
        self._writer = self._open(self._file.handle)
        self.rows = 0

    def _open(self, handle: Any) -> Any:
        raise NotImplementedError

    def write(self, rows: Sequence[Mapping[str, Any]]) -> None:
        if rows:
            self._writer.write_table(rows_table(rows))
            self.rows += len(rows)

    def close(self) -> None:
        self._writer.close()
        self._file.commit()

    def abort(self) -> None:
        with contextlib.suppress(Exception):
            self._writer.close()
        self._file.discard()


class ParquetSink(_TableSink):
    def _open(self, handle: Any) -> Any:
        import pyarrow.parquet as pq

        return pq.ParquetWriter(handle, PROBE_SCHEMA)


class CsvSink(_TableSink):
    def _open(self, handle: Any) -> Any:
        import pyarrow.csv as pcsv

        return pcsv.CSVWriter(handle, PROBE_SCHEMA)


#: OpenMetrics families of the interval ending at the sample's timestamp: (name, type, the
#: PROBE_SCHEMA column it carries, help). ``sent`` and ``lost`` are counts per interval, not
#: monotonic counters, so gauges.
METRICS: tuple[tuple[str, str, str, str], ...] = (
    ("clusterloom_probe_sent", "gauge", "sent", "probes sent in the interval"),
    ("clusterloom_probe_lost", "gauge", "lost", "probes of the interval that did not come back"),
    ("clusterloom_probe_rtt_us", "gauge", "rtt_us", "mean RTT of the probes that came back, us"),
    ("clusterloom_probe_rtt_max_us", "gauge", "rtt_max_us", "largest RTT of those probes, us"),
)
LABELS = ("src_device", "src_interface", "dst_device", "dst_interface", "ev")


def _label(value: object) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def openmetrics_sample(name: str, column: str, row: Mapping[str, Any]) -> str | None:
    """One sample line of ``row`` for family ``name`` (None when the value is null)."""
    value = row[column]
    if value is None:
        return None
    labels = ",".join(f'{k}="{_label(row[k])}"' for k in LABELS)
    ts = int(row["ts_ms"])
    shown = str(value) if isinstance(value, int) else repr(float(value))
    return f"{name}{{{labels}}} {shown} {ts // 1000}.{ts % 1000:03d}\n"


class OpenMetricsSink:
    """OpenMetrics text: the samples of each family kept together (the format requires it),
    so each family streams to a temporary file of its own, joined at :meth:`close`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = _Staged(path)
        self._parts: list[IO[bytes]] = [
            tempfile.TemporaryFile(dir=path.parent)  # noqa: SIM115 (closed at close or abort)
            for _ in METRICS
        ]
        self.rows = 0

    def write(self, rows: Sequence[Mapping[str, Any]]) -> None:
        for (name, _, column, _), part in zip(METRICS, self._parts, strict=True):
            lines = [openmetrics_sample(name, column, r) for r in rows]
            part.write("".join(x for x in lines if x is not None).encode())
        self.rows += len(rows)

    def close(self) -> None:
        out = self._file.handle
        for (name, kind, _, help_text), part in zip(METRICS, self._parts, strict=True):
            out.write(f"# TYPE {name} {kind}\n# HELP {name} {help_text}\n".encode())
            part.seek(0)
            while chunk := part.read(1 << 20):
                out.write(chunk)
            part.close()
        out.write(b"# EOF\n")
        self._file.commit()

    def abort(self) -> None:
        for part in self._parts:
            part.close()
        self._file.discard()


FORMATS = {".parquet": "parquet", ".csv": "csv", ".prom": "prom", ".txt": "prom", ".om": "prom"}


def open_sink(path: Path, fmt: str | None = None) -> ProbeSink:
    """A sink writing ``path`` as ``parquet``, ``csv`` or ``prom`` (OpenMetrics text); by the
    suffix when ``fmt`` is None."""
    chosen = fmt or FORMATS.get(path.suffix.lower())
    if chosen == "parquet":
        return ParquetSink(path)
    if chosen == "csv":
        return CsvSink(path)
    if chosen == "prom":
        return OpenMetricsSink(path)
    raise SpecError(
        [Problem("-o", f"{path.name}: name a .parquet, .csv or .prom file (or give --format)")]
    )


# -- the prober ----------------------------------------------------------------------------


@dataclass
class Bucket:
    """A token bucket: ``rate`` tokens a second, at most ``burst`` kept."""

    rate: float
    burst: float
    tokens: float
    at_ns: int

    def take(self, now_ns: int) -> bool:
        self.tokens = min(self.burst, self.tokens + (now_ns - self.at_ns) * self.rate / 1e9)
        self.at_ns = now_ns
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False

    def ready_ns(self) -> int:
        """When the next token is there (now, if one is)."""
        return self.at_ns + max(0, round((1 - self.tokens) * 1e9 / self.rate))


def _key(address: str) -> str:
    text = address.split("%", 1)[0]
    ip = ipaddress.ip_address(text)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def _bind_udp(family: socket.AddressFamily, source: str | None, port: int) -> socket.socket:
    s = socket.socket(family, socket.SOCK_DGRAM)
    try:
        if family == socket.AF_INET6:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        s.bind((source or ("::" if family == socket.AF_INET6 else "0.0.0.0"), port))
    except OSError as exc:
        s.close()
        raise ProbeError(f"cannot bind UDP port {port} (an EV): {exc.strerror}") from exc
    s.setblocking(False)
    return s


@dataclass(frozen=True)
class RunSummary:
    """What a run did: probes sent and answered, rows written, late and unknown replies, send
    errors (a probe whose ``sendto`` failed, e.g. no route, is sent and lost)."""

    sent: int
    answered: int
    rows: int
    late: int
    unknown: int
    send_errors: int
    seconds: float


class Prober:
    """The sending side. Sockets are made here: make it inside the network namespace it is to
    probe from. ``clock`` is the monotonic clock in ns (a test passes a fake one), ``wall_ms``
    the wall clock at its first reading (ms since the epoch)."""

    def __init__(
        self,
        config: ProbeConfig,
        *,
        clock: Callable[[], int] = time.monotonic_ns,
        wall_ms: int | None = None,
    ) -> None:
        self.config = config.check()
        self.clock = clock
        start = clock()
        self.ledger = Ledger(
            config, start, wall_ms if wall_ms is not None else time.time_ns() // NS_PER_MS
        )
        self.bucket = Bucket(config.rate_pps, max(1.0, config.rate_pps / 10), 1.0, start)
        self.sockets: dict[tuple[socket.AddressFamily, int], socket.socket] = {}
        self.selector = selectors.DefaultSelector()
        try:
            for t in config.targets:
                for ev in t.evs:
                    if (t.family, ev) not in self.sockets:
                        source = config.source if _family(config.source) == t.family else None
                        s = _bind_udp(t.family, source, ev)
                        self.sockets[t.family, ev] = s
                        self.selector.register(s, selectors.EVENT_READ, ev)
        except BaseException:
            self.close()
            raise
        self.by_address = {(_key(t.address), t.port): n for n, t in enumerate(config.targets)}
        #: the schedule of one interval: (target, EV) in send order
        self.slots = [
            (n, ev) for _ in range(config.per_interval) for n, t in enumerate(config.targets)
            for ev in t.evs
        ]  # fmt: skip
        self.next_slot = 0  #: slots sent since the start, over all intervals
        self.seq = 0
        self.answered_total = 0
        self.send_errors = 0
        self.rows = 0  #: rows handed out by the last run

    def due_ns(self, slot: int) -> int:
        """When slot ``slot`` (counted from the start) is due."""
        per = len(self.slots)
        k, i = divmod(slot, per)
        return (
            self.ledger.start_ns + k * self.ledger.interval_ns + i * self.ledger.interval_ns // per
        )

    def send_due(self, now_ns: int, until_ns: int | None = None) -> int:
        """Send every probe due by ``now_ns`` (and before ``until_ns``) the rate allows; the
        number sent."""
        sent = 0
        while self.due_ns(self.next_slot) <= now_ns and (
            until_ns is None or self.due_ns(self.next_slot) < until_ns
        ):
            if not self.bucket.take(now_ns):
                break
            n, ev = self.slots[self.next_slot % len(self.slots)]
            self._send(n, ev, now_ns)
            self.next_slot += 1
            sent += 1
        return sent

    def _send(self, n: int, ev: int, now_ns: int) -> None:
        t = self.config.targets[n]
        self.seq += 1
        data = encode(Packet(REQUEST, ev, self.config.session, self.seq, now_ns), self.config.size)
        self.ledger.sent(n, ev, self.seq, now_ns)
        try:
            self.sockets[t.family, ev].sendto(data, (t.address, t.port))
        except OSError:
            self.send_errors += 1  # no route, no buffer: the probe is lost

    def receive(self, timeout_s: float) -> int:
        """Read the replies that arrive within ``timeout_s`` (all that are waiting, then those
        until the timeout's first wake-up); the number matched to a probe."""
        matched = 0
        for key, _ in self.selector.select(max(0.0, timeout_s)):
            s: socket.socket = key.fileobj  # type: ignore[assignment]
            ev: int = key.data
            while True:
                try:
                    data, peer = s.recvfrom(MAX_SIZE + 64)
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:
                    break  # an ICMP error queued on the socket: the probe times out
                now = self.clock()
                p = decode(data)
                n = self.by_address.get((_key(peer[0]), peer[1]))
                if (
                    p is None
                    or p.kind != REPLY
                    or n is None
                    or p.ev != ev
                    or p.session != self.config.session
                ):
                    self.ledger.unknown += 1
                    continue
                if self.ledger.answered(n, ev, p.seq, now, p.sent_ns) is not None:
                    matched += 1
        self.answered_total += matched
        return matched

    def run(
        self,
        duration_ms: int,
        sink: ProbeSink | None = None,
        *,
        stop: threading.Event | None = None,
        on_rows: Callable[[list[dict[str, Any]]], None] | None = None,
    ) -> RunSummary:
        """Probe for ``duration_ms`` (or until ``stop`` is set), then wait for the replies in
        flight (one timeout at most) and close every interval; rows go to ``sink`` and
        ``on_rows`` as their intervals close. The sink is not closed here."""

        def hand(rows: list[dict[str, Any]]) -> None:
            if rows:
                if sink is not None:
                    sink.write(rows)
                if on_rows is not None:
                    on_rows(rows)
                self.rows += len(rows)

        self.rows = 0
        began = self.clock()
        if self.seq == 0:  # the schedule starts now, not when the sockets were made
            self.ledger.start_ms += (began - self.ledger.start_ns) // NS_PER_MS
            self.ledger.start_ns = began
            self.bucket.at_ns = began
        end = self.ledger.start_ns + duration_ms * NS_PER_MS
        while True:
            now = self.clock()
            if now >= end or (stop is not None and stop.is_set()):
                break
            self.send_due(now, end)
            hand(self.ledger.due(now))
            # the next send, or the next token when the bucket held the sends back
            wake = min(max(self.due_ns(self.next_slot), self.bucket.ready_ns()), end)
            self.receive(min(max(0, wake - self.clock()) / 1e9, 0.05))
        last = self.clock()
        drain_until = last + self.ledger.timeout_ns
        while (now := self.clock()) < drain_until and self.ledger.outstanding:
            hand(self.ledger.due(now))
            self.receive(min((drain_until - now) / 1e9, 0.05))
        hand(self.ledger.finish())
        return RunSummary(
            sent=self.seq,
            answered=self.answered_total,
            rows=self.rows,
            late=self.ledger.late,
            unknown=self.ledger.unknown,
            send_errors=self.send_errors,
            seconds=(self.clock() - began) / 1e9,
        )

    def close(self) -> None:
        for s in self.sockets.values():
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(s)
            s.close()
        self.sockets.clear()
        self.selector.close()

    def __enter__(self) -> Prober:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _family(address: str | None) -> socket.AddressFamily | None:
    if address is None:
        return None
    return socket.AF_INET6 if ":" in address else socket.AF_INET


# -- the responder -------------------------------------------------------------------------


class Responder:
    """Echoes every well-formed request arriving at ``address:port`` (a reply goes back to
    the request's source address and port, so its EV); at most ``rate_pps`` replies a
    second (a burst of a tenth of that), the rest counted as ``limited``."""

    def __init__(self, address: str, port: int = DEFAULT_PORT, *, rate_pps: float = 20_000):
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        self.sock = _bind_udp(family, address, port)
        self.port = self.sock.getsockname()[1]
        now = time.monotonic_ns()
        self.bucket = Bucket(rate_pps, max(1.0, rate_pps / 10), max(1.0, rate_pps / 10), now)
        self.replied = self.ignored = self.limited = 0

    def handle(self, budget: int = 256) -> int:
        """Answer the requests waiting (at most ``budget``); the number answered."""
        done = 0
        for _ in range(budget):
            try:
                data, peer = self.sock.recvfrom(MAX_SIZE + 64)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                continue
            reply = echo(data)
            if reply is None:
                self.ignored += 1
            elif not self.bucket.take(time.monotonic_ns()):
                self.limited += 1
            else:
                with contextlib.suppress(OSError):
                    self.sock.sendto(reply, peer)
                    done += 1
        self.replied += done
        return done

    def serve(self, stop: threading.Event, *, until_ns: int | None = None) -> int:
        """Answer until ``stop`` is set (or the monotonic clock passes ``until_ns``)."""
        with selectors.DefaultSelector() as sel:
            sel.register(self.sock, selectors.EVENT_READ)
            while not stop.is_set() and (until_ns is None or time.monotonic_ns() < until_ns):
                if sel.select(0.05):
                    self.handle()
        return self.replied

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Responder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[threading.Event]:
    """Set ``stop`` on SIGINT or SIGTERM for the block (main thread only), the previous
    handlers restored after it: a run ends cleanly, its last intervals written."""

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for s, h in old.items():
            signal.signal(s, h)


# -- path discovery ------------------------------------------------------------------------


@dataclass(frozen=True)
class Trace:
    """The path of one EV to one target: ``hops[i]`` the address that answered the probe with
    hop limit ``i + 1`` (None: no answer), the last the target when ``reached``."""

    target: int
    ev: int
    hops: tuple[str | None, ...]
    reached: bool


def _icmp_match(
    data: bytes, family: socket.AddressFamily, ev: int, port: int, session: int
) -> tuple[int, int] | None:
    """(ICMP type, quoted sequence number) of an ICMP error quoting one of our probes."""
    if family == socket.AF_INET6:
        if len(data) < 8 + 40 + 8:
            return None
        kind, inner = data[0], data[8:]
        if inner[6] != socket.IPPROTO_UDP:
            return None
        udp = inner[40:]
    else:
        ihl = (data[0] & 0x0F) * 4  # the raw IPv4 socket hands the IP header too
        icmp = data[ihl:]
        if len(icmp) < 8 + 20:
            return None
        kind, inner = icmp[0], icmp[8:]
        if inner[9] != socket.IPPROTO_UDP:
            return None
        udp = inner[(inner[0] & 0x0F) * 4 :]
    if len(udp) < 8:
        return None
    sport, dport = struct.unpack_from("!HH", udp)
    if (sport, dport) != (ev, port):
        return None
    p = decode(udp[8:])
    if p is None or p.session != session or p.ev != ev:
        return None
    return kind, p.seq


def trace(
    target: Target,
    ev: int,
    *,
    index: int = 0,
    source: str | None = None,
    max_hops: int = 8,
    timeout_ms: int = 200,
    session: int = 0,
) -> Trace:
    """The path EV ``ev`` takes to ``target``: probes with hop limit 1, 2, ... from source port
    ``ev`` to the target's port (the 5-tuple of the EV's probes, so the same ECMP choices), the
    routers' ICMP time-exceeded read on a raw socket; it ends when the target's responder
    echoes (or an ICMP unreachable comes back, or ``max_hops``). Needs CAP_NET_RAW (root);
    the sockets are made here, so call it inside the namespace to trace from."""
    v6 = target.family == socket.AF_INET6
    proto = socket.IPPROTO_ICMPV6 if v6 else socket.IPPROTO_ICMP
    try:
        raw = socket.socket(target.family, socket.SOCK_RAW, proto)
    except PermissionError as exc:
        raise ProbeError("path discovery needs root (a raw ICMP socket, CAP_NET_RAW)") from exc
    udp = _bind_udp(target.family, source if _family(source) == target.family else None, ev)
    exceeded = ICMP6_TIME_EXCEEDED if v6 else ICMP_TIME_EXCEEDED
    unreachable = ICMP6_UNREACHABLE if v6 else ICMP_UNREACHABLE
    hops: list[str | None] = []
    reached = False
    try:
        raw.setblocking(False)
        with selectors.DefaultSelector() as sel:
            sel.register(raw, selectors.EVENT_READ, "icmp")
            sel.register(udp, selectors.EVENT_READ, "udp")
            for hop in range(1, max_hops + 1):
                if v6:
                    udp.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_UNICAST_HOPS, hop)
                else:
                    udp.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, hop)
                seq = hop
                sent = time.monotonic_ns()
                with contextlib.suppress(OSError):
                    udp.sendto(
                        encode(Packet(REQUEST, ev, session, seq, sent)),
                        (target.address, target.port),
                    )
                answer, final = _await_hop(sel, target, ev, seq, session, exceeded, unreachable,
                                           sent + timeout_ms * NS_PER_MS)  # fmt: skip
                hops.append(answer)
                if final is not None:
                    reached = final
                    break
    finally:
        raw.close()
        udp.close()
    return Trace(index, ev, tuple(hops), reached)


def _await_hop(
    sel: selectors.BaseSelector,
    target: Target,
    ev: int,
    seq: int,
    session: int,
    exceeded: int,
    unreachable: int,
    deadline_ns: int,
) -> tuple[str | None, bool | None]:
    """(who answered hop ``seq``, whether the trace ends there: True the target echoed, False
    an unreachable came back, None go on)."""
    while (left := deadline_ns - time.monotonic_ns()) > 0:
        for key, _ in sel.select(left / 1e9):
            s: socket.socket = key.fileobj  # type: ignore[assignment]
            while True:
                try:
                    data, peer = s.recvfrom(2048)
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:
                    break
                if key.data == "udp":
                    p = decode(data)
                    if p is not None and p.kind == REPLY and p.seq == seq and p.session == session:
                        return _key(peer[0]), True
                    continue
                got = _icmp_match(data, target.family, ev, target.port, session)
                if got is None or got[1] != seq:
                    continue
                if got[0] == exceeded:
                    return _key(peer[0]), None
                if got[0] == unreachable:
                    return _key(peer[0]), False
    return None, None


def discover(config: ProbeConfig, *, max_hops: int = 8, timeout_ms: int = 200) -> tuple[Trace, ...]:
    """:func:`trace` of every EV of every target of ``config``, in order."""
    return tuple(
        trace(t, ev, index=n, source=config.source, max_hops=max_hops, timeout_ms=timeout_ms,
              session=config.session)
        for n, t in enumerate(config.check().targets)
        for ev in t.evs
    )  # fmt: skip


def tomography_input(
    probes: pa.Table,
    paths: Mapping[tuple[str, str, int], Sequence[str]],
) -> tuple[list[list[str]], list[int], list[int]]:
    """The arguments of ``ops.localise.tomography(paths, sent, lost)`` from a probe table:
    one entry per row whose (dst device, dst interface, EV) has a known path (the names of the
    links or devices it crosses); rows without one are left out."""
    out_paths: list[list[str]] = []
    sent: list[int] = []
    lost: list[int] = []
    cols = probes.select(["dst_device", "dst_interface", "ev", "sent", "lost"]).to_pylist()
    for r in cols:
        path = paths.get((r["dst_device"], r["dst_interface"], r["ev"]))
        if path is not None:
            out_paths.append(list(path))
            sent.append(int(r["sent"]))
            lost.append(int(r["lost"]))
    return out_paths, sent, lost


def new_session() -> int:
    """A session number for a run from the command line (its process and start time)."""
    return (os.getpid() * 2_654_435_761 + time.monotonic_ns()) & 0xFFFFFFFF
