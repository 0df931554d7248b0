"""Ranks and parallel groups, Megatron-style.

A rank's coordinates follow the spec's ``order`` (innermost first, default ``tp-cp-ep-dp-pp``):
``rank = tp_i + tp * (cp_i + cp * (ep_i + ep * (edp_i + edp * pp_i)))`` where ``ep`` is carved out
of data parallel (``dp = ep * edp``). Rank ``r`` runs on accelerator ``r``, so with TP innermost a
TP group sits on consecutive accelerators inside one scale-up domain.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from clusterloom.spec import ClusterSpec

#: the named axes of the rank grid; "edp" is the data-parallel part left after expert parallel
AXES = ("tp", "cp", "ep", "edp", "pp")


@dataclass(frozen=True)
class Layout:
    """The rank grid of a job: axis sizes in the spec's order, innermost first."""

    order: tuple[str, ...]
    sizes: tuple[int, ...]
    domain_size: int

    @property
    def world(self) -> int:
        return int(np.prod(self.sizes))

    def size(self, axis: str) -> int:
        return self.sizes[self.order.index(axis)]

    def groups(self, *axes: str) -> NDArray[np.int32]:
        """Every group spanned by ``axes`` (ranks that differ only along them), one row each.

        Within a row, ranks are ordered with the first named axis innermost; rows are ordered by
        the remaining coordinates. ``groups("cp", "ep", "edp")`` are the gradient groups of the
        dense parameters (data parallel with context parallel, as Megatron reduces them).
        """
        grid = np.arange(self.world, dtype=np.int32).reshape(tuple(reversed(self.sizes)))
        # numpy axis of an order axis: reversed, so innermost is last
        axis_of = {name: len(self.order) - 1 - i for i, name in enumerate(self.order)}
        spanned = [axis_of[a] for a in reversed(axes)]  # first named = innermost = last
        rest = [i for i in range(grid.ndim) if i not in spanned]
        moved = np.transpose(grid, rest + spanned)
        width = int(np.prod([grid.shape[i] for i in spanned])) if spanned else 1
        return np.ascontiguousarray(moved.reshape(-1, width))

    def domain_of(self, ranks: NDArray[np.integer]) -> NDArray[np.int64]:
        """The scale-up domain of each rank (rank r runs on accelerator r)."""
        return np.asarray(ranks, dtype=np.int64) // self.domain_size


def layout_of(spec: ClusterSpec) -> Layout:
    """The rank grid of ``spec.job`` (which must be present and checked)."""
    assert spec.job is not None
    par = spec.job.parallelism
    world = spec.compute.accelerators
    dp = par.dp if par.dp is not None else world // (par.tp * par.pp * par.cp)
    size = {"tp": par.tp, "cp": par.cp, "ep": par.ep, "edp": dp // par.ep, "pp": par.pp}
    order = tuple("edp" if a == "dp" else a for a in par.order.split("-"))
    return Layout(order, tuple(size[a] for a in order), spec.compute.scale_up.domain_size)
