"""The workload stage: a training job becomes collectives on real ranks, flows for the
simulators, a rank-to-rank traffic matrix and a step time predicted from the model's operations,
the pipeline schedule and the exposed communication, with the memory each stage needs."""

from clusterloom.workload.algorithms import Algorithm, Collective, Flows, decompose
from clusterloom.workload.compute import model_flops_per_token
from clusterloom.workload.flows import StepFlows, step_flows, traffic_matrix
from clusterloom.workload.layout import Layout, layout_of
from clusterloom.workload.memory import Memory, StageMemory, memory_of
from clusterloom.workload.model import ModelShape, model_shape, training_flops_per_token
from clusterloom.workload.ops import CollectiveOp, LinkClass, step_ops
from clusterloom.workload.schedule import Timeline, simulate
from clusterloom.workload.stage import NicLoad, WorkloadDesign, design_workload
from clusterloom.workload.timing import OpTime, StepTime, step_time

__all__ = [
    "Algorithm",
    "Collective",
    "CollectiveOp",
    "Flows",
    "Layout",
    "LinkClass",
    "Memory",
    "ModelShape",
    "NicLoad",
    "OpTime",
    "StageMemory",
    "StepFlows",
    "StepTime",
    "Timeline",
    "WorkloadDesign",
    "decompose",
    "design_workload",
    "layout_of",
    "memory_of",
    "model_flops_per_token",
    "model_shape",
    "simulate",
    "step_flows",
    "step_ops",
    "step_time",
    "traffic_matrix",
    "training_flops_per_token",
]
