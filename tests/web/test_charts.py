"""The explorer's charts: CDFs that are CDFs of the flows, a utilisation window that excludes a
transport waiting for its assumed 1 s reroute and says so, a heat map whose cells are the
table's utilisation, every figure plain JSON and the same for the same tables."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clusterloom.cli.main import app
from clusterloom.web import charts
from helpers import MINIMAL_SPEC


def _write(run: Path, name: str, columns: dict[str, list[object]]) -> None:
    pq.write_table(pa.table(columns), run / f"{name}.parquet")


def _synthetic(run: Path, fail: str = "switch:9@50us") -> Path:
    """Three transports on one 0..10 µs start: fast ends at 100 µs, slow at 200 µs,
    roce-ecmp keeps one flow until its 1 s reroute (1,000,050 µs); one link watched over 4
    bins of 250,012.5 µs (the grid the writer spreads over the longest run)."""
    run.mkdir(parents=True, exist_ok=True)
    names = ["fast"] * 2 + ["slow"] * 2 + ["roce-ecmp"] * 2
    _write(
        run,
        "flows",
        {
            "transport": names,
            "flow": [0, 1] * 3,
            "start_us": [0.0, 10.0] * 3,
            "finish_us": [60.0, 100.0, 150.0, 200.0, 90.0, 1_000_050.0],
            "fct_us": [60.0, 90.0, 150.0, 190.0, 90.0, 1_000_040.0],
        },
    )
    _write(
        run,
        "utilisation",
        {
            "transport": ["fast", "slow", "roce-ecmp", "roce-ecmp", "roce-ecmp"],
            "start_us": [0.0, 0.0, 0.0, 90.0, 1_000_000.0],
            "end_us": [100.0, 200.0, 90.0, 1_000_000.0, 1_000_050.0],
            "max_util": [1.0, 0.5, 1.0, 0.0, 0.25],
        },
    )
    step = 1_000_050.0 / 4
    _write(
        run,
        "link_utilisation",
        {
            "transport": ["roce-ecmp"] * 3 + ["slow"],
            "bin": pa.array([0, 3, 0, 0], type=pa.int32()),
            "start_us": [0.0, 3 * step, 0.0, 0.0],
            "end_us": [step, 4 * step, step, step],
            "link": [6, 6, 9, 6],
            "util": [0.4, 0.1, 0.7, 0.2],
        },
    )
    scenario = {"transports": ["fast", "slow", "roce-ecmp"], "failures": [fail]}
    (run / "scenario.json").write_text(json.dumps(scenario))
    return run


def test_window_excludes_a_transport_waiting_for_its_assumed_reroute(tmp_path: Path) -> None:
    run = _synthetic(tmp_path / "run")
    w = charts.window(run)
    assert (w.start, w.end) == (0.0, 200.0)  # slow ends within 10x fast's 100 µs
    assert dict(w.ends)["roce-ecmp"] == 1_000_050.0
    ((name, end, why),) = w.beyond
    assert (name, end) == ("roce-ecmp", 1_000_050.0)
    assert "assumed: roce-ecmp.reroute_s=1" in why
    fig = charts.utilisation(run)
    assert fig["layout"]["xaxis"]["range"] == [0.0, 200.0]
    for trace in fig["data"]:
        assert max(trace["x"]) <= 200.0  # clipped at the window, not flattening the others
    notes = [a["text"] for a in fig["layout"]["annotations"]]
    assert any(
        n.startswith("roce-ecmp goes on to 1.00005 s (clipped)") and "reroute_s=1" in n
        for n in notes
    )
    assert "switch:9@50us down" in notes  # the failure in view, drawn as a line
    assert [s["x0"] for s in fig["layout"]["shapes"]] == [50.0]


def test_without_a_hard_failure_no_assumption_is_claimed(tmp_path: Path) -> None:
    run = _synthetic(tmp_path / "run", fail="link:3@50us*0.5")  # a gray failure
    ((name, _, why),) = charts.window(run).beyond
    assert name == "roce-ecmp" and why == ""


def test_a_failure_keeps_the_window_open_to_show_it(tmp_path: Path) -> None:
    run = _synthetic(tmp_path / "run", fail="switch:9@500us")
    assert charts.window(run).end == 500.0  # within 10x of 100 µs: kept in view


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(0.5, 1e6, allow_nan=False), min_size=1, max_size=3000),
    st.integers(0, 50),
)
def test_cdf_is_monotone_from_0_to_the_finished_share(fcts: list[float], unfinished: int) -> None:
    total = len(fcts) + unfinished
    x, y = charts._cdf_points(np.array(fcts), total)
    assert np.all(np.diff(x) >= 0) and np.all(np.diff(y) > 0)
    assert y[0] == 0.0 and y[-1] == pytest.approx(len(fcts) / total)
    assert x[0] == min(fcts) and x[-1] == max(fcts)
    # one point per flow (and the first at 0), or CDF_POINTS evenly spaced ranks
    assert len(x) == min(len(fcts), charts.CDF_POINTS) + 1
    # every point lies on the empirical CDF: the share of flows no later than x
    f = np.sort(fcts)
    at = np.searchsorted(f, x[1:], side="right") / total
    assert np.all(y[1:] <= at + 1e-12)


def test_cdf_lines_per_run_and_transport(tmp_path: Path) -> None:
    a, b = _synthetic(tmp_path / "a"), _synthetic(tmp_path / "b")
    fig = charts.fct_cdf([("a", a), ("b", b)])
    assert [t["name"] for t in fig["data"]] == [
        f"{r}: {t}" for r in "ab" for t in ("fast", "slow", "roce-ecmp")
    ]
    fast = fig["data"][0]
    assert fast["x"] == [60.0, 60.0, 90.0] and fast["y"] == [0.0, 0.5, 1.0]
    assert fig["layout"]["xaxis"]["type"] == "log"  # 60 µs to 1 s
    linear = charts.fct_cdf([("a", a)], log_x=False)["layout"]["xaxis"]
    assert linear["type"] == "linear" and linear["range"] == [0, 1_000_040.0 * 1.05]
    assert "flow completion time (µs)" in fig["layout"]["xaxis"]["title"]["text"]


def test_heatmap_cells_are_the_tables_utilisation(tmp_path: Path) -> None:
    run = _synthetic(tmp_path / "run")
    fig = charts.link_heatmap(run, transport="roce-ecmp", names={6: "leaf1:p1 → spine1:p2"})
    (trace,) = fig["data"]
    # link 9 carried 0.7 x 1 bin, link 6 0.4 + 0.1: link 9 is the most loaded
    assert trace["y"] == ["link 9 ↓", "leaf1:p1 → spine1:p2"]
    assert trace["customdata"] == [9, 6]
    # the window ends at 200 µs, inside bin 0: only that bin is drawn, and it says the bins
    # are coarse
    assert trace["z"] == [[70.0], [40.0]]
    assert trace["zmin"] == 0 and trace["zmax"] == 100
    assert trace["colorbar"]["title"]["text"] == "% of capacity"
    assert "coarse" in fig["layout"]["annotations"][0]["text"]
    assert fig["layout"]["xaxis"]["title"]["text"] == "time (µs)"
    assert fig["layout"]["yaxis"]["title"]["text"] == "link"
    # by default the first transport neither the bound nor clipped by the window: slow
    assert charts.link_heatmap(run)["data"][0]["z"] == [[20.0]]
    assert charts.link_heatmap(run, top=1)["data"][0]["y"] == ["link 6 ↑"]


def test_missing_tables_and_transports_say_what(tmp_path: Path) -> None:
    with pytest.raises(charts.ChartError, match=r"flows\.parquet is missing"):
        charts.fct_cdf([("x", tmp_path)])
    run = _synthetic(tmp_path / "run")
    with pytest.raises(charts.ChartError, match="no link utilisation of transport 'nope'"):
        charts.link_heatmap(run, transport="nope")
    tables = {n: run / f"{n}.parquet" for n in ("flows", "utilisation")}
    with pytest.raises(charts.ChartError, match="no table 'link_utilisation'"):
        charts.link_heatmap(tables)


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real `clusterloom simulate -o` run of the 16-GPU fabric with a leaf-spine failure."""
    root = tmp_path_factory.mktemp("sim")
    spec = root / "tiny.yaml"
    spec.write_text(MINIMAL_SPEC)
    out = root / "run"
    result = CliRunner().invoke(
        app, ["simulate", str(spec), "--size", "256kB", "--fail", "link:20@5us", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    return out


def test_figures_of_a_real_run_are_json_and_deterministic(real_run: Path) -> None:
    tables = {n: real_run / f"{n}.parquet" for n in charts._TABLES}
    tables["scenario"] = real_run / "scenario.json"
    for make in (
        lambda: charts.fct_cdf([("run", real_run)]),
        lambda: charts.utilisation(real_run),
        lambda: charts.link_heatmap(real_run),
        lambda: charts.utilisation(tables),  # the store's blobs by name
    ):
        text = json.dumps(make(), allow_nan=False, sort_keys=True)
        assert text == json.dumps(make(), allow_nan=False, sort_keys=True)
    flows = pq.read_table(real_run / "flows.parquet").to_pandas()
    cdf = charts.fct_cdf([("run", real_run)])
    for trace in cdf["data"]:
        n = int((flows.transport == trace["name"]).sum())
        assert trace["meta"]["flows"] == n
        assert len(trace["x"]) == min(trace["meta"]["finished"], charts.CDF_POINTS) + 1
    assert charts.utilisation(tables) == charts.utilisation(real_run)


def test_heatmap_of_a_real_run_reads_the_table(real_run: Path) -> None:
    table = pq.read_table(real_run / "link_utilisation.parquet").to_pandas()
    fig = charts.link_heatmap(real_run, top=10**6)
    (trace,) = fig["data"]
    t = fig["layout"]["title"]["text"].split(":")[0]
    mine = table[table.transport == t]
    assert len(trace["y"]) == mine.link.nunique()
    mine = mine[mine.bin < len(trace["x"])]  # the bins within the window
    row = mine.sort_values(["util", "link", "bin"], ascending=[False, True, True]).iloc[0]
    i = trace["customdata"].index(int(row.link))
    # z is in % rounded to 1e-6 (charts.link_heatmap), so equal within half of that
    assert trace["z"][i][int(row.bin)] == pytest.approx(row.util * 100, rel=0, abs=5e-7)


def test_plotly_js_is_the_installed_packages() -> None:
    import plotly

    path = charts.plotly_js_path()
    assert path.is_file() and path.parent.parent == Path(plotly.__file__).parent
    assert path.stat().st_size > 1_000_000


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0.01, 50, allow_nan=False), st.floats(0, 1, allow_nan=False)),
        min_size=1,
        max_size=80,
    )
)
def test_a_long_series_keeps_each_bins_peak(segments: list[tuple[float, float]]) -> None:
    """Thinned to SERIES_POINTS bins, each bin holds the largest value of the segments that
    overlap it (so no peak is lost), brute force against the segments."""
    widths, values = np.array([w for w, _ in segments]), np.array([v for _, v in segments])
    end = np.cumsum(widths)
    start = end - widths
    points = 10
    original = charts.SERIES_POINTS
    charts.SERIES_POINTS = points
    try:
        x, y = charts._series(start, end, values, float(end[-1]) + 1)
    finally:
        charts.SERIES_POINTS = original
    if len(segments) <= points:
        assert list(x[:-1]) == list(start) and list(y[:-1]) == list(values)
        return
    assert len(x) == points + 1
    for i in range(points):
        lo, hi = x[i], x[i + 1]
        overlap = (start < hi) & (end > lo)
        assert y[i] == values[overlap].max()
    assert y.max() == values.max()
