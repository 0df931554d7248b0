"""Analytical step time: compute from FLOPs, communication from an alpha-beta model.

- Compute: ``tokens x FLOPs per token / (accelerators x peak x utilisation)``, stretched by the
  1F1B pipeline bubble ``(pp - 1) / (virtual_stages x micro_batches)``.
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
- Overlap: a share ``overlap[dim]`` of each dimension's communication hides behind compute
  (never more than the compute time in all); the rest is exposed and adds to the step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from clusterloom.spec import ClusterSpec
from clusterloom.units import bytes_per_s, seconds_from_us, tflops
from clusterloom.workload.algorithms import Algorithm, Collective, bus_bandwidth_factor
from clusterloom.workload.layout import layout_of
from clusterloom.workload.model import training_flops_per_token
from clusterloom.workload.ops import CollectiveOp, LinkClass


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
    compute_s: float
    bubble_s: float
    ops: tuple[OpTime, ...]
    flops_per_step: float
    accelerators: int
    peak_flops: float

    @property
    def comm_s(self) -> float:
        return sum(o.step_s for o in self.ops)

    @property
    def exposed_comm_s(self) -> float:
        """Exposed communication, with overlap capped by the compute it hides behind."""
        hidden = sum(o.step_s - o.exposed_s for o in self.ops)
        return self.comm_s - min(hidden, self.compute_s)

    @property
    def step_s(self) -> float:
        return self.compute_s + self.bubble_s + self.exposed_comm_s

    @property
    def bound_comm_s(self) -> float:
        return sum(o.bound_step_s for o in self.ops)

    @property
    def bound_step_s(self) -> float:
        """The step with every collective at its bandwidth bound (same overlap, same bubble)."""
        hidden = sum(o.bound_step_s * (1 - o.exposed_share) for o in self.ops)
        return self.compute_s + self.bubble_s + self.bound_comm_s - min(hidden, self.compute_s)

    @property
    def mfu(self) -> float:
        """Model FLOPs utilisation the predicted step achieves."""
        return self.flops_per_step / (self.step_s * self.accelerators * self.peak_flops)

    def by_dim(self) -> dict[str, tuple[float, float, float]]:
        """Per dimension: (total, exposed, bound) seconds per step."""
        out: dict[str, tuple[float, float, float]] = {}
        for o in self.ops:
            t, e, b = out.get(o.op.dim, (0.0, 0.0, 0.0))
            out[o.op.dim] = (t + o.step_s, e + o.exposed_s, b + o.bound_step_s)
        return out


def step_time(spec: ClusterSpec, ops: tuple[CollectiveOp, ...]) -> StepTime:
    assert spec.job is not None
    job = spec.job
    layout = layout_of(spec)
    world = spec.compute.accelerators
    tokens = job.batch.global_batch * job.model.sequence_length
    flops = tokens * training_flops_per_token(job.model)
    peak = tflops(job.compute.peak_tflops)
    compute = flops / (world * peak * job.compute.utilisation)
    dp = layout.size("ep") * layout.size("edp")
    micro = job.batch.global_batch // (job.batch.micro_batch * dp)
    par = job.parallelism
    bubble = compute * (par.pp - 1) / (par.virtual_stages * micro)
    bw = bandwidths(spec)
    per_domain = spec.compute.scale_up.domain_size
    overlap = job.overlap
    times = []
    for op in ops:
        call, bound = call_time(op, bw, per_domain)
        share = 1.0 - getattr(overlap, op.dim)
        times.append(OpTime(op, call, bound, share))
    return StepTime(compute, bubble, tuple(times), flops, world, peak)
