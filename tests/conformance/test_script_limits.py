"""Hostile conformance scripts: every number the run allocates, loops or waits on is bounded
(``conformance.script`` module docstring, "Input limits") and refused with its line named; a
connection that keeps the run busy is stopped and fails the script."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest

from clusterloom.conformance import ConformanceInputError, Status
from clusterloom.conformance import script as script_module
from clusterloom.conformance.script import (
    SCRIPT_MAX_CHARS,
    SCRIPT_MAX_LINES,
    SCRIPT_MAX_SENT,
    parse_script,
    run_script,
    run_script_file,
)
from clusterloom.sim.packet import transports
from clusterloom.sim.packet.base import Connection
from clusterloom.sim.packet.engine import Packet

HEAD = "transport mrc-spray evs=4\nflow bytes=16384\n"
EXPECT = "0us > data seq=0\n"


def _problem(text: str, line: int) -> str:
    """The messages of ``line``; fails unless the script is refused with that line named."""
    with pytest.raises(ConformanceInputError) as err:
        parse_script(text, source="s.pkt")
    by_line: dict[str, list[str]] = {}
    for p in err.value.problems:
        by_line.setdefault(p.where, []).append(p.message)
    assert f"s.pkt: line {line}" in by_line, by_line
    return " | ".join(by_line[f"s.pkt: line {line}"])


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        # times: float overflow (used to raise OverflowError), past the bound, relative sums
        (HEAD + "9" * 400 + "us > data seq=0\n", 3, "past 1000000us"),
        (HEAD + "1000001us > data seq=0\n", 3, "past 1000000us"),
        (HEAD + "600ms > data seq=0\n+600ms > data seq=1\n", 4, "'+600ms' is past"),
        (HEAD + "tolerance 2000ms\n" + EXPECT, 3, "at most 1000000us"),
        (HEAD + "tolerance " + "9" * 400 + "us\n" + EXPECT, 3, "at most 1000000us"),
        (HEAD + "\u0663us > data seq=0\n", 3, "is not a time"),
        # the flow: bytes and messages allocate one entry per packet
        ("transport mrc-spray\nflow bytes=67108865\n" + EXPECT, 2, "out of range"),
        ("transport mrc-spray\nflow bytes=" + "9" * 5000 + "\n" + EXPECT, 2, "too long"),
        ("transport mrc-spray\nflow bytes=-1\n" + EXPECT, 2, "out of range"),
        ("transport mrc-spray\nflow messages=" + "1," * 5000 + "1\n" + EXPECT, 2, "5001 messages"),
        # packet fields: the header width (pseq=2**40 made the receiver build a 2**40-bit int)
        (HEAD + "0us > data seq=16777216\n", 3, "seq: '16777216' is out of range"),
        (HEAD + "0us < data pseq=1099511627776\n" + EXPECT, 3, "pseq"),
        (HEAD + f"0us < ack sack={2**256}\n" + EXPECT, 3, "sack"),
        (HEAD + "0us < data payload=70000\n" + EXPECT, 3, "payload"),
        (HEAD + "0us < data ecn=2\n" + EXPECT, 3, "expected 0..1"),
        (HEAD + "0us < ack seq=" + "9" * 5000 + "\n" + EXPECT, 3, "too long"),
        (HEAD + "0us < ack echo=@" + "9" * 5000 + "\n" + EXPECT, 3, "echo=@K"),
        (HEAD + "0us < ack echo=@16777216\n" + EXPECT, 3, "echo=@K"),
        (HEAD + "0us < ack echo=@\n" + EXPECT, 3, "echo=@K"),
        # transport options: loops (a zero timer period) and allocations (evs)
        ("transport mrc-spray evs=1e9\n" + EXPECT, 1, "evs=1e9"),
        ("transport mrc-spray rto_us=0\n" + EXPECT, 1, "1..1e+06"),
        ("transport roce-ecmp timer_us=0.0000001\n" + EXPECT, 1, "timer_us"),
        ("transport roce-ecmp retries=1000000000\n" + EXPECT, 1, "whole number in 0..64"),
        ("transport roce-ecmp retries=2.5\n" + EXPECT, 1, "whole number"),
        ("transport mrc-spray cwnd_bdp=-1\n" + EXPECT, 1, "cwnd_bdp"),
        ("transport mrc-spray evs=nan\n" + EXPECT, 1, "finite"),
        ("transport mrc-spray rto_us=inf\n" + EXPECT, 1, "finite"),
        ("transport mrc-spray colour=1e400\n" + EXPECT, 1, "finite"),
    ],
)
def test_out_of_range_numbers_name_their_line(text: str, line: int, words: str) -> None:
    assert words in _problem(text, line)


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("transport roce-ecmp\ntransport mrc-spray\n" + EXPECT, 2, "given twice (first on line 1)"),
        ("transport mrc-spray ack_every=1\n" + EXPECT, 1, "not one of mrc-spray's: evs,"),
        ("transport mrc-spray\nflow messages=1,2\n" + EXPECT, 2, "messages sum to 3, not"),
    ],
)
def test_what_the_transport_would_refuse_names_its_line(text: str, line: int, words: str) -> None:
    """These were refused only when the run began, naming no line."""
    assert words in _problem(text, line)


def test_the_bounds_themselves_are_accepted() -> None:
    s = parse_script(
        "transport mrc-spray evs=256 rto_us=1 retries=64\n"
        "flow bytes=67108864\ntolerance 1000000us\n"
        f"0us < ack sack=0b{'1' * 256} pseq=16777215 echo=@16777215\n"
        "500ms < ack seq=1\n+500ms > data seq=16777215 ev=4294967295 payload=65535\n"
    )
    assert s.nbytes == 2**26 and s.tolerance_ps == 10**12
    assert s.options == {"evs": 256.0, "rto_us": 1.0, "retries": 64.0}
    assert [ln.time_ps for ln in s.lines] == [0, 5 * 10**11, 10**12]
    assert s.lines[0].fields == {"sack": 2**256 - 1, "pseq": 2**24 - 1, "echo": "@16777215"}


def test_too_many_lines_are_refused() -> None:
    text = HEAD + EXPECT + "\n" * SCRIPT_MAX_LINES
    [problem] = _problems(text)
    assert problem == (
        f"s.pkt: line {SCRIPT_MAX_LINES + 1}",
        f"more than {SCRIPT_MAX_LINES} lines: split the script into several",
    )
    parse_script(HEAD + EXPECT + "\n" * (SCRIPT_MAX_LINES - 3))  # exactly the limit


def _problems(text: str) -> list[tuple[str, str]]:
    with pytest.raises(ConformanceInputError) as err:
        parse_script(text, source="s.pkt")
    return [(p.where, p.message) for p in err.value.problems]


def test_an_oversized_script_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "huge.pkt"
    with path.open("wb") as fh:  # sparse: takes no disk
        fh.truncate(SCRIPT_MAX_CHARS + 1)
    with pytest.raises(ConformanceInputError) as err:
        run_script_file(path)
    [problem] = err.value.problems
    assert problem.where == str(path) and "1 MiB limit" in problem.message
    with pytest.raises(ConformanceInputError, match="over the 1 MiB limit"):
        parse_script(HEAD + EXPECT + "#" * SCRIPT_MAX_CHARS)


class _Busy(Connection):
    """A broken transport: its timer fires again at the same instant, forever."""

    name = "busy"
    defaults: ClassVar[dict[str, float]] = {}

    def start(self) -> None:
        self.sim.timer(0, self.flow, 0)

    def on_timer(self, token: int, now: int) -> None:
        self.sim.timer(now, self.flow, 0)

    def sender_packet(self, pkt: Packet, now: int) -> None:
        pass

    def receiver_packet(self, pkt: Packet, now: int) -> None:
        pass


class _Crashes(_Busy):
    def start(self) -> None:
        raise RuntimeError("boom")


def test_an_endless_timer_loop_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(transports.TRANSPORTS, "busy", _Busy)
    monkeypatch.setattr(script_module, "SCRIPT_MAX_EVENTS", 2**14)
    result = run_script(parse_script("transport busy\n5us > data seq=0\n"))
    assert result.status is Status.FAIL
    assert result.detail.startswith("stopped after 16384 events at 0 us of 6 us")


def test_a_flood_of_packets_is_stopped() -> None:
    """receiver-driven resends every outstanding packet on each timeout: 16,384 packets of a
    64 MiB flow every microsecond used to take minutes and gigabytes."""
    text = (
        "transport receiver-driven rto_us=1 retries=64 iw_bdp=1000\nflow bytes=67108864\n"
        "tolerance 1000000us\n1000000us > data seq=0\n"
    )
    result = run_script(parse_script(text))
    assert result.status is Status.FAIL
    assert f"sent more than {SCRIPT_MAX_SENT} packets (the script expects 1)" in result.detail


def test_a_crash_when_starting_is_a_failed_script(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(transports.TRANSPORTS, "crashes", _Crashes)
    result = run_script(parse_script("transport crashes\n0us > data seq=0\n"))
    assert result.status is Status.FAIL
    assert result.detail == "implementation crashed: RuntimeError: boom"
