"""The overlapped ingest (``TelemetryStore.add_files``) and the journaled batches: the same
parts as reading and adding file by file (rows, their order, the interfaces' latest samples,
the problems), byte-identical run after run, wraps across files as in one stream, a write
that fails midway leaving nothing of its batch, and a batch cut between its renames finished
by the next writer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from clusterloom.errors import OutputError, SpecError
from clusterloom.ops import telemetry
from clusterloom.ops.fabric import OpsFabric, load_fabric
from clusterloom.ops.ingest import counter_rates, guess_kind, read_telemetry
from clusterloom.ops.model import COUNTER_SCHEMA, COUNTERS, PROBE_SCHEMA
from clusterloom.ops.telemetry import JOURNAL, TelemetryStore

T0 = 1_764_547_200_000  # 2025-12-01T00:00:00Z
N_IF = 24  # interfaces sampled
SCRAPES = 8  # per counters file


@pytest.fixture(scope="module")
def fabric() -> OpsFabric:
    return load_fabric("hgx-1k-roce")


def _counters(fabric: OpsFabric, k0: int, k: int, *, wrap: bool = False) -> pa.Table:
    """Scrapes ``k0 .. k0+k-1`` (10 s apart) of one stream of ``N_IF`` interfaces: counters
    growing below line rate; with ``wrap`` the first interface's bytes start 3 steps below
    2**64 (they wrap in the first file)."""
    it = fabric.interface_table().slice(0, N_IF)
    rng = np.random.default_rng(7)
    assert k0 + k <= 64
    steps = rng.integers(1, 10**9, size=(64, len(COUNTERS), N_IF), dtype=np.uint64)
    start = rng.integers(0, 2**62, size=(len(COUNTERS), N_IF), dtype=np.uint64)
    if wrap:
        start[0, 0] = np.uint64(2**64 - 3 * 10**9)
    run = start[None] + np.cumsum(steps, axis=0, dtype=np.uint64)  # modulo 2**64
    cols: dict[str, object] = {
        "ts_ms": np.repeat(T0 + 10_000 * np.arange(k0, k0 + k, dtype=np.int64), N_IF),
        "device": np.tile(np.asarray(it["device"].to_pylist(), dtype=object), k),
        "interface": np.tile(np.asarray(it["interface"].to_pylist(), dtype=object), k),
    }
    for j, c in enumerate(COUNTERS):
        cols[c] = run[k0 : k0 + k, j, :].reshape(-1)
    cols["link_up"] = np.ones(k * N_IF, dtype=np.bool_)
    cols["speed_bps"] = pa.nulls(k * N_IF, pa.uint64())
    cols["retransmissions"] = pa.nulls(k * N_IF, pa.uint64())  # a NIC counter: none here
    return pa.table(cols).cast(COUNTER_SCHEMA)


def _probes(fabric: OpsFabric, k0: int, k: int) -> pa.Table:
    rows = []
    for s in range(k0, k0 + k):
        for h in range(4):
            sd, si = fabric.endpoint(h, 0)
            dd, di = fabric.endpoint(h + 8, 0)
            rows.append(
                {
                    "ts_ms": T0 + 10_000 * (s + 1),
                    "src_device": sd,
                    "src_interface": si,
                    "dst_device": dd,
                    "dst_interface": di,
                    "ev": 49152 + h,
                    "sent": 10,
                    "lost": s % 3,
                    "rtt_us": 5.0 + 0.25 * s + h,
                    "rtt_max_us": 9.0 + 0.25 * s + h,
                }
            )
    return pa.Table.from_pylist(rows, schema=PROBE_SCHEMA)


def _files(fabric: OpsFabric, folder: Path, *, n: int = 3, wrap: bool = False) -> list[Path]:
    """``n`` counters files and ``n`` probes files, in time order, one bad row in the second
    counters file (an interface the design lacks)."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for f in range(n):
        c = _counters(fabric, f * SCRAPES, SCRAPES, wrap=wrap)
        if f == 1:
            bad = c.slice(0, 1).to_pylist()
            bad[0]["interface"] = "swp999"
            bad[0]["ts_ms"] = T0 + 10_000 * f * SCRAPES + 1
            c = pa.concat_tables([c, pa.Table.from_pylist(bad, schema=COUNTER_SCHEMA)])
        pq.write_table(c, folder / f"counters-{f:03d}.parquet")
        pq.write_table(_probes(fabric, f * SCRAPES, SCRAPES), folder / f"probes-{f:03d}.parquet")
        out += [folder / f"counters-{f:03d}.parquet", folder / f"probes-{f:03d}.parquet"]
    return out


def _one_by_one(store: TelemetryStore, fabric: OpsFabric, files: list[Path]) -> list[int]:
    problems = []
    for path in files:
        kind = guess_kind(path)
        got = read_telemetry(kind, path, fabric)
        problems.append(len(got.problems))
        if kind == "counters":
            store.add_counters(got.table)
        else:
            store.add_probes(got.table)
    return problems


def _contents(root: Path) -> dict[str, pa.Table]:
    """Every Parquet file of a store, by its path in the store (rows in their order)."""
    return {
        str(p.relative_to(root)): pq.read_table(p)
        for p in sorted(root.rglob("*.parquet"))
        if "spill" not in p.parts
    }


def _leftovers(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.endswith(".tmp") or p.name == "commit.json"]


def test_add_files_stores_what_file_by_file_stores(fabric: OpsFabric, tmp_path: Path) -> None:
    files = _files(fabric, tmp_path / "in")
    a = TelemetryStore(tmp_path / "a", fabric)
    problems = _one_by_one(a, fabric, files)
    b = TelemetryStore(tmp_path / "b", fabric)
    got = b.add_files(files)
    assert [g.source for g in got] == [str(p) for p in files]
    assert [len(g.problems) for g in got] == problems == [0, 0, 1, 0, 0, 0]
    assert "swp999" in got[2].problems[0].message
    assert got[2].added.rows == SCRAPES * N_IF  # the bad row dropped, the good ones kept
    ca, cb = _contents(a.path), _contents(b.path)
    assert sorted(ca) == sorted(cb)
    assert len([k for k in cb if k.startswith("raw/rates/")]) == 3
    for name in ca:  # the same rows in the same order, part by part
        assert ca[name].equals(cb[name]), name
    assert not _leftovers(b.path)
    # the rates are those of the whole stream at once
    whole = pa.concat_tables(
        [read_telemetry("counters", p, fabric).table for p in files if "counters" in p.name]
    )
    want = counter_rates(whole, fabric).sort_by([("ts_ms", "ascending"), ("link", "ascending")])
    stored = b.rates().sort_by([("ts_ms", "ascending"), ("link", "ascending")])
    assert stored.equals(want)


def test_add_files_is_byte_identical_run_after_run(fabric: OpsFabric, tmp_path: Path) -> None:
    files = _files(fabric, tmp_path / "in", n=2)
    roots = []
    for name in ("x", "y"):
        TelemetryStore(tmp_path / name, fabric).add_files(files)
        roots.append(tmp_path / name)
    names = [sorted(str(p.relative_to(r)) for p in r.rglob("*.parquet")) for r in roots]
    assert names[0] == names[1] and names[0]
    for n in names[0]:
        assert (roots[0] / n).read_bytes() == (roots[1] / n).read_bytes(), n


def test_wraps_across_files_are_those_of_one_stream(fabric: OpsFabric, tmp_path: Path) -> None:
    files = [p for p in _files(fabric, tmp_path / "in", wrap=True) if "counters" in p.name]
    store = TelemetryStore(tmp_path / "s", fabric)
    store.add_files(files)
    whole = pa.concat_tables([read_telemetry("counters", p, fabric).table for p in files])
    tx = np.asarray(whole.column("bytes_tx"), dtype=np.uint64)
    assert (tx[N_IF:] < tx[:-N_IF]).any()  # the stream does wrap
    want = counter_rates(whole, fabric).sort_by([("ts_ms", "ascending"), ("link", "ascending")])
    got = store.rates().sort_by([("ts_ms", "ascending"), ("link", "ascending")])
    assert got.equals(want)
    assert got.column("tx_bps").null_count == 0  # a wrap, not a reset
    assert float(pc.min(got.column("tx_bps")).as_py()) > 0


def test_a_failed_write_leaves_nothing_of_its_batch(
    fabric: OpsFabric, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = _files(fabric, tmp_path / "in")
    first = TelemetryStore(tmp_path / "first", fabric)
    _one_by_one(first, fabric, files[:2])
    calls = {"n": 0}
    encode = telemetry._encode

    def failing(fh: object, table: pa.Table) -> None:
        calls["n"] += 1
        if "seconds" in table.column_names and calls["n"] > 4:  # the second file's rates
            fh.write(b"PAR1 half a part")  # type: ignore[attr-defined]
            raise OSError(28, "No space left on device")
        encode(fh, table)

    monkeypatch.setattr(telemetry, "_encode", failing)
    store = TelemetryStore(tmp_path / "s", fabric)
    with pytest.raises(OutputError, match="No space left"):
        store.add_files(files)
    monkeypatch.setattr(telemetry, "_encode", encode)
    # the counters file and probes file before it are there, whole; nothing of the failed one
    have, want = _contents(store.path), _contents(first.path)
    assert sorted(have) == sorted(want)
    for name in want:
        assert have[name].equals(want[name]), name
    assert not _leftovers(store.path)
    # and the rest appended afterwards gives the store of everything at once
    store.add_files(files[2:])
    whole = TelemetryStore(tmp_path / "whole", fabric)
    whole.add_files(files)
    have, want = _contents(store.path), _contents(whole.path)
    assert sorted(have) == sorted(want)
    for name in want:
        assert have[name].equals(want[name]), name


def test_a_batch_cut_between_its_renames_is_finished_by_the_next_writer(
    fabric: OpsFabric, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = _files(fabric, tmp_path / "in", n=1)
    store = TelemetryStore(tmp_path / "s", fabric)
    replace = telemetry.os.replace
    seen = {"n": 0}

    def cut(src: str | Path, dst: str | Path) -> None:
        if Path(dst).suffix == ".parquet":
            seen["n"] += 1
            if seen["n"] == 2:  # the counters part renamed, the rates part not: a crash
                raise OSError(5, "Input/output error")
        replace(src, dst)

    monkeypatch.setattr(telemetry.os, "replace", cut)
    with pytest.raises(OutputError, match="finishes them"):
        store.add_files(files[:1])
    monkeypatch.setattr(telemetry.os, "replace", replace)
    assert (store.path / JOURNAL).is_file()
    assert not (store.path / "state" / "last.parquet").exists()
    # the next writer (any append) finishes the batch before its own
    TelemetryStore(store.path, fabric).add_files(files[1:])
    clean = TelemetryStore(tmp_path / "clean", fabric)
    clean.add_files(files)
    have, want = _contents(store.path), _contents(clean.path)
    assert sorted(have) == sorted(want)
    for name in want:
        assert have[name].equals(want[name]), name
    assert not _leftovers(store.path)


def test_an_unreadable_file_stops_the_ingest_there(fabric: OpsFabric, tmp_path: Path) -> None:
    files = _files(fabric, tmp_path / "in", n=2)
    broken = tmp_path / "in" / "counters-001.parquet"
    broken.write_bytes(b"not parquet at all")
    store = TelemetryStore(tmp_path / "s", fabric)
    with pytest.raises(SpecError, match=r"counters-001\.parquet"):
        store.add_files(files)
    first = TelemetryStore(tmp_path / "first", fabric)
    _one_by_one(first, fabric, files[:2])
    have, want = _contents(store.path), _contents(first.path)
    assert sorted(have) == sorted(want)
    assert not _leftovers(store.path)


def test_system_pool_is_restored(fabric: OpsFabric) -> None:
    before = pa.default_memory_pool().backend_name
    with telemetry.system_pool():
        assert pa.default_memory_pool().backend_name == "system"
        with pytest.raises(ValueError), telemetry.system_pool():
            raise ValueError
        assert pa.default_memory_pool().backend_name == "system"
    assert pa.default_memory_pool().backend_name == before


def test_rates_in_slices_are_those_of_the_whole(
    fabric: OpsFabric, monkeypatch: pytest.MonkeyPatch
) -> None:
    from clusterloom.ops import ingest

    table = _counters(fabric, 0, 12, wrap=True)
    bad = table.to_pylist()
    bad[5 * N_IF + 3]["bytes_rx"] = 10  # a reset (back far more than a wrap explains)
    bad[7 * N_IF + 9]["drops"] = None  # not exported once
    table = pa.Table.from_pylist(bad, schema=COUNTER_SCHEMA)
    whole, whole_notes = ingest.counter_rates_noted(table, fabric)
    assert whole.column("tx_bps").null_count == 0 and whole.column("rx_bps").null_count == 1
    assert whole.column("drops_ps").null_count == 2
    assert len(whole_notes) == 1 and "bytes_rx went back" in whole_notes[0].message
    for size in (1, 5, N_IF + 1):
        monkeypatch.setattr(ingest, "RATE_SLICE", size)
        sliced, notes = ingest.counter_rates_noted(table, fabric)
        assert sliced.equals(whole), size
        assert notes == whole_notes
