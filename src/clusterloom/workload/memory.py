"""Accelerator memory of a training job: weights, gradients, optimizer state and activations, per
pipeline stage, against the accelerator's memory.

- Weights in the parameter precision; gradients in FP32 (Megatron-LM's ``main_grad``, the
  gradient precision when wider); Adam state 12 bytes a weight (FP32 master copy, first and
  second moments; SGD: 4). ZeRO 1 (the distributed optimizer) shards the optimizer state over
  data parallel, ZeRO 2 the gradients too, ZeRO 3 the weights too.
- Activations per layer and micro-batch (Korthikanti et al. 2022, eq. 1-2, with the MLP width
  ``f`` in place of ``4h`` and a gated MLP's third matrix): ``s b h (10 + 24 r / t) + 5 a s^2 b /
  t`` bytes without sequence parallel and ``s b h (10 + 24 r) / t + 5 a s^2 b / t`` with it,
  ``r = f / 4h`` (x 1.5 gated). Flash attention and selective recomputation keep no score
  matrix (the ``5 a s^2 b`` term); full recomputation keeps only each layer's input ``2 s b h``
  (``/ t`` with sequence parallel), for the first ``recompute_layers`` of each chunk when set.
  A MoE layer's expert activations scale with ``top_k``.
- In flight: 1F1B stage ``i`` of ``p`` holds ``p - i`` micro-batches; interleaving multiplies the
  first stage's by ``1 + (p - 1) / (p v)``; the last stage adds the FP32 logits of one
  micro-batch.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterloom.spec import ClusterSpec
from clusterloom.spec.job import DTYPE_BYTES, Plan
from clusterloom.workload.compute import accelerator_of

#: bytes per weight of optimizer state (FP32 master, and Adam's two moments)
OPTIMIZER_BYTES = {"adam": 12, "sgd": 4}


@dataclass(frozen=True)
class StageMemory:
    """Bytes one rank of a pipeline stage needs."""

    stage: int
    weights: float
    gradients: float
    optimizer: float
    activations: float

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.activations


@dataclass(frozen=True)
class Memory:
    stages: tuple[StageMemory, ...]
    capacity: float  # bytes per accelerator

    @property
    def peak(self) -> StageMemory:
        return max(self.stages, key=lambda s: s.total)

    @property
    def fits(self) -> bool:
        return self.peak.total <= self.capacity


def _activation_per_layer(spec: ClusterSpec, moe: bool, recomputed: bool) -> float:
    assert spec.job is not None
    job = spec.job
    m, par, comp = job.model, job.parallelism, job.compute
    s, b, h, t = m.sequence_length / par.cp, job.batch.micro_batch, m.hidden, par.tp
    act = DTYPE_BYTES[job.precision.activations] / 2  # the formula counts 16-bit activations
    if recomputed:
        return 2 * s * b * h * act / (t if par.sequence_parallel else 1)
    width = (m.moe.expert_ffn_hidden * m.moe.top_k) if moe and m.moe is not None else m.ffn_hidden
    r = width / (4 * h) * (1.5 if m.gated_mlp else 1.0)
    # with sequence parallel every term is sharded over t, without it only the TP-split ones
    base = s * b * h * ((10 + 24 * r) / t if par.sequence_parallel else 10 + 24 * r / t)
    scores = 0.0
    if comp.attention == "unfused" and comp.recompute == "none":
        scores = 5 * m.heads * s * m.sequence_length * b / t
    return (base + scores) * act


def memory_of(spec: ClusterSpec, plan: Plan, stage_parameters: list[float], dp: int) -> Memory:
    """Memory per stage of ``spec.job`` run as ``plan`` (``stage_parameters``: weights a rank of
    each stage holds)."""
    assert spec.job is not None
    job = spec.job
    m, par, comp = job.model, job.parallelism, job.compute
    capacity = accelerator_of(spec).memory_gb * 1e9
    grad_bytes = max(4, DTYPE_BYTES[job.precision.gradients])
    param_bytes = DTYPE_BYTES[job.precision.parameters]
    pp, v = plan.pp, plan.virtual_stages
    moe_every = m.moe
    stages = []
    for i, n in enumerate(stage_parameters):
        weights = n * param_bytes / (dp if par.zero == 3 else 1)
        grads = n * grad_bytes / (dp if par.zero >= 2 else 1)
        optim = n * OPTIMIZER_BYTES[comp.optimizer] / (dp if par.zero >= 1 else 1)
        per_mb = 0.0
        for c in range(v):
            first = plan.first_layer(i, c)
            for j in range(first, first + plan.layers[i][c]):
                moe = (
                    moe_every is not None
                    and j >= moe_every.dense_layers
                    and (j - moe_every.dense_layers) % moe_every.every == 0
                )
                full = comp.recompute == "full" and (
                    comp.recompute_layers is None or j - first < comp.recompute_layers
                )
                per_mb += _activation_per_layer(spec, moe, full)
        in_flight = float(pp - i)
        if v > 1 and i == 0:
            in_flight = pp * (1 + (pp - 1) / (pp * v))
        acts = per_mb * in_flight
        if i == pp - 1:
            tokens = job.batch.micro_batch * m.sequence_length / par.cp
            acts += tokens * m.vocab / par.tp * 4
        stages.append(StageMemory(i, weights, grads, optim, acts))
    return Memory(tuple(stages), capacity)
