"""Compute time from the model: every operation of a layer with its FLOPs and bytes, timed on the
accelerator's roofline.

Per rank, per micro-batch (``b`` sequences, ``s = sequence / cp`` tokens of each, ``T = b s``
tokens per tensor-parallel group, ``t = tp``; ``T' = T / t`` with sequence parallelism, else
``T``), the forward pass of one layer is:

- norms, dropout and residual adds: memory-bound, on ``T'`` tokens;
- QKV projection ``T x h -> T x (h + 2 h_kv) / t`` and output projection ``T x h / t -> T x h``;
- core attention: ``QK^T`` and ``AV`` over the key length ``S`` (the whole sequence): flash
  attention skips the causal half (``2 b s S h / t`` FLOPs) in one fused kernel; unfused (as
  Megatron-LM before FlashAttention) computes the whole score matrix (``4 b s S h / t``) and reads
  and writes it for the mask, softmax and dropout;
- MLP: ``h -> f`` (twice when gated) and ``f -> h``, sharded over ``t``; a MoE layer instead
  routes ``T' x top_k`` tokens to its local experts (expert TP 1, uniform routing, so
  ``T' top_k ep / experts`` tokens per expert GEMM), plus the shared experts on ``T'`` tokens;
- the first stage looks up embeddings, the last applies the final norm, the output layer
  ``h -> vocab / t`` and the cross-entropy (FP32 logits).

The backward pass of a GEMM is two GEMMs (input and weight gradients) of the same FLOPs; of a
memory-bound operation twice the bytes; flash attention's backward recomputes the scores
(2.5x the forward FLOPs). Recomputation adds forward work before the backward: selective the
core attention (Korthikanti et al. 2022), full the whole layer.

Time of an operation: ``max(FLOPs / (peak x eff(m, n, k)), bytes / (bandwidth x
memory_efficiency)) + kernels x kernel_overhead`` with ``eff = gemm_efficiency x g(m) g(n) g(k)``,
``g(d) = d / (d + gemm_half_dim)`` (the accelerator's catalog entry); with ``utilisation`` set,
``FLOPs / (peak x utilisation)`` instead (the override).

Model FLOPs (MFU) count the forward FLOPs of the matrix products three times and causal attention
(``6 N + 6 L S h`` per token, ``N`` the weights used in products); hardware FLOPs count what runs
(recomputation, unfused attention's masked half, flash attention's recomputed scores).
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterloom.spec import ClusterSpec
from clusterloom.spec.catalog import AcceleratorModel
from clusterloom.spec.job import DTYPE_BYTES, JobSpec
from clusterloom.workload.model import model_shape

#: bytes an Adam step moves per parameter it updates: reads FP32 gradient, master weight, m, v
#: (16) and writes master, m, v and the BF16 weight (14)
ADAM_BYTES_PER_PARAM = 30
SGD_BYTES_PER_PARAM = 14


@dataclass(frozen=True)
class Operation:
    """One kernel-level operation of a pass: FLOPs, bytes moved and its GEMM shape if any."""

    name: str
    flops: float
    nbytes: float
    shape: tuple[float, float, float] | None = None  # m, n, k of a GEMM
    model_flops: float = 0.0  # the share MFU counts
    kernels: int = 1


@dataclass(frozen=True)
class Pass:
    """Seconds and FLOPs of one pass (forward, or backward with its recomputation)."""

    seconds: float
    flops: float
    model_flops: float
    gemm_seconds: float
    attention_seconds: float
    expert_seconds: float


def accelerator_of(spec: ClusterSpec) -> AcceleratorModel:
    """The catalog entry of ``compute.accelerator_model`` (``generic`` when unknown), with the
    job's ``peak_tflops`` when given."""
    catalog = spec.resolved_catalog().accelerators
    acc = catalog.get(spec.compute.accelerator_model) or catalog["generic"]
    assert spec.job is not None
    if spec.job.compute.peak_tflops is not None:
        acc = acc.model_copy(update={"peak_tflops": spec.job.compute.peak_tflops})
    return acc


class Roofline:
    """Times operations on one accelerator (module docstring)."""

    def __init__(self, acc: AcceleratorModel, utilisation: float | None) -> None:
        self.peak = acc.peak_tflops * 1e12
        self.bandwidth = acc.memory_bandwidth_gbs * 1e9 * acc.memory_efficiency
        self.acc = acc
        self.utilisation = utilisation

    def efficiency(self, shape: tuple[float, float, float]) -> float:
        d0 = self.acc.gemm_half_dim
        eff = self.acc.gemm_efficiency
        for d in shape:
            eff *= d / (d + d0)
        return eff

    def seconds(self, op: Operation) -> float:
        if self.utilisation is not None:
            return op.flops / (self.peak * self.utilisation)
        compute = 0.0
        if op.flops:
            eff = self.efficiency(op.shape) if op.shape is not None else self.acc.gemm_efficiency
            compute = op.flops / (self.peak * eff)
        memory = op.nbytes / self.bandwidth
        return max(compute, memory) + op.kernels * self.acc.kernel_overhead_us * 1e-6


def _gemm(name: str, m: float, n: float, k: float, act: int) -> Operation:
    flops = 2.0 * m * n * k
    return Operation(name, flops, (m * k + k * n + m * n) * act, (m, n, k), flops)


def _backward_gemms(op: Operation, act: int) -> list[Operation]:
    assert op.shape is not None
    m, n, k = op.shape
    return [
        _gemm(f"{op.name} dgrad", m, k, n, act),  # dY (m x n) @ W^T (n x k)
        _gemm(f"{op.name} wgrad", k, n, m, act),  # X^T (k x m) @ dY (m x n)
    ]


@dataclass(frozen=True)
class LayerOps:
    """Forward operations of one layer split by what recomputation and overlap need."""

    gemms: tuple[Operation, ...]
    attention: tuple[Operation, ...]
    experts: tuple[Operation, ...]
    elementwise: tuple[Operation, ...]

    @property
    def all(self) -> tuple[Operation, ...]:
        return self.gemms + self.attention + self.experts + self.elementwise


class ComputeModel:
    """Forward and backward time of layers, embeddings and the output layer, on one rank."""

    def __init__(self, spec: ClusterSpec, micro_batch: int | None = None) -> None:
        assert spec.job is not None
        job: JobSpec = spec.job
        self.job = job
        m, par = job.model, job.parallelism
        self.act = DTYPE_BYTES[job.precision.activations]
        self.t = par.tp
        b = micro_batch or job.batch.micro_batch
        self.S = m.sequence_length
        self.s = m.sequence_length // par.cp
        self.T = b * self.s
        self.T_sp = self.T / self.t if par.sequence_parallel else self.T
        self.b = b
        self.roof = Roofline(accelerator_of(spec), job.compute.utilisation)
        self.ep = par.ep

    # -- forward operations -------------------------------------------------------------------

    def _norm(self, name: str) -> Operation:
        return Operation(name, 0.0, 2.0 * self.T_sp * self.job.model.hidden * self.act)

    def _residual(self, name: str) -> Operation:
        # dropout (mask) and residual add: read two, write one, a one-byte mask
        return Operation(name, 0.0, self.T_sp * self.job.model.hidden * (3 * self.act + 1))

    def attention_ops(self) -> tuple[Operation, ...]:
        m, act, t = self.job.model, self.act, self.t
        h, d = m.hidden, m.hidden / m.heads
        kv = h * (m.kv_heads or m.heads) / m.heads
        b, s, S = self.b, self.s, self.S
        causal = 2.0 * b * s * S * h / t  # QK^T and AV, the causal half
        io = self.T * (2 * h + 2 * kv) / t * act  # Q, K, V in, O out
        if self.job.compute.attention == "flash":
            return (Operation("flash attention", causal, io, (s, S / 2, d), causal),)
        scores = b * (m.heads / t) * s * S  # elements of the score matrix
        full = 2.0 * b * s * S * h / t
        return (
            Operation("QK^T", full, io / 2 + scores * act, (s, S, d), causal / 2),
            # scale, mask and softmax (one fused kernel), dropout with its mask
            Operation("softmax+dropout", 0.0, scores * (4 * act + 1), None, 0.0, 2),
            Operation("AV", full, io / 2 + scores * act, (s, d, S), causal / 2),
        )

    def layer_ops(self, moe: bool) -> LayerOps:
        m, act, t, T = self.job.model, self.act, self.t, self.T
        h = m.hidden
        kv = h * (m.kv_heads or m.heads) / m.heads
        mats = 3 if m.gated_mlp else 2
        gemms = [_gemm("QKV", T, (h + 2 * kv) / t, h, act), _gemm("proj", T, h, h / t, act)]
        experts: list[Operation] = []
        elem = [self._norm("norm 1"), self._residual("residual 1"), self._norm("norm 2")]
        elem.append(self._residual("residual 2"))
        if not moe:
            f = m.ffn_hidden
            gemms += [_gemm("fc1", T, (mats - 1) * f / t, h, act), _gemm("fc2", T, h, f / t, act)]
            elem.append(Operation("activation", 0.0, T * f / t * act * mats))
        else:
            assert m.moe is not None
            moe_spec, fe = m.moe, m.moe.expert_ffn_hidden
            tok = self.T_sp
            routed = tok * moe_spec.top_k
            local = max(1, moe_spec.experts // self.ep)
            per_expert = routed / local
            gemms.append(_gemm("router", tok, moe_spec.experts, h, act))
            for i in range(local):
                experts.append(_gemm(f"expert {i} fc1", per_expert, (mats - 1) * fe, h, act))
                experts.append(_gemm(f"expert {i} fc2", per_expert, h, fe, act))
            for i in range(moe_spec.shared_experts):
                experts.append(_gemm(f"shared {i} fc1", tok, (mats - 1) * fe, h, act))
                experts.append(_gemm(f"shared {i} fc2", tok, h, fe, act))
            elem.append(Operation("permute+unpermute", 0.0, 4 * routed * h * act, None, 0.0, 4))
            elem.append(
                Operation("expert activation", 0.0, (routed + tok) * fe * act * mats, None, 0.0)
            )
        return LayerOps(tuple(gemms), self.attention_ops(), tuple(experts), tuple(elem))

    def embedding_ops(self) -> tuple[Operation, ...]:
        h = self.job.model.hidden
        return (Operation("embedding", 0.0, 2.0 * self.T_sp * h * self.act),)

    def output_ops(self) -> tuple[Operation, ...]:
        m, T = self.job.model, self.T
        logits = T * m.vocab / self.t
        return (
            self._norm("final norm"),
            _gemm("output layer", T, m.vocab / self.t, m.hidden, self.act),
            # cross-entropy on FP32 logits: read, softmax, write the gradient
            Operation("cross-entropy", 0.0, 3 * logits * 4, None, 0.0, 3),
        )

    # -- passes -----------------------------------------------------------------------------

    def _time(self, ops: list[Operation] | tuple[Operation, ...]) -> float:
        return sum(self.roof.seconds(o) for o in ops)

    def _backward(self, ops: tuple[Operation, ...]) -> list[Operation]:
        out: list[Operation] = []
        for o in ops:
            if o.name == "flash attention":
                out.append(Operation(o.name + " bwd", 2.5 * o.flops, 2 * o.nbytes, o.shape, 0.0))
            elif o.shape is not None:
                out += [
                    Operation(g.name, g.flops, g.nbytes, g.shape, 0.0)
                    for g in _backward_gemms(o, self.act)
                ]
            else:
                out.append(Operation(o.name + " bwd", 0.0, 2 * o.nbytes, None, 0.0, o.kernels))
        return out

    def forward(self, ops: LayerOps | tuple[Operation, ...]) -> Pass:
        items = ops.all if isinstance(ops, LayerOps) else ops
        return Pass(
            self._time(items),
            sum(o.flops for o in items),
            sum(o.model_flops for o in items),
            self._time(ops.gemms) if isinstance(ops, LayerOps) else 0.0,
            self._time(ops.attention) if isinstance(ops, LayerOps) else 0.0,
            self._time(ops.experts) if isinstance(ops, LayerOps) else 0.0,
        )

    def backward(self, ops: LayerOps | tuple[Operation, ...], recompute: str) -> Pass:
        items = ops.all if isinstance(ops, LayerOps) else ops
        bwd = self._backward(items)
        if isinstance(ops, LayerOps):
            if recompute == "full":
                bwd += [
                    Operation(o.name, o.flops, o.nbytes, o.shape, 0.0, o.kernels) for o in items
                ]
            elif recompute == "selective":
                bwd += [
                    Operation(o.name, o.flops, o.nbytes, o.shape, 0.0, o.kernels)
                    for o in ops.attention
                ]
        # the model FLOPs of a backward pass are twice the forward's
        model = 2.0 * sum(o.model_flops for o in items)
        gemm = attention = expert = 0.0
        if isinstance(ops, LayerOps):
            gemm = 2 * self._time(ops.gemms)
            attention = self._time(self._backward(ops.attention))
            expert = 2 * self._time(ops.experts)
        return Pass(self._time(bwd), sum(o.flops for o in bwd), model, gemm, attention, expert)

    def optimizer_seconds(self, parameters: float) -> float:
        """One optimizer step over ``parameters`` (the rank's shard), memory-bound."""
        per = ADAM_BYTES_PER_PARAM if self.job.compute.optimizer == "adam" else SGD_BYTES_PER_PARAM
        if self.roof.utilisation is not None:
            return 0.0
        return parameters * per / self.roof.bandwidth


def model_flops_per_token(spec: ClusterSpec) -> float:
    """Model FLOPs of one token's forward and backward pass, summed over the operations of
    :class:`ComputeModel` on one rank and scaled to the whole model (tp = cp = ep = 1 view)."""
    assert spec.job is not None
    m = spec.job.model
    shape = model_shape(m)
    cm = ComputeModel(spec)
    dense = cm.layer_ops(moe=False).all
    moe = cm.layer_ops(moe=True).all if shape.moe_layers else ()
    per_rank = (
        shape.dense_layers * sum(o.model_flops for o in dense)
        + shape.moe_layers * sum(o.model_flops for o in moe)
        + sum(o.model_flops for o in cm.output_ops())
    )
    # a rank holds 1/t of the dense products and 1/t of the tokens' expert work (T' = T/t) and
    # sees T tokens of its TP group; context parallel splits the tokens
    tokens = cm.T
    return 3.0 * per_rank * spec.job.parallelism.tp / tokens
