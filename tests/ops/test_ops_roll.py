"""The localisation path's rollup (ops-roll, issue 23): the rates' 1-minute (and 1-hour)
rollup grouped in the read by integer keys equals the stored rollup to the bit, in a total
order, run after run; it reads the stored rollup where the raw rates have expired; a partial
``downsample`` makes only what it is asked for; ``localise_store`` needs no rollup made."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from clusterloom.errors import SpecError
from clusterloom.ops.detect import RATE_COLUMNS_READ
from clusterloom.ops.fabric import OpsFabric, load_fabric
from clusterloom.ops.faults import parse_fault
from clusterloom.ops.localise import localisation_dict, localise, localise_store
from clusterloom.ops.model import COUNTER_SCHEMA, COUNTERS, RATE_SCHEMA
from clusterloom.ops.synth import synthesize
from clusterloom.ops.telemetry import HOUR_MS, MINUTE_MS, Retention, TelemetryStore

T0 = 1_764_547_200_000  # 2025-12-01T00:00:00Z
NUMERIC = [f.name for f in RATE_SCHEMA if f.name not in ("device", "interface")]


@pytest.fixture(scope="module")
def fabric() -> OpsFabric:
    return load_fabric("hgx-1k-roce")


def _counters(fabric: OpsFabric, minutes: int, *, seed: int) -> pa.Table:
    """Six interfaces' counters every 10 s (with jitter, so buckets hold 5 to 7 intervals),
    random steps, links going down now and then, the speed exported for some, a counter
    column null now and then (weighted averages over the intervals where it is not)."""
    rng = np.random.default_rng(seed)
    t = fabric.interface_table()
    pick = rng.choice(t.num_rows, 6, replace=False)
    dev = np.asarray(t["device"].to_pylist(), dtype=object)[pick]
    ifn = np.asarray(t["interface"].to_pylist(), dtype=object)[pick]
    n = 6 * minutes
    ts = T0 + 10_000 * np.arange(n) + rng.integers(-3_000, 3_000, n)
    ts[0] = T0
    cols: dict[str, object] = {
        "ts_ms": np.repeat(ts, 6),
        "device": np.tile(dev, n).tolist(),
        "interface": np.tile(ifn, n).tolist(),
    }
    for c in COUNTERS:
        steps = rng.integers(0, 10**9, size=(n, 6)).astype(np.uint64)
        vals = (np.cumsum(steps, axis=0) + rng.integers(0, 2**40, 6).astype(np.uint64)).reshape(-1)
        mask = rng.random(n * 6) < (0.05 if c == "drops" else 0.0)
        cols[c] = pa.array(vals, pa.uint64(), mask=mask)
    cols["link_up"] = rng.random(n * 6) > 0.05
    speed = np.tile(np.where(np.arange(6) < 3, 4e11, np.nan), n)
    cols["speed_bps"] = pa.array(speed, pa.float64(), mask=np.isnan(speed))
    cols["retransmissions"] = pa.nulls(n * 6, pa.uint64())  # a NIC counter: none here
    return pa.table(cols).select(COUNTER_SCHEMA.names).cast(COUNTER_SCHEMA)


def _sorted(table: pa.Table) -> pa.Table:
    return table.sort_by([("ts_ms", "ascending"), ("link", "ascending"), ("end", "ascending")])


@pytest.fixture()
def store(fabric: OpsFabric, tmp_path: Path) -> TelemetryStore:
    s = TelemetryStore(tmp_path / "tel", fabric)
    table = _counters(fabric, 125, seed=7)  # three hours: 0-60, 60-120, 120-125 minutes
    s.add_counters(table.slice(0, 6 * 300))  # in two appends: two raw parts an hour
    s.add_counters(table.slice(6 * 300))
    return s


@pytest.mark.parametrize("res", ["1m", "1h"])
def test_the_rollup_in_the_read_equals_the_stored_one_to_the_bit(
    store: TelemetryStore, res: str
) -> None:
    got = store.rate_rollup(NUMERIC, resolution=res)  # type: ignore[arg-type]
    assert not (store.path / res).exists()  # nothing stored: grouped in the read
    assert store.downsample(kinds=("rates",), resolutions=(res,)) == 3
    stored = store.columns("rates", NUMERIC, resolution=res)  # type: ignore[arg-type]
    assert got.num_rows == stored.num_rows > 0
    assert got.equals(_sorted(stored))  # every value, nulls included, and the schema
    # a total order: time, then link, then end, strictly
    key = np.stack([got[c].to_numpy() for c in ("ts_ms", "link", "end")], axis=1)
    assert (np.lexsort(key.T[::-1]) == np.arange(len(key))).all()
    assert len(np.unique(key, axis=0)) == len(key)
    # the same bytes again
    assert store.rate_rollup(NUMERIC, resolution=res).equals(got)  # type: ignore[arg-type]


def test_a_window_is_the_stored_rollups_rows_in_it(store: TelemetryStore) -> None:
    lo, hi = T0 + 50 * MINUTE_MS + 7_000, T0 + HOUR_MS + 13 * MINUTE_MS
    got = store.rate_rollup(RATE_COLUMNS_READ, lo, hi)
    store.downsample(kinds=("rates",), resolutions=("1m",))
    want = _sorted(store.columns("rates", RATE_COLUMNS_READ, lo, hi, resolution="1m"))
    assert got.equals(want) and got.num_rows > 0
    ts = got["ts_ms"].to_numpy()
    assert ts.min() >= lo and ts.max() < hi
    assert len(np.unique(ts // HOUR_MS)) == 2  # across the hour's boundary


def test_expired_raw_hours_are_read_from_their_stored_rollup(store: TelemetryStore) -> None:
    whole = store.rate_rollup(NUMERIC)
    store.downsample()
    store.retention = Retention(raw_days=1.0, minute_days=30.0, hour_days=60.0)
    # now: the first hour's raw data just past one day, the others not
    removed = store.enforce_retention(T0 + HOUR_MS + 86_400_000 + 1)
    assert removed == {"raw": 2, "1m": 0, "1h": 0}  # counters and rates of the first hour
    assert store.hours("rates", "raw")[0] == T0 // HOUR_MS + 1
    assert store.rate_rollup(NUMERIC).equals(whole)


def test_a_partial_downsample_makes_only_what_it_is_asked_for(store: TelemetryStore) -> None:
    assert store.downsample(kinds=("rates",), resolutions=("1m",)) == 3
    assert store.hours("rates", "1m") and not store.hours("rates", "1h")
    assert not store.hours("counters", "1m")
    assert store.downsample(kinds=("rates",), resolutions=("1m",)) == 0  # current
    # the rest: counters at both resolutions, rates at 1 hour only
    assert store.downsample() == 6
    assert store.downsample() == 0
    doc = json.loads((store.path / "state" / "rolled.json").read_text())
    assert sorted(doc) == [
        f"{k}/{h}"
        for k in ("counters", "rates")
        for h in sorted({"2025-12-01T00", "2025-12-01T01", "2025-12-01T02"})
    ]
    # a new part of an hour makes it stale again, at each resolution
    more = _counters(store.fabric, 130, seed=7).slice(6 * 750)  # type: ignore[arg-type]
    store.add_counters(more)
    assert store.downsample(kinds=("rates",), resolutions=("1h",)) == 1
    assert store.downsample(kinds=("rates",)) == 1  # its 1-minute rollup still stale


def test_bad_arguments_are_refused_naming_them(store: TelemetryStore) -> None:
    with pytest.raises(SpecError) as err:
        store.downsample(kinds=("rate",), resolutions=("5m",))
    assert {p.where for p in err.value.problems} == {"kinds", "resolutions"}
    with pytest.raises(SpecError, match="device"):
        store.rate_rollup(["ts_ms", "device"])
    with pytest.raises(SpecError, match="resolution"):
        store.rate_rollup(["ts_ms"], resolution="raw")  # type: ignore[arg-type]


def test_localise_store_needs_no_rollup_and_finds_what_the_stored_one_gives(
    fabric: OpsFabric, tmp_path: Path
) -> None:
    text = "gray-link:be-p0-leaf0000:swp53s1~be-p0-spine0000:swp3s2@10s*rate=0.5"
    syn = synthesize(fabric, [parse_fault(text, fabric)], duration_s=60, interval_s=10, seed=4)
    store = TelemetryStore(tmp_path / "tel", fabric)
    store.add_counters(syn.counters)
    store.add_probes(syn.probes)
    store.add_collectives(syn.collectives)
    got = localise_store(fabric, store)
    assert not (store.path / "1m").exists()  # no rollup was made
    store.downsample()
    want = localise(
        fabric,
        rates=store.columns("rates", RATE_COLUMNS_READ, resolution="1m"),
        probes=store.probes(),
        collectives=store.collectives(),
    )
    assert json.dumps(localisation_dict(got)) == json.dumps(localisation_dict(want))
    assert got.suspects and "swp53s1" in got.suspects[0].target
