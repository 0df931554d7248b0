"""Synthetic telemetry: each fault shows in the signal it should and nowhere it should not;
counters are monotone and conserve bytes; the same seed gives the same files; the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clusterloom.ops.fabric import OpsFabric, ops_fabric
from clusterloom.ops.faults import format_fault, parse_fault, random_fault, read_faults
from clusterloom.ops.model import COLLECTIVE_SCHEMA, COUNTER_SCHEMA, PROBE_SCHEMA, FaultKind
from clusterloom.ops.synth import HDR, MSS, Synthetic, read_truth, synthesize, write_synthetic
from clusterloom.spec import parse_spec
from helpers import FAT_TREE_K4_SPEC

SPEC = FAT_TREE_K4_SPEC
PKT = MSS + HDR


@pytest.fixture(scope="module")
def fabric() -> OpsFabric:
    return ops_fabric(parse_spec(SPEC, source="k4"))


@pytest.fixture(scope="module")
def healthy(fabric: OpsFabric) -> Synthetic:
    return synthesize(fabric, [], duration_s=120, interval_s=10, seed=1)


def _deltas(syn: Synthetic) -> duckdb.DuckDBPyRelation:
    con = duckdb.connect()
    con.register("c", syn.counters)
    return con.sql(
        "select device, interface, "
        + ", ".join(
            f"max({c}) - min({c}) as {c}"
            for c in ("bytes_tx", "bytes_rx", "drops", "ecn_marks", "fec_uncorrected")
        )
        + ", bool_and(link_up) as always_up, bool_or(not link_up) as ever_down "
        "from c group by all"
    )


def _by_interface(syn: Synthetic) -> dict[tuple[str, str], dict[str, object]]:
    rel = _deltas(syn)
    cols = rel.columns
    return {(r[0], r[1]): dict(zip(cols, r, strict=True)) for r in rel.fetchall()}


def _busiest_link(fabric: OpsFabric, syn: Synthetic, tier: int) -> int:
    d = _by_interface(syn)
    dev, ifs = fabric.end_names
    t = fabric.topology
    cands = np.flatnonzero(t.link_tier == tier)
    return int(max(cands, key=lambda i: d[(dev[i, 0], ifs[i, 0])]["bytes_tx"]))


def test_schemas_and_shapes(fabric: OpsFabric, healthy: Synthetic) -> None:
    assert healthy.counters.schema == COUNTER_SCHEMA
    assert healthy.probes.schema == PROBE_SCHEMA
    assert healthy.collectives.schema == COLLECTIVE_SCHEMA
    n_if = 2 * fabric.topology.n_links
    assert healthy.counters.num_rows == n_if * 13  # a sample at the start and per interval
    # 16 hosts x 2 peers x 4 EVs per interval
    assert healthy.probes.num_rows == 16 * 2 * 4 * 12
    ts = np.unique(healthy.counters["ts_ms"].to_numpy())
    assert np.all(np.diff(ts) == 10_000) and ts[0] == healthy.start_ms
    # every interface of the design, named as the design names it
    iface = fabric.interface_table()
    want = set(zip(iface["device"].to_pylist(), iface["interface"].to_pylist(), strict=True))
    got = set(
        zip(
            healthy.counters["device"].to_pylist(),
            healthy.counters["interface"].to_pylist(),
            strict=True,
        )
    )
    assert got == want
    for row in healthy.probes.slice(0, 50).to_pylist():
        assert fabric.host_of(row["src_device"], row["src_interface"]) is not None
        assert fabric.host_of(row["dst_device"], row["dst_interface"]) is not None


def test_a_healthy_run_has_no_drops_and_no_lost_probes(healthy: Synthetic) -> None:
    d = _by_interface(healthy)
    assert all(v["drops"] == 0 and v["fec_uncorrected"] == 0 and v["always_up"] for v in d.values())
    assert pa.compute.sum(healthy.probes["lost"]).as_py() == 0
    assert healthy.probes["rtt_us"].null_count == 0
    rtt = healthy.probes["rtt_us"].to_numpy()
    rmax = healthy.probes["rtt_max_us"].to_numpy()
    assert np.all(rmax >= rtt) and np.all(rtt > 4.0)  # two host stacks at least
    assert healthy.truth == ()


def test_counters_are_monotone_and_conserve_bytes(fabric: OpsFabric) -> None:
    label = fabric.link_label(int(np.flatnonzero(fabric.topology.link_tier == 2)[0]))
    syn = synthesize(
        fabric,
        [parse_fault(f"gray-link:{label}@0s*loss=0.05", fabric)],
        duration_s=60,
        interval_s=10,
        seed=3,
    )
    t = syn.counters.sort_by(
        [("device", "ascending"), ("interface", "ascending"), ("ts_ms", "ascending")]
    )
    n_if = 2 * fabric.topology.n_links
    for c in ("bytes_tx", "bytes_rx", "packets_tx", "drops", "ecn_marks", "fec_corrected"):
        v = t[c].to_numpy().reshape(n_if, -1)
        assert np.all(np.diff(v.astype(np.int64), axis=1) >= 0), c  # no wrap below 2**40 + run
    d = _by_interface(syn)
    dev, ifs = fabric.end_names
    lossy = 0
    for link in range(fabric.topology.n_links):
        a, b = (dev[link, 0], ifs[link, 0]), (dev[link, 1], ifs[link, 1])
        for s, r in ((a, b), (b, a)):
            # what one end sent, the other received or dropped
            assert d[s]["bytes_tx"] == d[r]["bytes_rx"] + d[r]["drops"] * PKT
            lossy += d[r]["drops"] > 0
    assert lossy >= 1


def test_a_dead_link(fabric: OpsFabric, healthy: Synthetic) -> None:
    link = _busiest_link(fabric, healthy, 2)
    label = fabric.link_label(link)
    syn = synthesize(
        fabric,
        [parse_fault(f"dead-link:{label}@35s", fabric)],
        duration_s=120,
        interval_s=10,
        seed=1,
    )
    dev, ifs = fabric.end_names
    con = duckdb.connect()
    con.register("c", syn.counters)
    for end in (0, 1):
        ups = con.sql(
            "select ts_ms, link_up, bytes_tx from c where device = ? and interface = ? order by 1",
            params=[dev[link, end], ifs[link, end]],
        ).fetchall()
        offs = [(ts - syn.start_ms) // 1000 for ts, _, _ in ups]
        assert [u for _, u, _ in ups] == [o < 35 for o in offs]
        assert ups[-1][2] == ups[5][2]  # no byte after the failure (sampled at 40 s on)
    # probes crossing it are lost while routing reconverges, in the interval of the failure
    probes = syn.probes.to_pandas()
    lost_at = probes.groupby("ts_ms")["lost"].sum()
    assert lost_at[syn.start_ms + 40_000] > 0
    assert lost_at.drop(syn.start_ms + 40_000).sum() == 0  # then routed around
    (truth,) = syn.truth
    assert truth.start_ms == syn.start_ms + 35_000 and truth.kind is FaultKind.DEAD_LINK


def test_a_lossy_gray_link(fabric: OpsFabric, healthy: Synthetic) -> None:
    link = _busiest_link(fabric, healthy, 2)
    label = fabric.link_label(link)
    syn = synthesize(
        fabric,
        [parse_fault(f"gray-link:{label}@20s*loss=0.02", fabric)],
        duration_s=120,
        interval_s=10,
        seed=1,
    )
    d = _by_interface(syn)
    dev, ifs = fabric.end_names
    ends = {(dev[link, e], ifs[link, e]) for e in (0, 1)}
    for key, v in d.items():
        if key in ends:
            assert v["drops"] > 0 and v["fec_uncorrected"] > 0, key
            assert v["always_up"]
        else:
            assert v["drops"] == 0 and v["fec_uncorrected"] == 0, key  # nowhere else
    fwd = fabric.paths(*_probe_keys(fabric, syn))
    # the probes that lost anything crossed the link
    p = syn.probes.to_pandas()
    n = len(fwd)
    hit = np.isin(fwd, [2 * link, 2 * link + 1]).any(axis=1)
    rev = _reverse(fabric, syn)
    hit |= np.isin(rev, [2 * link, 2 * link + 1]).any(axis=1)
    lost = p["lost"].to_numpy().reshape(-1, n).sum(axis=0)
    assert np.all(lost[~hit] == 0)
    assert lost[hit].sum() > 0


def _probe_keys(fabric: OpsFabric, syn: Synthetic):  # type: ignore[no-untyped-def]
    first = syn.probes.filter(pa.compute.equal(syn.probes["ts_ms"], syn.start_ms + 10_000))
    src = [
        fabric.host_of(d, i)
        for d, i in zip(
            first["src_device"].to_pylist(), first["src_interface"].to_pylist(), strict=True
        )
    ]
    dst = [
        fabric.host_of(d, i)
        for d, i in zip(
            first["dst_device"].to_pylist(), first["dst_interface"].to_pylist(), strict=True
        )
    ]
    return (
        np.array([s[0] for s in src]),
        np.array([x[0] for x in dst]),
        np.array([s[1] for s in src]),
        first["ev"].to_numpy().astype(np.int64),
    )


def _reverse(fabric: OpsFabric, syn: Synthetic):  # type: ignore[no-untyped-def]
    s, d, p, e = _probe_keys(fabric, syn)
    return fabric.paths(d, s, p, e)


def test_a_straggler_makes_the_others_wait(fabric: OpsFabric, healthy: Synthetic) -> None:
    syn = synthesize(
        fabric,
        [parse_fault("straggler-rank:rank:5@60s*delay=5ms", fabric)],
        duration_s=120,
        interval_s=10,
        seed=1,
    )
    c = syn.collectives.to_pandas()
    c["t"] = (c["ts_ms"] - syn.start_ms) // 1000
    late = c[c["t"] > 60]
    early = c[c["t"] <= 60]
    assert (late[late["rank"] != 5]["duration_us"] > 5000).all()
    assert (late[late["rank"] == 5]["duration_us"] < 5000).all()
    assert (early["duration_us"] < 5000).all()
    h = healthy.collectives.to_pandas()
    assert (h["duration_us"] < 5000).all()
    assert c["step"].is_monotonic_increasing


def test_a_slow_nic_port_slows_its_rank(fabric: OpsFabric, healthy: Synthetic) -> None:
    port = ":".join(fabric.endpoint(4, 0))
    syn = synthesize(
        fabric,
        [parse_fault(f"slow-nic-port:{port}@0s*rate=0.25", fabric)],
        duration_s=60,
        interval_s=10,
        seed=1,
    )
    c = syn.collectives.to_pandas().groupby("rank")["duration_us"].median()
    h = healthy.collectives.to_pandas().groupby("rank")["duration_us"].median()
    # closed form: 2 MB (plus headers) at a quarter of 100 Gb/s takes at least 640 us
    assert c[4] >= 0.98 * 2e6 * 8 / 25e9 * 1e6
    assert c[4] > h[4]
    others = [r for r in range(16) if r != 4]
    # the port runs hotter at its cut rate: its probes queue longer than they did
    dev, ifname = fabric.endpoint(4, 0)

    def rtt(x: Synthetic) -> float:
        p = x.probes.to_pandas()
        return float(p[(p["src_device"] == dev) & (p["src_interface"] == ifname)]["rtt_us"].mean())

    assert rtt(syn) > rtt(healthy) + 0.1
    assert (c[others] <= 1.05 * h[others] + 2e6 * 8 / 25e9 * 1e6).all()


def test_a_dead_ev_loses_only_its_probes(fabric: OpsFabric) -> None:
    a, b = ":".join(fabric.endpoint(0, 0)), None
    syn0 = synthesize(fabric, [], duration_s=30, interval_s=10, seed=2)
    row = syn0.probes.slice(0, 1).to_pylist()[0]
    a = f"{row['src_device']}:{row['src_interface']}"
    b = f"{row['dst_device']}:{row['dst_interface']}"
    f = parse_fault(f"dead-ev:{a}>{b}#{row['ev']}@0s", fabric)
    syn = synthesize(fabric, [f], duration_s=30, interval_s=10, seed=2)
    p = syn.probes.to_pandas()
    mine = (
        (p["src_device"] == row["src_device"])
        & (p["src_interface"] == row["src_interface"])
        & (p["dst_device"] == row["dst_device"])
        & (p["ev"] == row["ev"])
    )
    assert (p[mine]["lost"] == p[mine]["sent"]).all() and p[mine]["rtt_us"].isna().all()
    # the pair's path is black-holed (the check's form, sim.faultforms.dead_hops): the pair's
    # probes with another EV on the same path are lost too, no other probe
    pair = (p["src_device"] == row["src_device"]) & (p["src_interface"] == row["src_interface"])
    pair &= p["dst_device"] == row["dst_device"]
    ha = fabric.host_of(row["src_device"], row["src_interface"])
    hb = fabric.host_of(row["dst_device"], row["dst_interface"])
    assert ha is not None and hb is not None
    evs = np.array(sorted(set(p[pair]["ev"])), dtype=np.int64)
    n = evs.size
    got = fabric.paths(np.full(n, ha[0]), np.full(n, hb[0]), np.full(n, ha[1]), evs, None)
    same = {
        int(e) for e, path in zip(evs, got, strict=True) if (path == got[evs == row["ev"]][0]).all()
    }
    shared = pair & p["ev"].isin(same)
    assert (p[shared]["lost"] == p[shared]["sent"]).all()
    assert (p[~shared]["lost"] == 0).all()


def test_a_congested_spine_marks_but_does_not_drop(fabric: OpsFabric, healthy: Synthetic) -> None:
    f = parse_fault("congested-spine:be-p0-spine0000@0s*load=0.9", fabric)
    syn = synthesize(fabric, [f], duration_s=60, interval_s=10, seed=1)
    d, h = _by_interface(syn), _by_interface(healthy)
    spine = [k for k in d if k[0] == "be-p0-spine0000"]
    assert spine
    for k in spine:
        assert d[k]["bytes_tx"] > 0.85 * 100e9 / 8 * 60 * 0.95  # at least its extra load
    assert sum(d[k]["ecn_marks"] for k in spine) > 10 * sum(h[k]["ecn_marks"] for k in spine) + 10
    assert all(v["drops"] == 0 for v in d.values())
    assert pa.compute.sum(syn.probes["lost"]).as_py() == 0
    rtt = syn.probes["rtt_us"].to_numpy().mean()
    assert rtt > healthy.probes["rtt_us"].to_numpy().mean()


def test_a_mis_hashed_switch_skews_its_uplinks(fabric: OpsFabric) -> None:
    f = parse_fault("mis-hashed-switch:be-p0-leaf0000@0s*share=0.9", fabric)
    syn = synthesize(fabric, [f], duration_s=60, interval_s=10, seed=1)
    t = fabric.topology
    node = 16  # leaf0000 is the first switch
    assert fabric.names.devices[node] == "be-p0-leaf0000"
    ups = np.flatnonzero(t.link_src == node)
    d = _by_interface(syn)
    dev, ifs = fabric.end_names
    tx = [d[(dev[u, 0], ifs[u, 0])]["bytes_tx"] for u in ups]
    assert tx[0] >= 0.85 * sum(tx)


def test_a_flapping_link_goes_down_and_up(fabric: OpsFabric, healthy: Synthetic) -> None:
    link = _busiest_link(fabric, healthy, 3)
    f = parse_fault(f"flapping-link:{fabric.link_label(link)}@0s*flaps=2", fabric)
    syn = synthesize(fabric, [f], duration_s=120, interval_s=10, seed=1)
    dev, ifs = fabric.end_names
    ups = (
        syn.counters.filter(
            pa.compute.and_(
                pa.compute.equal(syn.counters["device"], dev[link, 0]),
                pa.compute.equal(syn.counters["interface"], ifs[link, 0]),
            )
        )
        .sort_by("ts_ms")["link_up"]
        .to_pylist()
    )
    # down 15 s of every 30 s from 0: samples at 0, 10 down; 20 up; 30, 40 down; 50 up ...
    assert ups[:6] == [False, False, True, False, False, True]
    assert pa.compute.sum(syn.probes["lost"]).as_py() > 0


def test_same_seed_same_files(fabric: OpsFabric, tmp_path: Path) -> None:
    faults = [parse_fault("straggler-rank:rank:2@10s*delay=1ms", fabric)]
    files = []
    for name in ("a", "b"):
        syn = synthesize(fabric, faults, duration_s=40, interval_s=10, seed=9)
        paths = write_synthetic(syn, tmp_path / name)
        files.append({p.name: p.read_bytes() for p in paths})
    assert files[0] == files[1]
    assert set(files[0]) == {
        "counters.parquet",
        "probes.parquet",
        "collectives.parquet",
        "truth.json",
        "counters.prom",
    }
    other = synthesize(fabric, faults, duration_s=40, interval_s=10, seed=10)
    assert not other.probes.equals(
        synthesize(fabric, faults, duration_s=40, interval_s=10, seed=9).probes
    )
    back = pq.read_table(tmp_path / "a" / "counters.parquet")
    assert back.schema.equals(COUNTER_SCHEMA, check_metadata=False)
    assert read_truth(tmp_path / "a" / "truth.json") == syn.truth
    prom = (tmp_path / "a" / "counters.prom").read_text()
    assert prom.endswith("# EOF\n") and "clusterloom_interface_bytes_tx_total{device=" in prom


def test_bad_arguments_are_named(fabric: OpsFabric) -> None:
    from clusterloom.errors import SpecError

    with pytest.raises(SpecError) as err:
        synthesize(fabric, [], duration_s=5, interval_s=10, seed=0)
    assert err.value.problems[0].where == "--duration"
    late = parse_fault("straggler-rank:rank:1@100s", fabric)
    with pytest.raises(SpecError, match="after the end"):
        synthesize(fabric, [late], duration_s=60, interval_s=10, seed=0)
    # 65 s of 10 s samples is 60 s of telemetry: a fault at 62 s would never show
    inside = parse_fault("straggler-rank:rank:1@62s", fabric)
    with pytest.raises(SpecError, match="60 s"):
        synthesize(fabric, [inside], duration_s=65, interval_s=10, seed=0)
    short = synthesize(fabric, [], duration_s=65, interval_s=10, seed=0)
    assert short.counters.num_rows == 7 * 2 * fabric.topology.n_links
    with pytest.raises(SpecError) as err:
        synthesize(fabric, [], duration_s=60, interval_s=10, seed=0, engine="quantum")
    assert err.value.problems[0].where == "--engine"


def test_cli(tmp_path: Path, fabric: OpsFabric) -> None:
    from clusterloom.cli.main import app

    spec = tmp_path / "k4.yaml"
    spec.write_text(SPEC)
    label = fabric.link_label(20)
    faults = tmp_path / "faults.yaml"
    faults.write_text("- straggler-rank:rank:3@20s*delay=2ms\n")
    runner = CliRunner()
    out = tmp_path / "out"
    r = runner.invoke(
        app,
        [
            "ops",
            "synth",
            str(spec),
            "--fault",
            f"dead-link:{label}@10s",
            "--faults",
            str(faults),
            "--duration",
            "1m",
            "--interval",
            "10s",
            "--seed",
            "4",
            "-o",
            str(out),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "truth: dead-link:" in r.output and "truth: straggler-rank:rank:3@20s" in r.output
    doc = json.loads((out / "truth.json").read_text())
    assert [f["kind"] for f in doc["faults"]] == ["dead-link", "straggler-rank"]
    assert read_faults(faults, fabric)[0].kind is FaultKind.STRAGGLER_RANK
    assert format_fault(parse_fault(doc["faults"][0]["text"], fabric)) == doc["faults"][0]["text"]
    bad = runner.invoke(
        app, ["ops", "synth", str(spec), "--fault", "dead-link:nope@1s", "-o", str(tmp_path / "x")]
    )
    assert bad.exit_code == 2
    assert "fault dead-link:nope@1s" in bad.output and "Traceback" not in bad.output
    assert not (tmp_path / "x").exists()
    bad = runner.invoke(
        app, ["ops", "synth", str(spec), "--duration", "10 minutes", "-o", str(tmp_path / "y")]
    )
    assert bad.exit_code == 2 and "--duration" in bad.output


_FABRIC: dict[str, OpsFabric] = {}


@settings(max_examples=15, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(list(FaultKind)), min_size=0, max_size=3),
    seed=st.integers(0, 2**16),
)
def test_any_faults_keep_the_counters_honest(kinds: list[FaultKind], seed: int) -> None:
    """Over random fault sets: counters monotone, bytes conserved exactly across each link,
    drops and uncorrectable codewords only at a lossy gray link's ends, probes lost only when
    a fault can lose them, an identical second run."""
    fabric = _FABRIC.setdefault("k4", ops_fabric(parse_spec(SPEC, source="k4")))
    rng = np.random.default_rng(seed)
    faults = [random_fault(fabric, k, rng, duration_ms=60_000) for k in kinds]
    syn = synthesize(fabric, faults, duration_s=60, interval_s=10, seed=seed)
    again = synthesize(fabric, faults, duration_s=60, interval_s=10, seed=seed)
    assert syn.counters.equals(again.counters) and syn.probes.equals(again.probes)
    assert syn.collectives.equals(again.collectives)
    t = syn.counters.sort_by(
        [("device", "ascending"), ("interface", "ascending"), ("ts_ms", "ascending")]
    )
    n_if = 2 * fabric.topology.n_links
    for c in ("bytes_tx", "bytes_rx", "packets_rx", "drops", "pfc_pauses", "fec_uncorrected"):
        v = t[c].to_numpy().reshape(n_if, -1).astype(np.int64)
        assert np.all(np.diff(v, axis=1) >= 0), c
    d = _by_interface(syn)
    dev, ifs = fabric.end_names
    lossy_ends = set()
    for f in faults:
        if f.kind is FaultKind.GRAY_LINK and f.loss > 0:
            link = fabric.link_of_label(f.target)
            lossy_ends |= {(dev[link, 0], ifs[link, 0]), (dev[link, 1], ifs[link, 1])}
    for link in range(fabric.topology.n_links):
        a, b = (dev[link, 0], ifs[link, 0]), (dev[link, 1], ifs[link, 1])
        for s, r in ((a, b), (b, a)):
            assert d[s]["bytes_tx"] == d[r]["bytes_rx"] + d[r]["drops"] * PKT
    for key, v in d.items():
        if key not in lossy_ends:
            assert v["drops"] == 0 and v["fec_uncorrected"] == 0, key
    losing = {FaultKind.GRAY_LINK, FaultKind.DEAD_LINK, FaultKind.FLAPPING_LINK, FaultKind.DEAD_EV}
    if not any(
        f.kind in losing and (f.kind is not FaultKind.GRAY_LINK or f.loss > 0) for f in faults
    ):
        assert pa.compute.sum(syn.probes["lost"]).as_py() == 0
    assert [f.kind for f in syn.truth] == kinds
    assert all(
        f.start_ms == g.start_ms + syn.start_ms for f, g in zip(syn.truth, faults, strict=True)
    )


def test_probe_series_are_unique_and_cross_leaves(fabric: OpsFabric, healthy: Synthetic) -> None:
    p = healthy.probes.filter(pa.compute.equal(healthy.probes["ts_ms"], healthy.start_ms + 10_000))
    keys = list(
        zip(
            *(
                p[c].to_pylist()
                for c in ("src_device", "src_interface", "dst_device", "dst_interface", "ev")
            ),
            strict=True,
        )
    )
    assert len(set(keys)) == len(keys) == 16 * 2 * 4
    leaf = fabric.topology.link_dst[fabric.router.host_link[:, 0]]
    for sd, si, dd, di, _ev in keys:
        (a, _), (b, _) = fabric.host_of(sd, si), fabric.host_of(dd, di)
        assert a != b and leaf[a] != leaf[b]


JOB = """
job:
  model: {name: tiny, layers: 4, hidden: 1024, ffn_hidden: 4096, heads: 8, kv_heads: 8,
          vocab: 32000, sequence_length: 1024}
  precision: {activations: bf16, gradients: bf16, parameters: bf16}
  batch: {global_batch: 32, micro_batch: 1}
  parallelism: {tp: 1, pp: 1, cp: 1, zero: 1, sequence_parallel: false}
  compute: {peak_tflops: 1000}
"""


def test_a_job_reports_its_collectives() -> None:
    """With a job, the step's flows run and each collective is reported per rank; the
    straggler makes the others wait in the step's first collective only."""
    fabric = ops_fabric(parse_spec(SPEC.replace("fat-tree-k4", "k4-job") + JOB, source="job"))
    f = parse_fault("straggler-rank:rank:3@0s*delay=3ms", fabric)
    syn = synthesize(fabric, [f], duration_s=30, interval_s=10, seed=0)
    base = synthesize(fabric, [], duration_s=30, interval_s=10, seed=0)
    assert "step traffic" in syn.notes[0]
    c, h = syn.collectives.to_pandas(), base.collectives.to_pandas()
    names = list(dict.fromkeys(c["collective"]))
    assert len(names) == 2 and all(n.startswith("DP ") for n in names)
    assert len(c) == 3 * 2 * 16
    first, second = names
    # the same draws either way (the straggler changes no earlier signal): row by row, the
    # others wait the delay (times their 1 % jitter) in the first collective, nothing else moves
    key = ["ts_ms", "collective", "rank"]
    both = c.merge(h, on=key, suffixes=("", "_base"))
    assert len(both) == len(c)
    extra = both["duration_us"] - both["duration_us_base"]
    in_first = both["collective"] == first
    waits = in_first & (both["rank"] != 3)
    assert ((extra[waits] > 0.95 * 3000) & (extra[waits] < 1.05 * 3000)).all()
    assert (extra[~waits].abs() < 1e-6).all()
    assert second != first


MULTIPLANE = """
version: 1
name: mp-small
description: 2 planes, 64 GPUs on a rail-optimized 2-tier fabric
compute:
  accelerators: 64
  accelerators_per_node: 8
  scale_up: {domain_size: 8, technology: nvlink}
  nic: {ports_per_accelerator: 2, port_speed_gbps: 100}
fabrics:
  backend:
    family: rail-optimized
    planes: 2
    tiers: 2
    switch: tomahawk5-64x800g
"""


def test_every_kind_on_a_multiplane_rail_fabric() -> None:
    fabric = ops_fabric(parse_spec(MULTIPLANE, source="mp"))
    assert fabric.host_ports == 2 and fabric.topology.plan.planes == 2
    rng = np.random.default_rng(7)
    for kind in FaultKind:
        f = random_fault(fabric, kind, rng, duration_ms=40_000)
        syn = synthesize(fabric, [f], duration_s=40, interval_s=10, seed=0)
        assert syn.counters.schema == COUNTER_SCHEMA and syn.probes.num_rows == 64 * 2 * 4 * 4
        d = _by_interface(syn)
        dev, ifs = fabric.end_names
        for link in range(fabric.topology.n_links):
            a, b = (dev[link, 0], ifs[link, 0]), (dev[link, 1], ifs[link, 1])
            assert d[a]["bytes_tx"] == d[b]["bytes_rx"] + d[b]["drops"] * PKT
        planes = {i.rpartition("p")[2] for i in syn.probes["src_interface"].to_pylist()}
        assert planes == {"0", "1"}  # probes on both planes' ports


def test_the_stated_models_hold(fabric: OpsFabric) -> None:
    """The counters and probes follow the formulas docs/ops.md states: ECN marks at
    ``rho**20`` of the packets, FEC corrected at 5.4e-5 of the line-rate codewords, and an idle
    fabric's RTT = propagation + serialisation + two host stacks + the host jitter."""
    from clusterloom.ops import synth as sm

    f = parse_fault("congested-spine:be-p0-spine0000@0s*load=0.9", fabric)
    syn = synthesize(fabric, [f], duration_s=60, interval_s=10, seed=5)
    d = _by_interface(syn)
    con = duckdb.connect()
    con.register("c", syn.counters)
    spans = ", ".join(
        f"max({c}) - min({c})" for c in ("bytes_tx", "packets_tx", "ecn_marks", "fec_corrected")
    )
    rows = con.sql(f"select device, interface, {spans} from c group by all").fetchall()
    cap = 100e9 / 8
    checked = 0
    for dev, ifn, b, pk, ecn, corr in rows:
        rho = min(b / (cap * 60), sm.RHO_MAX)
        if rho > 0.8:  # enough marks for a tight check
            assert ecn == pytest.approx(pk * rho**sm.ECN_K, rel=0.05), (dev, ifn)
            checked += 1
        codewords = 100e9 * 60 / sm.FEC_BITS
        assert corr == pytest.approx(codewords * sm.FEC_CORRECTED, rel=0.02), (dev, ifn)
    assert checked >= 4  # the spine's links
    assert d  # every interface was seen
    idle = synthesize(fabric, [], duration_s=60, interval_s=10, seed=5, load=0.001)
    t = fabric.topology
    s, dd, p, e = _probe_keys(fabric, idle)
    hops = (fabric.paths(s, dd, p, e) >= 0).sum(axis=1) + (fabric.paths(dd, s, p, e) >= 0).sum(
        axis=1
    )
    lat_us = float(t.link_latency_ps[0]) / 1e6
    base = hops * (lat_us + sm.PROBE_BYTES * 8 / 100e9 * 1e6) + 2 * sm.HOST_US
    first = idle.probes.filter(pa.compute.equal(idle.probes["ts_ms"], idle.start_ms + 10_000))
    excess = first["rtt_us"].to_numpy() - base
    assert excess.min() > 0
    assert excess.mean() == pytest.approx(sm.HOST_JITTER_US, rel=0.1)  # queues empty


def test_a_random_dead_ev_is_one_the_probes_cross(fabric: OpsFabric) -> None:
    """A switch hashes only the EV, so a (switch, EV) pair may carry no probe; random dead EVs
    are drawn on probe paths and always lose probes, here of that EV only (a dead bucket also
    holds 1 in 64 of the others' hashes: none of these draws puts another probe EV in it)."""
    for seed in range(6):
        f = random_fault(fabric, FaultKind.DEAD_EV, np.random.default_rng(seed), duration_ms=60_000)
        syn = synthesize(fabric, [f], duration_s=60, interval_s=10, seed=seed)
        p = syn.probes.to_pandas()
        ev = int(f.target.rpartition("#")[2])
        assert p[p["ev"] == ev]["lost"].sum() > 0, f.target
        assert p[p["ev"] != ev]["lost"].sum() == 0
