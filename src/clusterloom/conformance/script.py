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
"""

from __future__ import annotations

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
_TIME = re.compile(r"^(\+)?(\d+(?:\.\d+)?)(ps|ns|us|ms)$")
_SCALE = {"ps": 1, "ns": 1_000, "us": 1_000_000, "ms": 1_000_000_000}


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
    tolerance_ps: int = 1_000_000
    lines: list[Line] = field(default_factory=list)


def _number(text: str) -> int:
    return int(text, 0)


def parse_script(text: str, *, source: str = "<script>") -> Script:
    """Parse a script; every malformed line is reported (``line N: ...``)."""
    from clusterloom.sim.packet.transports import TRANSPORTS

    problems: list[Problem] = []
    script = Script(name=Path(source).stem, title=source, transport="")
    last = 0
    for n, raw in enumerate(text.splitlines(), start=1):
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
            if len(words) < 2 or words[1] not in TRANSPORTS:
                problems.append(
                    Problem(where, f"transport must be one of {', '.join(sorted(TRANSPORTS))}")
                )
                continue
            script.transport = words[1]
            for w in words[2:]:
                k, eq, v = w.partition("=")
                try:
                    script.options[k] = float(v)
                except ValueError:
                    problems.append(Problem(where, f"option '{w}' is not NAME=NUMBER"))
                if not eq:
                    problems.append(Problem(where, f"option '{w}' is not NAME=NUMBER"))
        elif head == "flow":
            for w in words[1:]:
                k, _, v = w.partition("=")
                try:
                    if k == "bytes":
                        script.nbytes = _number(v)
                    elif k == "messages":
                        script.messages = tuple(_number(x) for x in v.split(","))
                    else:
                        problems.append(Problem(where, f"unknown flow field '{k}'"))
                except ValueError:
                    problems.append(Problem(where, f"'{w}' is not a number"))
        elif head == "side":
            if len(words) != 2 or words[1] not in ("sender", "receiver"):
                problems.append(Problem(where, "side is sender or receiver"))
            else:
                script.side = words[1]
        elif head == "tolerance":
            m = _TIME.match(words[1]) if len(words) == 2 else None
            if not m or m.group(1):
                problems.append(Problem(where, "tolerance takes one time like 1us"))
            else:
                script.tolerance_ps = round(float(m.group(2)) * _SCALE[m.group(3)])
        else:
            m = _TIME.match(head)
            if not m:
                problems.append(
                    Problem(
                        where,
                        f"'{head}' is not a time (10us, +2us) or a "
                        "directive (check, transport, flow, side, "
                        "tolerance)",
                    )
                )
                continue
            t = round(float(m.group(2)) * _SCALE[m.group(3)])
            t = last + t if m.group(1) else t
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
                            where, f"'{w}' is not FIELD=VALUE with a field of {', '.join(FIELDS)}"
                        )
                    )
                    continue
                if v == "*":
                    if words[1] == "<":
                        problems.append(Problem(where, "a wildcard cannot be injected"))
                    fields[k] = "*"
                elif re.fullmatch(r"@\d+", v):
                    fields[k] = v
                else:
                    try:
                        fields[k] = _number(v)
                    except ValueError:
                        problems.append(Problem(where, f"'{v}' is not a number, * or @K"))
            script.lines.append(Line(n, t, words[1], KIND_NAMES.index(words[2]), fields, raw))
    if not script.transport:
        problems.append(Problem(source, "no 'transport NAME' line"))
    if not any(ln.direction == ">" for ln in script.lines):
        problems.append(Problem(source, "no expected packet ('>' line)"))
    if problems:
        raise ConformanceInputError(problems)
    return script


class _Capture(PacketSim):
    """The engine with the network cut off: what the connection sends is recorded."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.sent: list[tuple[int, Packet]] = []
        self.first_ev: dict[int, int] = {}

    def send(self, pkt: Packet, port: int, ev: int, *, source_route: bool = False) -> bool:
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
    if script.side == "sender":
        conn.start()
    end = max(ln.time_ps for ln in script.lines) + script.tolerance_ps
    try:
        sim.run(end)
    except Exception as exc:  # the implementation under test crashed
        return result(False, f"implementation crashed: {type(exc).__name__}: {exc}")
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
            return result(False, f"{want}: got {_describe(pkt)} at {t / 1e6:g} us")
        for f, v in line.fields.items():
            if v == "*":
                continue
            got = getattr(pkt, f)
            if int(got) != value(v, line):
                return result(False, f"{want}: {f}={int(got)} in {_describe(pkt)}")
        if abs(t - line.time_ps) > script.tolerance_ps:
            return result(
                False,
                f"{want}: sent at {t / 1e6:g} us, expected at "
                f"{line.time_ps / 1e6:g} us ± {script.tolerance_ps / 1e6:g}",
            )
    if k < len(sent):
        t, pkt = sent[k]
        return result(False, f"unexpected {_describe(pkt)} at {t / 1e6:g} us")
    return result(
        True,
        f"{sum(ln.direction == '>' for ln in script.lines)} expected packets "
        "matched, nothing else sent",
    )


def run_script_file(path: Path | str) -> list[CheckResult]:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConformanceInputError([Problem(str(p), f"cannot read: {exc}")]) from exc
    return [run_script(parse_script(text, source=str(p)))]
