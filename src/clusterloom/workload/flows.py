"""A step's collectives as point-to-point flows, the input of the simulators, and the rank-to-rank
traffic matrix.

Each distinct collective of a step (``CollectiveOp``) is decomposed once, on a template group of
ranks ``0..n-1``, and mapped onto every group with one fancy-indexing operation; the op's
``per_step`` says how many times a step repeats it. On scale-out links an accelerator's collective
is split into one channel per scale-out NIC port (as NCCL spreads channels over NICs), and each
flow records the port, which is also its plane when every port has a plane of its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from clusterloom.workload.algorithms import Algorithm, Flows, decompose
from clusterloom.workload.ops import CollectiveOp, LinkClass


def _frozen(a: NDArray[np.generic]) -> NDArray[np.generic]:
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class StepFlows:
    """Every flow of one occurrence of each op, struct of arrays; ``op`` indexes the ops tuple.

    Dependencies are CSR (``dep_ptr``, ``dep_idx``) over the flow index of this table and never
    cross ops (ops are ordered by the step's schedule, not by flow dependencies).
    """

    op: NDArray[np.int32]
    src: NDArray[np.int32]
    dst: NDArray[np.int32]
    nbytes: NDArray[np.int64]
    step: NDArray[np.int32]
    port: NDArray[np.int16]
    dep_ptr: NDArray[np.int64]
    dep_idx: NDArray[np.int64]
    per_step: NDArray[np.float64]  # per op: occurrences per training step

    def __len__(self) -> int:
        return int(self.src.shape[0])

    @property
    def nbytes_total(self) -> int:
        return int(self.nbytes.sum())

    def bytes_per_step(self) -> NDArray[np.float64]:
        """Bytes each flow carries over a whole step (its size times its op's repeats)."""
        return self.nbytes * self.per_step[self.op]


def _channels(template: Flows, channels: int) -> tuple[NDArray[np.int64], ...]:
    """Split every flow of ``template`` into ``channels`` flows of (nearly) equal size.

    Returns src, dst, nbytes, step, port, dep_ptr, dep_idx for the split template.
    """
    n = len(template)
    src = np.tile(template.src.astype(np.int64), channels)
    dst = np.tile(template.dst.astype(np.int64), channels)
    step = np.tile(template.step.astype(np.int64), channels)
    port = np.repeat(np.arange(channels, dtype=np.int64), n)
    base, extra = np.divmod(template.nbytes.astype(np.int64), channels)
    nbytes = np.repeat(base[None, :], channels, axis=0)
    nbytes += np.arange(channels)[:, None] < extra[None, :]
    counts = np.diff(template.dep_ptr)
    dep_ptr = np.concatenate([[0], np.cumsum(np.tile(counts, channels))])
    dep_idx = (template.dep_idx[None, :] + (np.arange(channels) * n)[:, None]).ravel()
    return src, dst, nbytes.ravel(), step, port, dep_ptr, dep_idx


def op_flows(
    op: CollectiveOp, ranks_per_domain: int, channels: int
) -> tuple[NDArray[np.int64], ...]:
    """The flows of one occurrence of ``op`` on all its groups (src, dst, nbytes, step, port,
    dep_ptr, dep_idx), ranks global."""
    n = op.group_size
    local = math.gcd(n, ranks_per_domain) if op.algorithm is Algorithm.HIERARCHICAL else 1
    template = decompose(op.collective, op.algorithm, np.arange(n), op.nbytes, ranks_per_node=local)
    split = channels if op.link is not LinkClass.SCALE_UP else 1
    src, dst, nbytes, step, port, dep_ptr, dep_idx = _channels(template, split)
    per_group = src.shape[0]
    groups = op.groups.astype(np.int64)
    g = groups.shape[0]
    gsrc = groups[:, src].ravel()
    gdst = groups[:, dst].ravel()
    counts = np.diff(dep_ptr)
    all_ptr = np.concatenate([[0], np.cumsum(np.tile(counts, g))])
    all_idx = (dep_idx[None, :] + (np.arange(g) * per_group)[:, None]).ravel()
    return (gsrc, gdst, np.tile(nbytes, g), np.tile(step, g), np.tile(port, g), all_ptr, all_idx)


def step_flows(ops: tuple[CollectiveOp, ...], ranks_per_domain: int, channels: int) -> StepFlows:
    """One occurrence of every op of a step, as flows."""
    parts = [op_flows(op, ranks_per_domain, channels) for op in ops]
    sizes = [p[0].shape[0] for p in parts]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    dep_ptrs, dep_idxs = [np.zeros(1, dtype=np.int64)], []
    edge_base = 0
    for i, p in enumerate(parts):
        dep_ptrs.append(p[5][1:] + edge_base)
        dep_idxs.append(p[6] + offsets[i])
        edge_base += int(p[5][-1])

    def cat(k: int, dtype: type[np.generic]) -> NDArray[np.generic]:
        if not parts:
            return np.zeros(0, dtype=dtype)
        return np.concatenate([p[k] for p in parts]).astype(dtype)

    arrays = dict(
        op=np.repeat(np.arange(len(ops), dtype=np.int32), sizes),
        src=cat(0, np.int32),
        dst=cat(1, np.int32),
        nbytes=cat(2, np.int64),
        step=cat(3, np.int32),
        port=cat(4, np.int16),
        dep_ptr=np.concatenate(dep_ptrs).astype(np.int64),
        dep_idx=(np.concatenate(dep_idxs) if dep_idxs else np.zeros(0)).astype(np.int64),
        per_step=np.array([op.per_step for op in ops], dtype=np.float64),
    )
    for a in arrays.values():
        _frozen(a)
    return StepFlows(**arrays)  # type: ignore[arg-type]


def traffic_matrix(flows: StepFlows, world: int) -> object:
    """Bytes per step from rank i to rank j, a scipy CSR matrix (sparse at any size)."""
    from scipy import sparse

    return sparse.csr_matrix((flows.bytes_per_step(), (flows.src, flows.dst)), shape=(world, world))
