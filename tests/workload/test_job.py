"""The job section, rank layout, model arithmetic, the step's collectives and the step time."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterloom.errors import SpecError
from clusterloom.examples import example_text
from clusterloom.spec import parse_spec
from clusterloom.spec.job import ModelSpec, MoESpec
from clusterloom.workload import (
    Collective,
    LinkClass,
    design_workload,
    layout_of,
    model_shape,
    step_ops,
    training_flops_per_token,
)
from clusterloom.workload.timing import bandwidths, call_time
from helpers import SMALL_MODEL, job_spec


def test_megatron_rank_groups_reference() -> None:
    """Megatron-LM's initialize_model_parallel example: 16 GPUs, tp 2, pp 4 (so dp 2): tensor
    groups [0,1],[2,3]..., pipeline groups [0,4,8,12],[1,5,9,13]..., data-parallel groups
    [0,2],[1,3],[4,6],[5,7]..."""
    layout = layout_of(parse_spec(job_spec()))
    assert layout.groups("tp").tolist() == [[2 * i, 2 * i + 1] for i in range(8)]
    assert layout.groups("pp").tolist() == [
        [0, 4, 8, 12],
        [1, 5, 9, 13],
        [2, 6, 10, 14],
        [3, 7, 11, 15],
    ]
    dp = sorted(layout.groups("cp", "ep", "edp").tolist())
    assert dp == sorted([[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9, 11], [12, 14], [13, 15]])


@settings(max_examples=60)
@given(
    tp=st.sampled_from([1, 2, 4, 8]),
    cp=st.sampled_from([1, 2]),
    ep=st.sampled_from([1, 2, 4]),
    edp=st.sampled_from([1, 2, 3]),
    pp=st.sampled_from([1, 2, 4]),
)
def test_groups_partition_the_ranks(tp: int, cp: int, ep: int, edp: int, pp: int) -> None:
    from clusterloom.workload.layout import Layout

    layout = Layout(("tp", "cp", "ep", "edp", "pp"), (tp, cp, ep, edp, pp), 8)
    world = layout.world
    for axes in (("tp",), ("cp",), ("ep",), ("pp",), ("cp", "ep", "edp"), ("cp", "edp")):
        g = layout.groups(*axes)
        assert g.shape == (
            world // math.prod(layout.size(a) for a in axes),
            math.prod(layout.size(a) for a in axes),
        )
        assert sorted(g.ravel().tolist()) == list(range(world))
    # TP innermost: a TP group is consecutive ranks
    tpg = layout.groups("tp")
    assert (np.diff(tpg, axis=1) == 1).all()
    # a rank's TP peer group and its DP group meet only in the rank itself
    r = world - 1
    t = next(row for row in tpg.tolist() if r in row)
    d = next(row for row in layout.groups("cp", "ep", "edp").tolist() if r in row)
    assert set(t) & set(d) == {r}


def test_parameter_counts_of_public_models() -> None:
    llama = ModelSpec(
        layers=126,
        hidden=16384,
        ffn_hidden=53248,
        heads=128,
        kv_heads=8,
        vocab=128256,
        sequence_length=8192,
    )
    assert model_shape(llama).parameters == pytest.approx(405e9, rel=0.01)  # Llama 3 405B
    ds = ModelSpec(
        layers=61,
        hidden=7168,
        ffn_hidden=18432,
        heads=128,
        vocab=129280,
        sequence_length=4096,
        moe=MoESpec(experts=256, top_k=8, expert_ffn_hidden=2048, shared_experts=1, dense_layers=3),
    )
    shape = model_shape(ds)
    # DeepSeek-V3: 671B total, 37B activated (its MLA attention is smaller than GQA here)
    assert shape.parameters == pytest.approx(671e9, rel=0.02)
    assert shape.active_parameters == pytest.approx(37e9, rel=0.06)
    assert shape.moe_layers == 58
    # 6N rule plus causal attention, N the weights a token multiplies with: the input
    # embedding is a table lookup (no FLOPs), as in Narayanan et al.'s count (V/16lh: the
    # output layer only)
    assert training_flops_per_token(llama) == pytest.approx(
        6 * (model_shape(llama).active_parameters - 128256 * 16384) + 6 * 126 * 8192 * 16384
    )


def test_bad_jobs_name_the_field_and_numbers() -> None:
    cases = {
        "job.parallelism": {"parallelism": {"tp": 2, "pp": 4, "dp": 4}},
        "job.parallelism.tp": {"parallelism": {"tp": 16, "pp": 1}},
        "job.batch.global_batch": {
            "batch": {"global_batch": 63, "micro_batch": 1},
            "parallelism": {"tp": 2, "pp": 4},
        },
        "job.parallelism.pp": {"parallelism": {"tp": 1, "pp": 16}},
    }
    for where, job in cases.items():
        with pytest.raises(SpecError) as info:
            parse_spec(job_spec(**job))
        assert where in [p.where for p in info.value.problems], (where, info.value.problems)
    moe = {
        "model": {**SMALL_MODEL, "moe": {"experts": 6, "top_k": 2, "expert_ffn_hidden": 512}},
        "parallelism": {"tp": 1, "pp": 1, "ep": 4},
    }
    with pytest.raises(SpecError) as info:
        parse_spec(job_spec(**moe))
    assert any(
        p.where == "job.model.moe.experts" and "6 experts" in p.message and "ep 4" in p.message
        for p in info.value.problems
    )
    wide = job_spec(parallelism={"tp": 16, "pp": 1, "tp_beyond_scale_up": True})
    assert parse_spec(wide).job is not None


def test_dense_step_collectives_by_hand() -> None:
    """tp 2, pp 4, dp 2, sequence parallel: per micro-batch and layer 2 all-gathers and 2
    reduce-scatters of b*s*h*2 bytes each way; 2 layers per stage; 32 micro-batches; 1F1B
    (the default would interleave two chunks of one layer, doubling the PP sends)."""
    spec = parse_spec(job_spec(parallelism={"tp": 2, "pp": 4, "schedule": "1f1b"}))
    ops = {op.name: op for op in step_ops(spec)}
    a = 1 * 2048 * 1024 * 2
    ag = ops["TP all-gather (forward)"]
    assert ag.nbytes == a and ag.per_step == 32 * (2 + 2) and ag.link is LinkClass.SCALE_UP
    # 16 ranks on 2 nodes of 8: stages 0-1 and 2-3 share a node, the 1->2 boundary crosses
    inside = ops["PP send-recv (forward) in domain"]
    across = ops["PP send-recv (forward) across domains"]
    assert inside.nbytes == across.nbytes == a // 2 and inside.per_step == 32
    assert inside.groups.shape == (2 * 4, 2) and across.groups.shape == (4, 2)
    assert inside.link is LinkClass.SCALE_UP and across.link is LinkClass.SCALE_OUT
    dense = model_shape(spec.job.model).dense_parameters  # type: ignore[union-attr]
    rs = ops["DP dense gradient reduce-scatter"]
    assert rs.nbytes == round(dense / (2 * 4) * 2) and rs.per_step == 1
    assert rs.collective is Collective.REDUCE_SCATTER


def test_alpha_beta_closed_form_for_a_ring_all_reduce() -> None:
    spec = parse_spec(job_spec(parallelism={"tp": 1, "pp": 1, "zero": 0}))
    ops = step_ops(spec)
    (ar,) = [op for op in ops if op.collective is Collective.ALL_REDUCE]
    bw = bandwidths(spec)
    n = ar.group_size
    call, bound = call_time(ar, bw, 8)
    assert ar.link is LinkClass.MIXED  # 16 ranks, 8 per node
    local, nodes = 8, 2
    expected_bound = (
        2 * (local - 1) / local * ar.nbytes / bw.scale_up
        + 2 * (nodes - 1) / nodes * (ar.nbytes / local) / bw.scale_out
    )
    assert bound == pytest.approx(expected_bound)
    assert call == pytest.approx(
        expected_bound + 2 * (local - 1) * bw.alpha_up + 2 * (nodes - 1) * bw.alpha_out
    )
    assert n == 16


def test_examples_with_jobs_run_end_to_end() -> None:
    for name in ("rail-16k", "moe-2k"):
        spec = parse_spec(example_text(name))
        w = design_workload(spec)
        t = w.timing
        assert 0 < t.bound_step_s <= t.step_s
        assert t.compute_s > 0 and 0 < t.mfu < 1
        assert w.matrix.shape == (spec.compute.accelerators,) * 2
        # the matrix holds exactly the bytes every flow carries over a step
        assert w.matrix.sum() == pytest.approx(float(w.flows.bytes_per_step().sum()))
        # and the ops' accounting agrees with the flows'
        assert sum(op.bytes_per_step for op in w.ops) == pytest.approx(w.matrix.sum(), rel=1e-6)
    moe = design_workload(parse_spec(example_text("moe-2k")))
    ep = [op for op in moe.ops if op.dim == "ep"]
    assert ep and all(op.link is LinkClass.MIXED and op.group_size == 64 for op in ep)


def test_zero_stages_change_the_data_parallel_traffic() -> None:
    """ZeRO 0 all-reduces the gradients (2(n-1)/n S per rank); ZeRO 1 reduce-scatters gradients
    and all-gathers weights (the same volume at equal precision); ZeRO 3 all-gathers weights
    twice per micro-batch and reduce-scatters gradients once per micro-batch."""
    volumes = {}
    for zero in (0, 1, 3):
        spec = parse_spec(job_spec(parallelism={"tp": 2, "pp": 4, "zero": zero}))
        dp_ops = [op for op in step_ops(spec) if op.dim == "dp"]
        volumes[zero] = sum(op.bytes_per_step for op in dp_ops)
        if zero == 3:
            micro = 32
            names = {op.name: op.per_step for op in dp_ops}
            assert names == {
                "FSDP dense weight all-gather (forward)": micro,
                "FSDP dense weight all-gather (backward)": micro,
                "FSDP dense gradient reduce-scatter": micro,
            }
    assert volumes[0] == pytest.approx(volumes[1], rel=1e-6)
    assert volumes[3] == pytest.approx(volumes[1] * 3 * 32 / 2, rel=1e-6)


def test_expert_and_context_groups_follow_the_order() -> None:
    """Order tp-cp-ep-dp-pp on 16 ranks with tp 2, cp 2, ep 2, edp 2 (dp 4): TP pairs are
    consecutive; CP pairs 2 apart; EP pairs 4 apart (expert parallel inside data parallel);
    expert-data-parallel pairs 8 apart; the dense gradient group (cp, ep, edp) spans every rank
    of one TP index."""
    from clusterloom.workload.layout import Layout

    layout = Layout(("tp", "cp", "ep", "edp", "pp"), (2, 2, 2, 2, 1), 8)
    assert layout.groups("tp")[:2].tolist() == [[0, 1], [2, 3]]
    assert layout.groups("cp")[:2].tolist() == [[0, 2], [1, 3]]
    assert layout.groups("ep")[:2].tolist() == [[0, 4], [1, 5]]
    assert layout.groups("edp")[:2].tolist() == [[0, 8], [1, 9]]
    assert sorted(layout.groups("cp", "ep", "edp").tolist()) == [
        list(range(0, 16, 2)),
        list(range(1, 16, 2)),
    ]
    # pp outermost in the default order: with pp 2 the second stage starts at rank 16
    two_stages = Layout(("tp", "cp", "ep", "edp", "pp"), (2, 2, 2, 2, 2), 8)
    assert two_stages.groups("pp")[0].tolist() == [0, 16]
    # another order puts pp inside dp: tp-pp-cp-ep-dp
    other = Layout(("tp", "pp", "cp", "ep", "edp"), (2, 2, 1, 1, 2), 8)
    assert other.groups("pp")[0].tolist() == [0, 2]
    assert other.groups("edp")[0].tolist() == [0, 4]
