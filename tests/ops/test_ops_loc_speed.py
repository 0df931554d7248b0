"""The interface speed gauge (issue 23, gray links by rate): read by every reader with the
exporters' names and units, checked row by row, carried into the rates and the store's
rollups, written by ``ops synth`` and used by localisation: a link whose operational speed is
below its design rate is a suspect of its own, with its evidence."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clusterloom.ops.detect import SPEED_SHARE, Signal, counter_anomalies
from clusterloom.ops.fabric import OpsFabric, load_fabric
from clusterloom.ops.faults import parse_fault
from clusterloom.ops.ingest import counter_rates, read_counters, to_exposition, validate
from clusterloom.ops.localise import localise
from clusterloom.ops.model import COUNTER_SCHEMA, COUNTERS, FaultKind, SuspectKind
from clusterloom.ops.synth import synthesize
from clusterloom.ops.telemetry import TelemetryStore

T0 = 1_764_547_200_000
G400 = 400_000_000_000


@pytest.fixture(scope="module")
def fabric() -> OpsFabric:
    return load_fabric("hgx-1k-roce")


@pytest.fixture(scope="module")
def spine_link(fabric: OpsFabric) -> int:
    return int(np.flatnonzero(fabric.topology.link_tier == 2)[9])


def _rows(fabric: OpsFabric, link: int, speeds: list[object], step: int = 10_000) -> pa.Table:
    """Counters of both ends of ``link``, one sample per speed (the same at both ends)."""
    dev, ifs = fabric.end_names
    rows = []
    for k, sp in enumerate(speeds):
        for end in (0, 1):
            r: dict[str, object] = {
                "ts_ms": T0 + step * k,
                "device": str(dev[link, end]),
                "interface": str(ifs[link, end]),
                **{c: 1000 * k for c in COUNTERS},
                "link_up": True,
                "speed_bps": sp,
            }
            rows.append(r)
    return pa.Table.from_pylist(rows, schema=COUNTER_SCHEMA)


def test_every_reader_reads_the_speed_and_absent_stays_null(
    fabric: OpsFabric, spine_link: int, tmp_path: Path
) -> None:
    table = _rows(fabric, spine_link, [G400, G400 // 2, None])
    (tmp_path / "c.om").write_text(to_exposition("counters", table, openmetrics=True))
    pcsv.write_csv(table, tmp_path / "c.csv")
    pq.write_table(table, tmp_path / "c.parquet")
    for name in ("c.om", "c.csv", "c.parquet"):
        got = read_counters(tmp_path / name, fabric, fmt="prom" if name == "c.om" else None)
        assert got.problems == (), name
        assert sorted(got.table["speed_bps"].to_pylist(), key=lambda v: (v is None, v)) == [
            G400 // 2,
            G400 // 2,
            G400,
            G400,
            None,
            None,
        ], name
    # a CSV without the column: every speed null, nothing refused
    pcsv.write_csv(table.drop_columns(["speed_bps"]), tmp_path / "old.csv")
    got = read_counters(tmp_path / "old.csv", fabric)
    assert got.problems == () and got.table["speed_bps"].null_count == got.table.num_rows


def test_foreign_speed_gauges_are_scaled_to_bits_per_second(
    fabric: OpsFabric, tmp_path: Path
) -> None:
    text = "\n".join(
        [
            "# TYPE node_network_speed_bytes gauge",
            'node_network_speed_bytes{device="gpu1p0",instance="node00000:9100"} 50000000000 1000',
            'node_network_carrier{device="gpu1p0",instance="node00000:9100"} 1 1000',
            "# TYPE ifHighSpeed gauge",
            'ifHighSpeed{ifName="swp1s1",ifIndex="1",instance="be-p0-leaf0000"} 200000 1000',
            'ifOperStatus{ifName="swp1s1",ifIndex="1",instance="be-p0-leaf0000"} 1 1000',
        ]
    )
    (tmp_path / "f.prom").write_text(text + "\n")
    got = read_counters(tmp_path / "f.prom", fabric)
    assert got.problems == ()
    speed = {r["device"]: r["speed_bps"] for r in got.table.to_pylist()}
    assert speed == {"node00000": 400_000_000_000, "be-p0-leaf0000": 200_000_000_000}


def test_a_bad_speed_is_a_problem_naming_its_line_and_the_good_rows_stay(
    fabric: OpsFabric, spine_link: int, tmp_path: Path
) -> None:
    good = _rows(fabric, spine_link, [G400, G400, G400, G400])
    lines = pcsv_text(good).splitlines()
    # lines[0] is the header; spoil the speed of data lines 3 and 6 (file lines 4 and 7)
    bad = list(lines)
    speed_at = lines[0].split(",").index('"speed_bps"')
    for i, value in ((3, "-400"), (6, "fast")):
        fields = bad[i].split(",")
        fields[speed_at] = value
        bad[i] = ",".join(fields)
    (tmp_path / "bad.csv").write_text("\n".join(bad) + "\n")
    got = read_counters(tmp_path / "bad.csv", fabric)
    assert [(p.where, p.message) for p in got.problems] == [
        ("bad.csv line 4", "speed_bps '-400' is negative"),
        ("bad.csv line 7", "speed_bps 'fast' is not a number"),
    ]
    assert got.table.num_rows == good.num_rows - 2
    # OpenMetrics: NaN and a negative speed are refused the same way
    text = (
        'ifHighSpeed{ifName="swp1s1",instance="be-p0-leaf0000"} NaN 1000\n'
        'ifHighSpeed{ifName="swp1s1",instance="be-p0-leaf0000"} -1 2000\n'
        'ifHighSpeed{ifName="swp1s1",instance="be-p0-leaf0000"} 400000 3000\n'
    )
    (tmp_path / "nan.prom").write_text(text)
    got = read_counters(tmp_path / "nan.prom", fabric)
    assert [p.message for p in got.problems] == [
        "speed_bps 'NaN' is not a number",
        "speed_bps '-1000000' is negative",
    ]
    assert got.table["speed_bps"].to_pylist() == [G400]


def pcsv_text(table: pa.Table) -> str:
    sink = pa.BufferOutputStream()
    pcsv.write_csv(table, sink)
    return bytes(sink.getvalue()).decode()


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_bad_speeds_never_drop_good_rows(
    data: st.DataObject, fabric: OpsFabric, spine_link: int
) -> None:
    good = _rows(fabric, spine_link, [G400] * 4)
    rows = [{k: (None if v is None else str(v)) for k, v in r.items()} for r in good.to_pylist()]
    out = list(rows)
    bad_at: list[int] = []
    for _ in range(data.draw(st.integers(1, 5))):
        i = data.draw(st.integers(0, len(out)))
        r = dict(rows[data.draw(st.integers(0, len(rows) - 1))])
        r["speed_bps"] = data.draw(st.sampled_from(["-1", "NaN", "1.5", "fast", "-4e11"]))
        out.insert(i, r)
        bad_at = [b + (b >= i) for b in bad_at] + [i]
    got = validate("counters", pa.Table.from_pylist(out), fabric)
    assert sorted(int(p.where.split()[-1]) - 1 for p in got.problems) == sorted(bad_at)
    assert got.table.equals(good)


def test_rates_carry_the_closing_speed_and_the_rollup_its_last(
    fabric: OpsFabric, spine_link: int, tmp_path: Path
) -> None:
    speeds: list[object] = [G400] * 3 + [G400 // 4] * 3 + [None] * 6  # 12 samples, 10 s apart
    counters = _rows(fabric, spine_link, speeds)
    rates = counter_rates(counters, fabric)
    by_ts = sorted({(r["ts_ms"], r["speed_bps"]) for r in rates.to_pylist()})
    assert by_ts == [(T0 + 10_000 * k, speeds[k]) for k in range(1, 12)]
    store = TelemetryStore(tmp_path / "tel", fabric)
    store.add_counters(counters)
    store.downsample()
    rolled = store.rates(resolution="1m").to_pylist()
    # the first minute's last interval ends at 50 s (a quarter speed), the second's at 110 s
    assert sorted({(r["ts_ms"], r["speed_bps"]) for r in rolled}) == [
        (T0 + 50_000, float(G400 // 4)),
        (T0 + 110_000, None),
    ]
    assert store.counters(resolution="1m")["speed_bps"].to_pylist() == [
        G400 // 4,
        G400 // 4,
        None,
        None,
    ]


def test_a_store_written_before_the_speed_reads_it_as_null(
    fabric: OpsFabric, spine_link: int, tmp_path: Path
) -> None:
    """Parts without the column (the store's format before the speed) and parts with it."""
    store = TelemetryStore(tmp_path / "tel", fabric)
    old = _rows(fabric, spine_link, [G400, G400])
    part = tmp_path / "tel" / "raw" / "rates"
    store.add_counters(old)
    for p in part.rglob("*.parquet"):  # strip the column as an older writer would have
        pq.write_table(pq.read_table(p).drop_columns(["speed_bps"]), p)
    newer = _rows(fabric, spine_link, [G400, G400 // 2])
    newer = newer.set_column(0, "ts_ms", pa.array(np.asarray(newer["ts_ms"]) + 60_000))
    store.add_counters(newer)
    got = store.rates()
    # the old part's interval (null), the new parts' (from the stored sample on) with theirs
    assert sorted(got["speed_bps"].to_pylist(), key=lambda v: (v is None, v)) == [
        float(G400 // 2),
        float(G400 // 2),
        float(G400),
        float(G400),
        None,
        None,
    ]
    assert store.downsample() >= 1  # the rollups read both kinds of part


def _rates_table(fabric: OpsFabric, share: dict[int, float], up: float = 1.0) -> pa.Table:
    """Six 10-s intervals of every interface at 40% utilisation, the speed of the links in
    ``share`` at that share of their rate from the third interval on."""
    it = fabric.interface_table()
    n = it.num_rows
    link = np.asarray(it["link"].to_numpy(), dtype=np.int64)
    cap = np.asarray(it["capacity_bps"].to_numpy(), dtype=np.float64)
    k = 6
    speed = np.tile(cap, (k, 1))
    for lk, s in share.items():
        speed[2:, link == lk] *= s
    tx = 0.4 * np.tile(cap, k)
    return pa.table(
        {
            "ts_ms": np.repeat(T0 + 10_000 * np.arange(1, k + 1, dtype=np.int64), n),
            "link": np.tile(link, k),
            "end": np.tile(np.asarray(it["end"].to_numpy(), dtype=np.int8), k),
            "tx_bps": tx,
            "tx_pps": tx / 8 / 4160,
            "rx_pps": tx / 8 / 4160,
            "drops_ps": np.zeros(n * k),
            "ecn_ps": np.zeros(n * k),
            "pfc_ps": np.zeros(n * k),
            "fec_uncorrected_ps": np.zeros(n * k),
            "up": np.full(n * k, up),
            "flaps": np.zeros(n * k, dtype=np.int32),
            "speed_bps": speed.reshape(-1),
        }
    )


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(share=st.floats(0.05, 1.0), pick=st.integers(0, 10**6))
def test_a_speed_below_the_design_rate_is_flagged_exactly_there(
    fabric: OpsFabric, share: float, pick: int
) -> None:
    link = pick % fabric.topology.n_links
    found = [a for a in counter_anomalies(_rates_table(fabric, {link: share}), fabric)]
    speed = [a for a in found if a.signal is Signal.SPEED]
    if share < SPEED_SHARE:
        assert {a.link for a in speed} == {link} and len(speed) == 2  # both ends
        assert all(a.baseline == pytest.approx(share) and a.intervals == 4 for a in speed)
        assert all(a.first_ms == T0 + 30_000 and a.score > 1 for a in speed)
    else:
        assert speed == []


def test_a_down_link_or_no_speed_exported_flags_nothing(fabric: OpsFabric) -> None:
    down = _rates_table(fabric, {5: 0.0}, up=0.0)
    assert not [a for a in counter_anomalies(down, fabric) if a.signal is Signal.SPEED]
    absent = _rates_table(fabric, {5: 0.5}).drop_columns(["speed_bps"])
    assert not [a for a in counter_anomalies(absent, fabric) if a.signal is Signal.SPEED]


def test_synth_writes_the_cut_speed_only_where_and_when_the_fault_is(
    fabric: OpsFabric, spine_link: int
) -> None:
    label = fabric.link_label(spine_link)
    fault = parse_fault(f"gray-link:{label}@20s-40s*rate=0.3", fabric)
    seen = synthesize(fabric, [fault], duration_s=60, interval_s=10, seed=5)
    hidden = synthesize(
        fabric, [fault], duration_s=60, interval_s=10, seed=5, speed_shows_rate_cut=False
    )
    it = fabric.interface_table()
    cap = np.asarray(it["capacity_bps"].to_numpy(), dtype=np.uint64)
    n = it.num_rows
    speed = np.asarray(seen.counters["speed_bps"]).reshape(-1, n)
    on = np.asarray(it["link"].to_numpy()) == spine_link
    t = (np.asarray(seen.counters["ts_ms"]).reshape(-1, n)[:, 0] - seen.start_ms) // 1000
    want = np.tile(cap, (t.size, 1))
    want[np.ix_((t >= 20) & (t < 40), on)] = np.floor(cap[on] * 0.3).astype(np.uint64)
    assert (speed == want).all()
    # the cut not visible: the design's rate everywhere, every other column the same
    assert (np.asarray(hidden.counters["speed_bps"]).reshape(-1, n) == cap[None, :]).all()
    assert hidden.counters.drop_columns(["speed_bps"]).equals(
        seen.counters.drop_columns(["speed_bps"])
    )
    assert hidden.probes.equals(seen.probes) and hidden.collectives.equals(seen.collectives)


def test_a_link_trained_down_is_named_first_by_its_speed_even_when_nothing_else_shows(
    fabric: OpsFabric, spine_link: int
) -> None:
    """A rate cut that leaves the link above what its flows need changes no counter, probe
    or collective: only the speed gauge tells; without it the incident is silent."""
    label = fabric.link_label(spine_link)
    fault = parse_fault(f"gray-link:{label}@10s*rate=0.8", fabric)
    for shows in (True, False):
        syn = synthesize(
            fabric, [fault], duration_s=60, interval_s=10, seed=2, speed_shows_rate_cut=shows
        )
        loc = localise(
            fabric,
            rates=counter_rates(syn.counters, fabric),
            probes=syn.probes,
            collectives=syn.collectives,
        )
        if not shows:
            assert loc.suspects == ()
            continue
        first = loc.suspects[0]
        assert first.kind is SuspectKind.LINK and first.fault is FaultKind.GRAY_LINK
        assert fabric.link_of_label(first.target) == spine_link
        assert first.confidence > 0.99  # both ends say so
        assert any("320 Gb/s, 80% of the design's 400 Gb/s" in e for e in first.evidence)
        assert len(loc.suspects) == 1
