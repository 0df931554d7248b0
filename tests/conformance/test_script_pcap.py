"""The scripted driver (packetdrill-like timelines) and the capture checker."""

from __future__ import annotations

import struct
from importlib import resources
from pathlib import Path

import pytest

from clusterloom.conformance import ConformanceInputError, PacketImplementation, Status
from clusterloom.conformance.checks import by_id
from clusterloom.conformance.pcap import check_capture, read_pcap, write_pcap
from clusterloom.conformance.script import parse_script, run_script, run_script_file

SCRIPTS = sorted(
    p.name
    for p in resources.files("clusterloom.conformance").joinpath("scripts").iterdir()
    if p.name.endswith(".pkt")
)


@pytest.mark.parametrize("name", SCRIPTS)
def test_builtin_scripts_pass(name: str) -> None:
    path = resources.files("clusterloom.conformance").joinpath("scripts", name)
    [result] = run_script_file(Path(str(path)))
    assert result.status is Status.PASS, result.detail


def test_a_wrong_expectation_fails_with_its_line() -> None:
    text = """transport roce-ecmp ack_every=1
flow bytes=16384
side receiver
1us < data seq=0
1us > ack cum=2
"""
    result = run_script(parse_script(text, source="t.pkt"))
    assert result.status is Status.FAIL and "line 5" in result.detail and "cum=1" in result.detail


def test_unexpected_packet_fails() -> None:
    text = """transport roce-ecmp ack_every=1
side receiver
1us < data seq=0
1us > ack cum=1
2us < data seq=2
2us < data seq=3
3us > ack cum=*
"""
    result = run_script(parse_script(text))
    assert result.status is Status.FAIL and "nack" in result.detail


def test_wildcards_and_relative_times() -> None:
    text = """transport mrc-spray evs=2
flow bytes=8192
0us > data seq=0 ev=*
+0us > data seq=* ev=@1
"""
    assert run_script(parse_script(text)).status is Status.PASS


def test_malformed_lines_reported_with_numbers() -> None:
    text = """transport nosuch
flow bytes=abc
10xs > data
5us ? data
5us > datum seq=1
5us < ack seq=*
4us > ack bogus=1
"""
    with pytest.raises(ConformanceInputError) as info:
        parse_script(text, source="bad.pkt")
    where = [p.where for p in info.value.problems]
    assert where == [f"bad.pkt: line {n}" for n in (1, 2, 3, 4, 5, 6, 7, 7)] + ["bad.pkt"]


def _capture(tmp_path: Path, impl: PacketImplementation, check: str, at: str = "sender") -> Path:
    scenario = by_id([check])[0].scenarios(impl)[0]
    out = impl.run(scenario)
    return write_pcap(out.trace, tmp_path / f"{impl.name}-{at}.pcap", at=at)


def test_capture_of_a_sprayer_passes(tmp_path: Path) -> None:
    path = _capture(tmp_path, PacketImplementation("mrc-spray"), "LOS-02")
    trace = read_pcap(path.read_bytes())
    assert sum(r.kind == 0 for r in trace.records) > 0
    results = check_capture(path, by_id(["SPR-01", "ORD-01"]))
    assert [(r.check, r.status) for r in results] == [
        ("SPR-01", Status.PASS),
        ("ORD-01", Status.PASS),
    ]
    # SACKs are judged at the receiver, where the capture sees what really arrived
    at_receiver = _capture(tmp_path, PacketImplementation("mrc-spray"), "LOS-02", "receiver")
    [sack] = check_capture(at_receiver, by_id(["LOS-02"]))
    assert sack.status is Status.PASS, sack.detail


def test_capture_of_go_back_n_fails_ord01(tmp_path: Path) -> None:
    from test_conformance_suite import GoBackNSpray

    path = _capture(tmp_path, PacketImplementation(GoBackNSpray), "LOS-01")
    [result] = check_capture(path, by_id(["ORD-01"]))
    assert result.status is Status.FAIL


def test_malformed_capture_names_the_packet(tmp_path: Path) -> None:
    path = _capture(tmp_path, PacketImplementation("mrc-spray"), "LOS-06")
    data = path.read_bytes()
    # cut the third record's frame short
    off = 24
    for _ in range(2):
        incl = struct.unpack("<I", data[off + 8 : off + 12])[0]
        off += 16 + incl
    broken = data[: off + 16 + 10]
    with pytest.raises(ConformanceInputError, match="packet 3"):
        read_pcap(broken)
    with pytest.raises(ConformanceInputError, match="not a classic pcap"):
        read_pcap(b"\x0a\x0d\x0d\x0a" + b"\0" * 40)
