"""The step-time model: FLOPs per operation against the closed form, pipeline schedules against
their bubbles, uneven stages, recomputation, overlap, memory and the bad inputs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clusterloom.errors import SpecError
from clusterloom.spec import parse_spec
from clusterloom.spec.job import ScheduleError, split_layers
from clusterloom.workload import design_workload, model_shape, step_ops, step_time
from clusterloom.workload.compute import ComputeModel, model_flops_per_token
from clusterloom.workload.model import training_flops_per_token
from clusterloom.workload.schedule import simulate, stage_order
from helpers import SMALL_MODEL
from helpers import job_spec as _job_spec


def job_spec(**job: object) -> str:
    """The shared small job, with the efficiency model (no ``utilisation`` override) unless the
    test sets ``compute``."""
    job.setdefault("compute", {"peak_tflops": 1000})
    return _job_spec(**job)


# -- FLOPs -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "parallelism"),
    [
        ({}, {"tp": 1, "pp": 1}),
        ({}, {"tp": 2, "pp": 4}),
        ({"kv_heads": 4, "gated_mlp": True}, {"tp": 4, "pp": 2, "cp": 2}),
        ({"gated_mlp": False, "tied_embeddings": True}, {"tp": 2, "pp": 2}),
    ],
)
def test_flops_per_token_are_6n_plus_attention(
    model: dict[str, object], parallelism: dict[str, int]
) -> None:
    """Summed over the operations a rank runs, scaled back to one token of the whole model:
    6 x the weights used in products (all but the input embedding lookup) + 6 L S h."""
    spec = parse_spec(job_spec(model={**SMALL_MODEL, **model}, parallelism=parallelism))
    assert spec.job is not None
    m = spec.job.model
    shape = model_shape(m)
    lookup = 0 if m.tied_embeddings else m.vocab * m.hidden
    closed = 6 * (shape.parameters - lookup) + 6 * m.layers * m.sequence_length * m.hidden
    assert model_flops_per_token(spec) == pytest.approx(closed, rel=1e-12)
    assert training_flops_per_token(m) == pytest.approx(closed, rel=1e-12)


def test_moe_flops_count_the_active_experts() -> None:
    moe = {"experts": 8, "top_k": 2, "expert_ffn_hidden": 512, "shared_experts": 1}
    spec = parse_spec(
        job_spec(model={**SMALL_MODEL, "moe": moe}, parallelism={"tp": 2, "pp": 2, "ep": 2})
    )
    assert spec.job is not None
    m = spec.job.model
    shape = model_shape(m)
    closed = 6 * (shape.active_parameters - m.vocab * m.hidden) + 6 * 8 * 2048 * 1024
    assert model_flops_per_token(spec) == pytest.approx(closed, rel=1e-12)


def test_a_large_gemm_runs_near_the_fitted_efficiency_and_a_norm_at_memory_speed() -> None:
    spec = parse_spec(job_spec())
    cm = ComputeModel(spec)
    acc = cm.roof.acc
    big = cm.roof.efficiency((16384.0, 16384.0, 16384.0))
    assert acc.gemm_efficiency * 0.97 < big < acc.gemm_efficiency
    assert cm.roof.efficiency((128.0, 16384.0, 16384.0)) < 0.55 * acc.gemm_efficiency
    norm = cm._norm("n")
    assert cm.roof.seconds(norm) == pytest.approx(
        norm.nbytes / cm.roof.bandwidth + acc.kernel_overhead_us * 1e-6
    )


# -- schedules ---------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    p=st.integers(1, 12),
    v=st.integers(1, 4),
    groups=st.integers(1, 4),
    f=st.floats(0.1, 3.0),
    r=st.floats(1.0, 3.0),
)
def test_bubbles_match_the_closed_forms(p: int, v: int, groups: int, f: float, r: float) -> None:
    """Equal work per chunk, free sends: 1F1B's bubble is (p-1)/m of the compute time
    (Narayanan et al. SC21, eq. 1), interleaved 1F1B's (p-1)/(v m) (eq. 2)."""
    m = groups * p  # interleaving needs m a multiple of p
    fwd = [[f / v] * v for _ in range(p)]
    bwd = [[r * f / v] * v for _ in range(p)]
    t = simulate(fwd, bwd, m)
    compute = m * f * (1 + r)
    assert max(t.busy) == pytest.approx(compute)
    assert (t.makespan - compute) / compute == pytest.approx((p - 1) / (v * m), abs=1e-9)


def test_every_stage_runs_each_pass_once() -> None:
    for p, v, m in ((4, 1, 3), (4, 2, 8), (3, 3, 6)):
        for s in range(p):
            order = stage_order(s, p, v, m)
            assert sorted(order) == sorted(
                (is_f, mb, c) for is_f in (True, False) for mb in range(m) for c in range(v)
            )


def test_sends_on_the_critical_path_lengthen_1f1b_by_their_round_trips() -> None:
    """1F1B with one micro-batch: forward down and backward up, 2 (p - 1) sends."""
    p, send = 4, 0.25
    t = simulate([[1.0]] * p, [[2.0]] * p, 1, [send] * p)
    assert t.makespan == pytest.approx(p * 3.0 + 2 * (p - 1) * send)


@settings(max_examples=60, deadline=None)
@given(layers=st.integers(2, 200), pp=st.integers(2, 32))
def test_uneven_stages_conserve_layers(layers: int, pp: int) -> None:
    try:
        stages = split_layers(layers, pp, None, None)
    except ScheduleError as exc:  # e.g. 5 layers on 4 stages: no even middle with lighter ends
        assert exc.field == "parallelism.pp" and f"{layers} layers" in str(exc)
        assert layers < pp or layers % pp
        return
    assert sum(stages) == layers and len(stages) == pp and min(stages) >= 1
    # the middle stages are even, the first and last carry no more than they (than one more
    # layer than each other with two stages)
    assert len(set(stages[1:-1])) <= 1
    if pp > 2:
        assert max(stages[0], stages[-1]) <= stages[1]
    else:
        assert abs(stages[0] - stages[1]) <= 1


def test_uneven_stages_as_megatron_sets_them() -> None:
    assert split_layers(126, 16, None, None) == (7, *([8] * 14), 7)  # Llama 3 405B on pp 16
    assert split_layers(61, 16, 1, None) == (1, *([4] * 15))
    assert split_layers(30, 4, 6, 6) == (6, 9, 9, 6)


def test_default_schedule_interleaves_and_cuts_the_bubble() -> None:
    """8 layers, pp 4: 1F1B's bubble (p-1)/m of 32 micro-batches against two chunks of one
    layer (half of it). A small vocabulary keeps the embedding and output layer on the first
    and last stages light, so the timeline's bubble is near the closed form."""
    model = {**SMALL_MODEL, "vocab": 512}
    plain = parse_spec(job_spec(model=model, parallelism={"tp": 2, "pp": 4, "schedule": "1f1b"}))
    auto = parse_spec(job_spec(model=model, parallelism={"tp": 2, "pp": 4}))
    t1, t2 = step_time(plain, step_ops(plain)), step_time(auto, step_ops(auto))
    assert (t1.schedule, t1.virtual_stages, t2.schedule, t2.virtual_stages) == (
        "1F1B",
        1,
        "interleaved 1F1B",
        2,
    )
    assert t1.bubble_s / t1.compute_s == pytest.approx(3 / 32, rel=0.15)
    assert t2.bubble_s / t2.compute_s == pytest.approx(3 / 64, rel=0.15)
    assert t2.step_s < t1.step_s


# -- recomputation, overlap, the breakdown -------------------------------------------------------


def test_recomputation_costs_forward_passes() -> None:
    """Full recomputation runs every layer's forward twice: hardware FLOPs 4/3 of the model's
    (less the output layer); selective only the attention core."""
    times = {}
    for mode in ("none", "selective", "full"):
        spec = parse_spec(
            job_spec(
                parallelism={"tp": 2, "pp": 4, "schedule": "1f1b"},
                compute={"peak_tflops": 1000, "recompute": mode},
            )
        )
        times[mode] = step_time(spec, step_ops(spec))
    none, sel, full = times["none"], times["selective"], times["full"]
    assert none.hardware_flops_per_step == pytest.approx(none.flops_per_step, rel=0.02)
    assert none.compute_s < sel.compute_s < full.compute_s
    assert full.hardware_flops_per_step / full.flops_per_step == pytest.approx(4 / 3, rel=0.05)
    assert full.mfu < none.mfu and full.hfu > full.mfu


def test_breakdown_adds_up_and_the_bounds_sit_below() -> None:
    spec = parse_spec(job_spec(parallelism={"tp": 2, "pp": 4}))
    t = step_time(spec, step_ops(spec))
    assert t.step_s == pytest.approx(
        t.compute_s + t.bubble_s + t.optimizer_s + sum(t.exposed.values())
    )
    assert t.ideal_step_s < t.bound_step_s <= t.step_s
    assert {d for d, (_, e, _) in t.by_dim().items() if e > 0} <= {"tp", "pp", "dp"}
    assert t.tflops_per_accelerator == pytest.approx(t.mfu * t.peak_flops / 1e12)


def test_data_parallel_overlap_keeps_one_bucket_exposed() -> None:
    """Overlapped with the backward and forward passes, at least one bucket of the gradient
    reduce-scatter and of the weight all-gather is exposed; without overlap all of it."""
    base = {"tp": 1, "pp": 1}
    on = parse_spec(job_spec(parallelism=base))
    off = parse_spec(
        job_spec(parallelism=base, overlap={"dp_grad_reduce": False, "dp_param_gather": False})
    )
    t_on, t_off = step_time(on, step_ops(on)), step_time(off, step_ops(off))
    total = t_on.by_dim()["dp"][0]
    assert t_off.exposed["dp"] == pytest.approx(total)
    params = model_shape(on.job.model).parameters if on.job else 0
    buckets = -(-params // 40_000_000)
    assert total / buckets <= t_on.exposed["dp"] < total


def test_utilisation_overrides_the_efficiency_model() -> None:
    spec = parse_spec(
        job_spec(parallelism={"tp": 1, "pp": 1}, compute={"peak_tflops": 1000, "utilisation": 0.5})
    )
    t = step_time(spec, step_ops(spec))
    assert t.compute_s == pytest.approx(t.hardware_flops_per_step / 16 / (0.5 * t.peak_flops))


# -- memory ------------------------------------------------------------------------------------


def test_a_job_that_does_not_fit_is_a_finding_and_recomputation_fixes_it() -> None:
    """16k-token sequences with unfused attention (the score matrices kept) hold ~170 GB of
    activations on the first of 4 stages of 80 GB accelerators; full recomputation keeps one
    input per layer."""
    model = {**SMALL_MODEL, "hidden": 4096, "ffn_hidden": 16384, "heads": 32}
    model["sequence_length"] = 16384
    kw = {"model": model, "parallelism": {"tp": 2, "pp": 4}}
    unfused = {"peak_tflops": 1000, "attention": "unfused"}
    tight = design_workload(parse_spec(job_spec(**kw, compute=unfused)))
    assert not tight.memory.fits
    finding = next(f for f in tight.findings if f.code == "memory")
    assert finding.severity == "error" and "80.0 GB" in finding.message
    roomy = design_workload(parse_spec(job_spec(**kw, compute={**unfused, "recompute": "full"})))
    assert roomy.memory.fits and not any(f.code == "memory" for f in roomy.findings)
    assert roomy.memory.peak.activations < tight.memory.peak.activations / 5


def test_zero_shards_the_optimizer_state() -> None:
    mems = {}
    for zero in (0, 1, 3):
        spec = parse_spec(job_spec(parallelism={"tp": 2, "pp": 4, "zero": zero}))
        mems[zero] = design_workload(spec).memory.stages[1]
    assert mems[1].optimizer == pytest.approx(mems[0].optimizer / 2)  # dp 2
    assert mems[3].weights == pytest.approx(mems[0].weights / 2)


# -- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("job", "where", "words"),
    [
        (
            {"parallelism": {"tp": 2, "pp": 4, "schedule": "1f1b", "virtual_stages": 2}},
            "job.parallelism.virtual_stages",
            ["1f1b", "virtual_stages 2"],
        ),
        (
            {"parallelism": {"tp": 2, "pp": 4, "virtual_stages": 3}},
            "job.parallelism.virtual_stages",
            ["virtual_stages 3", "2 layers", "8 layers", "pp 4"],
        ),
        (
            {
                "parallelism": {"tp": 2, "pp": 4, "virtual_stages": 2},
                "batch": {"global_batch": 12, "micro_batch": 1},
            },
            "job.parallelism.virtual_stages",
            ["micro-batches (6)", "pp 4"],
        ),
        (
            {"parallelism": {"tp": 2, "pp": 4, "first_stage_layers": 3}},
            "job.parallelism.pp",
            ["5 layers", "3 stages"],
        ),
        (
            {"parallelism": {"tp": 1, "pp": 16}},
            "job.parallelism.pp",
            ["8 layers", "16 pipeline stages"],
        ),
        (
            {"compute": {"recompute": "selective", "recompute_layers": 1}},
            "job.compute.recompute_layers",
            ["recompute: full", "selective"],
        ),
        (
            {"compute": {"recompute": "full", "recompute_layers": 3}},
            "job.compute.recompute_layers",
            ["recompute_layers 3", "1 layers"],
        ),
    ],
)
def test_bad_schedules_name_the_field_and_numbers(
    job: dict[str, object], where: str, words: list[str]
) -> None:
    with pytest.raises(SpecError) as info:
        parse_spec(job_spec(**job))
    problems = [p for p in info.value.problems if p.where == where]
    assert problems, info.value.problems
    assert all(w in problems[0].message for w in words), problems[0].message


def test_a_bad_schedule_exits_2_with_one_line(tmp_path: object) -> None:
    from pathlib import Path

    from clusterloom.cli.main import app

    path = Path(str(tmp_path)) / "bad.yaml"
    path.write_text(job_spec(parallelism={"tp": 2, "pp": 4, "virtual_stages": 3}))
    result = CliRunner().invoke(app, ["workload", str(path)])
    assert result.exit_code == 2
    assert "job.parallelism.virtual_stages" in result.output and "virtual_stages 3" in result.output
