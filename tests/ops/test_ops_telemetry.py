"""The telemetry store: appends in pieces equal one append whole, rollups keep rates exact,
retention removes what is past its horizon and nothing else, and the CLI's exit codes."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clusterloom.cli.main import app
from clusterloom.errors import SpecError
from clusterloom.ops.fabric import OpsFabric, load_fabric
from clusterloom.ops.ingest import counter_rates, to_exposition
from clusterloom.ops.model import COUNTER_SCHEMA, COUNTERS, PROBE_SCHEMA, RATE_SCHEMA
from clusterloom.ops.telemetry import (
    DAY_MS,
    HOUR_MS,
    Retention,
    TelemetryStore,
    summarise_rates,
)

T0 = 1_764_547_200_000  # 2025-12-01T00:00:00Z
runner = CliRunner(env={"COLUMNS": "200"})


@pytest.fixture(scope="module")
def fabric() -> OpsFabric:
    return load_fabric("hgx-1k-roce")


@pytest.fixture(scope="module")
def ifaces(fabric: OpsFabric) -> list[tuple[str, str]]:
    t = fabric.interface_table()
    pairs = list(zip(t["device"].to_pylist(), t["interface"].to_pylist(), strict=True))
    return pairs[:2] + pairs[-2:]  # two host ports and two spine ports


def series(
    ifaces: list[tuple[str, str]], samples: int, *, every_ms: int = 10_000, seed: int = 0
) -> pa.Table:
    """Counters growing by random steps (below line rate), a link going down now and then."""
    rng = np.random.default_rng(seed)
    rows = []
    value = {i: rng.integers(0, 2**63, size=len(COUNTERS)).astype(np.uint64) for i in ifaces}
    for k in range(samples):
        for i in ifaces:
            step = rng.integers(0, 10**9, size=len(COUNTERS)).astype(np.uint64)
            value[i] = value[i] + step
            r: dict[str, object] = {"ts_ms": T0 + every_ms * k, "device": i[0], "interface": i[1]}
            r.update({c: int(v) for c, v in zip(COUNTERS, value[i], strict=True)})
            r["link_up"] = bool(rng.random() > 0.1)
            rows.append(r)
    return pa.Table.from_pylist(rows, schema=COUNTER_SCHEMA)


def by_time(t: pa.Table, keys: tuple[str, ...] = ("device", "interface")) -> pa.Table:
    return t.sort_by([("ts_ms", "ascending"), *((k, "ascending") for k in keys)])


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cuts=st.lists(st.integers(1, 4 * 419), max_size=4, unique=True))
def test_appends_in_pieces_equal_one_append_whole(
    cuts: list[int],
    fabric: OpsFabric,
    ifaces: list[tuple[str, str]],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    table = series(ifaces, 420)  # 70 minutes: two hour partitions
    store = TelemetryStore(tmp_path_factory.mktemp("store"), fabric)
    edges = [0, *sorted(cuts), table.num_rows]
    for lo, hi in itertools.pairwise(edges):
        added = store.add_counters(table.slice(lo, hi - lo))
        assert added.rows == hi - lo and added.notes == ()
    assert store.counters().equals(by_time(table))
    assert store.rates().equals(by_time(counter_rates(table, fabric)))
    assert store.rates().schema == RATE_SCHEMA
    assert len(store.hours("counters")) == 2
    # a window reads only its rows: [start, end)
    got = store.counters(T0 + 60_000, T0 + 120_000)
    assert sorted(set(got.column("ts_ms").to_pylist())) == list(
        range(T0 + 60_000, T0 + 120_000, 10_000)
    )


def test_old_samples_are_refused_with_a_note(
    fabric: OpsFabric, ifaces: list[tuple[str, str]], tmp_path: Path
) -> None:
    table = series(ifaces, 10)
    store = TelemetryStore(tmp_path / "s", fabric)
    store.add_counters(table.slice(0, 24))
    again = store.add_counters(table.slice(20, 20))  # rows 20..23 already there
    assert again.rows == 16
    assert len(again.notes) == 4 and all("not stored" in n.message for n in again.notes)
    assert store.counters().equals(by_time(table))


def test_rollups_keep_rates_exact(
    fabric: OpsFabric, ifaces: list[tuple[str, str]], tmp_path: Path
) -> None:
    table = series(ifaces, 6 * 125, seed=3)  # 125 minutes of 10 s samples
    store = TelemetryStore(tmp_path / "s", fabric)
    store.add_counters(table)
    assert store.downsample() == 3 * 2  # counters and rates, three hours each
    assert store.downsample() == 0  # nothing changed since
    for res, bucket in (("1m", 60_000), ("1h", HOUR_MS)):
        counters = store.counters(resolution=res)  # type: ignore[arg-type]
        rates = store.rates(resolution=res)  # type: ignore[arg-type]
        # counters: the last sample of each bucket
        ts = np.asarray(counters.column("ts_ms"))
        assert len(np.unique(ts // bucket)) == len(ts) // len(ifaces)
        # rates over the coarse samples are the rollup's weighted averages (after the first)
        coarse = by_time(counter_rates(counters, fabric))
        rolled = by_time(rates.filter(pc.greater(rates.column("ts_ms"), int(ts.min()))))
        assert coarse.column("ts_ms").equals(rolled.column("ts_ms"))
        for c in ("seconds", "tx_bps", "rx_bps", "drops_ps", "fec_uncorrected_ps"):
            np.testing.assert_allclose(
                coarse.column(c).to_numpy(zero_copy_only=False),
                rolled.column(c).to_numpy(zero_copy_only=False),
                rtol=1e-9,
            )
        # flaps add up, and so does the time up
        raw = store.rates()
        assert pc.sum(rates.column("flaps")).as_py() == pc.sum(raw.column("flaps")).as_py()

        def up_s(t: pa.Table) -> float:
            return float(pc.sum(pc.multiply(t.column("up"), t.column("seconds"))).as_py())

        assert up_s(rates) == pytest.approx(up_s(raw))
    # the raw seconds of the bucket sum to the rollup's
    raw = store.rates()
    assert pc.sum(raw.column("seconds")).as_py() == pytest.approx(
        pc.sum(store.rates(resolution="1m").column("seconds")).as_py()
    )


def test_probe_rollups_sum_and_weight(fabric: OpsFabric, tmp_path: Path) -> None:
    (sd, si), (dd, di) = fabric.endpoint(0, 0), fabric.endpoint(9, 0)
    rows = [
        {
            "ts_ms": T0 + 10_000 * (k + 1),
            "src_device": sd,
            "src_interface": si,
            "dst_device": dd,
            "dst_interface": di,
            "ev": 5,
            "sent": 10,
            "lost": k % 3,
            "rtt_us": 10.0 + k,
            "rtt_max_us": 20.0 + k,
        }
        for k in range(12)
    ]
    store = TelemetryStore(tmp_path / "s", fabric)
    store.add_probes(pa.Table.from_pylist(rows, schema=PROBE_SCHEMA))
    store.downsample()
    got = store.probes(resolution="1m").to_pylist()
    first = [r for r in rows if r["ts_ms"] < T0 + 60_000]
    assert got[0]["sent"] == 10 * len(first)
    assert got[0]["lost"] == sum(r["lost"] for r in first)
    back = [(r["sent"] - r["lost"], r["rtt_us"]) for r in first]
    assert got[0]["rtt_us"] == pytest.approx(sum(n * x for n, x in back) / sum(n for n, _ in back))
    assert got[0]["rtt_max_us"] == max(r["rtt_max_us"] for r in first)


def test_retention_removes_only_what_is_past_its_horizon(
    fabric: OpsFabric, ifaces: list[tuple[str, str]], tmp_path: Path
) -> None:
    table = series(ifaces[:1], 8 * 6, every_ms=600_000)  # eight hours of 10-minute samples
    h = 1 / 24  # an hour, in days
    kept = Retention(raw_days=2 * h, minute_days=4 * h, hour_days=6 * h, collective_days=h)
    store = TelemetryStore(tmp_path / "s", fabric, retention=kept)
    store.add_counters(table)
    now = T0 + 8 * HOUR_MS
    removed = store.enforce_retention(now)
    assert removed == {"raw": 2 * 6, "1m": 2 * 4, "1h": 2 * 2}  # counters and rates each
    for res, hours_kept in (("raw", 2), ("1m", 4), ("1h", 6)):
        # the hours kept are exactly those ending within the horizon
        want = list(range(T0 // HOUR_MS + 8 - hours_kept, T0 // HOUR_MS + 8))
        assert store.hours("counters", res) == want, res  # type: ignore[arg-type]
        assert store.hours("rates", res) == want, res  # type: ignore[arg-type]
    assert DAY_MS == 24 * HOUR_MS
    assert TelemetryStore(tmp_path / "s").retention == kept  # recorded in store.json
    with pytest.raises(SpecError, match="coarser lives longer"):
        Retention(raw_days=10, minute_days=2)
    with pytest.raises(SpecError, match=r"retention\.hour_days"):
        Retention(hour_days=-1)


def test_a_store_refuses_foreign_directories(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "notes.txt").write_text("mine")
    with pytest.raises(SpecError, match="not a telemetry store"):
        TelemetryStore(tmp_path / "x")
    (tmp_path / "y").mkdir()
    (tmp_path / "y" / "store.json").write_text(json.dumps({"format": 99}))
    with pytest.raises(SpecError, match="format 99"):
        TelemetryStore(tmp_path / "y")


def test_summary_weights_by_seconds() -> None:
    rates = pa.Table.from_pylist(
        [
            {
                "ts_ms": 10_000,
                "device": "a",
                "interface": "x",
                "link": 0,
                "end": 0,
                "seconds": 10.0,
                "tx_bps": 1e9,
                "up": 1.0,
                "flaps": 0,
            },
            {
                "ts_ms": 40_000,
                "device": "a",
                "interface": "x",
                "link": 0,
                "end": 0,
                "seconds": 30.0,
                "tx_bps": 5e9,
                "up": 0.0,
                "flaps": 1,
            },
        ],
        schema=RATE_SCHEMA,
    )
    (row,) = summarise_rates(rates)
    assert row["tx_gbps"] == pytest.approx((1 * 10 + 5 * 30) / 40)
    assert row["up"] == pytest.approx(10 / 40)
    assert row["first_ms"] == 0 and row["last_ms"] == 40_000 and row["flaps"] == 1
    assert row["rx_gbps"] is None


# -- the command line -----------------------------------------------------------------------


def test_ingest_exit_codes(
    fabric: OpsFabric, ifaces: list[tuple[str, str]], tmp_path: Path
) -> None:
    table = series(ifaces, 6)
    good = tmp_path / "good.prom"
    good.write_text(to_exposition("counters", table))
    store = tmp_path / "store"
    res = runner.invoke(app, ["ops", "ingest", "hgx-1k-roce", str(good), "--store", str(store)])
    assert res.exit_code == 0, res.output
    assert "24 of 24 rows stored, 20 rates" in res.output
    # bad rows: the good ones are stored, each bad one printed with its line, exit 1
    bad = tmp_path / "bad.csv"
    pcsv.write_csv(series(ifaces, 8).slice(24), bad)
    text = bad.read_text().splitlines()
    text[2] = text[2].replace(ifaces[0][0], "node77777", 1)
    bad.write_text("\n".join(text) + "\n")
    res = runner.invoke(
        app, ["ops", "ingest", "hgx-1k-roce", str(bad), "--store", str(store), "--json"]
    )
    assert res.exit_code == 1, res.output
    doc = json.loads(res.output)
    (f,) = doc["files"]
    assert f["rows_read"] == 8 and f["rows_kept"] == 7
    assert f["problems"] == ["bad.csv line 3: device 'node77777' is not in the design"]
    # nothing readable: exit 2, one line, nothing stored
    before = TelemetryStore(store).counters().num_rows
    res = runner.invoke(
        app,
        [
            "ops",
            "ingest",
            "hgx-1k-roce",
            str(good),
            str(tmp_path / "missing.csv"),
            "--store",
            str(store),
        ],
    )
    assert res.exit_code == 2 and "missing.csv: no such file" in res.output
    assert TelemetryStore(store).counters().num_rows == before
    res = runner.invoke(app, ["ops", "ingest", "no-such-design", str(good), "--store", str(store)])
    assert res.exit_code == 2
    # rates: a table, and JSON
    res = runner.invoke(app, ["ops", "rates", "--store", str(store), "--json", "--top", "2"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)
    assert len(rows) == 2 and {"tx_gbps", "flaps", "up"} <= set(rows[0])
    res = runner.invoke(app, ["ops", "rates", "--store", str(tmp_path / "nothing")])
    assert res.exit_code == 2
    res = runner.invoke(app, ["ops", "retain", "--store", str(store), "--now-ms", str(T0)])
    assert res.exit_code == 0 and "rolled up 2 hour partitions" in res.output
