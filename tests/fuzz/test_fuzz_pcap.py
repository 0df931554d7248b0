"""Fuzzing the pcap reader and the capture checks: mutated captures (of a suite run and hand
built) give a trace and a pass or fail per check, or a ConformanceInputError naming the file
or the packet; nothing else. Every input that ever failed is a file in ``corpus/pcap/``,
replayed below."""

from __future__ import annotations

import re
import struct
import tempfile
from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterloom.conformance import ConformanceInputError, PacketImplementation, Status
from clusterloom.conformance.checks import by_id
from clusterloom.conformance.pcap import (
    CAPTURE_CHECKS,
    PCAP_MAX_RECORD_BYTES,
    check_capture,
    read_pcap,
    write_pcap,
)
from clusterloom.conformance.trace import Record, Trace
from clusterloom.errors import ClusterloomError
from clusterloom.sim.packet.engine import ACK, DATA, NACK

CORPUS = Path(__file__).parent / "corpus" / "pcap"
SOURCE = "fuzz.pcap"
PROFILE = settings.get_profile("clusterloom-fuzz")


def _record(t: int, where: str, kind: int, seq: int, ev: int, cum: int, sack: int) -> Record:
    return Record(
        t, where, 0, 0, kind, seq, ev, 0, -1, -1, 1024, ev % 3 == 0, False, cum, sack, -1, 0, 0,
        0, -1, (),
    )  # fmt: skip


def _hand_built_frames() -> bytes:
    """Big-endian microsecond capture: IPv6 behind an 802.1Q tag, data, a plain ACK (no SACK
    extension), a non-RoCE UDP packet and an ARP frame."""
    out = [struct.pack(">IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    macs = b"\x02\0\0\0\0\x01\x02\0\0\0\0\x02"
    src, dst = bytes(15) + b"\1", bytes(15) + b"\2"
    for k, (op, sport, dport, body) in enumerate(
        [
            (0x0A, 50000, 4791, b"\0" * 4),
            (0x0A, 50001, 4791, b"\0" * 4),
            (0x11, 50002, 4791, b"\x1f\0\0\0"),  # an ACK, without the SACK extension
            (0x0A, 50003, 53, b""),
        ]
    ):
        bth = struct.pack("!BBHBBBBI", op, 0, 0xFFFF, 0, 0, 0, 1, k)
        udp = struct.pack("!HHHH", sport, dport, 8 + len(bth + body), 0) + bth + body
        ip6 = struct.pack("!IHBB16s16s", 6 << 28 | 3 << 20, len(udp), 17, 64, src, dst)
        frame = macs + b"\x81\x00\x00\x05\x86\xdd" + ip6 + udp
        out.append(struct.pack(">IIII", k, 999_999, len(frame), len(frame)) + frame)
    arp = macs + b"\x08\x06" + b"\0" * 28
    out.append(struct.pack(">IIII", 9, 0, len(arp), len(arp)) + arp)
    return b"".join(out)


@cache
def seeds() -> tuple[bytes, ...]:
    """Valid captures: a suite run of mrc-spray at the sender and at the receiver, a
    synthetic flow with SACKs and NACKs, a hand-built big-endian IPv6 capture, an empty one."""
    with tempfile.TemporaryDirectory() as tmp:
        impl = PacketImplementation("mrc-spray")
        los02 = by_id(["LOS-02"])[0].scenarios(impl)[0]  # its drops, on a 64 KiB flow
        scenario = replace(los02, flows=(replace(los02.flows[0], nbytes=1 << 16),))
        trace = impl.run(scenario).trace
        sender = write_pcap(trace, Path(tmp) / "s.pcap").read_bytes()
        receiver = write_pcap(trace, Path(tmp) / "r.pcap", at="receiver").read_bytes()
        records = []
        for k in range(12):
            records.append(_record(10 * k, "tx", DATA, k, k % 4, 0, 0))
            kind = NACK if k == 5 else ACK
            records.append(_record(10 * k + 5, "rx", kind, k, k % 4, k + 1, 0b101))
        synthetic = write_pcap(Trace(records=records), Path(tmp) / "x.pcap").read_bytes()
    return sender, receiver, synthetic, _hand_built_frames(), synthetic[:24]


def _offsets(data: bytes) -> list[int]:
    """Offsets of the record headers, as far as they can be followed."""
    end = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    out, off = [], 24
    while off + 16 <= len(data):
        out.append(off)
        off += 16 + struct.unpack(end + "I", data[off + 8 : off + 12])[0]
    return out


LENGTHS = [0, 1, 13, 14, 17, 33, 53, 65, PCAP_MAX_RECORD_BYTES, PCAP_MAX_RECORD_BYTES + 1]
MAGICS = [b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(seeds()[draw(st.integers(0, len(seeds()) - 1))])
    for _ in range(draw(st.integers(1, 4))):
        op = draw(
            st.sampled_from(
                ["truncate", "flip", "incl", "orig", "link", "magic", "empty", "dup", "insert"]
            )
        )
        records = _offsets(bytes(data)) if len(data) >= 24 else []
        if op == "truncate":
            del data[draw(st.integers(0, len(data))) :]
        elif op == "flip" and data:
            for _ in range(draw(st.integers(1, 8))):
                at = draw(st.integers(0, len(data) - 1))
                data[at] ^= draw(st.integers(1, 255))
        elif op in ("incl", "orig") and records:
            at = draw(st.sampled_from(records)) + (8 if op == "incl" else 12)
            value = draw(st.one_of(st.sampled_from(LENGTHS), st.integers(0, 2**32 - 1)))
            data[at : at + 4] = struct.pack(draw(st.sampled_from(["<I", ">I"])), value)
        elif op == "link" and len(data) >= 24:
            data[20:24] = struct.pack("<I", draw(st.sampled_from([0, 1, 101, 2**32 - 1])))
        elif op == "magic" and len(data) >= 4:
            data[:4] = draw(st.sampled_from([*MAGICS, b"\x0a\x0d\x0d\x0a", b"\0\0\0\0"]))
        elif op == "empty":
            del data[24:]
        elif op == "dup" and records:
            at = draw(st.sampled_from(records))
            size = 16 + struct.unpack("<I", data[at + 8 : at + 12])[0]
            data[at:at] = data[at : at + size] * draw(st.integers(1, 3))
        else:
            at = draw(st.integers(0, len(data)))
            data[at:at] = draw(st.binary(min_size=1, max_size=64))
    return bytes(data)


def assert_contract(data: bytes) -> list[Status] | None:
    """Statuses of the capture checks, or None after a well-formed ConformanceInputError."""
    try:
        trace = read_pcap(data, source=SOURCE)
    except ConformanceInputError as err:
        assert err.problems
        for p in err.problems:
            assert re.fullmatch(rf"{re.escape(SOURCE)}|packet [0-9]+", p.where), p.where
            assert p.message.strip()
        return None
    except ClusterloomError as err:  # pragma: no cover - the reader raises one kind
        pytest.fail(f"{type(err).__name__} instead of ConformanceInputError: {err}")
    assert all(r.kind in (DATA, ACK, NACK) for r in trace.records)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / SOURCE
        path.write_bytes(data)
        results = check_capture(path)
    assert [r.check for r in results] == list(CAPTURE_CHECKS)
    for r in results:
        assert r.status in (Status.PASS, Status.FAIL) and r.detail
    if not any(r.kind == DATA for r in trace.records):
        assert all(r.status is Status.FAIL for r in results)
    return [r.status for r in results]


def test_seeds_are_read() -> None:
    for seed in seeds():
        assert assert_contract(seed) is not None
    assert assert_contract(seeds()[1]) == [Status.PASS] * 3  # the receiver's capture


@settings(PROFILE)
@given(mutated())
def test_mutated_captures(data: bytes) -> None:
    assert_contract(data)


@settings(PROFILE)
@given(st.binary(max_size=600))
def test_random_bytes_after_a_valid_header(data: bytes) -> None:
    assert_contract(seeds()[4] + data)


@settings(PROFILE)
@given(st.binary(max_size=200))
def test_random_bytes(data: bytes) -> None:
    assert_contract(data)


#: corpus files of the reported bugs: None for "fails every check with a reason", else the
#: problem's place and words
KNOWN: dict[str, tuple[str, str] | None] = {
    "header-only.pcap": None,  # SPR-01 divided by zero
    "incl-len-4294967295.pcap": ("packet 1", "more than any capture holds"),
}
CORPUS_FILES = sorted(p.name for p in CORPUS.iterdir() if p.is_file())


def test_corpus_holds_the_known_bugs() -> None:
    assert set(KNOWN) <= set(CORPUS_FILES)


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_corpus(name: str) -> None:
    data = (CORPUS / name).read_bytes()
    statuses = assert_contract(data)
    if name in KNOWN:
        expected = KNOWN[name]
        if expected is None:
            assert statuses == [Status.FAIL] * 3
            details = [r.detail for r in check_capture(CORPUS / name)]
            assert all("no RoCEv2 data packet" in d for d in details), details
        else:
            assert statuses is None
            with pytest.raises(ConformanceInputError) as err:
                read_pcap(data)
            [problem] = err.value.problems
            assert problem.where == expected[0] and expected[1] in problem.message
