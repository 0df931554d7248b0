"""The ``job`` section: a training job whose traffic the workload stage derives.

Shapes follow Megatron-LM conventions: ``hidden`` is the model width, ``ffn_hidden`` the MLP
width (SwiGLU: three matrices), grouped-query attention with ``kv_heads``; a mixture-of-experts
layer replaces the MLP by ``experts`` MLPs of width ``expert_ffn_hidden`` (plus ``shared_experts``)
of which each token uses ``top_k``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field, model_validator

from clusterloom.spec._base import SpecModel
from clusterloom.spec.limits import Accelerators, ModelCount, ModelDim

Dtype = Literal["fp32", "bf16", "fp16", "fp8"]
DTYPE_BYTES: dict[str, int] = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}


class MoESpec(SpecModel):
    experts: ModelCount
    top_k: ModelCount
    expert_ffn_hidden: ModelDim
    shared_experts: int = Field(default=0, ge=0, le=2**24)
    every: ModelCount = Field(default=1, description="every n-th layer is a MoE layer")
    dense_layers: int = Field(default=0, ge=0, le=2**24, description="leading layers kept dense")

    @model_validator(mode="after")
    def _top_k_fits(self) -> MoESpec:
        if self.top_k > self.experts:
            raise ValueError(f"top_k ({self.top_k}) exceeds experts ({self.experts})")
        return self


class ModelSpec(SpecModel):
    name: str = Field(default="model", max_length=128)
    layers: ModelCount
    hidden: ModelDim
    ffn_hidden: ModelDim
    heads: ModelDim
    kv_heads: ModelDim | None = None
    vocab: ModelDim
    sequence_length: ModelDim
    gated_mlp: bool = True
    tied_embeddings: bool = False
    moe: MoESpec | None = None

    @model_validator(mode="after")
    def _heads_fit(self) -> ModelSpec:
        if self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) is not a multiple of heads ({self.heads})")
        if self.kv_heads is not None and self.heads % self.kv_heads:
            raise ValueError(f"heads ({self.heads}) not a multiple of kv_heads ({self.kv_heads})")
        return self


class PrecisionSpec(SpecModel):
    activations: Dtype = "bf16"
    gradients: Dtype = Field(default="bf16", description="as reduced across data parallel")
    parameters: Dtype = Field(default="bf16", description="as gathered by ZeRO-3 / FSDP")


class BatchSpec(SpecModel):
    global_batch: ModelCount = Field(description="sequences per optimizer step")
    micro_batch: ModelCount = Field(default=1, description="sequences per micro-batch")


class ParallelismSpec(SpecModel):
    tp: Accelerators = 1
    pp: Accelerators = 1
    dp: Accelerators | None = Field(default=None, description="default: what the world size leaves")
    cp: Accelerators = 1
    ep: Accelerators = Field(default=1, description="expert parallel, carved out of dp")
    zero: Literal[0, 1, 2, 3] = Field(default=1, description="ZeRO stage; 3 is FSDP")
    sequence_parallel: bool = True
    schedule: Literal["auto", "1f1b", "interleaved"] = Field(
        default="auto",
        description="pipeline schedule; auto: interleaved 1F1B when the layers and micro-batches "
        "allow it, else 1F1B",
    )
    virtual_stages: ModelCount | None = Field(
        default=None,
        description="model chunks per pipeline stage (interleaved 1F1B); default: chosen by the "
        "schedule (1 for 1F1B)",
    )
    first_stage_layers: ModelCount | None = Field(
        default=None, description="layers of the first pipeline stage (Megatron's uneven split)"
    )
    last_stage_layers: ModelCount | None = Field(
        default=None, description="layers of the last pipeline stage"
    )
    tp_beyond_scale_up: bool = Field(
        default=False, description="allow a TP group larger than the scale-up domain"
    )
    order: str = Field(
        default="tp-cp-ep-dp-pp",
        max_length=64,
        description="rank order, innermost first (Megatron's RankGenerator); ep sits just "
        "inside dp because expert-parallel groups are carved out of data parallel",
    )

    @model_validator(mode="after")
    def _order_is_a_permutation(self) -> ParallelismSpec:
        parts = self.order.split("-")
        if sorted(parts) != ["cp", "dp", "ep", "pp", "tp"]:
            raise ValueError(f"order '{self.order}' must name tp, cp, ep, dp and pp once each")
        if parts.index("ep") + 1 != parts.index("dp"):
            raise ValueError(f"order '{self.order}': ep must come just before dp")
        return self


class ComputeFigures(SpecModel):
    """How the accelerators compute. By default everything comes from the accelerator's catalog
    entry (``compute.accelerator_model``) and the model's operations; ``utilisation`` is an
    override that replaces the efficiency model by one share of peak for every operation."""

    peak_tflops: float | None = Field(
        default=None,
        gt=0,
        le=1e6,
        description="dense peak per accelerator at the precision (default: the catalog's)",
    )
    utilisation: float | None = Field(
        default=None, gt=0, le=1, description="override: achieved share of peak for all compute"
    )
    recompute: Literal["none", "selective", "full"] = Field(
        default="none",
        description="activation recomputation: selective recomputes core attention "
        "(Korthikanti et al.), full every layer's forward pass",
    )
    recompute_layers: ModelCount | None = Field(
        default=None, description="full recomputation: layers per stage recomputed (default all)"
    )
    attention: Literal["flash", "unfused"] = Field(
        default="flash",
        description="flash: fused kernel, causal half skipped; unfused: the score matrix "
        "materialised (Megatron-LM before FlashAttention)",
    )
    optimizer: Literal["adam", "sgd"] = "adam"


AlgorithmName = Literal["ring", "tree", "hierarchical", "pat", "direct", "auto"]


class AlgorithmChoice(SpecModel):
    """NCCL algorithm per collective; ``auto`` picks as NCCL would for large messages."""

    all_reduce: AlgorithmName = "auto"
    all_gather: AlgorithmName = "auto"
    reduce_scatter: AlgorithmName = "auto"
    all_to_all: AlgorithmName = "direct"


class Overlap(SpecModel):
    """What communication hides behind compute, as the framework does it. The defaults follow
    Megatron-LM's current recommended flags: ``--overlap-grad-reduce`` and
    ``--overlap-param-gather`` on (data-parallel buckets overlapped with backward and forward),
    ``--tp-comm-overlap`` off (it needs Transformer Engine userbuffers), ring attention's K/V
    exchange overlapped with the attention of the held block, EP all-to-all and pipeline sends on
    the critical path (``docs/workload.md``).

    The shares ``tp``, ``cp``, ``ep``, ``pp``, ``dp`` are overrides: when set, that share of the
    dimension's communication is hidden (at most the compute time in all)."""

    dp_grad_reduce: bool = Field(default=True, description="--overlap-grad-reduce")
    dp_param_gather: bool = Field(default=True, description="--overlap-param-gather")
    bucket_mparams: float = Field(
        default=40.0, gt=0, le=1e6, description="DP bucket, millions of parameters"
    )
    tp_comm: bool = Field(default=False, description="--tp-comm-overlap (sequence parallel only)")
    cp_ring: bool = Field(default=True, description="ring attention overlaps K/V with compute")
    ep_a2a: bool = Field(default=False, description="EP all-to-all overlapped (e.g. DeepEP)")
    tp: float | None = Field(default=None, ge=0, le=1)
    cp: float | None = Field(default=None, ge=0, le=1)
    ep: float | None = Field(default=None, ge=0, le=1)
    pp: float | None = Field(default=None, ge=0, le=1)
    dp: float | None = Field(default=None, ge=0, le=1)


class LatencySpec(SpecModel):
    """Per-step latency (alpha) of a collective algorithm step, microseconds."""

    scale_up_us: float = Field(default=2.0, ge=0, le=1e6)
    scale_out_us: float = Field(default=8.0, ge=0, le=1e6)


class JobSpec(SpecModel):
    model: ModelSpec
    precision: PrecisionSpec = PrecisionSpec()
    batch: BatchSpec
    parallelism: ParallelismSpec = ParallelismSpec()
    compute: ComputeFigures = ComputeFigures()
    algorithms: AlgorithmChoice = AlgorithmChoice()
    overlap: Overlap = Overlap()
    latency: LatencySpec = LatencySpec()


# -- the pipeline plan (checked by spec.load, run by workload.schedule) --------------------


class ScheduleError(ValueError):
    """A schedule the job cannot run: ``field`` is the job field to change."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Plan:
    """Schedule name, chunks per stage and layers per (stage, chunk)."""

    name: str
    virtual_stages: int
    layers: tuple[tuple[int, ...], ...]  # layers[stage][chunk]

    @property
    def pp(self) -> int:
        return len(self.layers)

    def stage_layers(self) -> tuple[int, ...]:
        return tuple(sum(c) for c in self.layers)

    def first_layer(self, stage: int, chunk: int) -> int:
        """Index of the first model layer of (stage, chunk): virtual stages in order."""
        order = [(c, s) for c in range(self.virtual_stages) for s in range(self.pp)]
        start = 0
        for c, s in order:
            if (c, s) == (chunk, stage):
                return start
            start += self.layers[s][c]
        raise ValueError((stage, chunk))


def _auto_ends(layers: int, pp: int) -> tuple[int, int]:
    """First and last stage layers when the layers do not divide: the middle stages take the
    most layers that leave the two ends between one and as many each (the last the fewer, it
    carries the output layer)."""
    if pp == 2:
        return layers - layers // 2, layers // 2
    for mid in range(-(-layers // pp), 0, -1):
        rest = layers - (pp - 2) * mid
        if 2 <= rest <= 2 * mid:
            return rest - rest // 2, rest // 2
    raise ScheduleError(
        "parallelism.pp",
        f"{layers} layers do not split over pp {pp} with even middle stages and no more on "
        "the first and last; set first_stage_layers and last_stage_layers",
    )


def split_layers(layers: int, pp: int, first: int | None, last: int | None) -> tuple[int, ...]:
    """Layers per stage (module docstring); raises :class:`ScheduleError` naming the numbers."""
    if layers < pp:
        raise ScheduleError(
            "parallelism.pp", f"{layers} layers cannot fill {pp} pipeline stages (one each)"
        )
    if pp == 1:
        if first not in (None, layers) or last not in (None, layers):
            raise ScheduleError(
                "parallelism.first_stage_layers", f"one pipeline stage holds all {layers} layers"
            )
        return (layers,)
    if first is None and last is None and layers % pp == 0:
        return (layers // pp,) * pp
    if first is None and last is None:
        first, last = _auto_ends(layers, pp)
    middle = pp - 2
    rest = layers - (first or 0) - (last or 0)
    if first is None or last is None:
        # one given: the other and the middle share the rest evenly
        known = first if first is not None else last
        assert known is not None
        rest = layers - known
        if rest % (pp - 1):
            raise ScheduleError(
                "parallelism.pp",
                f"{rest} layers left after {known} do not split evenly over {pp - 1} stages",
            )
        per = rest // (pp - 1)
        first = first if first is not None else per
        last = last if last is not None else per
        rest = layers - first - last
    if rest < 0 or (middle == 0 and rest != 0) or (middle and rest % middle):
        raise ScheduleError(
            "parallelism.pp",
            f"{layers} layers minus first {first} and last {last} leave {rest}, which do not "
            f"split evenly over the {middle} middle stages",
        )
    mid = rest // middle if middle else 0
    stages = (first, *([mid] * middle), last)
    if min(stages) < 1:
        raise ScheduleError(
            "parallelism.pp", f"a stage would hold no layer: {layers} layers as {list(stages)}"
        )
    return stages


def plan_of(job: JobSpec, micro_batches: int) -> Plan:
    """The schedule of ``job`` (raises :class:`ScheduleError` with the numbers when it cannot
    run)."""
    par, layers = job.parallelism, job.model.layers
    pp = par.pp
    per_stage = split_layers(layers, pp, par.first_stage_layers, par.last_stage_layers)
    uneven = len(set(per_stage)) > 1
    v = par.virtual_stages
    if par.schedule == "1f1b" and v not in (None, 1):
        raise ScheduleError(
            "parallelism.virtual_stages",
            f"schedule 1f1b runs one chunk per stage, not virtual_stages {v}",
        )
    if v is None:
        v = 1
        if par.schedule != "1f1b" and pp > 1 and not uneven and micro_batches % pp == 0:
            per = per_stage[0]
            # the most chunks that keep at least two layers each (Megatron recipes use 2-8
            # layers per chunk), at most 8
            candidates = [d for d in range(2, 9) if per % d == 0]
            v = max(candidates, default=1)
        if par.schedule == "interleaved" and v == 1:
            raise ScheduleError(
                "parallelism.schedule",
                f"interleaved needs pp {pp} > 1, micro-batches ({micro_batches}) a multiple of "
                f"pp and {layers} layers in equal chunks of two or more per stage",
            )
    if v > 1:
        if pp == 1:
            raise ScheduleError(
                "parallelism.virtual_stages",
                f"virtual_stages {v} needs pipeline parallelism (pp is 1)",
            )
        if uneven:
            raise ScheduleError(
                "parallelism.virtual_stages",
                f"virtual_stages {v} with uneven stages {list(per_stage)}: interleaving needs "
                "an even split",
            )
        if per_stage[0] % v:
            raise ScheduleError(
                "parallelism.virtual_stages",
                f"virtual_stages {v} does not divide the {per_stage[0]} layers of a stage "
                f"({layers} layers over pp {pp})",
            )
        if micro_batches % pp:
            raise ScheduleError(
                "parallelism.virtual_stages",
                f"interleaving needs micro-batches ({micro_batches}) to be a multiple of pp {pp}",
            )
    chunks = tuple(tuple([n // v] * v) for n in per_stage)
    return Plan("interleaved 1F1B" if v > 1 else "1F1B", v, chunks)
