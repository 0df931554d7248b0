"""Analytical step time: compute from the model's operations (``compute.py``), the pipeline
schedule's timeline (``schedule.py``), communication from an alpha-beta model, exposed as the
framework exposes it.

- Compute: every operation of every layer timed on the accelerator's roofline, per stage and
  model chunk, with the exposed TP, CP and EP communication of the layer added to its pass.
- The step: the schedule's timeline over the stages' passes, with the pipeline sends between
  stages on the critical path; the bubble is the timeline's length beyond the busiest stage's
  work, the PP cost what the sends add to it.
- One collective call: ``steps x alpha + factor x bytes / bandwidth`` with the nccl-tests bus
  bandwidth factor (all-reduce ``2(n-1)/n``, all-gather, reduce-scatter and all-to-all
  ``(n-1)/n``, send-recv 1), ``steps`` the algorithm's sequential steps (ring all-reduce
  ``2(n-1)``, ring all-gather ``n-1``, tree ``2 log2 n``, PAT ``log2 n``, direct all-to-all one per
  peer) and the bandwidth of the link class: the scale-up bandwidth per accelerator inside a
  domain, else the accelerator's scale-out NIC bandwidth divided by the backend leaf
  oversubscription. A hierarchical collective adds its intra-domain phases on scale-up and its
  inter-domain phase (on ``1/ranks_per_domain`` of the data) on scale-out; an all-to-all over
  both sends to domain peers on scale-up while it sends to the others on scale-out.
- The bandwidth-optimal bound of a call is the same volume at full bandwidth with no latency.
- Overlap (``job.overlap``, Megatron-LM's defaults): TP exposed (with ``tp_comm`` it hides
  behind the layer's GEMMs), CP's K/V ring behind the attention, EP exposed (with ``ep_a2a``
  behind the experts), PP sends on the critical path; DP gradient reduce-scatter (or all-reduce)
  behind the last micro-batch's backward and the weight all-gather behind the first forward,
  bucket by bucket, so at least one bucket stays exposed; ZeRO 3 gathers behind each
  micro-batch's passes. A share ``overlap.<dim>`` overrides a dimension.
- Then the optimizer step (memory-bound) and the exposed DP communication add to the timeline.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from clusterloom.spec import ClusterSpec
from clusterloom.spec.job import JobSpec
from clusterloom.units import bytes_per_s, seconds_from_us
from clusterloom.workload.algorithms import Algorithm, Collective, bus_bandwidth_factor
from clusterloom.workload.compute import ComputeModel
from clusterloom.workload.layout import Layout, layout_of
from clusterloom.workload.model import model_shape, training_flops_per_token
from clusterloom.workload.ops import CollectiveOp, LinkClass
from clusterloom.workload.schedule import Plan, plan_of, simulate


@dataclass(frozen=True)
class Bandwidths:
    """Bytes per second per accelerator, and per-step latency in seconds."""

    scale_up: float
    scale_out: float
    alpha_up: float
    alpha_out: float


def bandwidths(spec: ClusterSpec) -> Bandwidths:
    assert spec.job is not None
    c, lat = spec.compute, spec.job.latency
    nic = bytes_per_s(c.nic.scale_out * c.nic.port_speed_gbps)
    oversub = spec.fabrics.backend.oversubscription.leaf
    return Bandwidths(
        scale_up=bytes_per_s(c.scale_up.bandwidth_gbps) or nic,
        scale_out=nic / oversub,
        alpha_up=seconds_from_us(lat.scale_up_us),
        alpha_out=seconds_from_us(lat.scale_out_us),
    )


def _steps(algorithm: Algorithm, collective: Collective, n: int) -> int:
    if n < 2:
        return 0
    log = math.ceil(math.log2(n))
    if collective is Collective.SEND_RECV:
        return 1
    if algorithm is Algorithm.RING:
        return 2 * (n - 1) if collective is Collective.ALL_REDUCE else n - 1
    if algorithm is Algorithm.TREE:
        return 2 * log
    if algorithm is Algorithm.PAT:
        return log
    return n - 1  # direct: one message per peer


@dataclass(frozen=True)
class OpTime:
    """Seconds one call takes (alpha-beta), its bandwidth bound, and per step."""

    op: CollectiveOp
    call_s: float
    bound_s: float
    exposed_share: float

    @property
    def step_s(self) -> float:
        return self.call_s * self.op.per_step

    @property
    def bound_step_s(self) -> float:
        return self.bound_s * self.op.per_step

    @property
    def exposed_s(self) -> float:
        return self.step_s * self.exposed_share


def call_time(op: CollectiveOp, bw: Bandwidths, ranks_per_domain: int) -> tuple[float, float]:
    """(alpha-beta time, bandwidth bound) of one call of ``op``."""
    n, s = op.group_size, op.nbytes
    coll, algo = op.collective, op.algorithm
    if op.link is LinkClass.SCALE_UP:
        band, alpha = bw.scale_up, bw.alpha_up
    else:
        band, alpha = bw.scale_out, bw.alpha_out
    if algo is Algorithm.HIERARCHICAL and op.link is LinkClass.MIXED:
        local = math.gcd(n, ranks_per_domain)
        nodes = n // local
        # intra-domain reduce-scatter / all-gather, inter-domain on 1/local of the data
        intra = bus_bandwidth_factor(Collective.ALL_GATHER, local) * s / bw.scale_up
        inter = bus_bandwidth_factor(coll, nodes) * (s / local) / bw.scale_out
        phases = 2 if coll is Collective.ALL_REDUCE else 1
        bound = phases * intra + inter
        steps_up = phases * _steps(Algorithm.RING, Collective.ALL_GATHER, local)
        steps_out = _steps(Algorithm.RING, coll, nodes)
        return bound + steps_up * bw.alpha_up + steps_out * bw.alpha_out, bound
    if coll is Collective.ALL_TO_ALL and op.link is LinkClass.MIXED:
        # peers in the sender's domain take their share over scale-up, the rest over scale-out,
        # both at once
        local = math.gcd(n, ranks_per_domain)
        bound = max((n - local) / n * s / bw.scale_out, (local - 1) / n * s / bw.scale_up)
        return bound + _steps(algo, coll, n) * alpha, bound
    factor = 1.0 if coll is Collective.SEND_RECV else bus_bandwidth_factor(coll, n)
    bound = factor * s / band
    return bound + _steps(algo, coll, n) * alpha, bound


@dataclass(frozen=True)
class StepTime:
    """A predicted step: ``step_s = compute + bubble + optimizer + exposed communication``, with
    the exposed communication per dimension (``exposed``), the schedule and the FLOPs."""

    compute_s: float
    bubble_s: float
    optimizer_s: float
    exposed: dict[str, float]
    ops: tuple[OpTime, ...]
    flops_per_step: float  # model FLOPs
    hardware_flops_per_step: float
    accelerators: int
    peak_flops: float
    schedule: str
    virtual_stages: int
    stage_layers: tuple[int, ...]
    micro_batches: int
    comm_source: str = "analytic (alpha-beta)"

    @property
    def comm_s(self) -> float:
        return sum(o.step_s for o in self.ops)

    @property
    def exposed_comm_s(self) -> float:
        return sum(self.exposed.values())

    @property
    def step_s(self) -> float:
        return self.compute_s + self.bubble_s + self.optimizer_s + self.exposed_comm_s

    @property
    def bound_comm_s(self) -> float:
        return sum(o.bound_step_s for o in self.ops)

    def _dim_totals(self) -> dict[str, tuple[float, float]]:
        out: dict[str, tuple[float, float]] = {}
        for o in self.ops:
            t, b = out.get(o.op.dim, (0.0, 0.0))
            out[o.op.dim] = (t + o.step_s, b + o.bound_step_s)
        return out

    @property
    def bound_step_s(self) -> float:
        """The step with every collective at its bandwidth bound (same overlap, same bubble)."""
        totals = self._dim_totals()
        exposed = 0.0
        for dim, e in self.exposed.items():
            t, b = totals.get(dim, (0.0, 0.0))
            exposed += e * (b / t) if t > 0 else 0.0
        return self.compute_s + self.bubble_s + self.optimizer_s + exposed

    @property
    def ideal_step_s(self) -> float:
        """The roofline bound: the model FLOPs at every accelerator's peak."""
        return self.flops_per_step / (self.accelerators * self.peak_flops)

    @property
    def mfu(self) -> float:
        """Model FLOPs utilisation the predicted step achieves."""
        return self.flops_per_step / (self.step_s * self.accelerators * self.peak_flops)

    @property
    def hfu(self) -> float:
        """Hardware FLOPs utilisation (recomputation and masked attention counted)."""
        return self.hardware_flops_per_step / (self.step_s * self.accelerators * self.peak_flops)

    @property
    def tflops_per_accelerator(self) -> float:
        """Achieved model TFLOP/s per accelerator."""
        return self.flops_per_step / (self.step_s * self.accelerators) / 1e12

    def breakdown(self) -> list[tuple[str, float, float | None]]:
        """The step in parts (compute, bubble, optimizer, exposed communication per dimension)
        and in all: (label, seconds, seconds with every collective at its bandwidth bound, or
        None for a part without communication). Every renderer reads this."""
        totals = self._dim_totals()
        rows: list[tuple[str, float, float | None]] = [
            ("compute (busiest stage)", self.compute_s, None),
            (f"pipeline bubble ({self.schedule}, v={self.virtual_stages})", self.bubble_s, None),
            ("optimizer step", self.optimizer_s, None),
        ]
        for dim in ("tp", "cp", "ep", "pp", "dp"):
            if dim not in self.exposed:
                continue
            t, b = totals.get(dim, (0.0, 0.0))
            e = self.exposed[dim]
            rows.append((f"exposed {dim.upper()} communication", e, e * b / t if t else 0.0))
        rows.append(("step", self.step_s, self.bound_step_s))
        return rows

    def by_dim(self) -> dict[str, tuple[float, float, float]]:
        """Per dimension: (total, exposed, bound) seconds per step."""
        return {
            dim: (t, self.exposed.get(dim, 0.0), b) for dim, (t, b) in self._dim_totals().items()
        }


def _is_moe_layer(job: JobSpec, i: int) -> bool:
    moe = job.model.moe
    return moe is not None and i >= moe.dense_layers and (i - moe.dense_layers) % moe.every == 0


@dataclass(frozen=True)
class _LayerPass:
    """One layer's forward and backward: compute seconds, exposed seconds per dimension,
    hardware FLOPs."""

    fwd: float
    bwd: float
    fwd_comm: dict[str, float]
    bwd_comm: dict[str, float]
    flops: float


def _exposed(comm: float, hidden_behind: float, share: float | None, overlapped: bool) -> float:
    if share is not None:
        return comm * (1.0 - share)
    return max(0.0, comm - hidden_behind) if overlapped else comm


class _Calls:
    """Seconds of one call of each op kind, by dimension and phase."""

    def __init__(self, times: list[tuple[CollectiveOp, float]]) -> None:
        self.times = times

    def sum(self, dim: str, phase: str, *words: str) -> float:
        return sum(
            t
            for op, t in self.times
            if op.dim == dim and op.phase == phase and all(w in op.name for w in words)
        )


def _layer_pass(
    job: JobSpec, cm: ComputeModel, calls: _Calls, moe: bool, recompute: str
) -> _LayerPass:
    ops = cm.layer_ops(moe)
    f, b = cm.forward(ops), cm.backward(ops, recompute)
    ov = job.overlap
    blocks = 1 if moe else 2  # TP collectives around attention and around a dense MLP
    sp = job.parallelism.sequence_parallel
    fwd_comm: dict[str, float] = {}
    bwd_comm: dict[str, float] = {}
    for phase, p, out in (("forward", f, fwd_comm), ("backward", b, bwd_comm)):
        tp = calls.sum("tp", phase) * blocks
        cp = calls.sum("cp", phase)
        ep = calls.sum("ep", phase) if moe else 0.0
        if phase == "backward" and recompute == "full":
            # the recomputed forward pass issues the forward collectives again
            tp += calls.sum("tp", "forward") * blocks
            cp += calls.sum("cp", "forward")
            ep += calls.sum("ep", "forward") if moe else 0.0
        out["tp"] = _exposed(tp, p.gemm_seconds, ov.tp, ov.tp_comm and sp)
        out["cp"] = _exposed(cp, p.attention_seconds, ov.cp, ov.cp_ring)
        out["ep"] = _exposed(ep, p.expert_seconds, ov.ep, ov.ep_a2a)
    return _LayerPass(f.seconds, b.seconds, fwd_comm, bwd_comm, f.flops + b.flops)


def _send_seconds(spec: ClusterSpec, layout: Layout, times: list[OpTime]) -> list[float]:
    """Seconds of one activation send after each stage (the last: the wrap to the first): the
    call time of the PP op of that boundary's kind (inside a domain or across, the wrap), so a
    simulated time replaces the alpha-beta one here too."""
    assert spec.job is not None
    job = spec.job
    pp = job.parallelism.pp
    if pp == 1:
        return [0.0]

    def call(wrap: bool, inside: bool) -> float:
        for o in times:
            op = o.op
            kind = op.dim == "pp" and op.phase == "forward" and ("wrap" in op.name) == wrap
            if kind and (op.link is LinkClass.SCALE_UP) == inside:
                return o.call_s
        return 0.0  # no such boundary

    row = layout.groups("pp")[0]
    domains = layout.domain_of(row)
    out = []
    for s in range(pp):
        inside = bool(domains[s] == domains[(s + 1) % pp])
        out.append(call(s == pp - 1, inside))
    share = job.overlap.pp
    return [t * (1.0 - share) for t in out] if share is not None else out


def stage_parameters(spec: ClusterSpec, plan: Plan) -> list[float]:
    """Weights one rank of each stage holds (its TP and EP shares)."""
    assert spec.job is not None
    job = spec.job
    m, par = job.model, job.parallelism
    shape = model_shape(m)
    out = []
    for s in range(plan.pp):
        n = 0.0
        for c in range(plan.virtual_stages):
            first = plan.first_layer(s, c)
            for i in range(first, first + plan.layers[s][c]):
                n += shape.attention_per_layer / par.tp
                if _is_moe_layer(job, i):
                    n += shape.router_per_moe_layer / par.tp
                    n += shape.experts_per_moe_layer * shape.expert_mlp / par.ep
                else:
                    n += shape.mlp_per_dense_layer / par.tp
        half = m.vocab * m.hidden / par.tp
        if s == 0:
            n += half
        if s == plan.pp - 1 and not (m.tied_embeddings and plan.pp == 1):
            n += half
        out.append(n)
    return out


def _dp_exposed(
    job: JobSpec,
    dp_ops: list[OpTime],
    window_bwd: float,
    window_fwd: float,
    params: float,
    micro: int,
) -> float:
    """Exposed data-parallel communication (module docstring)."""
    ov = job.overlap
    total = sum(o.step_s for o in dp_ops)
    if ov.dp is not None:
        return total * (1.0 - ov.dp)
    buckets = max(1, math.ceil(params / (ov.bucket_mparams * 1e6)))
    exposed = 0.0
    for o in dp_ops:
        t = o.step_s
        if job.parallelism.zero == 3:
            per_mb = t / micro
            window = window_fwd if o.op.phase == "forward" else window_bwd
            exposed += micro * max(per_mb / buckets, per_mb - window)
        elif o.op.phase == "backward":
            exposed += max(t / buckets, t - window_bwd) if ov.dp_grad_reduce else t
        else:
            exposed += max(t / buckets, t - window_fwd) if ov.dp_param_gather else t
    return exposed


def step_time(
    spec: ClusterSpec,
    ops: tuple[CollectiveOp, ...],
    call_times: Mapping[int, float] | None = None,
    comm_source: str = "analytic (alpha-beta)",
) -> StepTime:
    """The predicted step of ``spec.job`` issuing ``ops``; ``call_times`` (seconds of one call
    by op index, e.g. from a simulator) replace the alpha-beta times of those ops."""
    assert spec.job is not None
    job = spec.job
    layout = layout_of(spec)
    world = spec.compute.accelerators
    dp = layout.size("ep") * layout.size("edp")
    micro = job.batch.global_batch // (job.batch.micro_batch * dp)
    plan = plan_of(job, micro)
    cm = ComputeModel(spec)
    bw = bandwidths(spec)
    per_domain = spec.compute.scale_up.domain_size
    times: list[OpTime] = []
    given = call_times or {}
    for i, op in enumerate(ops):
        call, bound = call_time(op, bw, per_domain)
        times.append(OpTime(op, given.get(i, call), bound, 1.0))
    calls = _Calls([(o.op, o.call_s) for o in times])
    recompute = job.compute.recompute
    full_layers = job.compute.recompute_layers
    cache: dict[tuple[bool, str], _LayerPass] = {}

    def layer(i: int, index_in_chunk: int) -> _LayerPass:
        mode = recompute
        if mode == "full" and full_layers is not None and index_in_chunk >= full_layers:
            mode = "none"
        key = (_is_moe_layer(job, i), mode)
        if key not in cache:
            cache[key] = _layer_pass(job, cm, calls, key[0], mode)
        return cache[key]

    emb_f, emb_b = cm.forward(cm.embedding_ops()), cm.backward(cm.embedding_ops(), "none")
    out_f, out_b = cm.forward(cm.output_ops()), cm.backward(cm.output_ops(), "none")
    pp, v = plan.pp, plan.virtual_stages
    fwd = [[0.0] * v for _ in range(pp)]
    bwd = [[0.0] * v for _ in range(pp)]
    compute = [[0.0] * v for _ in range(pp)]
    comm = [{d: 0.0 for d in ("tp", "cp", "ep")} for _ in range(pp)]
    hw_flops = 0.0
    for s in range(pp):
        for c in range(v):
            first = plan.first_layer(s, c)
            f = b = 0.0
            for j in range(plan.layers[s][c]):
                lp = layer(first + j, j)
                f += lp.fwd
                b += lp.bwd
                hw_flops += lp.flops * micro
                for d in ("tp", "cp", "ep"):
                    comm[s][d] += (lp.fwd_comm[d] + lp.bwd_comm[d]) * micro
                f_comm = sum(lp.fwd_comm.values())
                b_comm = sum(lp.bwd_comm.values())
                fwd[s][c] += lp.fwd + f_comm
                bwd[s][c] += lp.bwd + b_comm
            if s == 0 and c == 0:
                f, b = f + emb_f.seconds, b + emb_b.seconds
                fwd[s][c] += emb_f.seconds
                bwd[s][c] += emb_b.seconds
            if s == pp - 1 and c == v - 1:
                f, b = f + out_f.seconds, b + out_b.seconds
                fwd[s][c] += out_f.seconds
                bwd[s][c] += out_b.seconds
                hw_flops += (out_f.flops + out_b.flops) * micro
            compute[s][c] = (f + b) * micro
    hw_flops *= world / pp  # every rank of a stage does the same
    free = simulate(fwd, bwd, micro)
    sends = _send_seconds(spec, layout, times)
    timed = simulate(fwd, bwd, micro, sends) if any(sends) else free
    busiest = max(range(pp), key=lambda s: free.busy[s])
    exposed = {d: comm[busiest][d] for d in ("tp", "cp", "ep")}
    exposed["pp"] = timed.makespan - free.makespan
    params = stage_parameters(spec, plan)
    dp_ops = [o for o in times if o.op.dim == "dp"]
    exposed["dp"] = _dp_exposed(
        job,
        dp_ops,
        sum(bwd[busiest]),
        sum(fwd[busiest]),
        params[busiest],
        micro,
    )
    shard = max(params) / (dp if job.parallelism.zero >= 1 else 1)
    optimizer = cm.optimizer_seconds(shard)
    totals: dict[str, float] = {}
    for o in times:
        totals[o.op.dim] = totals.get(o.op.dim, 0.0) + o.step_s
    shared = []
    for o in times:
        t = totals[o.op.dim]
        shared.append(
            OpTime(
                o.op, o.call_s, o.bound_s, min(1.0, exposed.get(o.op.dim, 0.0) / t) if t else 0.0
            )
        )
    exposed = {d: e for d, e in exposed.items() if d in totals or e > 0}
    tokens = job.batch.global_batch * job.model.sequence_length
    peak = cm.roof.peak
    return StepTime(
        compute_s=sum(compute[busiest]),
        bubble_s=free.makespan - free.busy[busiest],
        optimizer_s=optimizer,
        exposed=exposed,
        ops=tuple(shared),
        flops_per_step=tokens * training_flops_per_token(job.model),
        hardware_flops_per_step=hw_flops,
        accelerators=world,
        peak_flops=peak,
        schedule=plan.name,
        virtual_stages=v,
        stage_layers=plan.stage_layers(),
        micro_batches=micro,
        comm_source=comm_source,
    )
