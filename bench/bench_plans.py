"""Change plans validated step by step (``assist.plan``) on hgx-1k-roce grown 1,024 -> 1,280
GPUs (the step of docs/growth.md: the spine layer 8 -> 16, 512 links re-patched, one rack
move), at three bisection floors, without and with the predicted impact of every state.

Stages, each timed: the baseline designed and written (``design -o``, hall at 2 MW as in
tests/growth/test_growth.py); then per floor ``plan_change`` (the grown design through the
growth path, the waves re-packed, every state checked; with ``simulate`` the flow engine on
every distinct state, twice: the baseline's and the target's view). Printed per run: steps,
waves, distinct states, the least bisection and plane over the drained states outside the rack
move's wave (which drains every link of the moved rack at once), error findings, the worst
predicted slowdown.

Run: ``nice python bench/bench_plans.py``; figures go to ``bench/RESULTS.md`` by hand.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

from clusterloom.assist import Floors, plan_change
from clusterloom.examples import example_text
from clusterloom.export.outdir import output_run
from clusterloom.pipeline import run_design
from clusterloom.spec import ClusterSpec, parse_spec
from clusterloom.write import write_design


def spec(accelerators: int, power_kw: int = 2000) -> ClusterSpec:
    doc = yaml.safe_load(example_text("hgx-1k-roce"))
    doc["compute"]["accelerators"] = accelerators
    doc.pop("scenario", None)
    hall = doc["site"]["buildings"][0]["halls"][0]
    hall["power_kw"] = hall["cooling_kw"] = power_kw
    hall["feeds"] = {"ups-a": power_kw // 2, "ups-b": power_kw // 2}
    return parse_spec(yaml.safe_dump(doc))


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        base = run_design(spec(1024), compare=False)
        p = base.provenance
        with output_run(
            Path(tmp) / "1k", spec_hash=p.spec_hash, version=p.clusterloom_version
        ) as run:
            write_design(base, run.staging)
        print(f"baseline 1,024 GPUs designed and written: {time.perf_counter() - t:.1f} s")
        target = spec(1280)
        for floor, simulate in ((0.0, False), (0.5, False), (0.75, False), (0.75, True)):
            t = time.perf_counter()
            r = plan_change(
                Path(tmp) / "1k", target, Floors(bisection=floor, plane=floor), simulate=simulate
            )
            took = time.perf_counter() - t
            moves = {s.wave for s in r.plan.steps if s.action == "move-rack"}
            drains = [s for s in r.plan.steps if s.action == "drain" and s.wave not in moves]
            least = min((float(s.checks["backend:bisection-left"]) for s in drains), default=1.0)
            plane = min((float(s.checks["backend:plane-least-left"]) for s in drains), default=1.0)
            states = len({tuple(sorted(s.checks.items())) for s in r.plan.steps})
            slow = [float(s.checks.get("backend:predicted-slowdown", np.nan)) for s in r.plan.steps]
            worst = f"{np.nanmax(slow):.3f}" if simulate else "-"
            codes = ", ".join(sorted({f.code for f in r.errors})) or "none"
            print(
                f"floor {floor:.2f} simulate {simulate}: {took:.1f} s; {len(r.plan.steps)} "
                f"steps, {r.plan.summary['waves']} waves ({len(moves)} a rack move), {states} "
                f"distinct step states; least drained outside the move: bisection {least:.1%}, "
                f"plane {plane:.1%}; {len(r.errors)} errors ({codes}); worst predicted "
                f"slowdown {worst}"
            )


if __name__ == "__main__":
    main()
