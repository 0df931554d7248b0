"""Side by side with htsim: the same k=16 fat tree and the same connection-matrix file.

The case of issue 15: 1,024 hosts at 100 Gb/s, 1 us links, MTU 4000, a 2 MB permutation (seed
0) written once with ``write_htsim`` and read by both tools. Pairs compared on flow completion
time (mean, p99, max; every flow starts at 0, so the FCT is the finish time):

    clusterloom mrc-spray        vs  htsim_eqds  (EQDS: sprayed, receiver-credited)
    clusterloom receiver-driven  vs  htsim_ndp   (NDP: sprayed, receiver pulls)
    clusterloom roce-ecmp        vs  htsim_roce  (RoCE: one ECMP path per flow)

for the flow engine (all four transports in one process) and, with ``--packet``, the packet
engine. htsim is the reference and is not part of the project: build it with
``../shared/reference/htsim/build.sh /tmp/htsim``.

    python bench/bench_htsim.py [--htsim /tmp/htsim] [--packet]

htsim's flags are those of its own example for this fat tree (``build.sh``): ``-strat
ecmp_host -paths 256 -q 35 -cwnd 50``. Wall time and peak memory are per process
(``/usr/bin/time``; this script's own numbers for clusterloom).
"""

from __future__ import annotations

import argparse
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

PAIRS = (("mrc-spray", "eqds"), ("receiver-driven", "ndp"), ("roce-ecmp", "roce"))
FINISHED = re.compile(r"finished at ([0-9.eE+]+)")


def _stats(fct_us: np.ndarray) -> tuple[float, float, float]:
    return float(fct_us.mean()), float(np.percentile(fct_us, 99)), float(fct_us.max())


def _htsim(binary: Path, cm: Path, flows: int) -> tuple[np.ndarray, float, float]:
    """FCTs (us) of htsim's finished flows, wall seconds and peak MB of its process."""
    args = [str(binary), "-tm", str(cm), "-nodes", "1024", "-conns", str(flows)]
    args += ["-linkspeed", "100000", "-mtu", "4000", "-end", "20000", "-strat", "ecmp_host"]
    args += ["-paths", "256", "-q", "35"]
    if "roce" not in binary.name:
        args += ["-cwnd", "50"]
    start = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-f", "peak_kb %M", *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=binary.parent,
    )
    wall = time.perf_counter() - start
    fct = np.array([float(m.group(1)) for m in FINISHED.finditer(done.stdout)])
    peak = re.search(r"peak_kb (\d+)", done.stderr)
    return fct, wall, (int(peak.group(1)) / 1024 if peak else float("nan"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--htsim", default="/tmp/htsim")
    parser.add_argument("--packet", action="store_true", help="also the packet engine")
    opts = parser.parse_args()
    bin_dir = Path(opts.htsim) / "csg-htsim" / "sim" / "datacenter"

    from clusterloom import parse_spec, predict, resolve_scenario
    from clusterloom.examples import example_text
    from clusterloom.fabric import generate, plan_fabric
    from clusterloom.sim.htsim import write_htsim
    from clusterloom.sim.traffic import permutation

    spec = parse_spec(example_text("fat-tree-k16"))
    topology = generate(plan_fabric(spec))
    load = permutation(1024, 2_000_000, seed=0)
    rows: list[tuple[str, str, tuple[float, ...], tuple[float, ...], str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        cm = Path(tmp) / "perm.cm"
        write_htsim(load, cm)
        ref = {name: _htsim(bin_dir / f"htsim_{name}", cm, len(load)) for _, name in PAIRS}
        for name, (fct, wall, peak) in ref.items():
            print(f"htsim_{name}: {fct.size}/{len(load)} finished, {wall:.1f} s, {peak:.0f} MB")
        engines = ["flow", "packet"] if opts.packet else ["flow"]
        for engine in engines:
            names = [ours for ours, _ in PAIRS]
            scenario = resolve_scenario(
                spec,
                topology,
                engine=engine,  # type: ignore[arg-type]
                traffic=f"htsim:{cm}",
                transports=names + (["ideal"] if engine == "flow" else []),
                failures=[],
                seed=0,
            )
            start = time.perf_counter()
            if engine == "flow":
                result = predict(topology, scenario, keep_runs=True)
                fcts = {r.transport: r.result.fct_ps for r in result.runs}  # type: ignore[union-attr]
            else:
                result = predict(topology, scenario)
                fcts = {o.name: o.result.fct_ps for o in result.outcomes}  # type: ignore[union-attr]
            wall = time.perf_counter() - start
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"clusterloom {engine}: {len(names)} transports in {wall:.1f} s, {peak:.0f} MB")
            for ours, theirs in PAIRS:
                mine = fcts[ours]
                mine_us = mine[mine >= 0] / 1e6
                ref_fct = ref[theirs][0]
                a, b = _stats(mine_us), _stats(ref_fct)
                ratio = tuple(x / y for x, y in zip(a, b, strict=True))
                done = f"{mine_us.size}/{len(load)} vs {ref_fct.size}/{len(load)}"
                rows.append((f"{engine} {ours}", f"htsim_{theirs}", a, ratio, done))
    print()
    print("| clusterloom | htsim | mean / p99 / max us (ours) | ours / htsim | finished |")
    print("|---|---|---|---|---|")
    for ours, theirs, a, ratio, done in rows:
        print(
            f"| {ours} | {theirs} | {a[0]:.1f} / {a[1]:.1f} / {a[2]:.1f} | "
            f"{ratio[0]:.2f} / {ratio[1]:.2f} / {ratio[2]:.2f} | {done} |"
        )


if __name__ == "__main__":
    sys.exit(main())
