"""No false culprits on the packet engine's telemetry (issue 23, item 3): ECMP collisions
mark and pause links all over a healthy fabric, which is its normal; a slow NIC port is still
ranked first. The detector's marking baseline against its peers' spread, tested on rates
built by hand; then ``ops synth --engine packet`` on a 128-host fat tree, end to end."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from clusterloom.ops.detect import Signal, counter_anomalies
from clusterloom.ops.fabric import OpsFabric, load_fabric, ops_fabric
from clusterloom.ops.faults import parse_fault
from clusterloom.ops.ingest import counter_rates
from clusterloom.ops.localise import localise
from clusterloom.ops.model import FaultKind
from clusterloom.ops.synth import synthesize
from clusterloom.spec import parse_spec
from helpers import FAT_TREE_K4_SPEC, half_rate_table

K8_SPEC = (
    FAT_TREE_K4_SPEC.replace("k4", "k8")
    .replace("accelerators: 16", "accelerators: 128")
    .replace("ports: 4,", "ports: 8,")
    .replace("16 hosts", "128 hosts")
)
KW = {"duration_s": 60, "interval_s": 10, "seed": 1}
T0 = 1_764_600_000_000
N_T = 6


@pytest.fixture(scope="module")
def k16() -> OpsFabric:
    return load_fabric("fat-tree-k16")


@pytest.fixture(scope="module")
def k8() -> OpsFabric:
    return ops_fabric(parse_spec(K8_SPEC, source="k8"))


def _rates(fabric: OpsFabric, ecn_ratio: np.ndarray) -> pa.Table:
    """Every interface at half its rate over ``N_T`` intervals, ECN marks at the ratio given
    per interface (of ``fabric.interface_table()``'s rows)."""
    return half_rate_table(fabric, N_T, T0, ecn_ratio=np.tile(ecn_ratio, N_T))


def _uplinks(fabric: OpsFabric) -> np.ndarray:
    """Rows of ``interface_table()`` transmitting up from a leaf (tier 2, end 0)."""
    table = fabric.interface_table()
    link = table["link"].to_numpy()
    end = table["end"].to_numpy()
    return np.flatnonzero((fabric.topology.link_tier[link] == 2) & (end == 0))


def _ecn_links(fabric: OpsFabric, ratio: np.ndarray) -> set[int]:
    found = counter_anomalies(_rates(fabric, ratio), fabric)
    return {int(a.link) for a in found if a.signal is Signal.ECN and a.link is not None}


def test_collisions_spread_over_the_fabric_are_its_normal_and_an_outlier_is_not(
    k16: OpsFabric,
) -> None:
    rows = _uplinks(k16)
    link = k16.interface_table()["link"].to_numpy()
    rng = np.random.default_rng(3)
    ratio = np.zeros(k16.interface_table().num_rows)
    marking = rng.choice(rows, size=rows.size // 4, replace=False)  # a quarter, every leaf
    ratio[marking] = rng.uniform(0.05, 0.15, marking.size)
    assert _ecn_links(k16, ratio) == set()  # within the markers' spread: collisions
    # each marker alone, the others clean, would be flagged (the floor is 1e-3): the spread
    # is what clears them
    one = np.zeros_like(ratio)
    one[marking[0]] = 0.1
    assert _ecn_links(k16, one) == {int(link[marking[0]])}
    # one uplink far beyond the markers' spread is still flagged among them
    ratio[marking[1]] = 0.95
    assert _ecn_links(k16, ratio) == {int(link[marking[1]])}


def test_marks_gathered_on_one_switch_are_not_the_normal(k16: OpsFabric) -> None:
    """As many marking uplinks as the spread case, but all of a few leaves': a hot spot of its
    own (a congested or slow device), flagged."""
    table = k16.interface_table()
    rows = _uplinks(k16)
    dev = np.asarray(table["device"].to_pylist(), dtype=object)[rows]
    leaves = sorted(set(dev.tolist()))[:2]
    mine = rows[np.isin(dev, leaves)]
    ratio = np.zeros(table.num_rows)
    ratio[mine] = 0.1
    link = table["link"].to_numpy()
    assert _ecn_links(k16, ratio) == set(link[mine].tolist())


def test_a_healthy_packet_engine_run_names_no_culprit(k8: OpsFabric) -> None:
    syn = synthesize(k8, [], engine="packet", **KW)
    marks = syn.counters.column("ecn_marks").to_numpy()
    assert marks.max() > marks.min()  # the packet engine's collisions mark: the case at hand
    loc = localise(
        k8,
        rates=counter_rates(syn.counters, k8),
        probes=syn.probes,
        collectives=syn.collectives,
    )
    assert loc.suspects == ()
    assert not loc.congestion


@pytest.mark.parametrize(
    "fault",
    ["slow-nic-port:node00045:gpu0p0@20s*rate=0.2", "slow-nic-port:node00101:gpu0p0@15s*rate=0.1"],
)
def test_a_slow_nic_port_on_the_packet_engine_is_ranked_first(k8: OpsFabric, fault: str) -> None:
    f = parse_fault(fault, k8)
    syn = synthesize(k8, [f], engine="packet", **KW)
    loc = localise(
        k8,
        rates=counter_rates(syn.counters, k8),
        probes=syn.probes,
        collectives=syn.collectives,
    )
    first = loc.suspects[0]
    assert (first.target, first.fault) == (f.target, FaultKind.SLOW_NIC_PORT)
    # nothing else is a link fault: the collisions' marks and the pauses the slow port's queue
    # sends upstream name no gray link
    assert all(s.fault is not FaultKind.GRAY_LINK for s in loc.suspects)
