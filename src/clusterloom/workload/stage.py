"""The workload stage: a training job to collectives, flows, a traffic matrix and a step time."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from clusterloom.findings import Finding, Severity
from clusterloom.spec import ClusterSpec
from clusterloom.spec.job import plan_of
from clusterloom.units import fmt_bytes
from clusterloom.workload.flows import StepFlows, step_flows, traffic_matrix
from clusterloom.workload.layout import Layout, layout_of
from clusterloom.workload.memory import Memory, memory_of
from clusterloom.workload.model import ModelShape, model_shape
from clusterloom.workload.ops import CollectiveOp, LinkClass, step_ops
from clusterloom.workload.timing import OpTime, StepTime, stage_parameters, step_time


@dataclass(frozen=True)
class NicLoad:
    """Scale-out traffic per accelerator NIC port in one step."""

    flows_mean: float
    flows_max: int
    peers_mean: float
    peers_max: int
    bytes_max: float
    bytes_mean: float


@dataclass(frozen=True, eq=False)
class WorkloadDesign:
    layout: Layout
    shape: ModelShape
    micro_batches: int
    ops: tuple[CollectiveOp, ...]
    timing: StepTime
    flows: StepFlows
    matrix: Any  # scipy CSR, bytes per step from rank i to rank j
    nic: NicLoad
    memory: Memory
    findings: tuple[Finding, ...]

    def volume_by(self, key: str) -> dict[str, float]:
        """Bytes sent per step grouped by ``dim`` or ``link``."""
        out: dict[str, float] = {}
        for op in self.ops:
            k = op.dim if key == "dim" else op.link.value
            out[k] = out.get(k, 0.0) + op.bytes_per_step
        return out

    def top_costs(self, n: int = 10) -> list[OpTime]:
        """The ops whose exposed time costs the step most (then total time)."""
        return sorted(self.timing.ops, key=lambda o: (-o.exposed_s, -o.step_s, o.op.name))[:n]


def _nic_load(flows: StepFlows, ops: tuple[CollectiveOp, ...], world: int, ports: int) -> NicLoad:
    scale_out = np.array([op.link is not LinkClass.SCALE_UP for op in ops], dtype=bool)
    if not len(flows) or not scale_out.any():
        return NicLoad(0.0, 0, 0.0, 0, 0.0, 0.0)
    sel = scale_out[flows.op]
    nic = flows.src[sel].astype(np.int64) * ports + flows.port[sel]
    count = np.bincount(nic, minlength=world * ports)
    volume = np.bincount(nic, weights=flows.bytes_per_step()[sel], minlength=world * ports)
    pairs = np.unique(nic * world + flows.dst[sel])
    peers = np.bincount(pairs // world, minlength=world * ports)
    return NicLoad(
        float(count.mean()),
        int(count.max()),
        float(peers.mean()),
        int(peers.max()),
        float(volume.max()),
        float(volume.mean()),
    )


def _findings(spec: ClusterSpec, w: WorkloadDesign) -> list[Finding]:
    assert spec.job is not None
    out: list[Finding] = []
    par = spec.job.parallelism
    if w.micro_batches < par.pp:
        out.append(
            Finding(
                Severity.WARNING,
                "pipeline-bubble",
                f"{w.micro_batches} micro-batches for {par.pp} pipeline stages: the "
                f"bubble costs {w.timing.bubble_s / w.timing.step_s:.0%} of the step",
                "job.batch",
            )
        )
    for op in w.ops:
        if op.dim == "tp" and op.link is not LinkClass.SCALE_UP:
            out.append(
                Finding(
                    Severity.WARNING,
                    "tp-scale-out",
                    f"{op.name} crosses the scale-out fabric ({op.group_size} ranks)",
                    "job.parallelism.tp",
                )
            )
            break
    mem = w.memory
    if not mem.fits:
        peak = mem.peak
        out.append(
            Finding(
                Severity.ERROR,
                "memory",
                f"pipeline stage {peak.stage} needs {fmt_bytes(peak.total)} per accelerator "
                f"(weights {fmt_bytes(peak.weights)}, gradients {fmt_bytes(peak.gradients)}, "
                f"optimizer {fmt_bytes(peak.optimizer)}, activations "
                f"{fmt_bytes(peak.activations)}), more than its {fmt_bytes(mem.capacity)}; "
                "recompute activations (job.compute.recompute), shard the optimizer (zero) or "
                "add model parallelism",
                "job",
            )
        )
    exposed = w.timing.exposed_comm_s / w.timing.step_s
    out.append(
        Finding(
            Severity.WARNING if exposed > 0.3 else Severity.INFO,
            "exposed-comm",
            f"exposed communication is {exposed:.0%} of the predicted step "
            f"({w.timing.step_s:.3f} s, MFU {w.timing.mfu:.1%})",
            "job",
        )
    )
    return out


def design_workload(
    spec: ClusterSpec,
    call_times: Mapping[int, float] | None = None,
    comm_source: str = "analytic (alpha-beta)",
) -> WorkloadDesign:
    """Collectives, flows, traffic matrix and step time of ``spec.job``; ``call_times`` (seconds
    of one call by op index, from a simulator: ``sim.steptime``) replace the alpha-beta times."""
    assert spec.job is not None, "the workload stage needs a job section"
    layout = layout_of(spec)
    ops = step_ops(spec)
    timing = step_time(spec, ops, call_times, comm_source)
    ports = spec.compute.nic.scale_out
    flows = step_flows(ops, spec.compute.scale_up.domain_size, ports)
    world = layout.world
    dp = layout.size("ep") * layout.size("edp")
    micro = spec.job.batch.global_batch // (spec.job.batch.micro_batch * dp)
    plan = plan_of(spec.job, micro)
    w = WorkloadDesign(
        layout,
        model_shape(spec.job.model),
        micro,
        ops,
        timing,
        flows,
        traffic_matrix(flows, world),
        _nic_load(flows, ops, world, ports),
        memory_of(spec, plan, stage_parameters(spec, plan), dp),
        (),
    )
    return WorkloadDesign(
        w.layout,
        w.shape,
        w.micro_batches,
        w.ops,
        w.timing,
        w.flows,
        w.matrix,
        w.nic,
        w.memory,
        tuple(_findings(spec, w)),
    )
