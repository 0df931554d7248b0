"""A dead EV localised from the packet engine's telemetry (issue 23, item 3): a black hole
(drops at one output port, no FEC errors, no wire loss) told from a gray link, and a dead
EV's bucket scored as one (``ops.evaluate.same_bucket``)."""

from __future__ import annotations

import numpy as np
import pytest

from clusterloom.ops.evaluate import matches, same_bucket, small_design
from clusterloom.ops.fabric import OpsFabric
from clusterloom.ops.faults import random_fault
from clusterloom.ops.ingest import counter_rates
from clusterloom.ops.localise import localise
from clusterloom.ops.model import Fault, FaultKind, Suspect, SuspectKind
from clusterloom.ops.synth import synthesize


@pytest.fixture(scope="module")
def k8() -> OpsFabric:
    return small_design("fat-tree-k8")


def _incident(fabric: OpsFabric, kind: FaultKind, i: int) -> tuple[Fault, tuple[Suspect, ...]]:
    """Incident ``i`` of ``kind`` as ``ops.evaluate.evaluate`` draws it (seed 0, ten
    traffics), on the packet engine, localised."""
    rng = np.random.default_rng([0, list(FaultKind).index(kind), i])
    fault = random_fault(fabric, kind, rng, duration_ms=60_000)
    syn = synthesize(
        fabric,
        [fault],
        duration_s=60.0,
        interval_s=10.0,
        seed=int(rng.integers(2**31)),
        engine="packet",
        traffic_seed=i % 10,
    )
    truth = syn.truth[0] if syn.truth else fault
    rates = counter_rates(syn.counters, fabric)
    loc = localise(fabric, rates=rates, probes=syn.probes, collectives=syn.collectives)
    return truth, loc.suspects


def test_a_dead_ev_is_placed_on_the_switch_whose_port_drops(k8: OpsFabric) -> None:
    """Incident 6: spine0012's uplink bucket toward core0002 black-holes EV 49155 (and the
    EVs hashed with it). The same EVs leave spine0012 alive downwards (another hash), so
    without the port's drops every dead probe pointed at core0002, the next switch, named
    first (a wrong switch); the port dropping with a clean wire says which switch it is.
    Its drops are then weak evidence of a gray link."""
    truth, suspects = _incident(k8, FaultKind.DEAD_EV, 6)
    assert truth.target == "be-p0-spine0012#49155"
    first = suspects[0]
    assert first.kind is SuspectKind.EV and first.target.startswith("be-p0-spine0012#")
    assert matches(k8, truth, first)
    assert not any(s.target.startswith("be-p0-core0002#") for s in suspects)
    gray = [s for s in suspects if s.kind is SuspectKind.LINK]
    assert gray and all(s.confidence < 0.5 for s in gray)
    assert any("black hole" in e for s in gray for e in s.evidence)
    assert "output port with a clean wire" in first.evidence[0]


def test_a_gray_link_losing_on_the_wire_is_not_a_black_hole(k8: OpsFabric) -> None:
    """A lossy wire shows FEC errors at its receiver: its drops keep their full weight and
    the gray link is first (incident 3 of the packet gray-link evaluation: 0.5% lost)."""
    truth, suspects = _incident(k8, FaultKind.GRAY_LINK, 3)
    assert truth.loss > 0
    assert matches(k8, truth, suspects[0]) and suspects[0].fault is FaultKind.GRAY_LINK
    assert not any("black hole" in e for e in suspects[0].evidence)


def test_same_bucket_is_one_entry_of_the_switch_table(k8: OpsFabric) -> None:
    sw = "be-p0-spine0012"
    assert same_bucket(k8, f"{sw}#49155", f"{sw}#49155")
    assert not same_bucket(k8, f"{sw}#49155", "be-p0-spine0013#49155")  # another switch
    assert not same_bucket(k8, "a:1>b:1#5", "a:1>b:1#6")  # a pair's EV is matched exactly
    assert not same_bucket(k8, f"{sw}#49155", f"{sw}#x")
    evs = range(40_000, 44_096)
    hit = [same_bucket(k8, f"{sw}#49155", f"{sw}#{e}") for e in evs]
    # near or far seed: 1 - (63/64)^2 = 3.1% of EVs share one of the two entries
    share = sum(hit) / len(hit)
    assert 0.022 < share < 0.041
    for e in [e for e, h in zip(evs, hit, strict=True) if h][:20]:  # symmetric
        assert same_bucket(k8, f"{sw}#{e}", f"{sw}#49155")
    # a suspect of another kind naming the switch is not the dead EV
    truth = Fault(FaultKind.DEAD_EV, f"{sw}#49155", 0)
    assert not matches(k8, truth, Suspect(SuspectKind.DEVICE, sw, 1.0, FaultKind.DEAD_EV))
