"""Operations telemetry at the 16k-GPU scale (issue 23's ``bench/`` targets), on ``rail-16k``
(16,384 hosts, 49,152 links, 98,304 interfaces):

- **hour**: one hour of 10-second counters of every interface (360 scrapes, 35.4M rows, as
  twelve 5-minute Parquet files) and Pingmesh-like probes (each host's port 0 probes one peer
  half the fabric away on 4 EVs every 10 s: 65,536 series, 23.6M rows, twelve files), read
  and checked (``ops.ingest``) and appended to a telemetry store (their rates with them);
  then localised over the hour (``localise_store``: the rates' 1-minute rollup grouped in
  the read, no rollup stored first, and the raw probes). Target: under 2 minutes and 4 GB.
- **rollup** (not in the default phases): the rates' 1-minute rollup of the hour grouped in
  the read and stored by ``downsample(kinds=("rates",), resolutions=("1m",))``, compared.
- **day**: one day of 1-minute counters (1,440 scrapes, 141.6M rows, 24 hourly files), read,
  checked and appended with their rates. Target: under 5 minutes and 8 GB.
- **text**: one scrape of every interface as CSV and as OpenMetrics text (98,304 rows; 983,040
  exposition lines), to time those readers (not part of the targets).

Each phase runs in a process of its own, so its peak RSS (``resource.getrusage``, the
largest resident set) is its own; wall and CPU (user + system) are printed per phase. The
input is generated first (not timed in the targets), by numpy: counters growing by the bytes
a link carries at a per-interface utilisation (packets at 4 KiB mean, drops, marks, pauses and
FEC codewords by Poisson draws), a few interfaces started near 2**64 so that they wrap.

Run: ``python -u bench/bench_ops.py [--phases gen,hour,localise,day,text,rollup]
[--workdir DIR] [--stores DIR] [--scale F] [--keep]``; ``--scale`` shrinks the number of
scrapes (for trying it out); ``--stores`` puts the stores elsewhere than the inputs (the
work directory). Per phase it prints wall, CPU (and of it system), the bytes read from and
written to the storage layer (``/proc/self/io``), the peak RSS and the load average before and
after. Figures go to ``bench/RESULTS.md`` by hand.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

EXAMPLE = "rail-16k"
T0 = 1_764_547_200_000  # 2025-12-01T00:00:00Z
EVS = 4
#: where the phases' stores go (``--stores``; the work directory by default)
STORES = Path(".")


def _usage() -> dict[str, float]:
    """CPU (user + system), system alone, peak RSS, and the bytes this process read from
    and wrote to the storage layer (``/proc/self/io``: page-cache hits are not reads)."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    io = {"read_bytes": 0, "write_bytes": 0}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/io").read_text().splitlines():
            k, _, v = line.partition(": ")
            if k in io:
                io[k] = int(v)
    return {
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "sys_s": ru.ru_stime,
        "rss_gb": ru.ru_maxrss * 1024 / 1e9,
        "read_gb": io["read_bytes"] / 1e9,
        "write_gb": io["write_bytes"] / 1e9,
    }


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def _counter_files(
    fabric: object, folder: Path, *, scrapes: int, every_s: int, per_file: int, seed: int
) -> int:
    """Write ``scrapes`` scrapes of every interface, ``per_file`` scrapes a file."""
    from clusterloom.ops.model import COUNTERS

    it = fabric.interface_table()  # type: ignore[attr-defined]
    n = it.num_rows
    rng = np.random.default_rng(seed)
    cap_bytes = it["capacity_bps"].to_numpy().astype(np.float64) / 8
    util = rng.beta(2, 3, size=n)  # a utilisation per interface
    value = rng.integers(0, 2**62, size=(len(COUNTERS), n), dtype=np.uint64)
    value[:, rng.choice(n, 64, replace=False)] = np.uint64(2**64 - 10**12)  # about to wrap
    dev = it["device"].combine_chunks().dictionary_encode()
    ifs = it["interface"].combine_chunks().dictionary_encode()
    folder.mkdir(parents=True, exist_ok=True)
    rows = 0
    for f0 in range(0, scrapes, per_file):
        k = min(per_file, scrapes - f0)
        cols: dict[str, pa.Array | np.ndarray] = {
            "ts_ms": np.repeat(T0 + 1000 * every_s * np.arange(f0, f0 + k, dtype=np.int64), n),
            "device": pa.chunked_array([dev] * k),
            "interface": pa.chunked_array([ifs] * k),
        }
        steps = np.empty((len(COUNTERS), k, n), dtype=np.uint64)
        b = util * cap_bytes * every_s * rng.uniform(0.9, 1.1, size=(k, n))
        steps[0] = b.astype(np.uint64)  # bytes_tx
        steps[1] = (b * rng.uniform(0.95, 1.05, size=(k, n))).astype(np.uint64)  # bytes_rx
        steps[2] = (steps[0] // 4096).astype(np.uint64)
        steps[3] = (steps[1] // 4096).astype(np.uint64)
        for j, lam in ((4, 0.01), (5, 5.0), (6, 0.5), (7, 1e4), (8, 0.001)):
            steps[j] = rng.poisson(lam * every_s, size=(k, n)).astype(np.uint64)
        run = np.cumsum(steps, axis=1) + value[:, None, :]  # modulo 2**64, as a counter wraps
        value = run[:, -1, :]
        for j, c in enumerate(COUNTERS):
            cols[c] = run[j].reshape(-1)
        cols["link_up"] = np.ones(k * n, dtype=np.bool_)
        table = pa.table(cols)
        pq.write_table(table, folder / f"counters-{f0:05d}.parquet", compression="zstd")
        rows += table.num_rows
    return rows


def _probe_files(
    fabric: object, folder: Path, *, scrapes: int, every_s: int, per_file: int, seed: int
) -> int:
    """Each host's port 0 probes the host half the fabric away on ``EVS`` entropy values."""
    hosts = int(fabric.topology.plan.hosts)  # type: ignore[attr-defined]
    names = fabric.names  # type: ignore[attr-defined]
    h = np.arange(hosts, dtype=np.int64)
    peer = (h + hosts // 2) % hosts
    port = np.zeros(hosts, dtype=np.int64)
    sd = pa.array(names.device(h).tolist(), pa.string()).dictionary_encode()
    si = pa.array(names.interface(h, port).tolist(), pa.string()).dictionary_encode()
    dd = pa.array(names.device(peer).tolist(), pa.string()).dictionary_encode()
    di = pa.array(names.interface(peer, port).tolist(), pa.string()).dictionary_encode()
    rng = np.random.default_rng(seed + 1)
    per = hosts * EVS
    take = pa.array(np.repeat(np.arange(hosts), EVS))
    sd, si, dd, di = (a.take(take) for a in (sd, si, dd, di))
    ev = np.tile(49152 + np.arange(EVS, dtype=np.int32), hosts)
    rows = 0
    for f0 in range(0, scrapes, per_file):
        k = min(per_file, scrapes - f0)
        sent = np.full(k * per, 10, dtype=np.int32)
        lost = rng.binomial(10, 1e-4, size=k * per).astype(np.int32)
        rtt = rng.gamma(20.0, 0.4, size=k * per) + 4.0
        table = pa.table(
            {
                "ts_ms": np.repeat(
                    T0 + 1000 * every_s * np.arange(f0 + 1, f0 + k + 1, dtype=np.int64), per
                ),
                "src_device": pa.chunked_array([sd] * k),
                "src_interface": pa.chunked_array([si] * k),
                "dst_device": pa.chunked_array([dd] * k),
                "dst_interface": pa.chunked_array([di] * k),
                "ev": np.tile(ev, k),
                "sent": sent,
                "lost": lost,
                "rtt_us": pa.array(rtt, mask=lost == sent),
                "rtt_max_us": pa.array(rtt * 1.5, mask=lost == sent),
            }
        )
        pq.write_table(table, folder / f"probes-{f0:05d}.parquet", compression="zstd")
        rows += table.num_rows
    return rows


def phase_gen(work: Path, scale: float) -> dict[str, object]:
    from clusterloom.ops.fabric import load_fabric

    fabric = load_fabric(EXAMPLE)
    hour = max(2, round(360 * scale))
    day = max(2, round(1440 * scale))
    c = _counter_files(fabric, work / "hour", scrapes=hour, every_s=10, per_file=30, seed=1)
    p = _probe_files(fabric, work / "hour", scrapes=hour, every_s=10, per_file=30, seed=1)
    d = _counter_files(fabric, work / "day", scrapes=day, every_s=60, per_file=60, seed=2)
    # one scrape as CSV and as OpenMetrics text
    import pyarrow.csv as pcsv

    from clusterloom.ops.ingest import to_exposition

    one = pq.read_table(sorted((work / "hour").glob("counters-*.parquet"))[0])
    n_if = fabric.interface_table().num_rows
    one = one.slice(0, n_if).cast(one.schema)
    text = work / "text"
    text.mkdir(exist_ok=True)
    plain = one.cast(
        pa.schema(
            [f.with_type(pa.string()) if pa.types.is_dictionary(f.type) else f for f in one.schema]
        )
    )
    pcsv.write_csv(plain, text / "scrape.csv")
    (text / "scrape.prom").write_text(to_exposition("counters", plain, openmetrics=True))
    return {"hour_counter_rows": c, "hour_probe_rows": p, "day_counter_rows": d}


def _ingest(work: Path, folder: str, store_dir: str) -> dict[str, object]:
    from clusterloom.ops.fabric import load_fabric
    from clusterloom.ops.telemetry import TelemetryStore

    fabric = load_fabric(EXAMPLE)
    store_path = STORES / store_dir
    shutil.rmtree(store_path, ignore_errors=True)  # a fresh store each run
    store = TelemetryStore(store_path, fabric)
    rows = {"counters": 0, "rates": 0, "probes": 0, "problems": 0}
    files = sorted((work / folder).glob("*.parquet"))
    # in time order, counters and probes of one 5 minutes side by side; read ahead, checked,
    # their rates made and written in three overlapped stages (``TelemetryStore.add_files``)
    files = sorted(files, key=lambda p: p.name.split("-")[1])
    for got in store.add_files(files):
        if got.kind == "counters":
            rows["counters"] += got.added.rows
            rows["rates"] += got.added.rates
        else:
            rows["probes"] += got.added.rows
        rows["problems"] += len(got.problems)
    return rows


def phase_hour(work: Path) -> dict[str, object]:
    return _ingest(work, "hour", "store-hour")


def phase_localise(work: Path) -> dict[str, object]:
    from clusterloom.ops.fabric import load_fabric
    from clusterloom.ops.localise import localise_store
    from clusterloom.ops.telemetry import TelemetryStore

    fabric = load_fabric(EXAMPLE)
    store = TelemetryStore(STORES / "store-hour", fabric)
    # no rollup made first (that is the retention's job): the hour's 1-minute rates grouped
    # in the read by link, end and minute (only the columns the detectors read), and its raw
    # probes read in batches into narrow arrays
    found = localise_store(fabric, store, rates_resolution="1m", probes_resolution="raw")
    return {
        "rollups_stored": store.hours("rates", "1m"),
        "suspects": len(found.suspects),
        "first": found.suspects[0].target if found.suspects else None,
        "congestion": found.congestion,
    }


def phase_rollup(work: Path) -> dict[str, object]:
    """The rates' 1-minute rollup alone: grouped in the read (``rate_rollup``), then stored
    (``downsample(kinds=("rates",), resolutions=("1m",))``), and the two compared."""
    import numpy as np

    from clusterloom.ops.detect import RATE_COLUMNS_READ
    from clusterloom.ops.fabric import load_fabric
    from clusterloom.ops.telemetry import TelemetryStore

    fabric = load_fabric(EXAMPLE)
    store = TelemetryStore(STORES / "store-hour", fabric)
    t0 = _usage()
    got = store.rate_rollup(RATE_COLUMNS_READ)
    t1 = _usage()
    store.downsample(kinds=("rates",), resolutions=("1m",))
    t2 = _usage()
    stored = store.columns("rates", RATE_COLUMNS_READ, resolution="1m").sort_by(
        [("ts_ms", "ascending"), ("link", "ascending"), ("end", "ascending")]
    )
    worst = 0.0
    for c in RATE_COLUMNS_READ:
        a = got[c].to_numpy(zero_copy_only=False).astype(np.float64)
        b = stored[c].to_numpy(zero_copy_only=False).astype(np.float64)
        ok = ~(np.isnan(a) | np.isnan(b))
        if (np.isnan(a) != np.isnan(b)).any():
            worst = float("inf")
        den = np.maximum(np.abs(b[ok]), 1e-300)
        worst = max(worst, float(np.max(np.abs(a[ok] - b[ok]) / den, initial=0.0)))
    return {
        "rows": got.num_rows,
        "in_read_cpu_s": round(t1["cpu_s"] - t0["cpu_s"], 1),
        "in_read_rss_gb": round(t1["rss_gb"], 2),
        "stored_cpu_s": round(t2["cpu_s"] - t1["cpu_s"], 1),
        "identical": bool(got.equals(stored)),
        "max_rel_diff": worst,
    }


def phase_day(work: Path) -> dict[str, object]:
    return _ingest(work, "day", "store-day")


def phase_text(work: Path) -> dict[str, object]:
    from clusterloom.ops.fabric import load_fabric
    from clusterloom.ops.ingest import read_counters

    fabric = load_fabric(EXAMPLE)
    out: dict[str, object] = {}
    for name in ("scrape.csv", "scrape.prom"):
        start = time.perf_counter()
        got = read_counters(work / "text" / name, fabric)
        out[name] = {
            "rows": got.table.num_rows,
            "problems": len(got.problems),
            "s": round(time.perf_counter() - start, 2),
        }
    return out


PHASES = {
    "gen": None,
    "hour": phase_hour,
    "localise": phase_localise,
    "rollup": phase_rollup,
    "day": phase_day,
    "text": phase_text,
}


def _child(phase: str, work: Path, scale: float) -> None:
    start = time.perf_counter()
    load = _load()
    base = _usage()
    result = phase_gen(work, scale) if phase == "gen" else PHASES[phase](work)  # type: ignore[misc]
    use = _usage()
    doc = {
        "phase": phase,
        "wall_s": time.perf_counter() - start,
        "cpu_s": use["cpu_s"] - base["cpu_s"],
        "sys_s": use["sys_s"] - base["sys_s"],
        "read_gb": use["read_gb"] - base["read_gb"],
        "write_gb": use["write_gb"] - base["write_gb"],
        "rss_gb": use["rss_gb"],
        "load": f"{load} -> {_load()}",
        "result": result,
    }
    print("RESULT " + json.dumps(doc), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--phases", default="gen,hour,localise,day,text")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument(
        "--stores",
        type=Path,
        default=None,
        help="where the stores go (default: the work directory, which holds the inputs)",
    )
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-ops-"))
    global STORES
    STORES = args.stores or work
    if args.child:
        _child(args.child, work, args.scale)
        return
    work.mkdir(parents=True, exist_ok=True)
    targets = {"hour": (120, 4.0), "day": (300, 8.0)}
    print(f"{EXAMPLE}, work directory {work}, scale {args.scale:g}", flush=True)
    try:
        for phase in args.phases.split(","):
            if phase == "localise":
                try:
                    import clusterloom.ops.localise  # noqa: F401
                except ImportError:
                    print("localise: clusterloom.ops.localise is not on this branch: skipped")
                    continue
            cmd = [
                sys.executable,
                "-u",
                __file__,
                "--child",
                phase,
                "--workdir",
                str(work),
                "--scale",
                str(args.scale),
                "--stores",
                str(STORES),
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
            if proc.returncode or not line:
                print(f"{phase}: failed\n{proc.stdout}\n{proc.stderr}", flush=True)
                continue
            doc = json.loads(line[0][7:])
            print(
                f"{phase:9s} wall {doc['wall_s']:7.1f} s  CPU {doc['cpu_s']:7.1f} s "
                f"(sys {doc['sys_s']:5.1f})  read {doc['read_gb']:5.2f} GB  "
                f"written {doc['write_gb']:5.2f} GB  peak RSS {doc['rss_gb']:5.2f} GB  "
                f"load {doc['load']}  {json.dumps(doc['result'])}",
                flush=True,
            )
            if phase in targets:
                wall, gb = targets[phase]
                ok = doc["wall_s"] < wall and doc["rss_gb"] < gb
                print(f"{'':9s} target < {wall} s and < {gb} GB: {'met' if ok else 'MISSED'}")
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
