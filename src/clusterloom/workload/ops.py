"""Every collective a training step issues, on real ranks, with sizes and counts.

Per micro-batch and layer (Megatron-LM conventions; ``A = micro_batch x sequence/cp x hidden``
activation elements on a rank):

- TP, sequence parallel: forward one all-gather and one reduce-scatter of ``A`` around attention
  and again around a dense MLP; backward the same. Without sequence parallel, all-reduces instead.
  A MoE layer's experts run without tensor parallelism (expert TP = 1), so its MLP adds no TP
  collective.
- CP (ring attention): the K and V of the whole sequence (this rank's heads) are all-gathered in
  the forward pass; in the backward pass they are all-gathered again and their gradients
  reduce-scattered. Ring attention moves the same volume in ``cp - 1`` steps.
- EP: per MoE layer a dispatch and a combine all-to-all in each direction; the send buffer holds
  ``tokens x top_k x hidden`` (tokens sharded over TP when sequence parallel), routed uniformly.
- PP: per micro-batch each stage boundary carries the activation forward and its gradient
  backward (``A / tp`` when sequence parallel); interleaving (``virtual_stages``) multiplies the
  crossings and adds the wrap from the last stage back to the first.
- DP: gradients of the rank's weight shard, reduced over data parallel x context parallel (dense
  weights) or expert data parallel x context parallel (expert weights). ZeRO 0: all-reduce;
  ZeRO 1/2: reduce-scatter of gradients and all-gather of updated weights; ZeRO 3 (FSDP): weights
  all-gathered forward and backward for every micro-batch and gradients reduce-scattered.

Counts are per step on each group; a count that differs between pipeline stages (MoE layers not
evenly spread) is the average over stages.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from numpy.typing import NDArray

from clusterloom.spec import ClusterSpec
from clusterloom.spec.job import DTYPE_BYTES
from clusterloom.workload.algorithms import Algorithm, Collective, bus_bandwidth_factor
from clusterloom.workload.layout import Layout, layout_of
from clusterloom.workload.model import model_shape
from clusterloom.workload.schedule import plan_of


class LinkClass(StrEnum):
    SCALE_UP = "scale-up"
    SCALE_OUT = "scale-out"
    MIXED = "scale-up+out"


@dataclass(frozen=True, eq=False)
class CollectiveOp:
    """One kind of collective call: the same size on every group, ``per_step`` times a step."""

    dim: str
    name: str
    phase: str
    collective: Collective
    algorithm: Algorithm
    nbytes: int
    per_step: float
    groups: NDArray[np.int32]
    link: LinkClass

    @property
    def group_size(self) -> int:
        return int(self.groups.shape[1])

    @property
    def n_groups(self) -> int:
        return int(self.groups.shape[0])

    @property
    def bytes_per_rank(self) -> float:
        """Bytes one member sends per call (nccl-tests bus-bandwidth volume)."""
        if self.collective is Collective.SEND_RECV:
            return float(self.nbytes)
        return bus_bandwidth_factor(self.collective, self.group_size) * self.nbytes

    @property
    def bytes_per_step(self) -> float:
        """Bytes all members of all groups send in one step."""
        senders = self.n_groups if self.collective is Collective.SEND_RECV else self.groups.size
        return self.bytes_per_rank * self.per_step * senders


def link_class(layout: Layout, groups: NDArray[np.int32]) -> LinkClass:
    """Scale-up when every group stays in one domain, scale-out when no two members share one."""
    domains = layout.domain_of(groups)
    if (domains == domains[:, :1]).all():
        return LinkClass.SCALE_UP
    ordered = np.sort(domains, axis=1)
    if (np.diff(ordered, axis=1) != 0).all():
        return LinkClass.SCALE_OUT
    return LinkClass.MIXED


def _algorithm(spec: ClusterSpec, collective: Collective, link: LinkClass) -> Algorithm:
    assert spec.job is not None
    chosen = {
        Collective.ALL_REDUCE: spec.job.algorithms.all_reduce,
        Collective.ALL_GATHER: spec.job.algorithms.all_gather,
        Collective.REDUCE_SCATTER: spec.job.algorithms.reduce_scatter,
        Collective.ALL_TO_ALL: spec.job.algorithms.all_to_all,
        Collective.SEND_RECV: "direct",
    }[collective]
    if chosen != "auto":
        return Algorithm(chosen)
    return Algorithm.HIERARCHICAL if link is LinkClass.MIXED else Algorithm.RING


def step_ops(spec: ClusterSpec) -> tuple[CollectiveOp, ...]:
    """Every collective of one training step of ``spec.job``."""
    assert spec.job is not None
    job = spec.job
    layout = layout_of(spec)
    par, m = job.parallelism, job.model
    shape = model_shape(m)
    tp, cp, pp = par.tp, par.cp, par.pp
    ep, edp = layout.size("ep"), layout.size("edp")
    dp = ep * edp
    micro = job.batch.global_batch // (job.batch.micro_batch * dp)
    v = plan_of(job, micro).virtual_stages
    act = DTYPE_BYTES[job.precision.activations]
    tokens = job.batch.micro_batch * (m.sequence_length // cp)  # per rank of a TP group
    a_bytes = tokens * m.hidden * act
    layers = m.layers / pp  # per stage
    moe_layers = shape.moe_layers / pp
    dense_layers = shape.dense_layers / pp
    ops: list[CollectiveOp] = []

    def add(
        dim: str,
        name: str,
        phase: str,
        coll: Collective,
        nbytes: float,
        per_step: float,
        groups: NDArray[np.int32],
    ) -> None:
        if per_step <= 0 or groups.shape[1] < 2 or nbytes <= 0 or groups.shape[0] == 0:
            return
        if coll is Collective.SEND_RECV and link_class(layout, groups) is LinkClass.MIXED:
            # pairs inside a domain and pairs across domains run at different speeds
            inside = layout.domain_of(groups[:, 0]) == layout.domain_of(groups[:, 1])
            add(dim, f"{name} in domain", phase, coll, nbytes, per_step, groups[inside])
            add(dim, f"{name} across domains", phase, coll, nbytes, per_step, groups[~inside])
            return
        link = link_class(layout, groups)
        algo = Algorithm.DIRECT if coll is Collective.SEND_RECV else _algorithm(spec, coll, link)
        ops.append(
            CollectiveOp(dim, name, phase, coll, algo, round(nbytes), per_step, groups, link)
        )

    if tp > 1:
        g = layout.groups("tp")
        calls = micro * (layers + dense_layers)  # attention in every layer, MLP in dense ones
        for phase in ("forward", "backward"):
            if par.sequence_parallel:
                add(
                    "tp",
                    f"TP all-gather ({phase})",
                    phase,
                    Collective.ALL_GATHER,
                    a_bytes,
                    calls,
                    g,
                )
                add(
                    "tp",
                    f"TP reduce-scatter ({phase})",
                    phase,
                    Collective.REDUCE_SCATTER,
                    a_bytes,
                    calls,
                    g,
                )
            else:
                add(
                    "tp",
                    f"TP all-reduce ({phase})",
                    phase,
                    Collective.ALL_REDUCE,
                    a_bytes,
                    2 * calls,
                    g,
                )
    if cp > 1:
        g = layout.groups("cp")
        kv_bytes = job.batch.micro_batch * m.sequence_length * 2 * shape.kv_width * act / tp
        add(
            "cp",
            "CP K/V all-gather (forward)",
            "forward",
            Collective.ALL_GATHER,
            kv_bytes,
            micro * layers,
            g,
        )
        add(
            "cp",
            "CP K/V all-gather (backward)",
            "backward",
            Collective.ALL_GATHER,
            kv_bytes,
            micro * layers,
            g,
        )
        add(
            "cp",
            "CP dK/dV reduce-scatter (backward)",
            "backward",
            Collective.REDUCE_SCATTER,
            kv_bytes,
            micro * layers,
            g,
        )
    if ep > 1 and m.moe is not None:
        g = layout.groups("ep")
        routed = (tokens / (tp if par.sequence_parallel else 1)) * m.moe.top_k * m.hidden * act
        for phase in ("forward", "backward"):
            add(
                "ep",
                f"EP dispatch all-to-all ({phase})",
                phase,
                Collective.ALL_TO_ALL,
                routed,
                micro * moe_layers,
                g,
            )
            add(
                "ep",
                f"EP combine all-to-all ({phase})",
                phase,
                Collective.ALL_TO_ALL,
                routed,
                micro * moe_layers,
                g,
            )
    if pp > 1:
        rows = layout.groups("pp")
        p2p = a_bytes / (tp if par.sequence_parallel else 1)
        pairs = np.concatenate([rows[:, [j, j + 1]] for j in range(pp - 1)]).astype(np.int32)
        for phase, direction in (("forward", pairs), ("backward", pairs[:, ::-1])):
            add(
                "pp",
                f"PP send-recv ({phase})",
                phase,
                Collective.SEND_RECV,
                p2p,
                micro * v,
                np.ascontiguousarray(direction),
            )
        if v > 1:
            wrap = rows[:, [pp - 1, 0]].astype(np.int32)
            for phase, direction in (("forward", wrap), ("backward", wrap[:, ::-1])):
                add(
                    "pp",
                    f"PP interleave wrap ({phase})",
                    phase,
                    Collective.SEND_RECV,
                    p2p,
                    micro * (v - 1),
                    np.ascontiguousarray(direction),
                )
    grad, param = DTYPE_BYTES[job.precision.gradients], DTYPE_BYTES[job.precision.parameters]
    shards = [("dp", "dense", shape.dense_parameters / (tp * pp), layout.groups("cp", "ep", "edp"))]
    if shape.expert_parameters:
        shards.append(
            ("dp", "expert", shape.expert_parameters / (ep * pp), layout.groups("cp", "edp"))
        )
    for dim, kind, weights, g in shards:
        if par.zero == 0:
            add(
                dim,
                f"DP {kind} gradient all-reduce",
                "backward",
                Collective.ALL_REDUCE,
                weights * grad,
                1,
                g,
            )
        elif par.zero in (1, 2):
            add(
                dim,
                f"DP {kind} gradient reduce-scatter",
                "backward",
                Collective.REDUCE_SCATTER,
                weights * grad,
                1,
                g,
            )
            add(
                dim,
                f"DP {kind} weight all-gather",
                "optimizer",
                Collective.ALL_GATHER,
                weights * param,
                1,
                g,
            )
        else:
            for phase in ("forward", "backward"):
                add(
                    dim,
                    f"FSDP {kind} weight all-gather ({phase})",
                    phase,
                    Collective.ALL_GATHER,
                    weights * param,
                    micro,
                    g,
                )
            add(
                dim,
                f"FSDP {kind} gradient reduce-scatter",
                "backward",
                Collective.REDUCE_SCATTER,
                weights * grad,
                micro,
                g,
            )
    return tuple(ops)
