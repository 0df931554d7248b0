"""Dead EVs, mis-hashed switches and stragglers in ``ops synth`` take the forms the mitigation
check takes (``sim.faultforms``): the same units dead for the same fault, on the flow engine and
on the packet engine; and the retransmissions counter."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute
import pytest

from clusterloom.ops.fabric import OpsFabric, ops_fabric
from clusterloom.ops.faults import parse_fault
from clusterloom.ops.mitigate import _formed, fault_form
from clusterloom.ops.model import Fault
from clusterloom.ops.synth import Synthetic, _traffic, stalled_flows, synthesize
from clusterloom.sim.scenario import resolve_scenario
from clusterloom.spec import parse_spec
from helpers import FAT_TREE_K4_SPEC


@pytest.fixture(scope="module")
def fabric() -> OpsFabric:
    return ops_fabric(parse_spec(FAT_TREE_K4_SPEC, source="k4"))


def _name(fabric: OpsFabric, node: int) -> str:
    return str(fabric.names.device(np.array([node]))[0])


def _dead_ev(fabric: OpsFabric) -> Fault:
    """The first (leaf, EV) from 49152 whose dead bucket stalls a queue pair of the default
    traffic (a k=4 permutation: 16 flows, 1 queue pair each: about one leaf EV in eight)."""
    traffic = _traffic(fabric, None, 0)[0]
    t = fabric.topology
    leaves = np.flatnonzero(t.node_role == 1)  # Role.LEAF
    for ev in range(49152, 49152 + 400):
        for leaf in leaves.tolist():
            f = parse_fault(f"dead-ev:{_name(fabric, leaf)}#{ev}@20s", fabric)
            if stalled_flows(fabric, traffic, [f])[2].any():
                return f
    raise AssertionError("no dead EV of the traffic found")


def test_synth_and_the_check_take_the_same_units_dead(fabric: OpsFabric) -> None:
    """The same fault on the same traffic and hash: the flows ``ops synth`` stalls are exactly
    those the check (``ops.mitigate``, doing nothing on ``roce-ecmp``) counts as never
    finishing."""
    f = _dead_ev(fabric)
    traffic = _traffic(fabric, None, 0)[0]
    base = resolve_scenario(
        fabric.spec, fabric.topology, traffic="permutation", transports=["roce-ecmp"],
        seed=fabric.hash_seed,
    )  # fmt: skip
    assert base.traffic is not None
    assert np.array_equal(base.traffic.src, traffic.src)
    assert np.array_equal(base.traffic.dst, traffic.dst)
    _sc, _router, stalled = _formed(fabric, base, fault_form([f], fabric), None, base)
    assert stalled is not None
    mine = stalled_flows(fabric, traffic, [dataclasses.replace(f, start_ms=0)])[2]
    assert mine.any()
    assert np.array_equal(mine, stalled)


def test_a_dead_ev_stalls_its_flows_in_the_telemetry(fabric: OpsFabric) -> None:
    """From the fault on, the stalled flow's destination receives its bytes no more (its port's
    rate drops by its share), its rank's collective never ends (no duration is reported for
    it), every other rank's collective is as on the healthy fabric (up to its 1% jitter, drawn
    after the counters' draws, which the fault changes), and the probes the dead bucket holds
    are lost."""
    f = _dead_ev(fabric)
    traffic = _traffic(fabric, None, 0)[0]
    stalled = stalled_flows(fabric, traffic, [f])[2]
    kw = {"duration_s": 60, "interval_s": 10, "seed": 4}
    healthy = synthesize(fabric, [], **kw)  # type: ignore[arg-type]
    syn = synthesize(fabric, [f], **kw)  # type: ignore[arg-type]
    c, h = syn.collectives.to_pandas(), healthy.collectives.to_pandas()
    hung = set(traffic.src[stalled].tolist())
    key = ["ts_ms", "rank", "collective"]
    after_h = h[(h["ts_ms"] > syn.start_ms + f.start_ms) & h["rank"].isin(hung)]
    assert len(after_h) > 0
    assert not (c["ts_ms"] > syn.start_ms + f.start_ms)[c["rank"].isin(hung)].any()
    both = h.merge(c, on=key, suffixes=("_h", ""))
    assert len(both) == len(h) - len(after_h) == len(c)
    assert np.allclose(both["duration_us"], both["duration_us_h"], rtol=0.06)
    # the stalled flow's receiving interface gets less from the fault on
    dst = int(traffic.dst[stalled][0])
    dev, port = fabric.endpoint(dst, 0)
    rx = syn.counters.to_pandas()
    rx_h = healthy.counters.to_pandas()
    sel = (rx["device"] == dev) & (rx["interface"] == port)
    got = np.diff(rx[sel]["bytes_rx"].to_numpy().astype(np.int64))
    ref = np.diff(rx_h[sel]["bytes_rx"].to_numpy().astype(np.int64))
    assert (got[3:] < ref[3:]).all() and (got[:2] == ref[:2]).all()
    # probes: lost only from the fault on, and some are
    p = syn.probes.to_pandas()
    assert p[p["ts_ms"] <= syn.start_ms + f.start_ms]["lost"].sum() == 0
    assert p[p["ts_ms"] > syn.start_ms + f.start_ms + 10_000]["lost"].sum() > 0


# -- ops synth --engine packet ------------------------------------------------------------------

KW = {"duration_s": 60, "interval_s": 10, "seed": 1, "engine": "packet"}


@pytest.fixture(scope="module")
def healthy_packets(fabric: OpsFabric) -> Synthetic:
    return synthesize(fabric, [], **KW)  # type: ignore[arg-type]


def _increase(syn: Synthetic, column: str, a_s: int = 30, b_s: int = 60) -> pd.Series:
    """Per (device, interface), a counter's increase from ``a_s`` to ``b_s`` seconds in."""
    c = syn.counters.to_pandas()
    at = c.set_index(["device", "interface"])
    first = at[c["ts_ms"].to_numpy() == syn.start_ms + 1000 * a_s][column].astype(float)
    last = at[c["ts_ms"].to_numpy() == syn.start_ms + 1000 * b_s][column].astype(float)
    return last - first


def test_a_dead_ev_on_the_packet_engine_drops_at_its_switch_port(fabric: OpsFabric) -> None:
    """The stalled queue pair's packets are dropped at the dead leaf's port toward the spine on
    its path, and nowhere else; the sender retransmits (the note counts it)."""
    f = _dead_ev(fabric)
    syn = synthesize(fabric, [f], **KW)  # type: ignore[arg-type]
    drops = _increase(syn, "drops")
    where = drops[drops > 0]
    leaf = f.target.rpartition("#")[0]
    assert len(where) == 1 and where.index[0][0] == leaf
    dev, ifs = fabric.end_names
    t = fabric.topology
    link = int(np.flatnonzero((dev[:, 0] == leaf) & (ifs[:, 0] == where.index[0][1]))[0])
    assert int(t.link_tier[link]) == 2  # the leaf's uplink: the hop it hashes
    assert _increase(syn, "drops", 0, 20).sum() == 0  # nothing before the fault
    # a stalled queue pair retries at the rate of its run (go-back-N: its message again every
    # 500 us timeout until its retries run out), not once per step: below its line rate
    line_pps = float(t.link_capacity_bps[link]) / 8 / (4096 + 64)
    assert 0.01 * line_pps < float(where.iloc[0]) / 30 < line_pps
    assert "retransmissions" in syn.notes[1] and " 0 retransmissions" not in syn.notes[1]


def test_a_mis_hashed_leaf_on_the_packet_engine_queues_at_its_first_uplink(
    fabric: OpsFabric, healthy_packets: Synthetic
) -> None:
    """Every hash of the leaf on its first uplink (share 1): the flows that took the other one
    meet there, and that port (the leaf's side of its first uplink) marks as it did not."""
    from clusterloom.ops.faults import uplinks

    t = fabric.topology
    leaf = int(np.flatnonzero(t.node_role == 1)[0])
    f = parse_fault(f"mis-hashed-switch:{_name(fabric, leaf)}@20s*share=1.0", fabric)
    syn = synthesize(fabric, [f], **KW)  # type: ignore[arg-type]
    first = int(uplinks(fabric, leaf)[0])
    dev, ifs = fabric.end_names
    port = (str(dev[first, 0]), str(ifs[first, 0]))
    grew = _increase(syn, "ecn_marks") - _increase(healthy_packets, "ecn_marks")
    assert _increase(healthy_packets, "ecn_marks")[port] == 0
    assert grew[port] > 0 and port in set(grew.sort_values().index[-2:])
    assert (_increase(syn, "drops") == 0).all()  # lossless


def test_a_straggler_on_the_packet_engine_stretches_the_step(
    fabric: OpsFabric, healthy_packets: Synthetic
) -> None:
    """A straggler's flows start ``delay`` late in the packet run: the step is longer, so the
    marks a second fall; the straggler itself shows in the collectives (the flow synthesis')."""
    f = parse_fault("straggler-rank:rank:3@20s*delay=2ms", fabric)
    syn = synthesize(fabric, [f], **KW)  # type: ignore[arg-type]
    assert "2 packet run(s)" in syn.notes[1]
    after = _increase(syn, "ecn_marks").sum()
    before = _increase(healthy_packets, "ecn_marks").sum()
    assert 0 < after < before
    assert (
        _increase(syn, "ecn_marks", 0, 20).sum()
        == _increase(healthy_packets, "ecn_marks", 0, 20).sum()
    )


# -- the retransmissions counter ----------------------------------------------------------------


def _host_link(fabric: OpsFabric, host: int) -> int:
    return int(fabric.router.host_link[host, 0])


def test_the_packet_synthesis_counts_each_nics_retransmissions(fabric: OpsFabric) -> None:
    """A lossy host link (host 0's): the packets lost on it are resent by the NICs whose queue
    pairs cross it; the counter is cumulative on host interfaces, null on switch ports, null
    everywhere with the flow engine; the files carry it (Parquet, OpenMetrics) and the readers
    read it back."""
    link = _host_link(fabric, 0)
    f = parse_fault(f"gray-link:{fabric.link_label(link)}@0s*loss=0.02", fabric)
    syn = synthesize(fabric, [f], **KW)  # type: ignore[arg-type]
    flow = synthesize(fabric, [f], duration_s=60, interval_s=10, seed=1)
    assert flow.counters["retransmissions"].null_count == flow.counters.num_rows
    c = syn.counters.to_pandas()
    dev, ifs = fabric.end_names
    t = fabric.topology
    hosts = {(str(dev[i, 0]), str(ifs[i, 0])) for i in np.flatnonzero(t.link_tier == 1)}
    is_nic = [k in hosts for k in zip(c["device"], c["interface"], strict=True)]
    assert c[is_nic]["retransmissions"].notna().all()
    assert c[[not x for x in is_nic]]["retransmissions"].isna().all()
    grew = _increase(syn, "retransmissions", 0, 60)
    assert grew.max() > 0
    assert grew[(str(dev[link, 0]), str(ifs[link, 0]))] > 0  # host 0 sends over the lossy link
    per = c[is_nic].sort_values("ts_ms").groupby(["device", "interface"])["retransmissions"]
    assert (per.diff().dropna() >= 0).all()
    # ingested back from the files, the same values (OpenMetrics text of the last scrape, the
    # Parquet file), and a rate per second
    import tempfile

    from clusterloom.ops.ingest import read_counters
    from clusterloom.ops.synth import write_synthetic

    with tempfile.TemporaryDirectory() as d:
        write_synthetic(syn, d)
        got = read_counters(Path(d) / "counters.parquet", fabric)
        assert not got.problems
        assert got.table["retransmissions"].equals(syn.counters["retransmissions"])
        prom = read_counters(Path(d) / "counters.prom", fabric)
        assert not prom.problems
        last = syn.counters.filter(
            pa.compute.equal(syn.counters["ts_ms"], syn.start_ms + 60_000)
        ).to_pandas()
        p = prom.table.to_pandas()
        key = ["device", "interface"]
        both = p.merge(last, on=key, suffixes=("", "_want"))
        assert len(both) == len(last)
        assert (both["retransmissions"].fillna(-1) == both["retransmissions_want"].fillna(-1)).all()


def test_retransmissions_are_read_from_csv_optional_wrapping_and_checked(
    fabric: OpsFabric, tmp_path: Path
) -> None:
    """A CSV with the column: read as uint64 (to the top of the range: a counter about to
    wrap, and after it; the increase is the difference modulo 2**64); a bad value names its
    line and keeps the good rows; without the column every row reads it as null."""
    from clusterloom.ops.ingest import read_counters
    from clusterloom.ops.model import COUNTERS

    dev, port = fabric.endpoint(0, 0)
    head = "ts_ms,device,interface," + ",".join(COUNTERS) + ",link_up,retransmissions\n"
    zeros = ",".join("0" for _ in COUNTERS)
    wrap = 2**64 - 5
    lines = [
        f"1000,{dev},{port},{zeros},true,{wrap}",
        f"2000,{dev},{port},{zeros},true,7",  # wrapped: +12
        f"3000,{dev},{port},{zeros},true,-3",  # bad
        f"4000,{dev},{port},{zeros},true,19",
    ]
    path = tmp_path / "c.csv"
    path.write_text(head + "\n".join(lines) + "\n")
    got = read_counters(path, fabric)
    assert got.table.num_rows == 3
    assert [p.where for p in got.problems] == ["c.csv line 4"]
    assert "retransmissions" in got.problems[0].message
    assert got.table["retransmissions"].to_pylist() == [wrap, 7, 19]
    v = got.table["retransmissions"].to_numpy()
    assert (int(v[1]) - int(v[0])) % 2**64 == 12  # across the wrap, the increase
    # without the column: null, and no problem
    plain = tmp_path / "p.csv"
    plain.write_text(
        "ts_ms,device,interface," + ",".join(COUNTERS) + ",link_up\n"
        + "\n".join(",".join(x.split(",")[:-1]) for x in (lines[0], lines[1])) + "\n"
    )  # fmt: skip
    got = read_counters(plain, fabric)
    assert not got.problems
    assert got.table["retransmissions"].null_count == 2
