"""Scripted conformance tests: a timeline of packets injected into a transport and packets it
must send, in the spirit of packetdrill. The transport's connection runs alone: what it sends is
captured (no network), what the script injects is handed to it at the given time.

::

    # a trimmed packet is resent at once
    check SCR-TRIM "trim NACK triggers an immediate resend"
    transport mrc-spray evs=4
    flow bytes=16384                 # optional: messages=8192,8192
    side sender                      # sender (default: the connection starts) | receiver
    tolerance 1us                    # how far an expected packet may be from its time
    0us   > data seq=0
    0us   > data seq=1 ev=*
    5us   < nack seq=2 echo=@2       # @K: the EV of data packet K's first transmission
    +0us  > data seq=2               # +T: relative to the previous line

``>`` lines are expected from the connection, in order: each must match the next packet it
sent (kind and every field given; ``*`` matches anything) within the tolerance, and nothing
else may be sent before the last expected packet. ``<`` lines inject a packet (fields not given
are 0, except ``key``/``job``, the connection's, and a data packet's ``payload``). Kinds:
data, ack, nack, pull, probe, probe-ack, cnp; fields: seq, cum, sack, ev, echo, path, pseq,
port, ecn, trimmed, key, job, payload, hint. Numbers are decimal, 0x hex or 0b binary.
A malformed line is reported with its line number (exit code 2 at the command line).

Input limits. A script may come from anywhere: every number that the run allocates, loops or
waits on is bounded, and refused outside the bound with its line named.

- the script: at most :data:`SCRIPT_MAX_CHARS` characters (1 MiB; :func:`run_script_file`
  checks the file's size before reading) and :data:`SCRIPT_MAX_LINES` lines (10,000);
- times (absolute, relative, ``tolerance``): finite, at most :data:`SCRIPT_MAX_TIME_PS`
  (1 s, 10**12 ps, five orders of magnitude past the shipped scripts' microseconds); the
  run ends at the last time plus the tolerance;
- ``flow bytes``: 0..:data:`SCRIPT_MAX_FLOW_BYTES` (64 MiB); ``messages``: at most
  :data:`SCRIPT_MAX_MESSAGES` (4,096), each 0..SCRIPT_MAX_FLOW_BYTES;
- one ``transport`` line; its options: the transport's own, finite, in the range of
  :data:`OPTION_RANGES` (timer periods at least 1 us, retries at most 64, EV and path counts
  1..256, fractions 0..1, window factors 0..1000); ``messages`` must sum to ``bytes``;
- packet fields: the width of the header field they stand for (:data:`FIELD_RANGES`:
  sequence numbers 24 bits like a RoCE PSN, SACK up to the 256-bit path bitmap, EVs and keys
  32 bits, payload up to 65,535 bytes); ``@K`` takes a sequence number; a number has at most
  :data:`SCRIPT_MAX_NUMBER_CHARS` characters;
- the run itself: at most :data:`SCRIPT_MAX_EVENTS` engine events (2**20) and
  :data:`SCRIPT_MAX_SENT` packets sent by the connection (2**16); a connection that goes past
  either fails the script with the time it was stopped at.
"""

from __future__ import annotations

import math
import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterloom.conformance.harness import ConformanceInputError
from clusterloom.conformance.suite import CheckResult, Status
from clusterloom.errors import Problem
from clusterloom.sim.packet.base import Connection, ConnSpec
from clusterloom.sim.packet.engine import DATA, KIND_NAMES, Packet, PacketSim
from clusterloom.units import PS_PER_MS, PS_PER_NS, PS_PER_US, to_us

__all__ = ["Script", "parse_script", "run_script", "run_script_file"]

FIELDS = (
    "seq",
    "cum",
    "sack",
    "ev",
    "echo",
    "path",
    "pseq",
    "port",
    "ecn",
    "trimmed",
    "key",
    "job",
    "payload",
    "hint",
)
_TIME = re.compile(r"(\+)?([0-9]+(?:\.[0-9]+)?)(ps|ns|us|ms)")
_SCALE = {"ps": 1, "ns": PS_PER_NS, "us": PS_PER_US, "ms": PS_PER_MS}

#: the longest script, in characters (bytes for :func:`run_script_file`)
SCRIPT_MAX_CHARS = 2**20
#: the most lines a script may have (comments and blank lines count)
SCRIPT_MAX_LINES = 10_000
#: the latest time a script may name, and the largest tolerance: 1 s
SCRIPT_MAX_TIME_PS = 10**12
#: the largest flow a script's connection carries (``flow bytes=``, each message)
SCRIPT_MAX_FLOW_BYTES = 2**26
#: the most messages of ``flow messages=``
SCRIPT_MAX_MESSAGES = 4_096
#: the longest number token (a 256-bit bitmap in binary is 258 characters)
SCRIPT_MAX_NUMBER_CHARS = 300
#: the most engine events one run may take (packets, timers, injections)
SCRIPT_MAX_EVENTS = 2**20
#: the most packets the connection may send in one run (a script expects far fewer)
SCRIPT_MAX_SENT = 2**16

_MAX_TIME = f"{SCRIPT_MAX_TIME_PS // 10**6}us"
_SEQ = (0, 2**24 - 1)  # a RoCE PSN's width
#: the values a packet field may take (``-1`` is "none" for echo, path and pseq)
FIELD_RANGES: dict[str, tuple[int, int]] = {
    "seq": _SEQ,
    "cum": _SEQ,
    "sack": (0, 2**256 - 1),
    "ev": (0, 2**32 - 1),
    "echo": (-1, 2**32 - 1),
    "path": (-1, 2**16 - 1),
    "pseq": (-1, 2**24 - 1),
    "port": (0, 2**16 - 1),
    "ecn": (0, 1),
    "trimmed": (0, 1),
    "key": (0, 2**32 - 1),
    "job": (0, 2**32 - 1),
    "payload": (0, 2**16 - 1),
    "hint": (0, 2**32 - 1),
}
#: the values a transport option may take: (lowest, highest, whole numbers only); an option
#: not listed is passed to the transport (which refuses names it does not know) if finite
OPTION_RANGES: dict[str, tuple[float, float, bool]] = {
    "rto_us": (1.0, 1e6, False),
    "probe_us": (1.0, 1e6, False),
    "timer_us": (1.0, 1e6, False),
    "cnp_us": (0.0, 1e6, False),
    "retries": (0, 64, True),
    "evs": (1, 256, True),
    "paths": (1, 256, True),
    "ack_every": (1, 4096, True),
    "max_skip": (0, 64, True),
    "g": (0.0, 1.0, False),
    "rai": (0.0, 1.0, False),
    "min_rate": (0.0, 1.0, False),
    "ecn_threshold": (0.0, 1.0, False),
    "cwnd_bdp": (0.0, 1e3, False),
    "max_bdp": (0.0, 1e3, False),
    "iw_bdp": (0.0, 1e3, False),
    "delay_factor": (0.0, 1e3, False),
}


@dataclass(frozen=True)
class Line:
    number: int
    time_ps: int
    direction: str  # "<" inject, ">" expect
    kind: int
    fields: dict[str, int | str]  # int, "*" or "@K"
    text: str


@dataclass
class Script:
    name: str
    title: str
    transport: str
    options: dict[str, float] = field(default_factory=dict)
    nbytes: int = 16384
    messages: tuple[int, ...] = ()
    side: str = "sender"
    tolerance_ps: int = PS_PER_US
    lines: list[Line] = field(default_factory=list)


def _number(text: str, lo: int, hi: int) -> int:
    """``text`` as an integer in ``lo..hi`` (decimal, 0x or 0b); ValueError says why not."""
    if len(text) > SCRIPT_MAX_NUMBER_CHARS:
        raise ValueError(f"'{text[:20]}...' is too long for a number")
    try:
        value = int(text, 0)
    except ValueError:
        raise ValueError(f"'{text}' is not a number") from None
    if not lo <= value <= hi:
        raise ValueError(f"'{text}' is out of range, expected {lo}..{hi}")
    return value


def _too_big(source: str, size: int) -> Problem:
    return Problem(
        source,
        f"{size} characters, over the {SCRIPT_MAX_CHARS // 2**20} MiB limit of a script: "
        "split it into several",
    )


def _time_ps(m: re.Match[str]) -> int | None:
    """The picoseconds of a matched time, or None past :data:`SCRIPT_MAX_TIME_PS`."""
    value = float(m.group(2)) * _SCALE[m.group(3)]
    return round(value) if math.isfinite(value) and value <= SCRIPT_MAX_TIME_PS else None


def _option(where: str, word: str, problems: list[Problem]) -> float | None:
    name, eq, text = word.partition("=")
    try:
        value = float(text) if eq else math.nan
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        problems.append(Problem(where, f"option '{word[:40]}' is not NAME=NUMBER (finite)"))
        return None
    lo, hi, whole = OPTION_RANGES.get(name, (-math.inf, math.inf, False))
    if not lo <= value <= hi or (whole and not value.is_integer()):
        kind = "a whole number" if whole else "a number"
        problems.append(Problem(where, f"option '{word[:40]}': expected {kind} in {lo:g}..{hi:g}"))
        return None
    return value


def parse_script(text: str, *, source: str = "<script>") -> Script:
    """Parse a script; every malformed line is reported (``line N: ...``)."""
    from clusterloom.sim.packet.transports import packet_transports

    transports = packet_transports()
    problems: list[Problem] = []
    script = Script(name=Path(source).stem, title=source, transport="")
    if len(text) > SCRIPT_MAX_CHARS:
        raise ConformanceInputError([_too_big(source, len(text))])
    last = 0
    lines = [0, 0]  # where the transport and the flow were given
    for n, raw in enumerate(text.splitlines(), start=1):
        if n > SCRIPT_MAX_LINES:
            problems.append(
                Problem(
                    f"{source}: line {n}",
                    f"more than {SCRIPT_MAX_LINES} lines: split the script into several",
                )
            )
            break
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{source}: line {n}"
        try:
            words = shlex.split(line)
        except ValueError as exc:
            problems.append(Problem(where, str(exc)))
            continue
        head = words[0]
        if head == "check":
            if len(words) < 2:
                problems.append(Problem(where, "check needs an ID"))
                continue
            script.name = words[1]
            script.title = " ".join(words[2:]) or words[1]
        elif head == "transport":
            if len(words) < 2 or words[1] not in transports:
                problems.append(
                    Problem(where, f"transport must be one of {', '.join(sorted(transports))}")
                )
                continue
            if script.transport:
                problems.append(Problem(where, f"transport given twice (first on line {lines[0]})"))
                continue
            script.transport = words[1]
            lines[0] = n
            known = transports[words[1]].defaults
            for w in words[2:]:
                option = _option(where, w, problems)
                name = w.partition("=")[0]
                if option is not None and name not in known:
                    problems.append(
                        Problem(
                            where,
                            f"option '{name[:40]}' is not one of {words[1]}'s: "
                            f"{', '.join(known) or 'none'}",
                        )
                    )
                elif option is not None:
                    script.options[name] = option
        elif head == "flow":
            lines[1] = n
            for w in words[1:]:
                k, _, v = w.partition("=")
                try:
                    if k == "bytes":
                        script.nbytes = _number(v, 0, SCRIPT_MAX_FLOW_BYTES)
                    elif k == "messages":
                        sizes = v.split(",")
                        if len(sizes) > SCRIPT_MAX_MESSAGES:
                            raise ValueError(
                                f"{len(sizes)} messages, at most {SCRIPT_MAX_MESSAGES}"
                            )
                        script.messages = tuple(_number(x, 0, SCRIPT_MAX_FLOW_BYTES) for x in sizes)
                    else:
                        problems.append(Problem(where, f"unknown flow field '{k[:40]}'"))
                except ValueError as exc:
                    problems.append(Problem(where, f"flow {k[:40]}: {exc}"))
        elif head == "side":
            if len(words) != 2 or words[1] not in ("sender", "receiver"):
                problems.append(Problem(where, "side is sender or receiver"))
            else:
                script.side = words[1]
        elif head == "tolerance":
            m = _TIME.fullmatch(words[1]) if len(words) == 2 else None
            tolerance = _time_ps(m) if m and not m.group(1) else None
            if tolerance is None:
                problems.append(
                    Problem(where, f"tolerance takes one time like 1us, at most {_MAX_TIME}")
                )
            else:
                script.tolerance_ps = tolerance
        else:
            m = _TIME.fullmatch(head)
            if not m:
                problems.append(
                    Problem(
                        where,
                        f"'{head[:40]}' is not a time (10us, +2us) or a "
                        "directive (check, transport, flow, side, "
                        "tolerance)",
                    )
                )
                continue
            t = _time_ps(m)
            if t is not None and m.group(1):
                t += last
            if t is None or t > SCRIPT_MAX_TIME_PS:
                problems.append(
                    Problem(where, f"'{head[:40]}' is past {_MAX_TIME}: shorten the script")
                )
                continue
            if t < last:
                problems.append(Problem(where, "time goes backwards"))
            last = max(last, t)
            if len(words) < 3 or words[1] not in ("<", ">"):
                problems.append(
                    Problem(
                        where, "expected TIME < KIND FIELD=VALUE... or TIME > KIND FIELD=VALUE..."
                    )
                )
                continue
            if words[2] not in KIND_NAMES:
                problems.append(
                    Problem(
                        where, f"unknown packet kind '{words[2]}'; kinds: {', '.join(KIND_NAMES)}"
                    )
                )
                continue
            fields: dict[str, int | str] = {}
            for w in words[3:]:
                k, eq, v = w.partition("=")
                if k not in FIELDS or not eq:
                    problems.append(
                        Problem(
                            where,
                            f"'{w[:40]}' is not FIELD=VALUE with a field of {', '.join(FIELDS)}",
                        )
                    )
                    continue
                if v == "*":
                    if words[1] == "<":
                        problems.append(Problem(where, "a wildcard cannot be injected"))
                    fields[k] = "*"
                elif v.startswith("@"):
                    try:
                        fields[k] = f"@{_number(v[1:], *_SEQ)}"
                    except ValueError as exc:
                        problems.append(Problem(where, f"{k}=@K: {exc}"))
                else:
                    try:
                        fields[k] = _number(v, *FIELD_RANGES[k])
                    except ValueError as exc:
                        problems.append(Problem(where, f"{k}: {exc} (or * or @K)"))
            script.lines.append(Line(n, t, words[1], KIND_NAMES.index(words[2]), fields, raw))
    if script.messages and sum(script.messages) != script.nbytes:
        problems.append(
            Problem(
                f"{source}: line {lines[1]}",
                f"messages sum to {sum(script.messages)}, not the flow's {script.nbytes} bytes "
                "(give bytes=SUM)",
            )
        )
    if not script.transport:
        problems.append(Problem(source, "no 'transport NAME' line"))
    if not any(ln.direction == ">" for ln in script.lines):
        problems.append(Problem(source, "no expected packet ('>' line)"))
    if problems:
        raise ConformanceInputError(problems)
    return script


class _TooMany(Exception):
    """The connection sent more than :data:`SCRIPT_MAX_SENT` packets: the run is stopped."""


class _Capture(PacketSim):
    """The engine with the network cut off: what the connection sends is recorded (at most
    :data:`SCRIPT_MAX_SENT` packets; one more stops the run with :class:`_TooMany`)."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.sent: list[tuple[int, Packet]] = []
        self.first_ev: dict[int, int] = {}

    def send(self, pkt: Packet, port: int, ev: int, *, source_route: bool = False) -> bool:
        if len(self.sent) >= SCRIPT_MAX_SENT:
            raise _TooMany
        pkt.ev, pkt.port, pkt.sent_ps = ev, port, self.now
        self.sent.append((self.now, pkt))
        if pkt.kind == DATA and pkt.seq not in self.first_ev:
            self.first_ev[pkt.seq] = ev
        return True


def _describe(pkt: Packet) -> str:
    return (
        f"{KIND_NAMES[pkt.kind]} seq={pkt.seq} cum={pkt.cum} sack={pkt.sack:#b} "
        f"ev={pkt.ev} echo={pkt.echo}"
    )


def run_script(script: Script) -> CheckResult:
    """Run a parsed script against its transport; the result is one check."""
    from clusterloom.sim.packet.fabrics import small_fabric
    from clusterloom.sim.packet.transports import transport_class

    def result(ok: bool, detail: str) -> CheckResult:
        return CheckResult(
            script.name,
            "scripted",
            script.title,
            script.transport,
            Status.PASS if ok else Status.FAIL,
            detail,
        )

    cls = transport_class(script.transport)
    sim = _Capture(small_fabric(2, radix=4))
    try:
        conn: Connection = cls(
            sim,
            0,
            0,
            1,
            script.nbytes,
            0,
            ConnSpec(messages=script.messages, options=script.options),
        )
        sim.add(conn)
    except Exception as exc:
        raise ConformanceInputError([Problem(script.title, str(exc))]) from exc
    unresolved: list[str] = []

    def value(v: int | str, line: Line) -> int:
        if isinstance(v, str) and v.startswith("@"):
            seq = int(v[1:])
            if seq not in sim.first_ev:
                unresolved.append(f"line {line.number}: data {seq} was not sent yet")
                return -1
            return sim.first_ev[seq]
        return int(v)

    def inject(line: Line) -> None:
        to_receiver = line.kind == DATA or KIND_NAMES[line.kind] == "probe"
        src, dst = (conn.src, conn.dst) if to_receiver else (conn.dst, conn.src)
        payload = (
            conn.pay[int(line.fields.get("seq", 0)) % max(conn.n, 1)]
            if (line.kind == DATA and conn.n)
            else 0
        )
        pkt = Packet(line.kind, 0, src, dst, 0, payload, sim.cfg.header)
        pkt.key, pkt.job = conn.spec.key, conn.spec.job
        for k, v in line.fields.items():
            setattr(pkt, k, bool(value(v, line)) if k in ("ecn", "trimmed") else value(v, line))
        if "payload" in line.fields:
            pkt.size = sim.cfg.header + pkt.payload
        conn.on_packet(pkt, sim.now)

    def injector(line: Line) -> Callable[[], None]:
        return lambda: inject(line)

    for line in script.lines:
        if line.direction == "<":
            sim.at(line.time_ps, injector(line))
    end = max(ln.time_ps for ln in script.lines) + script.tolerance_ps
    checks = 0

    def busy() -> bool:  # called every 4,096 events
        nonlocal checks
        checks += 1
        return checks * 4096 >= SCRIPT_MAX_EVENTS

    try:
        if script.side == "sender":
            conn.start()
        sim.run(end, stop=busy)
    except _TooMany:
        return result(
            False,
            f"stopped at {to_us(sim.now):g} us: the connection sent more than "
            f"{SCRIPT_MAX_SENT} packets (the script expects "
            f"{sum(ln.direction == '>' for ln in script.lines)})",
        )
    except Exception as exc:  # the implementation under test crashed
        return result(False, f"implementation crashed: {type(exc).__name__}: {exc}")
    if checks * 4096 >= SCRIPT_MAX_EVENTS:
        return result(
            False,
            f"stopped after {SCRIPT_MAX_EVENTS} events at {to_us(sim.now):g} us of "
            f"{to_us(end):g} us: the connection keeps the engine busy (a timer or resend loop; "
            "with a script's own short timer options, lengthen them or shorten the script)",
        )
    if unresolved:
        raise ConformanceInputError([Problem(script.title, u) for u in unresolved])
    sent = [(t, p) for t, p in sim.sent if t <= end]
    k = 0
    for line in script.lines:
        if line.direction != ">":
            continue
        want = f"line {line.number} ({line.text.strip()})"
        if k >= len(sent):
            return result(False, f"{want}: nothing was sent")
        t, pkt = sent[k]
        k += 1
        if pkt.kind != line.kind:
            return result(False, f"{want}: got {_describe(pkt)} at {to_us(t):g} us")
        for f, v in line.fields.items():
            if v == "*":
                continue
            got = getattr(pkt, f)
            if int(got) != value(v, line):
                return result(False, f"{want}: {f}={int(got)} in {_describe(pkt)}")
        if abs(t - line.time_ps) > script.tolerance_ps:
            return result(
                False,
                f"{want}: sent at {to_us(t):g} us, expected at "
                f"{to_us(line.time_ps):g} us ± {to_us(script.tolerance_ps):g}",
            )
    if k < len(sent):
        t, pkt = sent[k]
        return result(False, f"unexpected {_describe(pkt)} at {to_us(t):g} us")
    return result(
        True,
        f"{sum(ln.direction == '>' for ln in script.lines)} expected packets "
        "matched, nothing else sent",
    )


def run_script_file(path: Path | str) -> list[CheckResult]:
    p = Path(path)
    try:
        with p.open("rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > SCRIPT_MAX_CHARS:
                raise ConformanceInputError([_too_big(str(p), size)])
            data = fh.read(SCRIPT_MAX_CHARS + 1)  # a pipe or device has no size
        if len(data) > SCRIPT_MAX_CHARS:
            raise ConformanceInputError([_too_big(str(p), len(data))])
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConformanceInputError([Problem(str(p), f"cannot read: {exc}")]) from exc
    return [run_script(parse_script(text, source=str(p)))]
