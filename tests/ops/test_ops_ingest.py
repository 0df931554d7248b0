"""Ingestion: exposition, CSV and Parquet into the model's tables; every bad row named with its
line and the good ones kept; counter rates across 64-bit wraps and resets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clusterloom.errors import SpecError
from clusterloom.ops.fabric import OpsFabric, load_fabric
from clusterloom.ops.ingest import (
    MAX_LINE,
    counter_rates,
    counter_rates_noted,
    read_collectives,
    read_counters,
    read_probes,
    to_exposition,
    validate,
)
from clusterloom.ops.model import (
    COLLECTIVE_SCHEMA,
    COUNTER_SCHEMA,
    COUNTERS,
    PROBE_SCHEMA,
    RATE_SCHEMA,
)

T0 = 1_764_547_200_000  # 2025-12-01T00:00:00Z in ms
U64 = 2**64


@pytest.fixture(scope="module")
def fabric() -> OpsFabric:
    return load_fabric("hgx-1k-roce")


@pytest.fixture(scope="module")
def ifaces(fabric: OpsFabric) -> list[tuple[str, str]]:
    """A spread of the design's interfaces, hosts' and switches' (every 37th)."""
    t = fabric.interface_table()
    return list(zip(t["device"].to_pylist(), t["interface"].to_pylist(), strict=True))[::37]


@pytest.fixture(scope="module")
def hosts(fabric: OpsFabric) -> list[tuple[str, str]]:
    t = fabric.interface_table()
    keep = (t["tier"].to_numpy() == 1) & (t["end"].to_numpy() == 0)
    dev = np.asarray(t["device"].to_pylist(), dtype=object)[keep]
    ifs = np.asarray(t["interface"].to_pylist(), dtype=object)[keep]
    return list(zip(dev.tolist(), ifs.tolist(), strict=True))[::29]


def counters_table(rows: list[dict[str, object]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=COUNTER_SCHEMA)


def linear(
    ifaces: list[tuple[str, str]], samples: int, *, slope: int = 1000, start: int = 0
) -> pa.Table:
    rows: list[dict[str, object]] = []
    for k in range(samples):
        for j, (d, f) in enumerate(ifaces):
            r: dict[str, object] = {"ts_ms": T0 + 10_000 * k, "device": d, "interface": f}
            for m, c in enumerate(COUNTERS):
                r[c] = (start + slope * (j + 1) * (m + 1) * k) % U64
            r["link_up"] = True
            rows.append(r)
    return counters_table(rows)


def key_sorted(t: pa.Table, keys: tuple[str, ...]) -> pa.Table:
    return t.sort_by([(k, "ascending") for k in keys])


CKEY = ("device", "interface", "ts_ms")

# -- round trips ------------------------------------------------------------------------------

u64 = st.one_of(
    st.none(),
    st.integers(0, 2**20),
    st.integers(U64 - 2**20, U64 - 1),
    st.integers(0, U64 - 1),
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_counters_round_trip_through_every_format(
    data: st.DataObject, fabric: OpsFabric, ifaces: list[tuple[str, str]], tmp_path: Path
) -> None:
    picks = data.draw(st.lists(st.sampled_from(ifaces), min_size=1, max_size=6, unique=True))
    stamps = data.draw(st.lists(st.integers(0, 10**6), min_size=1, max_size=4, unique=True))
    rows = []
    for d, f in picks:
        for s in sorted(stamps):
            r: dict[str, object] = {"ts_ms": T0 + s, "device": d, "interface": f}
            vals = data.draw(st.lists(u64, min_size=len(COUNTERS), max_size=len(COUNTERS)))
            r.update(dict(zip(COUNTERS, vals, strict=True)))
            r["link_up"] = data.draw(st.one_of(st.none(), st.booleans()))
            rows.append(r)
    table = counters_table(rows)
    (tmp_path / "c.prom").write_text(to_exposition("counters", table))
    (tmp_path / "c.om").write_text(to_exposition("counters", table, openmetrics=True))
    pcsv.write_csv(table, tmp_path / "c.csv")
    pq.write_table(table, tmp_path / "c.parquet")
    for name in ("c.prom", "c.om", "c.csv", "c.parquet"):
        got = read_counters(tmp_path / name, fabric, fmt="prom" if name == "c.om" else None)
        assert got.problems == (), name
        # an exposition row whose every counter is null has no sample: nothing to read back
        want = table
        if name in ("c.prom", "c.om"):
            some = [any(r[c] is not None for c in (*COUNTERS, "link_up")) for r in rows]
            want = table.filter(pa.array(some))
        assert got.table.schema == COUNTER_SCHEMA
        assert key_sorted(got.table, CKEY).equals(key_sorted(want, CKEY)), name
        assert got.rows_read == want.num_rows


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_probes_and_collectives_round_trip(
    data: st.DataObject, fabric: OpsFabric, hosts: list[tuple[str, str]], tmp_path: Path
) -> None:
    rows = []
    pairs = data.draw(
        st.lists(st.tuples(st.sampled_from(hosts), st.sampled_from(hosts)), min_size=1, max_size=4)
    )
    for i, ((sd, si), (dd, di)) in enumerate(pairs):
        sent = data.draw(st.integers(0, 1000))
        lost = data.draw(st.integers(0, sent))
        rtt = None if lost == sent and sent else data.draw(st.floats(0, 1e6))
        rmax = None if rtt is None else rtt + data.draw(st.floats(0, 1e3))
        rows.append(
            {
                "ts_ms": T0 + i,
                "src_device": sd,
                "src_interface": si,
                "dst_device": dd,
                "dst_interface": di,
                "ev": data.draw(st.integers(0, 65535)),
                "sent": sent,
                "lost": lost,
                "rtt_us": rtt,
                "rtt_max_us": rmax,
            }
        )
    probes = pa.Table.from_pylist(rows, schema=PROBE_SCHEMA)
    (tmp_path / "p.prom").write_text(to_exposition("probes", probes))
    pcsv.write_csv(probes, tmp_path / "p.csv")
    for name in ("p.prom", "p.csv"):
        got = read_probes(tmp_path / name, fabric)
        assert got.problems == ()
        keys = ("ts_ms", "src_device", "src_interface")
        assert key_sorted(got.table, keys).equals(key_sorted(probes, keys))
    ranks = data.draw(st.lists(st.integers(0, 1023), min_size=1, max_size=5, unique=True))
    coll = pa.Table.from_pylist(
        [
            {
                "ts_ms": T0 + 5,
                "job": "job-a",
                "step": 3,
                "rank": r,
                "device": fabric.endpoint(r, 0)[0],
                "collective": "allreduce",
                "duration_us": data.draw(st.floats(0, 1e7)),
            }
            for r in ranks
        ],
        schema=COLLECTIVE_SCHEMA,
    )
    (tmp_path / "k.prom").write_text(to_exposition("collectives", coll, openmetrics=True))
    got = read_collectives(tmp_path / "k.prom", fabric)
    assert got.problems == ()
    assert key_sorted(got.table, ("rank",)).equals(key_sorted(coll, ("rank",)))


# -- bad input: each kind named with its line, good rows kept ----------------------------------


def test_every_bad_csv_row_is_named_and_the_good_rows_kept(
    fabric: OpsFabric, tmp_path: Path
) -> None:
    lines = [
        "interface,ts_ms,device,bytes_tx,link_up",  # 1: columns in any order
        "gpu0p0,1000,node00000,10,1",  # 2 good
        "gpu0p0,2000,node00000,-5,1",  # 3 negative
        "gpu0p0,2000,node00000,15,true",  # 4 good (3 was refused, so 2000 is new)
        "gpu0p0,3000,node99999,15,1",  # 5 unknown device
        "gpu9p9,3000,node00000,15,1",  # 6 unknown port
        "gpu0p0,1500,node00000,15,1",  # 7 out of order
        "gpu0p0,2000,node00000,16,1",  # 8 repeated timestamp
        "gpu0p0,4000,node00000,1.5,1",  # 9 fraction
        "gpu1p0,4000,node00000,abc,maybe",  # 10 not a number, not a bool
        f"gpu0p0,5000,node00000,{U64},1",  # 11 above 2**64-1
        "gpu0p0,6000,node00000,1e3,0",  # 12 good: an integral value in float notation
        "gpu0p0,7000,node00000",  # 13 too few fields
        f"gpu0p0,8000,node00000,{U64 - 1},0",  # 14 good
        ",9000,node00000,5,0",  # 15 interface missing
        "gpu0p0,,node00000,5,0",  # 16 time missing
        "gpu0p0,9000,node00000,100,",  # 17 good (link state not exported)
    ]
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(lines) + "\n")
    got = read_counters(path, fabric)
    where = {p.where: p.message for p in got.problems}
    assert list(where) == [f"bad.csv line {n}" for n in (3, 5, 6, 7, 8, 9, 10, 11, 13, 15, 16)]
    assert "negative" in where["bad.csv line 3"]
    assert "'node99999' is not in the design" in where["bad.csv line 5"]
    assert "has no interface 'gpu9p9'" in where["bad.csv line 6"]
    assert "out of order" in where["bad.csv line 7"]
    assert "repeats" in where["bad.csv line 8"]
    assert "not an integer" in where["bad.csv line 9"]
    assert (
        "not a number" in where["bad.csv line 10"] and "true or false" in where["bad.csv line 10"]
    )
    assert "above" in where["bad.csv line 11"]
    assert "fields" in where["bad.csv line 13"]
    assert "interface is missing" in where["bad.csv line 15"]
    assert "ts_ms is missing" in where["bad.csv line 16"]
    kept = got.table
    assert kept.column("ts_ms").to_pylist() == [1000, 2000, 6000, 8000, 9000]
    assert kept.column("bytes_tx").to_pylist() == [10, 15, 1000, U64 - 1, 100]
    assert kept.column("link_up").to_pylist() == [True, True, False, False, None]
    assert kept.column("bytes_rx").null_count == kept.num_rows  # not in the file: null
    assert got.rows_read == len(lines) - 1


def test_exposition_lines_are_checked_strictly(fabric: OpsFabric, tmp_path: Path) -> None:
    m = "clusterloom_interface_bytes_tx_total"
    lines = [
        f"# HELP {m.removesuffix('_total')} bytes sent",  # 1
        f"# TYPE {m.removesuffix('_total')} counter",  # 2
        f'{m}{{device="node00000",interface="gpu0p0"}} 100 1000',  # 3 good
        f'{m}{{device="node00000",interface="gpu0p0",x="1"}} 100 2000',  # 4 extra label
        f'{m}{{device="node00000"}} 100 2000',  # 5 missing label
        f'{m}{{device="node00000",interface="gpu0p0}} 100 2000',  # 6 unterminated
        f'{m}{{device="node00000",interface="gpu0p0"}} abc 2000',  # 7 value
        f'{m}{{device="node00000",interface="gpu0p0"}} 200 2000',  # 8 good
        f'{m}{{interface="gpu0p0",device="node00000"}} 300 2000',  # 9 same series and time
        f'{m}{{device="no\\"de\\\\x",interface="gpu0p0"}} 300 2000',  # 10 escapes: unknown
        f'{m}{{device="node00000",interface="gpu0p0"}} 1.5 3000',  # 11 fraction
        f'{m}{{device="node00000",interface="gpu0p0"}} 2.5e3 4000',  # 12 good
        "garbage line",  # 13
        f'{m}{{device="node00000",interface="gpu0p0",device="x"}} 1 5000',  # 14 label twice
        f'{m}{{device="node00000",interface="gpu0p0"}} 9',  # 15 no timestamp
        f'{m}{{device="node\\t",interface="gpu0p0"}} 9 6000',  # 16 bad escape
        "x" * (MAX_LINE + 10),  # 17 too long
        "other_metric_we_do_not_read 1",  # 18 fine, ignored
        "# TYPE clusterloom_interface_link_up gauge",  # 19
        'clusterloom_interface_link_up{device="node00000",interface="gpu0p0"} 1 4000',  # 20
        "# EOF",  # 21
        "trailing",  # 22 after EOF
    ]
    path = tmp_path / "bad.prom"
    path.write_text("\n".join(lines) + "\n")
    got = read_counters(path, fabric)
    where = {p.where: p.message for p in got.problems}
    bad = (4, 5, 6, 7, 9, 10, 11, 13, 14, 15, 16, 17, 22)
    assert list(where) == [f"bad.prom line {n}" for n in bad]
    assert "unexpected label x" in where["bad.prom line 4"]
    assert "missing label interface" in where["bad.prom line 5"]
    assert "malformed labels" in where["bad.prom line 6"]
    assert "not a number" in where["bad.prom line 7"]
    assert "first on line 8" in where["bad.prom line 9"]
    assert "'no\"de\\\\x' is not in the design" in where["bad.prom line 10"]
    assert "not an integer" in where["bad.prom line 11"]
    assert "given twice" in where["bad.prom line 14"]
    assert "no timestamp" in where["bad.prom line 15"]
    assert "escape" in where["bad.prom line 16"]
    assert "longer than" in where["bad.prom line 17"]
    assert "after '# EOF'" in where["bad.prom line 22"]
    # OpenMetrics (it ends in # EOF): timestamps are seconds
    assert got.table.column("ts_ms").to_pylist() == [1_000_000, 2_000_000, 4_000_000]
    assert got.table.column("bytes_tx").to_pylist() == [100, 200, 2500]
    assert got.table.column("link_up").to_pylist() == [None, None, True]


def test_per_interval_probe_counts_may_be_gauges_and_counters_may_not(
    fabric: OpsFabric, hosts: list[tuple[str, str]], tmp_path: Path
) -> None:
    """The probe agent writes sent and lost per interval (not monotonic) as gauges; an
    interface counter typed a gauge is still refused."""
    (sd, si), (dd, di) = hosts[0], hosts[5]
    labels = f'src_device="{sd}",src_interface="{si}",dst_device="{dd}",dst_interface="{di}"'
    text = "\n".join(
        [
            "# TYPE clusterloom_probe_sent gauge",
            f'clusterloom_probe_sent{{{labels},ev="49152"}} 10 1000',
            "# TYPE clusterloom_probe_lost gauge",
            f'clusterloom_probe_lost{{{labels},ev="49152"}} 2 1000',
            "# TYPE clusterloom_probe_rtt_us gauge",
            f'clusterloom_probe_rtt_us{{{labels},ev="49152"}} 12.5 1000',
        ]
    )
    path = tmp_path / "probes.prom"
    path.write_text(text + "\n")
    got = read_probes(path, fabric)
    assert got.problems == ()
    assert got.table.column("sent").to_pylist() == [10]
    assert got.table.column("lost").to_pylist() == [2]
    counters = tmp_path / "counters.prom"
    counters.write_text("# TYPE clusterloom_interface_bytes_tx gauge\n")
    (problem,) = read_counters(counters, fabric).problems
    assert "is a counter, not a gauge" in problem.message


def test_foreign_exporters_map_onto_the_design(fabric: OpsFabric, tmp_path: Path) -> None:
    text = "\n".join(
        [
            'node_network_transmit_bytes_total{device="gpu1p0",instance="node00000:9100",'
            'job="node"} 1.5e+09 1000',
            'node_network_receive_drop_total{device="gpu1p0",instance="node00000:9100"} 5 1000',
            'node_network_transmit_drop_total{device="gpu1p0",instance="node00000:9100"} 7 1000',
            'node_network_carrier{device="gpu1p0",instance="node00000:9100"} 1 1000',
            'ifHCOutOctets{ifName="swp1s1",ifIndex="1",instance="be-p0-leaf0000"} 42 1000',
            'ifOperStatus{ifName="swp1s1",ifIndex="1",instance="be-p0-leaf0000"} 2 1000',
        ]
    )
    path = tmp_path / "node.prom"
    path.write_text(text + "\n")
    got = read_counters(path, fabric)
    assert got.problems == ()
    rows = {r["device"]: r for r in got.table.to_pylist()}
    host = rows["node00000"]
    assert host["interface"] == "gpu1p0"
    assert host["bytes_tx"] == 1_500_000_000 and host["drops"] == 12 and host["link_up"]
    switch = rows["be-p0-leaf0000"]
    assert switch["bytes_tx"] == 42 and switch["link_up"] is False  # 2 is down in IF-MIB


def test_parquet_is_cast_and_refused_by_column(fabric: OpsFabric, tmp_path: Path) -> None:
    t = pa.table(
        {
            "ts_ms": pa.array([1000.0, 2000.0, 3000.0, 4000.0]),
            "device": ["node00000"] * 4,
            "interface": pa.array(["gpu0p0"] * 4).dictionary_encode(),
            "bytes_tx": pa.array([1, -2, 3, 4], pa.int64()),
            "bytes_rx": pa.array([1.0, 2.0, 2.5, float("nan")]),
        }
    )
    pq.write_table(t, tmp_path / "c.parquet")
    got = read_counters(tmp_path / "c.parquet", fabric)
    assert [p.where for p in got.problems] == [
        "c.parquet row 2",
        "c.parquet row 3",
        "c.parquet row 4",
    ]
    assert "negative" in got.problems[0].message
    assert "not an integer" in got.problems[1].message
    assert "not a number" in got.problems[2].message
    assert got.table.column("bytes_tx").to_pylist() == [1]
    pq.write_table(t.drop_columns(["device"]), tmp_path / "no_device.parquet")
    with pytest.raises(SpecError, match="device: required column missing"):
        read_counters(tmp_path / "no_device.parquet", fabric)
    lists = t.set_column(3, "bytes_tx", pa.array([[1]] * 4))
    pq.write_table(lists, tmp_path / "lists.parquet")
    with pytest.raises(SpecError, match="bytes_tx: a column of type list"):
        read_counters(tmp_path / "lists.parquet", fabric)
    with pytest.raises(SpecError, match="format not known"):
        read_counters(tmp_path / "c.json", fabric)


def test_probe_and_collective_rows_are_checked(
    fabric: OpsFabric, hosts: list[tuple[str, str]], tmp_path: Path
) -> None:
    (sd, si), (dd, di) = hosts[0], hosts[9]
    head = "ts_ms,src_device,src_interface,dst_device,dst_interface,ev,sent,lost,rtt_us,rtt_max_us"
    lines = [
        head,
        f"1000,{sd},{si},{dd},{di},7,10,1,12.5,20",  # 2 good
        f"1000,{sd},{si},be-p0-leaf0000,swp1s1,7,10,1,12.5,20",  # 3 switch port
        f"1000,{sd},{si},{dd},{di},8,10,11,12.5,20",  # 4 lost > sent
        f"1000,{sd},{si},{dd},{di},9,10,1,12.5,3",  # 5 max < mean
        f"1000,{sd},{si},{dd},{di},10,10,10,12.5,20",  # 6 rtt with all lost
        f"1000,{sd},{si},{dd},{di},-1,10,1,12.5,20",  # 7 ev < 0
        f"2000,{sd},{si},{dd},{di},7,10,10,,",  # 8 good: all lost
        f"1500,{sd},{si},{dd},{di},7,10,0,1,1",  # 9 out of order for this series
    ]
    (tmp_path / "p.csv").write_text("\n".join(lines) + "\n")
    got = read_probes(tmp_path / "p.csv", fabric)
    where = [p.where for p in got.problems]
    assert where == [f"p.csv line {n}" for n in (3, 4, 5, 6, 7, 9)]
    assert "has no host NIC port 'swp1s1'" in got.problems[0].message
    assert got.table.column("ts_ms").to_pylist() == [1000, 2000]
    coll = [
        "ts_ms,job,step,rank,device,collective,duration_us",
        f"1000,j,1,0,{fabric.endpoint(0, 0)[0]},allreduce,10.5",  # 2 good
        "1000,j,1,9,node00000,allreduce,10.5",  # 3 rank 9 runs on node00001
        "1000,j,1,5000,node00000,allreduce,10.5",  # 4 rank beyond the design
        f"1000,j,1,0,{fabric.endpoint(0, 0)[0]},allreduce,11",  # 5 duplicate
        f"1000,j,2,0,{fabric.endpoint(0, 0)[0]},allreduce,-1",  # 6 negative
    ]
    (tmp_path / "k.csv").write_text("\n".join(coll) + "\n")
    got = read_collectives(tmp_path / "k.csv", fabric)
    assert [p.where for p in got.problems] == [f"k.csv line {n}" for n in (3, 4, 5, 6)]
    assert "runs on" in got.problems[0].message
    assert got.table.num_rows == 1


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_a_bad_row_never_drops_a_good_one(
    data: st.DataObject, fabric: OpsFabric, ifaces: list[tuple[str, str]]
) -> None:
    good = linear(
        data.draw(st.lists(st.sampled_from(ifaces), min_size=1, max_size=4, unique=True)), 4
    )
    rows = good.to_pylist()
    n_bad = data.draw(st.integers(1, 6))
    out: list[dict[str, object]] = list(rows)
    bad_at = []
    for _ in range(n_bad):
        i = data.draw(st.integers(0, len(out)))
        template = dict(rows[data.draw(st.integers(0, len(rows) - 1))])
        how = data.draw(st.sampled_from(["device", "interface", "negative", "fraction", "time"]))
        template = {k: (None if v is None else str(v)) for k, v in template.items()}
        if how == "device":
            template["device"] = "nosuch0001"
        elif how == "interface":
            template["interface"] = "swp999"
        elif how == "negative":
            template["bytes_tx"] = "-1"
        elif how == "fraction":
            template["packets_rx"] = "0.5"
        else:
            template["ts_ms"] = "soon"
        out.insert(i, template)
        bad_at = [b + (b >= i) for b in bad_at] + [i]
    loose = pa.Table.from_pylist(
        [{k: (None if v is None else str(v)) for k, v in r.items()} for r in out]
    )
    got = validate("counters", loose, fabric)
    assert sorted(int(p.where.split()[-1]) - 1 for p in got.problems) == sorted(bad_at)
    assert got.table.equals(good)


# -- rates ------------------------------------------------------------------------------------


def test_rates_of_linear_counters_are_their_slopes(
    fabric: OpsFabric, ifaces: list[tuple[str, str]]
) -> None:
    picks = ifaces[:5]
    table = linear(picks, 6, slope=12_345, start=U64 - 40_000)  # wraps on the way
    rates, notes = counter_rates_noted(table, fabric)
    assert notes == ()
    assert rates.schema == RATE_SCHEMA
    assert rates.num_rows == 5 * 5
    for row in rates.to_pylist():
        j = picks.index((row["device"], row["interface"]))
        assert fabric.interface(row["device"], row["interface"]) == (row["link"], row["end"])
        assert row["seconds"] == 10.0
        per_s = 12_345 * (j + 1) / 10.0
        assert row["tx_bps"] == pytest.approx(8 * per_s * 1)
        assert row["rx_bps"] == pytest.approx(8 * per_s * 2)
        assert row["tx_pps"] == pytest.approx(per_s * 3)
        assert row["fec_uncorrected_ps"] == pytest.approx(per_s * 9)
        assert row["up"] == 1.0 and row["flaps"] == 0


def test_a_64_bit_wrap_is_a_rate_and_a_reset_is_none(
    fabric: OpsFabric, ifaces: list[tuple[str, str]]
) -> None:
    d, f = ifaces[0]
    rows = [
        {
            "ts_ms": T0,
            "device": d,
            "interface": f,
            "bytes_tx": U64 - 1000,
            "packets_tx": 10**12,
            "link_up": True,
        },
        {
            "ts_ms": T0 + 10_000,
            "device": d,
            "interface": f,
            "bytes_tx": 500,
            "packets_tx": 7,
            "link_up": False,
        },
        {
            "ts_ms": T0 + 20_000,
            "device": d,
            "interface": f,
            "bytes_tx": 1500,
            "packets_tx": 17,
            "link_up": True,
        },
    ]
    rates, notes = counter_rates_noted(counters_table(rows), fabric)
    tx = rates.column("tx_bps").to_pylist()
    assert tx == [(1000 + 500) * 8 / 10.0, 1000 * 8 / 10.0]  # the closed form across the wrap
    assert rates.column("tx_pps").to_pylist() == [None, 1.0]  # 10**12 -> 7 is a reset
    assert rates.column("rx_bps").to_pylist() == [None, None]  # not exported
    assert rates.column("flaps").to_pylist() == [1, 1]
    assert rates.column("up").to_pylist() == [0.0, 1.0]
    assert len(notes) == 1 and "packets_tx went back" in notes[0].message
    # a wrap is plausible only up to the link's rate: just above it is a reset
    cap = int(fabric.topology.link_capacity_bps[fabric.interface(d, f)[0]])  # type: ignore[index]
    too_much = cap // 8 * 10 * 2  # twice what 10 s at line rate can carry
    rows2 = [dict(rows[0], bytes_tx=U64 - too_much), dict(rows[1], bytes_tx=0)]
    assert counter_rates(counters_table(rows2), fabric).column("tx_bps").to_pylist() == [None]


def test_rates_sort_their_input_and_skip_unknown_interfaces(
    fabric: OpsFabric, ifaces: list[tuple[str, str]]
) -> None:
    table = linear(ifaces[:3], 4)
    shuffled = table.take(pa.array(np.random.default_rng(5).permutation(table.num_rows)))
    extra = counters_table([{"ts_ms": T0, "device": "ghost", "interface": "x", "bytes_tx": 1}])
    both = pa.concat_tables([shuffled, extra])
    a = key_sorted(counter_rates(table, fabric), CKEY)
    b = key_sorted(counter_rates(both, fabric), CKEY)
    assert a.equals(b)


def test_the_kind_is_told_from_the_file_and_untimed_samples_take_the_scrape_time(
    fabric: OpsFabric, ifaces: list[tuple[str, str]], hosts: list[tuple[str, str]], tmp_path: Path
) -> None:
    from clusterloom.ops.ingest import guess_kind, read_telemetry

    counters = linear(ifaces[:2], 2)
    pcsv.write_csv(counters, tmp_path / "c.csv")
    pq.write_table(counters, tmp_path / "c.parquet")
    (sd, si), (dd, di) = hosts[0], hosts[1]
    (tmp_path / "p.prom").write_text(
        "# a comment\n"
        f'clusterloom_probe_sent{{src_device="{sd}",src_interface="{si}",dst_device="{dd}",'
        f'dst_interface="{di}",ev="3"}} 10\n'
        f'clusterloom_probe_lost{{src_device="{sd}",src_interface="{si}",dst_device="{dd}",'
        f'dst_interface="{di}",ev="3"}} 0\n'
    )
    (tmp_path / "k.csv").write_text("ts_ms,job,step,rank,device,collective,duration_us\n")
    assert guess_kind(tmp_path / "c.csv") == "counters"
    assert guess_kind(tmp_path / "c.parquet") == "counters"
    assert guess_kind(tmp_path / "p.prom") == "probes"
    assert guess_kind(tmp_path / "k.csv") == "collectives"
    untimed = read_telemetry("probes", tmp_path / "p.prom", fabric)
    assert [
        p.message.endswith("no timestamp (give the scrape time)") for p in untimed.problems
    ] == [
        True,
        True,
    ]
    timed = read_telemetry("probes", tmp_path / "p.prom", fabric, scrape_ms=T0)
    assert timed.problems == ()
    assert timed.table.to_pylist()[0] | {"rtt_us": None} == {
        "ts_ms": T0,
        "src_device": sd,
        "src_interface": si,
        "dst_device": dd,
        "dst_interface": di,
        "ev": 3,
        "sent": 10,
        "lost": 0,
        "rtt_us": None,
        "rtt_max_us": None,
    }
    (tmp_path / "other.prom").write_text("up 1 1000\n")
    with pytest.raises(SpecError, match="no sample of a metric we read"):
        guess_kind(tmp_path / "other.prom")


def test_a_huge_line_is_skipped_unread_and_the_last_line_needs_no_newline(
    fabric: OpsFabric, tmp_path: Path
) -> None:
    good = 'clusterloom_interface_bytes_tx_total{device="node00000",interface="gpu0p0"} 5 '
    path = tmp_path / "huge.prom"
    with path.open("w") as f:
        f.write(good + "1000\n")
        f.write("y" * (9 << 20) + "\n")  # longer than two read blocks
        f.write(good.replace(" 5 ", " 6 ") + "2000\r\n")
        f.write(good.replace(" 5 ", " 7 ") + "3000")  # no newline at the end
    got = read_counters(path, fabric)
    assert [str(p) for p in got.problems] == [
        f"huge.prom line 2: line longer than {MAX_LINE:,} characters (skipped)"
    ]
    assert got.table.column("bytes_tx").to_pylist() == [5, 6, 7]
