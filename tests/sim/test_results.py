"""Results of flow-level runs: tables, Parquet files, the simulation report and ``simulate -o``.

The fabric: 32 hosts on 8-port switches, 8 leaves of 4 hosts and 4 spines::

    spine0  spine1  spine2  spine3
       \\  \\   |  ...  /  /
    leaf0 (h0..h3)  ...  leaf7 (h28..h31)
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from clusterloom.cli.main import app
from clusterloom.fabric.topology import Topology, generate
from clusterloom.report.simulation import render_simulation
from clusterloom.sim.flow.results import (
    FILES,
    Run,
    busy_end_ps,
    flow_table,
    group_table,
    time_window,
    utilisation,
    utilisations,
    write_results,
)
from clusterloom.sim.flow.run import Failure, parse_failure, run
from clusterloom.sim.flow.transports import transport
from clusterloom.sim.paths import build_router
from clusterloom.sim.traffic import Traffic, permutation, ring_all_reduce
from clusterloom.units import PS_PER_US
from helpers import kport_plan, spec_yaml, switch_entry

TRANSPORTS = ("roce-ecmp", "mrc-spray", "ideal")


@pytest.fixture(scope="module")
def topology() -> Topology:
    return generate(kport_plan(32, 8, speed_gbps=100))


@pytest.fixture(scope="module")
def traffic() -> Traffic:
    """A permutation (no group) and a ring all-reduce (group 0) at once."""
    return Traffic.concat(permutation(32, 2_000_000, seed=1), ring_all_reduce(32, 4_000_000))


@pytest.fixture(scope="module")
def failures(topology: Topology) -> tuple[Failure, ...]:
    leaf_spine = int(np.flatnonzero(topology.link_tier == 2)[0])
    return (parse_failure(f"link:{leaf_spine}@50us-300us", topology),)


@pytest.fixture(scope="module")
def runs(topology: Topology, traffic: Traffic, failures: tuple[Failure, ...]) -> list[Run]:
    router = build_router(topology)
    watch = 2 * np.flatnonzero(topology.link_tier >= 2)
    out = []
    for name in TRANSPORTS:
        result = run(topology, traffic, transport(name), failures, router=router, watch_links=watch)
        out.append(Run(name, traffic, result, router.capacity_bytes()))
    return out


def test_flow_table_has_one_row_per_flow(runs: list[Run], traffic: Traffic) -> None:
    r = runs[1]
    table = flow_table(traffic, r.result, r.transport)
    assert table.num_rows == len(traffic)
    assert table.schema == pa.schema(
        [
            ("transport", pa.string()),
            ("flow", pa.int64()),
            ("src", pa.int32()),
            ("dst", pa.int32()),
            ("bytes", pa.int64()),
            ("group", pa.int32()),
            ("start_us", pa.float64()),
            ("finish_us", pa.float64()),
            ("fct_us", pa.float64()),
        ]
    )
    cols = table.to_pydict()
    assert set(cols["transport"]) == {"mrc-spray"}
    assert cols["src"] == traffic.src.tolist()
    assert cols["bytes"] == traffic.nbytes.tolist()
    assert cols["group"] == [None] * 32 + [0] * 32
    fct = np.array(cols["fct_us"], dtype=float)
    start, finish = np.array(cols["start_us"]), np.array(cols["finish_us"])
    np.testing.assert_allclose(fct, finish - start, rtol=1e-12)
    np.testing.assert_array_equal(fct, r.result.fct_ps / PS_PER_US)


def test_unfinished_flows_have_null_times(topology: Topology, traffic: Traffic) -> None:
    result = run(topology, traffic, transport("ideal"), max_time_ps=10 * PS_PER_US)
    table = flow_table(traffic, result, "ideal")
    assert table.column("fct_us").null_count == len(traffic)
    assert table.column("finish_us").null_count == len(traffic)
    assert table.column("start_us").null_count == 0


def test_group_completion_next_to_ideal(runs: list[Run]) -> None:
    rows = group_table(runs).to_pylist()
    assert [(r["transport"], r["group"], r["name"]) for r in rows] == [
        (t, g, n) for t in TRANSPORTS for g, n in ((0, "ring all-reduce"), (None, "all flows"))
    ]
    ideal = {r["group"]: r["completion_us"] for r in rows if r["transport"] == "ideal"}
    for r in rows:
        assert r["ideal_us"] == ideal[r["group"]]
        assert r["flows"] == (32 if r["group"] == 0 else 64)
        if r["finished"] == r["flows"]:
            assert r["completion_us"] == pytest.approx(r["finish_us"] - r["start_us"])
            assert r["vs_ideal"] == pytest.approx(r["completion_us"] / r["ideal_us"])
            assert r["vs_ideal"] >= 1 - 1e-9
        else:
            assert r["completion_us"] is None and r["vs_ideal"] is None
    ring = runs[2].result.finish_ps[32:].max() - runs[2].result.start_ps[32:].min()
    assert ideal[0] == ring / PS_PER_US


def test_group_table_without_ideal_has_null_bound(runs: list[Run]) -> None:
    rows = group_table(runs[:2]).to_pylist()
    assert all(r["ideal_us"] is None and r["vs_ideal"] is None for r in rows)


def test_utilisation_bounded_and_consistent(runs: list[Run]) -> None:
    for r, u in zip(runs, utilisations(runs), strict=True):
        assert u.matrix.shape == (100, u.watch_links.shape[0])
        assert u.matrix.max(initial=0) <= 1 + 1e-9
        assert u.max_util.max(initial=0) <= 1 + 1e-9
        assert np.nanmax(u.watched_max, initial=0) <= 1 + 1e-9
        assert np.all(u.watched_mean <= u.watched_max + 1e-12)
        assert np.all(u.watched_max <= u.max_util + 1e-9)
        # time-averaged: the matrix integrates to the segments' utilisation times duration
        dur = (u.seg_end_ps - u.seg_start_ps).astype(float)
        width = np.diff(u.bin_edges_ps).astype(float)
        total = (u.matrix * width[:, None]).sum()
        assert total == pytest.approx((u.watched_mean * u.watch_links.size * dur).sum())
        if r.transport == "ideal":  # only NIC links are loaded
            assert u.matrix.max(initial=0) == 0


def test_failed_link_carries_nothing_while_down(runs: list[Run], topology: Topology) -> None:
    failed = 2 * int(np.flatnonzero(topology.link_tier == 2)[0])
    u = utilisation(runs[1].result, runs[1].capacity, bins=1000)
    column = int(np.searchsorted(u.watch_links, failed))
    mid = (u.bin_edges_ps[:-1] >= 60 * PS_PER_US) & (u.bin_edges_ps[1:] <= 290 * PS_PER_US)
    assert mid.any() and u.matrix[mid, column].max() == 0


def test_parquet_round_trip_and_byte_identity(runs: list[Run], tmp_path: Path) -> None:
    first = write_results(tmp_path / "a", runs)
    second = write_results(tmp_path / "b", runs)
    assert [p.name for p in first] == list(FILES)
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes()
    flows = pq.read_table(first[0])
    expected = pa.concat_tables([flow_table(r.traffic, r.result, r.transport) for r in runs])
    assert flows.equals(expected)
    assert pq.read_table(first[1]).equals(group_table(runs))
    util = pq.read_table(first[2])
    assert util.num_rows == sum(r.result.n_segments for r in runs)
    links = pq.read_table(first[3])
    assert max(links.column("util").to_pylist()) <= 1 + 1e-9
    assert not list(tmp_path.glob("*/.*.tmp"))


def test_report_is_self_contained(runs: list[Run], failures: tuple[Failure, ...]) -> None:
    page = render_simulation("tiny <fabric>", runs, failures)
    assert page == render_simulation("tiny <fabric>", runs, failures)
    assert "tiny &lt;fabric&gt;" in page and "<fabric>" not in page
    assert 'id="comparison"' in page
    for name in TRANSPORTS:
        assert f"<td>{name}</td>" in page
    assert page.count("<svg") == 3  # the CDF, the series and the heat map with its axes
    assert 'id="fct-cdf"' in page and 'id="util-series"' in page
    assert page.count('class="series"') == 2 * len(TRANSPORTS)
    assert page.count('class="failure"') == 2  # down and up again
    assert '<svg id="util-heatmap"' in page and "data:image/png;base64," in page
    assert not re.search(r"https?:", page)


def test_report_without_watched_links(topology: Topology, traffic: Traffic) -> None:
    router = build_router(topology)
    result = run(topology, traffic, transport("mrc-spray"), router=router)
    page = render_simulation("x", [Run("mrc-spray", traffic, result, router.capacity_bytes())])
    assert "util-heatmap" not in page and "No watched link" in page


def test_cli_writes_results(tmp_path: Path) -> None:
    spec = tmp_path / "tiny.yaml"
    spec.write_text(
        spec_yaml(
            accelerators=32,
            accelerators_per_node=1,
            port_speed_gbps=100,
            switch="kport",
            family="fat-tree",
            catalog_switches={"kport": switch_entry(8, 100)},
        )
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "simulate",
            str(spec),
            "--transport",
            "mrc-spray,ideal",
            "--size",
            "1MB",
            "--fail",
            "link:40@20us",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "mrc-spray" in result.output
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [*FILES, "simulation.html", "scenario.json", "manifest.json"]
    )
    flows = pq.read_table(out / "flows.parquet")
    assert flows.num_rows == 2 * 32
    assert pq.read_table(out / "link_utilisation.parquet").num_rows > 0
    page = (out / "simulation.html").read_text()
    assert "util-heatmap" in page and "link:40@20us" in page


def test_a_long_tail_gets_one_bin_of_its_own(topology: Topology, traffic: Traffic) -> None:
    """A link down for good: ``roce-ecmp`` waits out its assumed 1 s reroute, the others route
    around at once. The grid's equal bins cover the time window (the others' span), and the
    tail to ``roce-ecmp``'s end is one more bin; before, 100 bins ran to 1 s and every other
    transport fell in the first. The matrix still integrates to the segments' load."""
    leaf_spine = int(np.flatnonzero(topology.link_tier == 2)[0])
    failures = (parse_failure(f"link:{leaf_spine}@20us", topology),)
    router = build_router(topology)
    watch = 2 * np.flatnonzero(topology.link_tier >= 2)
    tailed = [
        Run(
            name,
            traffic,
            run(topology, traffic, transport(name), failures, router=router, watch_links=watch),
            router.capacity_bytes(),
        )
        for name in TRANSPORTS
    ]
    ends = {r.transport: busy_end_ps(r.result) for r in tailed}
    assert ends["roce-ecmp"] > 0.5e12 > 100 * ends["mrc-spray"]  # the reroute's tail
    window = time_window(tailed)
    assert [t for t, _ in window.beyond] == ["roce-ecmp"]
    for u, r in zip(utilisations(tailed), tailed, strict=True):
        edges = u.bin_edges_ps
        assert u.bins == 101 and edges[-2] == window.end_ps and edges[-1] == ends["roce-ecmp"]
        assert np.all(np.diff(edges[:-1]) <= window.end_ps / 100 + 1)
        dur = (u.seg_end_ps - u.seg_start_ps).astype(float)
        total = (u.matrix * np.diff(edges).astype(float)[:, None]).sum()
        assert total == pytest.approx((u.watched_mean * u.watch_links.size * dur).sum())
        if r.transport == "mrc-spray":  # its load is drawn over the equal bins, not in one
            assert np.count_nonzero(u.matrix.sum(axis=1)) > 10
