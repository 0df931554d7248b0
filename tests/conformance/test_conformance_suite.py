"""Every transport passes the checks that apply to it; a deliberately broken variant of each
fails the check written for that fault; a crash is a failed check; bad implementations are
refused."""

from __future__ import annotations

from typing import ClassVar

import pytest

from clusterloom.conformance import (
    CHECKS,
    ConformanceInputError,
    PacketImplementation,
    Status,
    junit_xml,
    run_suite,
)
from clusterloom.conformance.checks import by_id
from clusterloom.sim.packet.engine import DATA, NACK, Packet
from clusterloom.sim.packet.transports import (
    MetaRoce,
    MrcSpray,
    ReceiverDriven,
    RoceEcmp,
)


@pytest.mark.parametrize("name", ["roce-ecmp", "mrc-spray", "metaroce", "receiver-driven"])
def test_transport_passes_its_applicable_checks(name: str) -> None:
    results = run_suite(PacketImplementation(name))
    failed = [(r.check, r.detail) for r in results if r.status is Status.FAIL]
    assert failed == []
    applicable = [r for r in results if r.status is not Status.NA]
    assert len(applicable) >= 8


def test_catalogue_ids_unique_and_complete() -> None:
    ids = [c.id for c in CHECKS]
    assert len(ids) == len(set(ids)) >= 25
    groups = {c.group for c in CHECKS}
    assert groups == {
        "spraying",
        "ordering",
        "loss recovery",
        "congestion control",
        "receiver-driven",
        "failure handling",
        "isolation",
    }
    for c in CHECKS:
        assert c.purpose and c.setup and c.procedure and c.observable


# -- broken variants -----------------------------------------------------------------------


class GoBackNSpray(MrcSpray):
    """A sprayer that goes back N on a loss instead of resending the lost packet."""

    name: ClassVar[str] = "mrc-go-back-n"

    def _lost(self, s: int) -> None:
        if self.acked[s]:
            return
        for t in range(s, self.nxt):
            if self.outstanding[t]:
                self.outstanding[t] = 0
                self.inflight -= self.pay[t]
            self.rtx.append(t)

    def _next_seq(self) -> int:  # ignores what SACKs said: resends acknowledged data too
        while self.rtx:
            s = self.rtx[0]
            if self.outstanding[s]:
                self.rtx.popleft()
                continue
            return s
        return self.nxt if self.nxt < self.n else -1


class WindowOverrun(MetaRoce):
    """Sends one packet more than each path's window allows."""

    name: ClassVar[str] = "metaroce-overrun"

    def _pick(self, size: int) -> int:
        p = self.p
        i = self.rr
        for _ in range(p):
            i = i + 1 if i + 1 < p else 0
            if not self.pfailed[i] and self.pin[i] <= self.pwin[i]:
                self.rr = i
                return i
        return -1


class GreedyPull(ReceiverDriven):
    """Sends two packets per pull."""

    name: ClassVar[str] = "receiver-driven-greedy"

    def sender_packet(self, pkt: Packet, now: int) -> None:
        super().sender_packet(pkt, now)
        if pkt.kind == 3:  # PULL
            self.send_one(now)


class DoubleCompletion(RoceEcmp):
    """Completes a message again when its last packet arrives twice."""

    name: ClassVar[str] = "roce-double-completion"

    def receiver_packet(self, pkt: Packet, now: int) -> None:
        if pkt.kind == DATA and pkt.seq < self.cum and pkt.seq + 1 in self.msg_end:
            self.event("complete", self.msg_end.index(pkt.seq + 1))
        super().receiver_packet(pkt, now)


class TrimBlamesPath(MrcSpray):
    """Treats a trim as a path failure."""

    name: ClassVar[str] = "mrc-trim-fails-path"

    def sender_packet(self, pkt: Packet, now: int) -> None:
        if pkt.kind == NACK:
            i = self.ev_index.get(pkt.echo, -1)
            if i >= 0:
                self._ev_timeout(i, now)
        super().sender_packet(pkt, now)


@pytest.mark.parametrize(
    ("cls", "check"),
    [
        (GoBackNSpray, "LOS-01"),
        (GoBackNSpray, "ORD-01"),
        (WindowOverrun, "CC-01"),
        (GreedyPull, "RCV-01"),
        (DoubleCompletion, "ORD-03"),
        (TrimBlamesPath, "LOS-03"),
    ],
)
def test_broken_variant_fails_the_right_check(cls: type, check: str) -> None:
    [result] = run_suite(PacketImplementation(cls), by_id([check]))
    assert result.status is Status.FAIL, result.detail


def test_a_crash_is_a_failed_check_not_a_crash_of_the_suite() -> None:
    class Crashing(MrcSpray):
        name: ClassVar[str] = "crashing"

        def receiver_packet(self, pkt: Packet, now: int) -> None:
            if pkt.seq == 3:
                raise ZeroDivisionError("boom")
            super().receiver_packet(pkt, now)

    [result] = run_suite(PacketImplementation(Crashing), by_id(["LOS-06"]))
    assert result.status is Status.FAIL and "ZeroDivisionError: boom" in result.detail


def test_missing_method_and_unknown_feature_refused() -> None:
    class NoRun:
        name = "x"
        features = frozenset({"spray"})

    with pytest.raises(ConformanceInputError, match="'run'"):
        run_suite(NoRun())  # type: ignore[arg-type]

    class Odd:
        name = "y"
        features = frozenset({"teleport"})
        parameters: ClassVar[dict[str, float]] = {}

        def run(self, scenario: object) -> None:
            return None

    with pytest.raises(ConformanceInputError, match="teleport"):
        run_suite(Odd())  # type: ignore[arg-type]


def test_not_applicable_and_junit() -> None:
    results = run_suite(PacketImplementation("roce-ecmp"), by_id(["SPR-01", "ORD-04"]))
    assert [r.status for r in results] == [Status.NA, Status.PASS]
    xml = junit_xml(results)
    assert 'tests="2"' in xml and 'skipped="1"' in xml and "<skipped" in xml
    import xml.etree.ElementTree as ET

    ET.fromstring(xml.split("\n", 1)[1])
