"""Anomaly detection on counters (as rates) and collectives: robust statistics, each signal
found where it was put and nowhere else, a clean fabric quiet."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterloom.errors import SpecError
from clusterloom.ops import COLLECTIVE_SCHEMA, RATE_SCHEMA, load_fabric
from clusterloom.ops.detect import (
    Signal,
    collective_anomalies,
    counter_anomalies,
    group_median,
    robust,
)

T0 = 1_764_600_000_000
N_T = 6


@pytest.fixture(scope="module")
def fabric():  # type: ignore[no-untyped-def]
    return load_fabric("fat-tree-k16")


@dataclass
class Rates:
    """A healthy fabric's rates over ``N_T`` 10-s intervals (utilisation 0.45-0.55 per
    interface, a little noise per interval), with columns to break."""

    fabric: object
    seed: int = 0
    cols: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        table = self.fabric.interface_table()  # type: ignore[attr-defined]
        rng = np.random.default_rng(self.seed)
        n = table.num_rows
        self.n = n
        self.dev = np.tile(np.asarray(table["device"].to_pylist(), dtype=object), N_T)
        self.ifs = np.tile(np.asarray(table["interface"].to_pylist(), dtype=object), N_T)
        self.link = np.tile(table["link"].to_numpy(), N_T)
        self.end = np.tile(table["end"].to_numpy(), N_T)
        cap = np.tile(table["capacity_bps"].to_numpy().astype(float), N_T)
        self.cap = cap
        base = np.tile(rng.uniform(0.45, 0.55, n), N_T)
        util = base * (1 + rng.normal(0, 0.01, n * N_T))
        self.t = np.repeat(np.arange(N_T), n)
        self.cols = {
            "tx_bps": util * cap,
            "rx_bps": util * cap,
            "tx_pps": util * cap / 8 / 4096,
            "rx_pps": util * cap / 8 / 4096,
            "drops_ps": np.zeros(n * N_T),
            "ecn_ps": np.zeros(n * N_T),
            "pfc_ps": np.zeros(n * N_T),
            "fec_corrected_ps": np.zeros(n * N_T),
            "fec_uncorrected_ps": np.zeros(n * N_T),
            "up": np.ones(n * N_T),
            "flaps": np.zeros(n * N_T, dtype=np.int32),
            "speed_bps": cap.copy(),  # every port at its design speed
        }

    def rows(self, link: int, end: int | None = None, t: slice = slice(None)) -> np.ndarray:
        sel = self.link == link
        if end is not None:
            sel &= self.end == end
        tt = np.zeros(N_T, dtype=bool)
        tt[t] = True
        return np.flatnonzero(sel & tt[self.t])

    def table(self) -> pa.Table:
        return pa.table(
            {
                "ts_ms": T0 + (self.t + 1) * 10_000,
                "device": self.dev.tolist(),
                "interface": self.ifs.tolist(),
                "link": self.link,
                "end": self.end.astype(np.int8),
                "seconds": np.full(self.t.size, 10.0),
                **self.cols,
            },
            schema=RATE_SCHEMA,
        )


def _links(fabric, tier: int) -> np.ndarray:  # type: ignore[no-untyped-def]
    return np.flatnonzero(fabric.topology.link_tier == tier)


def test_group_median_and_mad_are_numpys_per_group() -> None:
    g = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    x = np.array([3.0, 1.0, 2.0, 10.0, 20.0, 1.0, 1.0, 1.0, 100.0])
    assert group_median(g, x, 4)[:3].tolist() == [2.0, 15.0, 1.0]
    assert np.isnan(group_median(g, x, 4)[3])
    med, scale, size = robust(g, x, 3)
    assert med.tolist() == [2.0, 15.0, 1.0]
    assert scale[2] == 0.0  # one outlier of four moves neither the median nor the MAD
    assert size.tolist() == [3, 2, 4]
    assert scale[0] == pytest.approx(1.4826 * 1.0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.floats(-1e6, 1e6)), min_size=1, max_size=60))
def test_group_median_matches_numpy(pairs: list[tuple[int, float]]) -> None:
    g = np.array([p[0] for p in pairs], dtype=np.int64)
    x = np.array([p[1] for p in pairs])
    got = group_median(g, x, 5)
    for k in range(5):
        if (g == k).any():
            assert got[k] == pytest.approx(np.median(x[g == k]))
        else:
            assert np.isnan(got[k])


def test_a_healthy_fabric_has_no_anomaly(fabric) -> None:  # type: ignore[no-untyped-def]
    assert counter_anomalies(Rates(fabric).table(), fabric) == ()


def test_each_fault_signal_is_found_at_its_interface_only(fabric) -> None:  # type: ignore[no-untyped-def]
    r = Rates(fabric, seed=1)
    up2, up3, host = _links(fabric, 2), _links(fabric, 3), _links(fabric, 1)
    fec_link, drop_link, flap_link, dead_link, slow = up2[5], up3[40], up2[300], up3[7], host[77]
    r.cols["fec_uncorrected_ps"][r.rows(fec_link, 1)] = 50.0
    r.cols["drops_ps"][r.rows(drop_link, 0)] = 1e-3 * r.cols["tx_pps"][r.rows(drop_link, 0)]
    rows = r.rows(flap_link, t=slice(2, 4))
    r.cols["flaps"][rows] = 2
    r.cols["up"][rows] = 0.6
    rows = r.rows(dead_link, t=slice(3, None))
    r.cols["up"][rows] = 0.0
    r.cols["flaps"][r.rows(dead_link, t=slice(3, 4))] = 1
    r.cols["tx_bps"][r.rows(slow, 0)] *= 0.3
    got = {(a.signal, a.link) for a in counter_anomalies(r.table(), fabric)}
    assert (Signal.FEC, int(fec_link)) in got
    assert (Signal.DROPS, int(drop_link)) in got
    assert (Signal.FLAPS, int(flap_link)) in got
    assert (Signal.DOWN, int(dead_link)) in got
    assert (Signal.LOW_RATE, int(slow)) in got
    faulty = {int(x) for x in (fec_link, drop_link, flap_link, dead_link, slow)}
    assert {link for _, link in got} <= faulty  # nothing elsewhere


def test_a_down_link_is_dated_from_its_first_down_interval(fabric) -> None:  # type: ignore[no-untyped-def]
    r = Rates(fabric, seed=2)
    link = int(_links(fabric, 2)[9])
    r.cols["up"][r.rows(link, t=slice(3, None))] = 0.0
    r.cols["flaps"][r.rows(link, t=slice(3, 4))] = 1
    down = [a for a in counter_anomalies(r.table(), fabric) if a.signal is Signal.DOWN]
    assert {a.link for a in down} == {link}
    assert {a.first_ms for a in down} == {T0 + 4 * 10_000}
    assert {a.last_ms for a in down} == {T0 + N_T * 10_000}


def test_a_switch_sending_most_to_one_uplink_is_skewed(fabric) -> None:  # type: ignore[no-untyped-def]
    r = Rates(fabric, seed=3)
    t = fabric.topology
    leaf = int(t.link_src[_links(fabric, 2)[0]])
    ups = np.flatnonzero((t.link_src == leaf) & (t.link_tier == 2))
    for k, u in enumerate(ups):
        r.cols["tx_bps"][r.rows(int(u), 0)] *= 4.0 if k == 2 else 0.3
    skew = [a for a in counter_anomalies(r.table(), fabric) if a.signal is Signal.SKEW]
    assert [a.where for a in skew] == [str(fabric.names.device(np.array([leaf]))[0])]
    assert skew[0].link == int(ups[2])


def test_load_shows_as_hot_and_ecn_not_as_a_fault(fabric) -> None:  # type: ignore[no-untyped-def]
    r = Rates(fabric, seed=4)
    t = fabric.topology
    spine = int(t.link_dst[_links(fabric, 2)[0]])
    mine = np.flatnonzero((t.link_dst == spine) | (t.link_src == spine))
    for link in mine:
        rows = r.rows(int(link))
        r.cols["tx_bps"][rows] = 0.97 * r.cap[rows]
        r.cols["ecn_ps"][rows] = 0.05 * r.cols["tx_pps"][rows]
    found = counter_anomalies(r.table(), fabric)
    assert {a.signal for a in found} <= {Signal.HOT, Signal.ECN, Signal.SKEW, Signal.HOT_SWITCH}
    spine_name = str(fabric.names.device(np.array([spine]))[0])
    assert [a.where for a in found if a.signal is Signal.HOT_SWITCH] == [spine_name]
    assert {a.link for a in found if a.signal is Signal.ECN} <= set(mine.tolist())
    assert len({a.link for a in found if a.signal is Signal.HOT}) >= len(mine) // 2


def test_rates_naming_links_outside_the_design_are_refused(fabric) -> None:  # type: ignore[no-untyped-def]
    table = Rates(fabric).table()
    bad = table.set_column(3, "link", pa.array(np.full(table.num_rows, 10**7), pa.int64()))
    with pytest.raises(SpecError, match="not in design"):
        counter_anomalies(bad, fabric)
    with pytest.raises(SpecError, match="missing column"):
        counter_anomalies(table.drop_columns(["up"]), fabric)


def _collectives(ranks: int = 32, steps: int = 10, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    rank = np.tile(np.arange(ranks), steps)
    step = np.repeat(np.arange(steps), ranks)
    dur = 1000.0 * (1 + rng.normal(0, 0.005, rank.size))
    return {"rank": rank, "step": step, "duration_us": dur}


def _table(c: dict[str, np.ndarray]) -> pa.Table:
    n = c["rank"].size
    return pa.table(
        {
            "ts_ms": T0 + c["step"] * 1000,
            "job": ["job0"] * n,
            "step": c["step"],
            "rank": c["rank"].astype(np.int32),
            "device": [f"node{r // 8:05d}" for r in c["rank"].tolist()],
            "collective": ["allreduce"] * n,
            "duration_us": c["duration_us"],
        },
        schema=COLLECTIVE_SCHEMA,
    )


def test_a_rank_late_in_most_steps_is_a_straggler_and_a_slow_step_is_every_rank() -> None:
    c = _collectives()
    late = (c["rank"] == 13) & (c["step"] % 5 != 0)  # 8 of 10 steps
    c["duration_us"][late] *= 0.7  # it arrives late: waits less than its peers
    c["duration_us"][c["step"] == 6] *= 2.0  # every rank slow in step 6
    found = collective_anomalies(_table(c))
    stragglers = [a for a in found if a.signal is Signal.STRAGGLER]
    assert [a.where for a in stragglers] == ["rank:13"]
    assert stragglers[0].device == "node00001" and "shorter" in stragglers[0].note
    assert stragglers[0].intervals == 8
    assert [a.where for a in found if a.signal is Signal.SLOW_STEP] == ["job0:6"]


def test_a_rank_late_in_few_steps_is_no_straggler() -> None:
    c = _collectives(seed=1)
    c["duration_us"][(c["rank"] == 3) & (c["step"] < 3)] *= 1.5  # 3 of 10 steps
    assert [a for a in collective_anomalies(_table(c)) if a.signal is Signal.STRAGGLER] == []
    assert collective_anomalies(_table(_collectives(seed=2))) == ()


# -- from counter anomalies to suspects (``localise`` on rates alone) ------------------------


def _first(fabric, r: Rates, collectives: pa.Table | None = None):  # type: ignore[no-untyped-def]
    from clusterloom.ops.localise import localise

    loc = localise(fabric, rates=r.table(), collectives=collectives)
    assert loc.suspects, "nothing suspected"
    return loc, loc.suspects[0]


def test_counter_faults_become_suspects_of_their_kind(fabric) -> None:  # type: ignore[no-untyped-def]
    from clusterloom.ops import FaultKind, SuspectKind

    up2, host = _links(fabric, 2), _links(fabric, 1)
    cases = []
    r = Rates(fabric, seed=5)
    r.cols["fec_uncorrected_ps"][r.rows(up2[11], 0)] = 20.0
    cases.append((r, SuspectKind.LINK, fabric.link_label(up2[11]), FaultKind.GRAY_LINK))
    r = Rates(fabric, seed=6)
    rows = r.rows(up2[12], t=slice(1, 4))
    r.cols["flaps"][rows], r.cols["up"][rows] = 2, 0.7
    cases.append((r, SuspectKind.LINK, fabric.link_label(up2[12]), FaultKind.FLAPPING_LINK))
    r = Rates(fabric, seed=7)
    r.cols["up"][r.rows(up2[13], t=slice(2, None))] = 0.0
    r.cols["flaps"][r.rows(up2[13], t=slice(2, 3))] = 1
    cases.append((r, SuspectKind.LINK, fabric.link_label(up2[13]), FaultKind.DEAD_LINK))
    r = Rates(fabric, seed=8)
    r.cols["tx_bps"][r.rows(host[500], 0)] *= 0.25
    nic = ":".join(fabric.link_label(host[500]).split("~")[0].split(":"))
    cases.append((r, SuspectKind.PORT, nic, FaultKind.SLOW_NIC_PORT))
    for r, kind, target, fault in cases:
        loc, first = _first(fabric, r)
        assert (first.kind, first.target, first.fault) == (kind, target, fault)
        assert not loc.congestion


def test_a_skewed_leaf_is_mis_hashed_and_a_hot_spine_is_congestion_not_a_fault(fabric) -> None:  # type: ignore[no-untyped-def]
    from clusterloom.ops import FaultKind, SuspectKind

    t = fabric.topology
    r = Rates(fabric, seed=9)
    leaf = int(t.link_src[_links(fabric, 2)[40]])
    ups = np.flatnonzero((t.link_src == leaf) & (t.link_tier == 2))
    for k, u in enumerate(ups):
        r.cols["tx_bps"][r.rows(int(u), 0)] *= 4.0 if k == 1 else 0.3
    _, first = _first(fabric, r)
    assert (first.kind, first.fault) == (SuspectKind.DEVICE, FaultKind.MIS_HASHED_SWITCH)
    assert first.target == str(fabric.names.device(np.array([leaf]))[0])

    r = Rates(fabric, seed=10)
    spine = int(t.link_dst[_links(fabric, 2)[0]])
    mine = np.flatnonzero((t.link_dst == spine) | (t.link_src == spine))
    for link in mine:
        rows = r.rows(int(link))
        r.cols["tx_bps"][rows] = 0.97 * r.cap[rows]
        r.cols["ecn_ps"][rows] = 0.05 * r.cols["tx_pps"][rows]
        r.cols["drops_ps"][rows] = 1e-4 * r.cols["tx_pps"][rows]  # the queue's drops
    loc, first = _first(fabric, r)
    assert loc.congestion
    assert (first.kind, first.target) == (
        SuspectKind.CONGESTION,
        str(fabric.names.device(np.array([spine]))[0]),
    )
    assert all(s.kind is SuspectKind.CONGESTION for s in loc.suspects)


def test_a_straggler_rank_is_a_suspect_and_its_slow_port_outranks_it(fabric) -> None:  # type: ignore[no-untyped-def]
    from clusterloom.ops import FaultKind, SuspectKind

    c = _collectives(ranks=64)
    c["duration_us"][(c["rank"] == 9) & (c["step"] % 5 != 0)] *= 0.7
    coll = _table(c)
    _, first = _first(fabric, Rates(fabric, seed=11), coll)
    assert (first.kind, first.target, first.fault) == (
        SuspectKind.RANK,
        "rank:9",
        FaultKind.STRAGGLER_RANK,
    )
    r = Rates(fabric, seed=12)
    host = _links(fabric, 1)
    nic_link = int(host[np.flatnonzero(fabric.topology.link_src[host] == 9)[0]])
    r.cols["tx_bps"][r.rows(nic_link, 0)] *= 0.25
    loc, first = _first(fabric, r, coll)
    assert first.kind is SuspectKind.PORT
    assert [s.kind for s in loc.suspects[:2]] == [SuspectKind.PORT, SuspectKind.RANK]
