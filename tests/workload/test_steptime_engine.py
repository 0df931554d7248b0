"""Collective times from the simulators (``sim.steptime``, ``workload --engine``): each
scale-out collective run alone on the designed backend fabric replaces its alpha-beta time."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterloom.fabric import generate, plan_fabric
from clusterloom.sim.scenario import resolve_scenario
from clusterloom.sim.steptime import simulated_call_times
from clusterloom.spec import parse_spec
from clusterloom.workload import LinkClass, design_workload
from helpers import job_spec

#: 64 GPUs on 8 nodes, tp 8 inside a node, pp 2 and dp 4 across nodes
SPEC = job_spec(
    accelerators=64,
    parallelism={"tp": 8, "pp": 2},
    compute={"peak_tflops": 1000},
)


def test_flow_engine_times_replace_the_alpha_beta_times() -> None:
    """On a non-blocking fabric the fluid engine finishes each collective at its bandwidth
    bound (no per-step latency), so the step gets shorter, never below the bound's step."""
    spec = parse_spec(SPEC)
    w = design_workload(spec)
    topology = generate(plan_fabric(spec))
    sims = simulated_call_times(topology, resolve_scenario(spec, topology, engine="flow"), w)
    assert sims.source == "flow engine, roce-ecmp" and not sims.incomplete
    scale_out = {i for i, op in enumerate(w.ops) if op.link is not LinkClass.SCALE_UP}
    assert set(sims.seconds) == scale_out and {w.ops[i].dim for i in scale_out} == {"pp", "dp"}
    for i, seconds in sims.seconds.items():
        o = w.timing.ops[i]
        assert o.bound_s * 0.999 <= seconds <= o.call_s
    simulated = design_workload(spec, sims.seconds, sims.source)
    t0, t1 = w.timing, simulated.timing
    assert t1.comm_source == sims.source
    assert t1.compute_s == pytest.approx(t0.compute_s)
    assert t0.bound_step_s * 0.999 <= t1.step_s <= t0.step_s
    assert t1.exposed["dp"] <= t0.exposed["dp"] and t1.exposed["pp"] <= t0.exposed["pp"]


def test_workload_command_takes_an_engine(tmp_path: Path) -> None:
    from clusterloom.cli.main import app

    path = tmp_path / "job.yaml"
    path.write_text(SPEC)
    runner = CliRunner()
    result = runner.invoke(app, ["workload", str(path), "--engine", "flow"])
    assert result.exit_code == 0, result.output
    assert "flow engine, roce-ecmp" in result.output
    bad = runner.invoke(app, ["workload", str(path), "--engine", "htsim"])
    assert bad.exit_code == 2 and "--engine" in bad.output and "htsim" in bad.output


def test_design_takes_the_step_time_from_the_same_engine(tmp_path: Path) -> None:
    """``run_design(step_engine="flow")`` (``design --engine flow``) gives the workload that
    ``workload --engine flow`` computes; the analytic default leaves the design as it was."""
    import json

    from clusterloom.cli.main import app
    from clusterloom.pipeline import run_design, stage_names
    from clusterloom.sim.steptime import simulated_workload

    spec = parse_spec(SPEC)
    assert "step-time" not in stage_names(spec)
    stages = stage_names(spec, step_engine="flow")
    assert stages.index("step-time") == 1 + sum(s.startswith("fabric:") for s in stages)
    design = run_design(spec, step_engine="flow")
    assert design.step_calls is not None and design.step_calls.source == "flow engine, roce-ecmp"
    alone, _ = simulated_workload(
        spec, design.fabric("backend").topology, design_workload(spec), "flow"
    )
    assert design.workload is not None
    assert design.workload.timing.step_s == alone.timing.step_s
    analytic = run_design(spec).workload
    assert analytic is not None and design.workload.timing.step_s < analytic.timing.step_s
    path = tmp_path / "job.yaml"
    path.write_text(SPEC)
    runner = CliRunner()
    result = runner.invoke(
        app, ["design", str(path), "--engine", "flow", "-o", str(tmp_path / "o")]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "o" / "workload.json").read_text())
    assert "flow engine, roce-ecmp" in json.dumps(doc)
    bad = runner.invoke(app, ["design", str(path), "--engine", "htsim", "-o", str(tmp_path / "b")])
    assert bad.exit_code == 2 and "--engine" in bad.output and not (tmp_path / "b").exists()
    lone = runner.invoke(app, ["workload", str(path), "--transport", "mrc-spray"])
    assert lone.exit_code == 2 and "--transport" in lone.output
    args = ["design", str(path), "--transport", "mrc-spray", "-o", str(tmp_path / "t")]
    lone = runner.invoke(app, args)
    assert lone.exit_code == 2 and "--transport" in lone.output
