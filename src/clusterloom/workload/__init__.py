"""The workload stage: a training job becomes collectives on real ranks, flows for the
simulators, a rank-to-rank traffic matrix and an analytical step time."""

from clusterloom.workload.algorithms import Algorithm, Collective, Flows, decompose
from clusterloom.workload.flows import StepFlows, step_flows, traffic_matrix
from clusterloom.workload.layout import Layout, layout_of
from clusterloom.workload.model import ModelShape, model_shape, training_flops_per_token
from clusterloom.workload.ops import CollectiveOp, LinkClass, step_ops
from clusterloom.workload.stage import NicLoad, WorkloadDesign, design_workload
from clusterloom.workload.timing import OpTime, StepTime, step_time

__all__ = [
    "Algorithm",
    "Collective",
    "CollectiveOp",
    "Flows",
    "Layout",
    "LinkClass",
    "ModelShape",
    "NicLoad",
    "OpTime",
    "StepFlows",
    "StepTime",
    "WorkloadDesign",
    "decompose",
    "design_workload",
    "layout_of",
    "model_shape",
    "step_flows",
    "step_ops",
    "step_time",
    "traffic_matrix",
    "training_flops_per_token",
]
