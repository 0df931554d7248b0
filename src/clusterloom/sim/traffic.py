"""Traffic for the flow-level simulator: flows between hosts, their sizes, start times and
dependencies, as a struct of read-only numpy arrays (:class:`Traffic`).

A flow may start once every flow it depends on has finished (its last byte delivered) and not
before its ``start_ps``. Hosts are ``0..n_hosts-1`` (accelerator ranks or NIC endpoints: the
simulator that consumes the traffic decides). ``group`` tags each flow with the collective or op
it belongs to (``-1``: none), ``group_names`` names the groups.

Generators (random ones take an explicit ``seed``; no global RNG is touched):

- :func:`permutation`: a uniformly random derangement, every host sends one flow and receives one.
- :func:`all_to_all`: every ordered pair of distinct hosts once.
- :func:`incast`: ``n_senders`` hosts to one receiver.
- :func:`ring_all_reduce`: the aggregated (fluid) form of a ring all-reduce.
- :func:`from_step_flows`: the workload stage's flows of one training step, aggregated per op.

Modelling choice of :func:`from_step_flows` (and :func:`ring_all_reduce`). A fluid simulator does
not replay every step of a collective algorithm: a ring all-reduce over n ranks is 2(n-1) steps of
n flows each, but in steady state a pipelined ring keeps every link of the ring busy at once, every
rank sending to its neighbour at the same time. So the flows of one op are **aggregated** per
(src, dst, port) into one flow carrying the summed bytes, and the algorithm's step-to-step
dependencies inside the op are dropped. A ring all-reduce of S bytes then becomes n flows
``i -> i+1`` of about ``2(n-1)/n * S`` bytes each, and finishes in ``2(n-1)/n * S / B`` on links
of bandwidth B, the bus-bandwidth time of nccl-tests. The ``port`` of a scale-out flow (the NIC
channel) keeps flows of different channels apart, so one (src, dst) pair may carry several
parallel flows; ``Traffic`` itself has no port column.

Ops are **serialized per rank, on the sending side**: a rank's flows of op k wait for the flows
that rank sent in the last earlier op in which it sent anything (ops in the order given, which is
the step's order; a rank in no earlier op starts at once). This is how a rank issues collectives in
order on one stream, without a global barrier between ops. Receives are not waited for: with
aggregated, symmetric collectives a rank's sends and receives of one op end together, and keeping
each flow in exactly one dependency set makes the traffic expressible as htsim triggers (a
connection fires one trigger, see :mod:`clusterloom.sim.htsim`).

**Barrier flows** keep that linear. Waiting directly, a rank with a flows in one op and b in the
next needs a*b dependency edges (an all-to-all over g ranks and p ports: ((g-1)p)^2 per rank). When
a*b > a+b, :func:`from_step_flows` instead inserts one zero-byte *barrier flow* for the rank and
op boundary that waits for the a flows, and the b flows wait for it: a+b edges. Otherwise (ring
collectives: a = b = 1 or 2) the b flows wait directly, as before. Either way a boundary costs at
most a+b edges, so a traffic has at most 2 edges per non-barrier flow, and a rank's op k+1 starts
exactly when its op k has finished (a zero-byte flow finishes the instant it starts).

A barrier flow is a real, zero-byte flow from the rank to the destination of its first flow of the
next op (the fluid engine gives every flow allocation units, so a barrier needs a path; it moves
nothing over it), marked in :attr:`Traffic.barrier` and in no group (``group == -1``). Consumers
that report per-flow statistics skip the barriers (``~traffic.barrier``). htsim: a zero-size
connection means "unlimited" in several htsim mains, so before writing htsim files replace the
barrier flows by direct dependencies with :meth:`Traffic.without_barriers` (one barrier trigger of
count a per boundary in the file).

One occurrence of every op is generated (``repeat=False``); ``repeat=True`` scales each flow by
its op's ``per_step`` (rounded to whole bytes), the volume of a whole step, still as one flow.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from clusterloom.errors import Problem, SpecError
from clusterloom.workload.flows import StepFlows
from clusterloom.workload.ops import CollectiveOp

__all__ = [
    "Traffic",
    "all_to_all",
    "from_step_flows",
    "incast",
    "permutation",
    "ring_all_reduce",
]

_I64 = NDArray[np.int64]
_INT32 = np.iinfo(np.int32)


def _frozen(a: ArrayLike, dtype: type[np.generic]) -> NDArray[Any]:
    out = np.array(a, dtype=dtype, copy=True).reshape(-1)
    out.setflags(write=False)
    return out


def _as32(a: NDArray[np.int64], what: str) -> NDArray[np.int32]:
    if a.size and (a.min() < _INT32.min or a.max() > _INT32.max):
        raise ValueError(f"{what} does not fit in int32")
    return a.astype(np.int32)


def _ranges(starts: _I64, counts: _I64) -> _I64:
    """``concatenate([arange(s, s + c) for s, c in zip(starts, counts)])``, vectorized."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(counts)
    return np.repeat(starts - (ends - counts), counts) + np.arange(total, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class Traffic:
    """Flows between hosts, one row per flow (module docstring).

    Arrays are copied to their dtypes and made read-only on construction. Structural errors
    (lengths that disagree, a malformed CSR) raise ``ValueError``; :meth:`validate` checks the
    content (ids in range, no flow to itself, no dependency cycle). ``barrier`` marks the
    zero-byte barrier flows of :func:`from_step_flows` (empty on construction: none).
    """

    src: NDArray[np.int32]
    dst: NDArray[np.int32]
    nbytes: NDArray[np.int64]
    start_ps: NDArray[np.int64]
    dep_ptr: NDArray[np.int64]
    dep_idx: NDArray[np.int64]
    group: NDArray[np.int32]
    n_hosts: int
    group_names: tuple[str, ...] = field(default=())
    barrier: NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=np.bool_))

    def __post_init__(self) -> None:
        fix = object.__setattr__
        for name, dtype in (
            ("src", np.int32),
            ("dst", np.int32),
            ("nbytes", np.int64),
            ("start_ps", np.int64),
            ("dep_ptr", np.int64),
            ("dep_idx", np.int64),
            ("group", np.int32),
        ):
            fix(self, name, _frozen(getattr(self, name), dtype))
        fix(self, "n_hosts", operator.index(self.n_hosts))
        fix(self, "group_names", tuple(str(g) for g in self.group_names))
        n = self.src.shape[0]
        barrier = np.asarray(self.barrier, dtype=np.bool_).reshape(-1)
        fix(self, "barrier", _frozen(np.zeros(n) if barrier.size == 0 else barrier, np.bool_))
        for name in ("dst", "nbytes", "start_ps", "group", "barrier"):
            if getattr(self, name).shape[0] != n:
                raise ValueError(f"{name} has {getattr(self, name).shape[0]} rows, src has {n}")
        ptr = self.dep_ptr
        if ptr.shape[0] != n + 1 or ptr[0] != 0 or np.any(np.diff(ptr) < 0):
            raise ValueError("dep_ptr must start at 0, never decrease and have len(src) + 1 rows")
        if ptr[-1] != self.dep_idx.shape[0]:
            raise ValueError(f"dep_ptr ends at {int(ptr[-1])}, dep_idx has {self.dep_idx.shape[0]}")
        if self.n_hosts < 0:
            raise ValueError(f"n_hosts must be >= 0, got {self.n_hosts}")

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def from_arrays(
        cls,
        src: ArrayLike,
        dst: ArrayLike,
        nbytes: ArrayLike,
        *,
        n_hosts: int | None = None,
        start_ps: ArrayLike | None = None,
        deps: Sequence[Sequence[int]] | None = None,
        group: ArrayLike | None = None,
        group_names: Sequence[str] = (),
        barrier: ArrayLike | None = None,
    ) -> Traffic:
        """Convenience constructor: scalars broadcast, ``deps`` as one list per flow."""
        s = np.asarray(src, dtype=np.int64).reshape(-1)
        n = s.shape[0]

        def column(value: ArrayLike | None, default: int) -> NDArray[Any]:
            if value is None:
                return np.full(n, default, dtype=np.int64)
            return np.broadcast_to(np.asarray(value, dtype=np.int64), (n,))

        d = column(dst, 0)
        if deps is None:
            ptr, idx = np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.int64)
        else:
            if len(deps) != n:
                raise ValueError(f"deps has {len(deps)} rows, src has {n}")
            counts = np.array([len(x) for x in deps], dtype=np.int64)
            ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
            flat = [int(j) for x in deps for j in x]
            idx = np.array(flat, dtype=np.int64)
        hosts = n_hosts
        if hosts is None:
            hosts = int(max(s.max(initial=-1), d.max(initial=-1))) + 1
        return cls(
            src=_as32(s, "src"),
            dst=_as32(d, "dst"),
            nbytes=column(nbytes, 0),
            start_ps=column(start_ps, 0),
            dep_ptr=ptr,
            dep_idx=idx,
            group=_as32(column(group, -1), "group"),
            n_hosts=hosts,
            group_names=tuple(group_names),
            barrier=np.broadcast_to(np.asarray(False if barrier is None else barrier, bool), (n,)),
        )

    @classmethod
    def empty(cls, n_hosts: int = 0) -> Traffic:
        return cls.from_arrays([], [], [], n_hosts=n_hosts)

    @staticmethod
    def concat(*parts: Traffic) -> Traffic:
        """All flows of ``parts``, in order; dependencies and groups are renumbered, group names
        concatenated (a part without names still reserves ``max(group) + 1`` group numbers)."""
        if not parts:
            return Traffic.empty()
        sizes = np.array([len(p) for p in parts], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        edges = np.array([p.dep_idx.shape[0] for p in parts], dtype=np.int64)
        edge_off = np.concatenate([[0], np.cumsum(edges)])
        names: list[str] = []
        groups = []
        for p in parts:
            width = max(len(p.group_names), int(p.group.max(initial=-1)) + 1)
            groups.append(np.where(p.group >= 0, p.group.astype(np.int64) + len(names), -1))
            padded = list(p.group_names) + [""] * (width - len(p.group_names))
            names.extend(padded)
        return Traffic(
            src=np.concatenate([p.src for p in parts]),
            dst=np.concatenate([p.dst for p in parts]),
            nbytes=np.concatenate([p.nbytes for p in parts]),
            start_ps=np.concatenate([p.start_ps for p in parts]),
            dep_ptr=np.concatenate(
                [[0]] + [p.dep_ptr[1:] + edge_off[i] for i, p in enumerate(parts)]
            ),
            dep_idx=np.concatenate([p.dep_idx + offsets[i] for i, p in enumerate(parts)]),
            group=np.concatenate(groups),
            n_hosts=max(p.n_hosts for p in parts),
            group_names=tuple(names) if any(p.group_names for p in parts) else (),
            barrier=np.concatenate([p.barrier for p in parts]),
        )

    # -- queries -------------------------------------------------------------------------------

    def __len__(self) -> int:
        return int(self.src.shape[0])

    @property
    def n_deps(self) -> int:
        return int(self.dep_idx.shape[0])

    @property
    def total_bytes(self) -> int:
        return int(self.nbytes.sum())

    def deps(self, flow: int) -> _I64:
        """The flows ``flow`` waits for."""
        return self.dep_idx[self.dep_ptr[flow] : self.dep_ptr[flow + 1]]

    def dep_rows(self) -> _I64:
        """For every dependency edge, the flow that waits (COO row of the CSR)."""
        return np.repeat(np.arange(len(self), dtype=np.int64), np.diff(self.dep_ptr))

    def _per_host(self, hosts: NDArray[np.int32], weights: _I64 | None) -> _I64:
        out = np.zeros(self.n_hosts, dtype=np.int64)
        np.add.at(out, hosts, 1 if weights is None else weights)
        return out

    def bytes_from(self) -> _I64:
        """Bytes each host sends (exact int64), indexed by host."""
        return self._per_host(self.src, self.nbytes)

    def bytes_to(self) -> _I64:
        """Bytes each host receives (exact int64), indexed by host."""
        return self._per_host(self.dst, self.nbytes)

    def flows_from(self) -> _I64:
        """Number of flows each host sends."""
        return self._per_host(self.src, None)

    def flows_to(self) -> _I64:
        """Number of flows each host receives."""
        return self._per_host(self.dst, None)

    def bytes_per_group(self) -> _I64:
        """Bytes of each group (``max(len(group_names), max(group) + 1)`` rows; -1 excluded)."""
        width = max(len(self.group_names), int(self.group.max(initial=-1)) + 1)
        tagged = self.group >= 0
        out = np.zeros(width, dtype=np.int64)
        np.add.at(out, self.group[tagged], self.nbytes[tagged])
        return out

    def levels(self) -> _I64:
        """Dependency depth of every flow (0: waits for nothing; k: its deepest dependency is at
        depth k-1), or -1 for a flow on or behind a dependency cycle.

        Kahn's algorithm on the CSR, one vectorized pass per level: O(flows + edges) work plus
        numpy overhead per level.
        """
        n = len(self)
        level = np.full(n, -1, dtype=np.int64)
        dep = self.dep_idx
        if np.any((dep < 0) | (dep >= n)):
            raise ValueError("dep_idx out of range; call validate() for details")
        rows = self.dep_rows()
        order = np.argsort(dep, kind="stable")
        succ = rows[order]  # successors grouped by the flow they wait for
        succ_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(dep, minlength=n), out=succ_ptr[1:])
        indeg = np.diff(self.dep_ptr).copy()
        frontier = np.flatnonzero(indeg == 0)
        depth = 0
        while frontier.shape[0]:
            level[frontier] = depth
            starts = succ_ptr[frontier]
            nxt = succ[_ranges(starts, succ_ptr[frontier + 1] - starts)]
            np.subtract.at(indeg, nxt, 1)
            touched = np.unique(nxt)
            frontier = touched[indeg[touched] == 0]
            depth += 1
        return level

    def topological_order(self) -> _I64:
        """Flow indices with every flow after its dependencies (by level, then index).

        Raises ``SpecError`` when there is a cycle."""
        level = self.levels()
        if np.any(level < 0):
            self.validate()
        return np.lexsort((np.arange(len(self)), level))

    def problems(self) -> list[Problem]:
        """Everything wrong with the content, one Problem per kind (``where`` names flows)."""
        out: list[Problem] = []
        n = len(self)

        def flows(mask: NDArray[np.bool_]) -> str:
            bad = np.flatnonzero(mask)
            shown = ", ".join(str(i) for i in bad[:5])
            more = f" and {bad.shape[0] - 5} more" if bad.shape[0] > 5 else ""
            return f"flow {shown}{more}" if bad.shape[0] == 1 else f"flows {shown}{more}"

        for name in ("src", "dst"):
            col: NDArray[np.int32] = getattr(self, name)
            bad = (col < 0) | (col >= self.n_hosts)
            if bad.any():
                out.append(Problem(flows(bad), f"{name} outside hosts 0..{self.n_hosts - 1}"))
        same = self.src == self.dst
        if same.any():
            out.append(Problem(flows(same), "sends to its own host"))
        if (self.nbytes < 0).any():
            out.append(Problem(flows(self.nbytes < 0), "negative nbytes"))
        if (self.barrier & (self.nbytes != 0)).any():
            out.append(Problem(flows(self.barrier & (self.nbytes != 0)), "a barrier with bytes"))
        if (self.start_ps < 0).any():
            out.append(Problem(flows(self.start_ps < 0), "negative start_ps"))
        if (self.group < -1).any():
            out.append(Problem(flows(self.group < -1), "group below -1"))
        dep_bad = (self.dep_idx < 0) | (self.dep_idx >= n)
        if dep_bad.any():
            waiting = np.zeros(n, dtype=bool)
            waiting[self.dep_rows()[dep_bad]] = True
            out.append(Problem(flows(waiting), f"depends on a flow outside 0..{n - 1}"))
        elif n:
            stuck = self.levels() < 0
            if stuck.any():
                out.append(Problem(flows(stuck), "never starts: waits on a dependency cycle"))
        return out

    def validate(self) -> Traffic:
        """Raise ``SpecError`` listing every problem of :meth:`problems`; return ``self``."""
        found = self.problems()
        if found:
            raise SpecError(found)
        return self

    def without_barriers(self) -> Traffic:
        """The same traffic with the barrier flows removed: a flow that waited for a barrier
        waits for the barrier's own dependencies instead (transitively, duplicates dropped).
        The direct form, quadratic in edges; for consumers without barrier flows (htsim)."""
        if not self.barrier.any():
            return self
        n = len(self)
        rows, idx = self.dep_rows(), self.dep_idx
        while True:
            hit = self.barrier[idx]
            if not hit.any():
                break
            through = idx[hit]
            counts = self.dep_ptr[through + 1] - self.dep_ptr[through]
            rows = np.concatenate([rows[~hit], np.repeat(rows[hit], counts)])
            idx = np.concatenate([idx[~hit], self.dep_idx[_ranges(self.dep_ptr[through], counts)]])
        keep = ~self.barrier
        new_id = np.cumsum(keep) - 1
        edge = np.unique(new_id[rows[keep[rows]]] * n + new_id[idx[keep[rows]]])
        kept = int(keep.sum())
        return Traffic(
            src=self.src[keep],
            dst=self.dst[keep],
            nbytes=self.nbytes[keep],
            start_ps=self.start_ps[keep],
            dep_ptr=np.concatenate([[0], np.cumsum(np.bincount(edge // n, minlength=kept))]),
            dep_idx=edge % n,
            group=self.group[keep],
            n_hosts=self.n_hosts,
            group_names=self.group_names,
        )

    def split_flows(self, max_bytes: int) -> Traffic:
        """The same traffic with every flow over ``max_bytes`` cut into a chain of nearly equal
        pieces of at most ``max_bytes``, one after the other (each waits for the one before;
        the first keeps the flow's start and dependencies, and whoever waited for the flow
        waits for its last piece). In a fluid model the chain takes the flow's time on its
        path; for consumers with a size limit (htsim's ``int``)."""
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be >= 1, got {max_bytes}")
        pieces = np.maximum(1, -(-self.nbytes // max_bytes))
        if (pieces == 1).all():
            return self
        n_new = int(pieces.sum())
        first = np.concatenate([[0], np.cumsum(pieces)[:-1]])
        last = first + pieces - 1
        owner = np.repeat(np.arange(len(self)), pieces)
        k = np.arange(n_new) - first[owner]  # piece number within its flow
        base, extra = self.nbytes // pieces, self.nbytes % pieces
        nbytes = base[owner] + (k < extra[owner])
        # dependencies: a first piece takes its flow's (mapped to their last pieces); every
        # other piece waits for the piece before it
        own = np.diff(self.dep_ptr)
        counts = np.where(k == 0, own[owner], 1)
        dep_idx = np.empty(int(counts.sum()), dtype=np.int64)
        ptr = np.concatenate([[0], np.cumsum(counts)])
        heads = np.flatnonzero(k == 0)
        head_pos = _ranges(ptr[heads], counts[heads])
        dep_idx[head_pos] = last[self.dep_idx]
        rest = np.flatnonzero(k > 0)
        dep_idx[ptr[rest]] = rest - 1
        return Traffic(
            src=self.src[owner],
            dst=self.dst[owner],
            nbytes=nbytes,
            start_ps=np.where(k == 0, self.start_ps[owner], 0),
            dep_ptr=ptr,
            dep_idx=dep_idx,
            group=self.group[owner],
            n_hosts=self.n_hosts,
            group_names=self.group_names,
            barrier=self.barrier[owner],
        )

    def canonical_deps(self) -> _I64:
        """``dep_idx`` with each flow's dependencies sorted and duplicates kept."""
        rows = self.dep_rows()
        return self.dep_idx[np.lexsort((self.dep_idx, rows))]

    def __eq__(self, other: object) -> bool:
        """Same flows in the same order with the same dependency sets (order inside a flow's
        dependency list does not matter), the same barrier flows and the same group names."""
        if not isinstance(other, Traffic):
            return NotImplemented
        return (
            self.n_hosts == other.n_hosts
            and self.group_names == other.group_names
            and all(
                np.array_equal(getattr(self, k), getattr(other, k))
                for k in ("src", "dst", "nbytes", "start_ps", "dep_ptr", "group", "barrier")
            )
            and np.array_equal(self.canonical_deps(), other.canonical_deps())
        )

    __hash__ = None  # type: ignore[assignment]


# -- generators -------------------------------------------------------------------------------


def _check_hosts(n: int, least: int, what: str) -> int:
    n = operator.index(n)
    if n < least:
        raise ValueError(f"{what} must be >= {least}, got {n}")
    return n


def _check_bytes(nbytes: int) -> int:
    nbytes = operator.index(nbytes)
    if nbytes < 0:
        raise ValueError(f"nbytes must be >= 0, got {nbytes}")
    return nbytes


def permutation(n_hosts: int, nbytes: int, *, seed: int | np.random.Generator) -> Traffic:
    """A uniformly random derangement: host i sends ``nbytes`` to ``perm[i] != i``; every host
    sends one flow and receives one. Rejection sampling (about e tries of one shuffle each), on
    ``numpy.random.default_rng(seed)``."""
    n = _check_hosts(n_hosts, 2, "n_hosts")
    size = _check_bytes(nbytes)
    rng = np.random.default_rng(seed)
    hosts = np.arange(n)
    while True:
        perm = rng.permutation(n)
        if not np.any(perm == hosts):
            break
    return Traffic.from_arrays(hosts, perm, size, n_hosts=n)


def all_to_all(n_hosts: int, nbytes: int) -> Traffic:
    """Every ordered pair of distinct hosts once, ``nbytes`` each: ``n(n-1)`` flows, ordered by
    source, then destination ``src + k`` (mod n) for k = 1..n-1 (NCCL's rotation)."""
    n = _check_hosts(n_hosts, 1, "n_hosts")
    size = _check_bytes(nbytes)
    src = np.repeat(np.arange(n), n - 1)
    k = np.tile(np.arange(1, n), n)
    return Traffic.from_arrays(src, (src + k) % n, size, n_hosts=n)


def incast(
    n_senders: int, nbytes: int, *, receiver: int = 0, n_hosts: int | None = None
) -> Traffic:
    """``n_senders`` flows of ``nbytes`` to ``receiver``, from the lowest-numbered other hosts.
    ``n_hosts`` defaults to ``n_senders + 1``."""
    k = _check_hosts(n_senders, 1, "n_senders")
    size = _check_bytes(nbytes)
    n = k + 1 if n_hosts is None else _check_hosts(n_hosts, k + 1, "n_hosts")
    receiver = operator.index(receiver)
    if not 0 <= receiver < n:
        raise ValueError(f"receiver {receiver} is not a host 0..{n - 1}")
    others = np.delete(np.arange(n), receiver)[:k]
    return Traffic.from_arrays(others, receiver, size, n_hosts=n)


def ring_all_reduce(n_ranks: int, nbytes: int, *, name: str = "ring all-reduce") -> Traffic:
    """A ring all-reduce of ``nbytes`` (the buffer S on every rank), aggregated: n flows
    ``i -> i+1 (mod n)``, all in group 0.

    Exact integer split, the same as the ring decomposition of the workload stage: the buffer is
    cut into n blocks, block j holding ``S // n + (j < S % n)`` bytes; rank i sends every block
    but its own during the reduce-scatter and every block but block i+1 during the all-gather,
    so ``2S - b_i - b_(i+1)`` bytes, which is ``2(n-1)/n * S`` exactly when n divides S and
    within one byte of it otherwise; the total is exactly ``2(n-1) * S``.
    """
    n = _check_hosts(n_ranks, 2, "n_ranks")
    size = _check_bytes(nbytes)
    ranks = np.arange(n)
    block = size // n + (ranks < size % n)
    volume = 2 * size - block - np.roll(block, -1)
    return Traffic.from_arrays(
        ranks, (ranks + 1) % n, volume, n_hosts=n, group=0, group_names=(name,)
    )


def from_step_flows(
    step_flows: StepFlows,
    ops: Sequence[CollectiveOp],
    *,
    repeat: bool = False,
    n_hosts: int | None = None,
) -> Traffic:
    """The workload stage's flows of one step, aggregated per op and (src, dst, port), ops
    serialized per sending rank, through barrier flows where they save dependency edges (module
    docstring). ``group`` is the op index (-1 for barriers) and ``group_names`` the op names.
    Flows are ordered by op, src, dst, port, followed by the barrier flows ordered by the op they
    open, then rank.

    ``n_hosts`` defaults to one more than the largest rank of any op's groups.
    """
    if len(ops) != step_flows.per_step.shape[0]:
        raise ValueError(
            f"{len(ops)} ops given, the flows were built from {step_flows.per_step.shape[0]}"
        )
    names = tuple(op.name for op in ops)
    if n_hosts is None:
        ranks = [int(op.groups.max(initial=-1)) for op in ops]
        n_hosts = (
            max([*ranks, int(step_flows.src.max(initial=-1)), int(step_flows.dst.max(initial=-1))])
            + 1
        )
    if len(step_flows) == 0:
        return Traffic.from_arrays([], [], [], n_hosts=n_hosts, group_names=names)
    op = step_flows.op.astype(np.int64)
    src = step_flows.src.astype(np.int64)
    dst = step_flows.dst.astype(np.int64)
    port = step_flows.port.astype(np.int64)
    order = np.lexsort((port, dst, src, op))
    keys = np.stack([op[order], src[order], dst[order], port[order]])
    first = np.concatenate([[True], np.any(keys[:, 1:] != keys[:, :-1], axis=0)])
    starts = np.flatnonzero(first)
    g_op, g_src, g_dst = op[order][starts], src[order][starts], dst[order][starts]
    g_bytes = np.add.reduceat(step_flows.nbytes[order].astype(np.int64), starts)
    if repeat:
        g_bytes = np.rint(g_bytes * step_flows.per_step[g_op]).astype(np.int64)

    # Per-rank serialization: flows are already sorted by (op, src); regroup by (src, op) into
    # runs (one rank's flows of one op), each waiting for the rank's previous run.
    m = g_src.shape[0]
    by_rank = np.lexsort((np.arange(m), g_op, g_src))
    r_src, r_op = g_src[by_rank], g_op[by_rank]
    run_first = np.concatenate([[True], (r_src[1:] != r_src[:-1]) | (r_op[1:] != r_op[:-1])])
    run_start = np.flatnonzero(run_first)
    run_len = np.diff(np.append(run_start, m))
    run_of = np.cumsum(run_first) - 1  # run index of each position in by_rank order
    prev_same_rank = np.concatenate([[False], r_src[run_start[1:]] == r_src[run_start[:-1]]])
    prev_start = np.where(prev_same_rank, np.roll(run_start, 1), 0)
    prev_len = np.where(prev_same_rank, np.roll(run_len, 1), 0)
    # a barrier where it saves edges: a*b direct edges against a+b through the barrier
    fenced = np.flatnonzero(prev_same_rank & (prev_len * run_len > prev_len + run_len))
    fenced = fenced[np.lexsort((r_src[run_start[fenced]], r_op[run_start[fenced]]))]
    nb = fenced.shape[0]
    barrier_of_run = np.full(run_start.shape[0], -1, dtype=np.int64)
    barrier_of_run[fenced] = np.arange(nb)
    # each flow's dependencies are one slice of `pool`: the previous run (positions in by_rank
    # order) or one barrier (at m + its number)
    pool = np.concatenate([by_rank, m + np.arange(nb, dtype=np.int64)])
    via = barrier_of_run[run_of] >= 0
    n_deps = np.empty(m + nb, dtype=np.int64)
    dep_from = np.empty(m + nb, dtype=np.int64)
    n_deps[by_rank] = np.where(via, 1, prev_len[run_of])
    dep_from[by_rank] = np.where(via, m + barrier_of_run[run_of], prev_start[run_of])
    n_deps[m:] = prev_len[fenced]
    dep_from[m:] = prev_start[fenced]
    dep_ptr = np.concatenate([[0], np.cumsum(n_deps)])
    dep_idx = pool[_ranges(dep_from, n_deps)]
    first_next = by_rank[run_start[fenced]]  # the rank's first flow of the op after the barrier
    return Traffic(
        src=np.concatenate([g_src, g_src[first_next]]).astype(np.int32),
        dst=np.concatenate([g_dst, g_dst[first_next]]).astype(np.int32),
        nbytes=np.concatenate([g_bytes, np.zeros(nb, dtype=np.int64)]),
        start_ps=np.zeros(m + nb, dtype=np.int64),
        dep_ptr=dep_ptr,
        dep_idx=dep_idx,
        group=np.concatenate([g_op, np.full(nb, -1)]).astype(np.int32),
        n_hosts=n_hosts,
        group_names=names,
        barrier=np.arange(m + nb) >= m,
    )
