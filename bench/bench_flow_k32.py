"""The flow engine on issue 15's speed case in this process: the 8,192-host (k=32) fat tree of
``bench_sim.py``, a 2 MB permutation (seed 0), ``mrc-spray`` with ``bench_vs_htsim.py --speed``'s
options (256 EVs, ``mss`` 3936, ``hdr`` 64), rtol 0.01 unless given. It prints CPU seconds
(``time.process_time``, so a loaded machine inflates them less than wall time) of the imports,
the topology and the run, user and system time, peak RSS and the FCTs; ``--save FILE`` writes
every flow's FCT, start and finish and every unit's bytes, and ``--compare A B`` says whether two
saved runs are identical, array by array. To compare two trees, run it under each one's
``PYTHONPATH`` back to back:

    PYTHONPATH=/work/main/src python bench/bench_flow_k32.py --save /tmp/a.npz
    PYTHONPATH=src python bench/bench_flow_k32.py --save /tmp/b.npz
    python bench/bench_flow_k32.py --compare /tmp/a.npz /tmp/b.npz
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

START = time.process_time()

import numpy as np  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rtol", type=float, default=0.01)
    p.add_argument("--option", action="append", default=[], help="KEY=VALUE of mrc-spray")
    p.add_argument("--save", help="write the run's arrays (.npz)")
    p.add_argument("--compare", nargs=2, metavar=("A", "B"), help="two saved runs")
    opts = p.parse_args()
    if opts.compare:
        a, b = (np.load(x) for x in opts.compare)
        same = True
        for key in a.files:
            ok = a[key].shape == b[key].shape and a[key].tobytes() == b[key].tobytes()
            same &= ok
            print(f"{key}: {'identical' if ok else 'DIFFERENT'}")
        return 0 if same else 1

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_sim import K32

    from clusterloom import parse_spec
    from clusterloom.fabric import generate, plan_fabric
    from clusterloom.sim.flow.run import run
    from clusterloom.sim.flow.transports import transport
    from clusterloom.sim.traffic import permutation

    imported = time.process_time()
    topology = generate(plan_fabric(parse_spec(K32)))
    load = permutation(8192, 2_000_000, seed=0)
    built = time.process_time()
    options: dict[str, float] = {"mss": 3936, "hdr": 64, "evs": 256}
    options.update({k: float(v) for k, v in (x.split("=") for x in opts.option)})
    result = run(topology, load, transport("mrc-spray", **options), seed=0, rtol=opts.rtol)
    done = time.process_time()
    fct = result.fct_ps / 1e6
    use = resource.getrusage(resource.RUSAGE_SELF)
    print(
        f"k=32 permutation, mrc-spray {options}, rtol {opts.rtol}: CPU s imports "
        f"{imported - START:.2f}, topology and traffic {built - imported:.2f}, run "
        f"{done - built:.2f}, process {use.ru_utime + use.ru_stime:.2f} (user "
        f"{use.ru_utime:.2f}, sys {use.ru_stime:.2f}); peak {use.ru_maxrss / 1024:,.0f} MB; "
        f"{result.events} events, {result.allocations} allocations, {result.alloc_rounds} "
        f"rounds, {result.units.n_units:,} units"
    )
    print(
        f"  FCT mean / p50 / p99 / max us {fct.mean():.2f} / {np.percentile(fct, 50):.2f} / "
        f"{np.percentile(fct, 99):.2f} / {fct.max():.2f}"
    )
    if opts.save:
        np.savez(
            opts.save,
            fct_ps=result.fct_ps,
            start_ps=result.start_ps,
            finish_ps=result.finish_ps,
            unit_bytes=result.unit_bytes,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
