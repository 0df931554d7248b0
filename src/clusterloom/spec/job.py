"""The ``job`` section: a training job whose traffic the workload stage derives.

Shapes follow Megatron-LM conventions: ``hidden`` is the model width, ``ffn_hidden`` the MLP
width (SwiGLU: three matrices), grouped-query attention with ``kv_heads``; a mixture-of-experts
layer replaces the MLP by ``experts`` MLPs of width ``expert_ffn_hidden`` (plus ``shared_experts``)
of which each token uses ``top_k``.
"""

from __future__ import annotations

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
    virtual_stages: ModelCount = Field(default=1, description="interleaved pipeline chunks")
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
    peak_tflops: float = Field(
        gt=0, le=1e6, description="dense peak per accelerator at the precision"
    )
    utilisation: float = Field(default=0.4, gt=0, le=1, description="achieved share of peak")


AlgorithmName = Literal["ring", "tree", "hierarchical", "pat", "direct", "auto"]


class AlgorithmChoice(SpecModel):
    """NCCL algorithm per collective; ``auto`` picks as NCCL would for large messages."""

    all_reduce: AlgorithmName = "auto"
    all_gather: AlgorithmName = "auto"
    reduce_scatter: AlgorithmName = "auto"
    all_to_all: AlgorithmName = "direct"


class Overlap(SpecModel):
    """Share of each dimension's communication hidden behind compute (0: fully exposed)."""

    tp: float = Field(default=0.0, ge=0, le=1)
    cp: float = Field(default=0.5, ge=0, le=1)
    ep: float = Field(default=0.0, ge=0, le=1)
    pp: float = Field(default=0.0, ge=0, le=1)
    dp: float = Field(default=0.9, ge=0, le=1)


class LatencySpec(SpecModel):
    """Per-step latency (alpha) of a collective algorithm step, microseconds."""

    scale_up_us: float = Field(default=2.0, ge=0, le=1e6)
    scale_out_us: float = Field(default=8.0, ge=0, le=1e6)


class JobSpec(SpecModel):
    model: ModelSpec
    precision: PrecisionSpec = PrecisionSpec()
    batch: BatchSpec
    parallelism: ParallelismSpec = ParallelismSpec()
    compute: ComputeFigures
    algorithms: AlgorithmChoice = AlgorithmChoice()
    overlap: Overlap = Overlap()
    latency: LatencySpec = LatencySpec()
