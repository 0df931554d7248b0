"""NCCL-style collective algorithms decomposed into point-to-point flows.

:func:`decompose` turns one collective on a group of ranks into a :class:`Flows` table (struct of
read-only numpy arrays, one row per flow): who sends how many bytes to whom, at which algorithm
step, after which other flows. It is the input the simulators consume. Everything is vectorized
numpy; no Python loop runs per flow (only per step, phase or chunk).

Sizes follow the nccl-tests conventions (``nbytes`` is the ``size`` column of nccl-tests):

============== ================================================================================
all-reduce     the buffer size S on every rank
all-gather     the OUTPUT size S; each rank contributes S/n
reduce-scatter the INPUT size S; each rank ends with S/n
all-to-all     the send buffer S of each rank, S/n to each peer (its own share stays local)
send-recv      S bytes from ``ranks[2i]`` to ``ranks[2i+1]`` for every pair i (usually one pair)
============== ================================================================================

Integer sizes, exact totals. The buffer is first cut into ``chunks`` pipeline chunks (capped at
``nbytes`` so that no chunk is empty), then each chunk of ``s`` bytes into ``P`` blocks with the
``numpy.array_split`` rule: block ``j`` holds ``s // P + (j < s % P)`` bytes. Nothing is ever a
fractional byte; per-rank volumes match the closed forms below up to that rounding, and exactly
when ``S`` is a multiple of ``n * chunks``. All-to-all rotates the remainder instead (the share
from position ``i`` to ``j`` gets the extra byte when ``(j - i) % n < s % n``) so that every rank
sends and receives the same volume.

Bytes sent per rank (S = nbytes, n = group size, m = nodes, L = ranks per node); up to the
rounding above, with exact totals:

- all-reduce, ring and hierarchical: ``2(n-1)/n * S`` (total ``2(n-1) * S``); hierarchical
  sends ``2(m-1)/n * S`` of it between nodes, always to the same local index (rail).
- all-reduce, tree: ``H_0 * deg_0 + H_1 * deg_1``, with ``H_t`` the bytes of half t and
  ``deg_t`` the rank's number of neighbours in tree t (1 for a leaf, up to 3), so between S and
  2S per rank (2S for a leaf of one tree that is a full inner node of the other); the rank
  receives as much; total ``2(n-1) * S``, the same as ring.
- all-gather and reduce-scatter, ring, hierarchical and pat: ``(n-1)/n * S`` (total
  ``(n-1) * S``). All-gather: every rank receives exactly S minus its own contribution.
- all-to-all: ``(n-1)/n * S``, the same for every rank, sent and received.
- send-recv: S from the first rank of each pair.

The ``busbw`` factors of nccl-tests (``doc/PERFORMANCE.md``) are in :func:`bus_bandwidth_factor`.

Algorithms (positions ``0..n-1`` index ``ranks``; flows carry the global rank ids):

ring
    Position ``i`` sends to ``i + 1`` (mod n) at every step. Reduce-scatter step ``k`` sends
    block ``i - 1 - k`` (so position ``i`` ends owning block ``i``, as in NCCL's output layout);
    all-gather step ``k`` sends block ``i - k``; all-reduce is reduce-scatter then all-gather.
tree (all-reduce)
    NCCL's double binary tree (``ncclGetDtree``), see :func:`double_binary_tree`. Each chunk is
    split into two halves (blocks 0 and 1); half ``t`` is reduced up tree ``t`` to its root and
    broadcast back down it. A rank's up-flow waits for its children's up-flows; a down-flow waits
    for the down-flow into its sender, or, from the root, for the root's children's up-flows.
    Steps: the up-flow of a rank of height h (leaves 0) at step h, the down-flow into a rank of
    depth d at step ``H + d - 1`` (H: the root's height); the two trees run side by side.
    Built over the group's ranks as NCCL builds it over nodes; ``ranks_per_node`` is not used.
hierarchical (all-reduce, all-gather, reduce-scatter)
    Nodes are ``ranks_per_node`` consecutive positions; position ``p = node * L + local``. The
    fine blocks of a chunk are the ``n`` positions, block ``node * L + local``; the *shard* of
    local index ``l`` is the ``m`` blocks ``{d * L + l}``. All-reduce: intra-node ring
    reduce-scatter of shards (local ``l`` ends owning shard ``l``), inter-node ring all-reduce of
    shard ``l`` among the ranks of local index ``l`` (the same rail), intra-node ring all-gather
    of shards. Reduce-scatter: intra-node reduce-scatter then inter-node reduce-scatter;
    all-gather: inter-node all-gather then intra-node all-gather. Phases run one after the
    other (their steps are numbered consecutively).
pat (all-gather, reduce-scatter)
    Bruck-style, ``ceil(log2 n)`` steps. All-gather step ``k``: position ``i`` sends to
    ``i + 2^k`` the ``c_k = min(2^k, n - 2^k)`` blocks ``i - c_k + 1 .. i`` (mod n) it holds, so
    every rank receives each other block exactly once. Reduce-scatter is the mirror image: the
    all-gather run backwards in time with every flow reversed, then positions relabelled
    ``p -> -p mod n`` so that sends still go to ``i + 2^k`` (distances 2^(K-1), ..., 2, 1); it
    reduces instead of copying. This models the logarithmic step count and per-rank volume of
    NCCL's PAT, not its exact buffer schedule.
direct (all-to-all, send-recv)
    One step. All-to-all flows are ordered by source, then destination ``src + k`` (mod n) for
    ``k = 1..n-1`` (NCCL's rotation, which spreads incast); a rank's share to itself is no flow.

Dependencies, steps and chunks. ``dep_ptr``/``dep_idx`` are a CSR list: flow ``i`` may start once
the flows ``dep_idx[dep_ptr[i]:dep_ptr[i+1]]`` have arrived. A flow depends on the flows that
brought its sender the data it sends: the flow into the sender at the previous step of a ring,
the earlier inflows whose blocks it forwards (pat), the children's up-flows (tree), and the flows
that made the sender's own data ready in the previous phase, where a phase sends that data (every
reduce-scatter step; the first all-gather step). Own data is ready after a reduce-scatter phase
once the last inflow arrived, after an all-gather phase once all inflows arrived.

With ``chunks > 1`` (NCCL slices on one channel) each chunk runs the same flows on its own part
of the buffer, and a chunk's flow also depends on the same flow (same sender, receiver and
algorithm step) of the previous chunk. ``step`` is the pipeline step: algorithm step ``k`` of
chunk ``c`` has ``step == k + c``. Every dependency has a strictly smaller step, so flows of one
step may run together; flows are sorted by step (then chunk), so every dependency index is
smaller than the flow's own index: index order is a topological order.

Block annotations (for simulators and for the data-flow tests). Flow ``i`` carries chunk
``chunk[i]`` and, within it, the blocks ``(block[i] + k * block_stride[i]) % n_blocks`` for
``k < block_count[i]`` (see :meth:`Flows.blocks`). ``n_blocks`` is ``n`` (ring, hierarchical,
pat, all-to-all: block ``j`` is position ``j``'s block, or for all-to-all the share destined to
position ``j``), 2 for tree (the two halves) and 1 for send-recv. ``reduce[i]`` says whether the
receiver adds the data into its own copy (reduce-scatter phases, tree up) or just stores it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "Algorithm",
    "Collective",
    "Flows",
    "bus_bandwidth_factor",
    "decompose",
    "double_binary_tree",
    "supported",
]

_I64 = NDArray[np.int64]
_Pos = NDArray[np.signedinteger[Any]]  # positions: int64, or int32 for the largest templates
_E = TypeVar("_E", bound=StrEnum)
_INT32_MAX = int(np.iinfo(np.int32).max)
_INT64_MAX = int(np.iinfo(np.int64).max)
#: float64 sums of non-negative integers are exact while the total stays below this
_EXACT_FLOAT = 2**53


class Collective(StrEnum):
    ALL_REDUCE = "all-reduce"
    ALL_GATHER = "all-gather"
    REDUCE_SCATTER = "reduce-scatter"
    ALL_TO_ALL = "all-to-all"
    SEND_RECV = "send-recv"


class Algorithm(StrEnum):
    RING = "ring"
    TREE = "tree"
    HIERARCHICAL = "hierarchical"
    DIRECT = "direct"
    PAT = "pat"


_SUPPORTED: dict[Collective, tuple[Algorithm, ...]] = {
    Collective.ALL_REDUCE: (Algorithm.RING, Algorithm.TREE, Algorithm.HIERARCHICAL),
    Collective.ALL_GATHER: (Algorithm.RING, Algorithm.HIERARCHICAL, Algorithm.PAT),
    Collective.REDUCE_SCATTER: (Algorithm.RING, Algorithm.HIERARCHICAL, Algorithm.PAT),
    Collective.ALL_TO_ALL: (Algorithm.DIRECT,),
    Collective.SEND_RECV: (Algorithm.DIRECT,),
}


def supported(collective: Collective | str) -> tuple[Algorithm, ...]:
    """The algorithms :func:`decompose` implements for ``collective``."""
    return _SUPPORTED[_parse(Collective, collective, "collective")]


def bus_bandwidth_factor(collective: Collective | str, n: int) -> float:
    """busbw / algbw of nccl-tests (``doc/PERFORMANCE.md``) for a group of ``n`` ranks.

    all-reduce ``2(n-1)/n``; all-gather, reduce-scatter and all-to-all ``(n-1)/n``; send-recv 1.
    """
    coll = _parse(Collective, collective, "collective")
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"a group has at least one rank, got n={n}")
    if coll is Collective.ALL_REDUCE:
        return 2 * (n - 1) / n
    if coll is Collective.SEND_RECV:
        return 1.0
    return (n - 1) / n


def _frozen(a: NDArray[Any]) -> NDArray[Any]:
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class Flows:
    """Point-to-point flows of one or more collectives. Struct of arrays, one row per flow.

    ``src``/``dst`` are global ranks, ``nbytes`` the flow's size, ``step`` its pipeline step,
    ``dep_ptr``/``dep_idx`` the CSR list of the flows it waits for (indices into this table).
    ``chunk``, ``block``, ``block_count``, ``block_stride``, ``reduce`` and ``n_blocks`` annotate
    which part of the buffer a flow carries and what the receiver does with it (module docstring);
    :meth:`from_arrays` leaves them blank (``block == -1``, ``n_blocks == 0``).

    Arrays built by this module are read-only. A column that is constant (``step``, ``dep_ptr``
    or even ``nbytes`` of an all-to-all) may be a zero-stride broadcast view, which costs no
    memory for millions of flows; ``np.ascontiguousarray`` gives a plain copy if one is needed.
    """

    src: NDArray[np.int32]
    dst: NDArray[np.int32]
    nbytes: NDArray[np.int64]
    step: NDArray[np.int32]
    dep_ptr: NDArray[np.int64]
    dep_idx: NDArray[np.int64]
    chunk: NDArray[np.int32]
    block: NDArray[np.int32]
    block_count: NDArray[np.int32]
    block_stride: NDArray[np.int32]
    reduce: NDArray[np.bool_]
    n_blocks: int = 0

    def __post_init__(self) -> None:
        n = self.src.shape[0]
        per_flow = ("dst", "nbytes", "step", "chunk", "block", "block_count", "block_stride")
        for name in (*per_flow, "reduce"):
            if getattr(self, name).shape != (n,):
                raise ValueError(f"Flows.{name} has shape {getattr(self, name).shape}, not ({n},)")
        if self.dep_ptr.shape != (n + 1,) or int(self.dep_ptr[-1]) != self.dep_idx.shape[0]:
            raise ValueError("Flows.dep_ptr needs len(flows) + 1 entries ending at len(dep_idx)")

    # --- construction -------------------------------------------------------------------------

    @classmethod
    def empty(cls, n_blocks: int = 0) -> Flows:
        """No flows."""
        return cls.from_arrays([], [], [], n_blocks=n_blocks)

    @classmethod
    def from_arrays(
        cls,
        src: ArrayLike,
        dst: ArrayLike,
        nbytes: ArrayLike,
        *,
        step: ArrayLike | None = None,
        dep_ptr: ArrayLike | None = None,
        dep_idx: ArrayLike | None = None,
        n_blocks: int = 0,
    ) -> Flows:
        """Flows from plain arrays (copied), e.g. hand-written ones in a simulator's tests.

        ``step`` defaults to 0 and dependencies to none; block annotations are left blank.
        """
        s = np.array(src, dtype=np.int32).reshape(-1)
        n = s.shape[0]
        ptr = np.zeros(n + 1, dtype=np.int64) if dep_ptr is None else np.array(dep_ptr, np.int64)
        idx = np.zeros(0, dtype=np.int64) if dep_idx is None else np.array(dep_idx, np.int64)
        arrays: dict[str, NDArray[Any]] = dict(
            src=s,
            dst=np.array(dst, dtype=np.int32).reshape(-1),
            nbytes=np.array(nbytes, dtype=np.int64).reshape(-1),
            step=np.zeros(n, np.int32) if step is None else np.array(step, np.int32).reshape(-1),
            dep_ptr=ptr.reshape(-1),
            dep_idx=idx.reshape(-1),
            chunk=np.zeros(n, dtype=np.int32),
            block=np.full(n, -1, dtype=np.int32),
            block_count=np.zeros(n, dtype=np.int32),
            block_stride=np.ones(n, dtype=np.int32),
            reduce=np.zeros(n, dtype=np.bool_),
        )
        for a in arrays.values():
            _frozen(a)
        return cls(**arrays, n_blocks=n_blocks)

    @classmethod
    def concat(cls, parts: Sequence[Flows]) -> Flows:
        """The flows of ``parts`` in one table, dependency indices re-based.

        Parts stay independent (no dependency is added between them) and keep their steps: use
        :meth:`shift_steps` to place one after another. Block annotations are kept as they are;
        they refer to each part's own buffer. ``n_blocks`` is kept when all parts agree, else 0.
        """
        if not parts:
            return cls.empty()
        sizes = np.array([len(p) for p in parts], dtype=np.int64)
        flow_base = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        dep_base = np.concatenate([[0], np.cumsum([p.n_deps for p in parts])[:-1]])
        ptr = np.concatenate(
            [np.zeros(1, np.int64)]
            + [p.dep_ptr[1:] + int(b) for p, b in zip(parts, dep_base, strict=True)]
        )
        idx = np.concatenate(
            [np.zeros(0, np.int64)]
            + [p.dep_idx + int(b) for p, b in zip(parts, flow_base, strict=True)]
        )
        blocks = {p.n_blocks for p in parts}
        names = ("src", "dst", "nbytes", "step", "chunk", "block", "block_count", "block_stride")
        arrays: dict[str, NDArray[Any]] = {
            name: np.concatenate([getattr(p, name) for p in parts]) for name in names
        }
        arrays["reduce"] = np.concatenate([p.reduce for p in parts])
        arrays["dep_ptr"] = ptr.astype(np.int64, copy=False)
        arrays["dep_idx"] = idx.astype(np.int64, copy=False)
        for a in arrays.values():
            _frozen(a)
        return cls(**arrays, n_blocks=blocks.pop() if len(blocks) == 1 else 0)

    def shift_steps(self, offset: int) -> Flows:
        """The same flows with ``offset`` added to every step (to run after ``offset`` steps)."""
        step = self.step.astype(np.int64) + int(offset)
        if step.size and (int(step.min()) < 0 or int(step.max()) > _INT32_MAX):
            raise ValueError(f"shifting steps by {offset} leaves the int32 step range")
        arrays = {f: getattr(self, f) for f in self.__dataclass_fields__}
        arrays["step"] = _frozen(step.astype(np.int32))
        return Flows(**arrays)

    # --- queries ------------------------------------------------------------------------------

    def __len__(self) -> int:
        return int(self.src.shape[0])

    @property
    def n_deps(self) -> int:
        return int(self.dep_idx.shape[0])

    @property
    def n_steps(self) -> int:
        """One more than the largest step (0 without flows)."""
        return int(self.step.max()) + 1 if len(self) else 0

    @property
    def total_bytes(self) -> int:
        return int(self.nbytes.sum(dtype=np.int64))

    def deps(self, i: int) -> _I64:
        """Indices of the flows flow ``i`` waits for."""
        return self.dep_idx[self.dep_ptr[i] : self.dep_ptr[i + 1]]

    def blocks(self, i: int) -> _I64:
        """The blocks (within chunk ``chunk[i]``) flow ``i`` carries; empty if not annotated."""
        if self.n_blocks <= 0 or self.block[i] < 0:
            return np.zeros(0, dtype=np.int64)
        k = np.arange(int(self.block_count[i]), dtype=np.int64)
        return (int(self.block[i]) + k * int(self.block_stride[i])) % self.n_blocks

    def bytes_sent_per_rank(self, n_ranks: int) -> _I64:
        """Bytes each rank ``0..n_ranks-1`` sends, summed exactly."""
        return _sum_by(self.src, self.nbytes, n_ranks)

    def bytes_received_per_rank(self, n_ranks: int) -> _I64:
        """Bytes each rank ``0..n_ranks-1`` receives, summed exactly."""
        return _sum_by(self.dst, self.nbytes, n_ranks)

    def validate(self) -> None:
        """Raise ``ValueError`` unless the table is well formed: sizes not negative, no flow to
        itself, dependency indices in range and every dependency at a strictly smaller step
        (which makes the dependency graph acyclic)."""
        n = len(self)
        if n and int(self.nbytes.min()) < 0:
            raise ValueError("negative flow size")
        if np.any(self.src == self.dst):
            raise ValueError(f"flow {int(np.argmax(self.src == self.dst))} goes to its own rank")
        if np.any(np.diff(self.dep_ptr) < 0):
            raise ValueError("dep_ptr is not monotone")
        if self.n_deps:
            if int(self.dep_idx.min()) < 0 or int(self.dep_idx.max()) >= n:
                raise ValueError("dependency index out of range")
            owner = np.repeat(np.arange(n), np.diff(self.dep_ptr))
            late = self.step[self.dep_idx] >= self.step[owner]
            if np.any(late):
                i = int(owner[np.argmax(late)])
                raise ValueError(f"flow {i} depends on a flow at the same or a later step")


def _sum_by(key: NDArray[np.int32], weight: _I64, n: int) -> _I64:
    n = operator.index(n)
    if key.size and int(key.max()) >= n:
        raise ValueError(f"rank {int(key.max())} is outside 0..{n - 1}")
    if int(weight.sum(dtype=np.int64)) < _EXACT_FLOAT:  # float64 partial sums stay exact
        return np.bincount(key, weights=weight, minlength=n).astype(np.int64)
    out = np.zeros(n, dtype=np.int64)
    np.add.at(out, key, weight)
    return out


def double_binary_tree(n: int) -> tuple[NDArray[np.int32], NDArray[np.int32]]:
    """Parents of positions ``0..n-1`` in NCCL's two complementary binary trees (-1: root).

    Tree 0 is NCCL's in-order binary tree (``ncclGetBtree``), rooted at 0: with ``b`` the lowest
    set bit of ``r``, the parent of ``r`` is ``(r ^ b) | (b << 1)``, or ``r ^ b`` when that is
    out of range. Tree 1 (``ncclGetDtree``) is tree 0 mirrored, ``r -> n-1-r`` (root ``n-1``),
    when n is even, and tree 0 shifted by one, ``r -> r+1 mod n`` (root 1), when n is odd.
    The trees are complementary: for even n every rank is a leaf in exactly one of them; for
    odd n too, except rank 0, inner in both (the root of tree 0 has a single child). Each node
    has at most two children.

    For n = 12, tree 0 is 0 -> 8; 8 -> 4, 10; 4 -> 2, 6; 2 -> 1, 3; 6 -> 5, 7; 10 -> 9, 11,
    and tree 1 its mirror image rooted at 11.
    """
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"a group has at least one rank, got n={n}")
    r = np.arange(n, dtype=np.int64)
    tree0 = _btree_parent(r, n)
    if n % 2:
        u = _btree_parent((r - 1) % n, n)
        tree1 = np.where(u < 0, -1, (u + 1) % n)
    else:
        u = _btree_parent(n - 1 - r, n)
        tree1 = np.where(u < 0, -1, n - 1 - u)
    return _frozen(tree0.astype(np.int32)), _frozen(tree1.astype(np.int32))


def _btree_parent(r: _I64, n: int) -> _I64:
    low = r & -r
    up = (r ^ low) | (low << 1)
    up = np.where(up >= n, r ^ low, up)
    return np.where(r == 0, -1, up).astype(np.int64)


# --- decomposition --------------------------------------------------------------------------


def decompose(
    collective: Collective | str,
    algorithm: Algorithm | str,
    ranks: Sequence[int] | NDArray[np.integer[Any]],
    nbytes: int,
    *,
    ranks_per_node: int = 1,
    chunks: int = 1,
) -> Flows:
    """The flows of ``collective`` run with ``algorithm`` over ``ranks`` (in that order).

    ``nbytes`` follows nccl-tests (module docstring). ``ranks_per_node`` groups consecutive ranks
    into nodes for the hierarchical algorithm (ignored by the others). ``chunks`` pipelines the
    buffer into that many chunks (at most ``nbytes``). A group of one rank, or zero bytes, gives
    no flows. Send-recv takes ``ranks`` as pairs ``(ranks[2i] -> ranks[2i+1])``; the same rank
    may appear in several pairs. Every other collective needs distinct ranks.

    Raises ``ValueError`` on an algorithm the collective does not support, bad ranks, sizes or
    chunking, or a group that ``ranks_per_node`` does not divide (callers translate it into
    their own error at their boundary).
    """
    coll = _parse(Collective, collective, "collective")
    algo = _parse(Algorithm, algorithm, "algorithm")
    if algo not in _SUPPORTED[coll]:
        names = ", ".join(a.value for a in _SUPPORTED[coll])
        raise ValueError(f"{coll.value} has no {algo.value} algorithm (supported: {names})")
    pos_ranks = _check_ranks(ranks, distinct=coll is not Collective.SEND_RECV)
    n = int(pos_ranks.shape[0])
    nbytes = operator.index(nbytes)
    chunks = operator.index(chunks)
    ranks_per_node = operator.index(ranks_per_node)
    if nbytes < 0:
        raise ValueError(f"nbytes must be >= 0, got {nbytes}")
    if chunks < 1:
        raise ValueError(f"chunks must be >= 1, got {chunks}")
    if ranks_per_node < 1:
        raise ValueError(f"ranks_per_node must be >= 1, got {ranks_per_node}")
    if nbytes and nbytes > _INT64_MAX // (2 * n):
        raise ValueError(f"nbytes={nbytes} too large: the total traffic would overflow int64")
    if coll is Collective.SEND_RECV:
        if n % 2:
            raise ValueError(f"send-recv takes pairs of ranks (src, dst), got {n} ranks")
        same = pos_ranks[0::2] == pos_ranks[1::2]
        if np.any(same):
            raise ValueError(f"send-recv pair {int(np.argmax(same))} sends to its own rank")
    if algo is Algorithm.HIERARCHICAL and n % ranks_per_node:
        raise ValueError(
            f"hierarchical {coll.value}: {n} ranks are not a whole number of nodes of "
            f"ranks_per_node={ranks_per_node}"
        )

    template = _template(coll, algo, n, ranks_per_node)
    if len(template.src) == 0 or nbytes == 0:
        return Flows.empty(template.n_blocks)
    return _assemble(template, pos_ranks, _split(nbytes, min(chunks, nbytes)))


def _parse(kind: type[_E], value: _E | str, what: str) -> _E:
    try:
        return kind(value)
    except ValueError:
        names = ", ".join(m.value for m in kind)
        raise ValueError(f"unknown {what} {value!r} (one of: {names})") from None


def _check_ranks(ranks: Sequence[int] | NDArray[np.integer[Any]], *, distinct: bool) -> _I64:
    arr = np.asarray(ranks)
    if arr.ndim != 1:
        raise ValueError(f"ranks must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError("ranks is empty: a group has at least one rank")
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"ranks must be integers, got dtype {arr.dtype}")
    out = arr.astype(np.int64)
    if int(out.min()) < 0 or int(out.max()) > _INT32_MAX:
        raise ValueError(f"ranks must lie in 0..{_INT32_MAX}")
    if distinct and np.unique(out).shape[0] != out.shape[0]:
        raise ValueError("ranks must be distinct")
    return out


def _split(total: int, parts: int) -> _I64:
    """``total`` in ``parts`` integer parts, the first ``total % parts`` one larger."""
    q, r = divmod(total, parts)
    return q + (np.arange(parts, dtype=np.int64) < r)


@dataclass(frozen=True, eq=False)
class _Template:
    """The flows of one chunk over positions ``0..n-1``, sorted by step; ``sizes(s)`` gives
    their byte counts for a chunk of ``s`` bytes."""

    src: _Pos
    dst: _Pos
    step: _I64
    dep_ptr: _I64
    dep_idx: _I64
    block: _Pos
    count: _I64
    stride: _I64
    reduce: NDArray[np.bool_]
    n_blocks: int
    sizes: Callable[[int], _I64]


def _template(coll: Collective, algo: Algorithm, n: int, per_node: int) -> _Template:
    if coll is Collective.SEND_RECV:
        return _send_recv(n)
    if n == 1:
        return _Phases(1).template()
    if coll is Collective.ALL_TO_ALL:
        return _all_to_all(n)
    if algo is Algorithm.TREE:
        return _tree(n)
    if algo is Algorithm.PAT:
        ag = _pat_all_gather(n)
        return ag if coll is Collective.ALL_GATHER else _mirror(ag)
    if algo is Algorithm.RING:
        per_node = n  # one node: the hierarchical phases reduce to the flat ring
    return _hierarchical(coll, n, per_node)


def _canonical_sizes(
    start: _I64, count: _I64, stride: _I64, n_blocks: int
) -> Callable[[int], _I64]:
    """Byte counts of block sets ``{(start + k*stride) % P : k < count}`` for a chunk of ``s``
    bytes cut into ``P = n_blocks`` blocks by the ``array_split`` rule. Members reach at most
    ``2P - 1`` before the modulo (a wrapping run of stride 1, or a strided set that does not
    wrap)."""

    def ap_count(lo: int, hi: int) -> _I64:  # members of the progression in [lo, hi)
        def below(x: int) -> _I64:
            k: _I64 = -((start - x) // stride)
            return np.minimum(np.maximum(k, 0), count)

        return below(hi) - below(lo)

    def sizes(s: int) -> _I64:
        q, r = divmod(s, n_blocks)
        if single:
            return q + (start < r).astype(np.int64)
        extra = ap_count(0, r) + ap_count(n_blocks, n_blocks + r) if r else 0
        return (count * q + extra).astype(np.int64)

    single = bool(np.all(count == 1))
    return sizes


# --- ring phases (ring and hierarchical) ------------------------------------------------------


class _Phases:
    """Ring phases run one after another over groups of positions.

    Each position keeps the list of flows that made its own data ready (``ready``). A
    reduce-scatter step sends the sender's own data reduced with what it received at the previous
    step, so it waits for both; an all-gather step forwards what it received, except the first,
    which sends the sender's own (ready) data. After a reduce-scatter phase a position's data is
    ready once its last inflow arrived; after an all-gather phase, once all its inflows arrived.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self.cols: dict[str, list[NDArray[Any]]] = {}
        self.n_flows = 0
        self.n_steps = 0
        self.ready = np.zeros((n, 0), dtype=np.int64)

    def ring(
        self, groups: _I64, *, reduce: bool, scale: int, offset: int, count: int, stride: int
    ) -> None:
        """One ring reduce-scatter (``reduce``) or all-gather over each row of ``groups``.

        At step ``k`` member ``j`` of ring ``g`` sends to member ``j + 1`` the ring block
        ``j - 1 - k`` (reduce-scatter) or ``j - k`` (all-gather), mod the ring size; ring block
        ``b`` is the block set starting at ``b * scale + g * offset`` (``count``, ``stride``).
        """
        n_groups, m = groups.shape
        if m < 2:
            return
        n_steps, per = m - 1, n_groups * m
        # within a step, member (g, j) is flow g*m + j; the flow into it is the one out of j - 1
        j = np.tile(np.arange(m, dtype=np.int64), n_groups)
        g = np.repeat(np.arange(n_groups, dtype=np.int64), m)
        prev = g * m + np.where(j == 0, m - 1, j - 1)
        nxt = g * m + np.where(j == m - 1, 0, j + 1)
        flat = groups.reshape(-1)
        k = np.arange(n_steps, dtype=np.int64)[:, None]
        ring_block = j[None, :] - k - int(reduce)  # >= -(m - 1): one wrap at most
        ring_block += np.where(ring_block < 0, m, 0)
        start = ring_block * scale + (g * offset)[None, :]

        base = self.n_flows
        ready = self.ready[flat]  # (per, w): flows this member's own data waits for
        inflow = base + k[:-1] * per + prev[None, :]  # into each member at steps 0..n-2
        if reduce:
            w = ready.shape[1]
            rest = np.empty((n_steps - 1, per, w + 1), dtype=np.int64)
            rest[:, :, :w] = ready[None, :, :]
            rest[:, :, w] = inflow
        else:
            rest = inflow[:, :, None]
        f = n_steps * per
        deg = np.full(f, rest.shape[2], dtype=np.int64)
        deg[:per] = ready.shape[1]
        self._add(
            src=np.tile(flat, n_steps),
            dst=np.tile(flat[nxt], n_steps),
            step=np.repeat(np.arange(self.n_steps, self.n_steps + n_steps, dtype=np.int64), per),
            block=start.ravel(),
            count=np.full(f, count, dtype=np.int64),
            stride=np.full(f, stride if count > 1 else 1, dtype=np.int64),
            reduce=np.full(f, reduce),
            deg=deg,
            idx=np.concatenate([ready.ravel(), rest.ravel()]),
        )

        last = n_steps - 1 if reduce else 0
        into = base + np.arange(last, n_steps, dtype=np.int64)[None, :] * per + prev[:, None]
        new = np.empty((self.n, into.shape[1]), dtype=np.int64)
        new[flat] = into
        self.ready = np.concatenate([self.ready, new], axis=1)
        self.n_flows += f
        self.n_steps += n_steps

    def _add(self, **cols: NDArray[Any]) -> None:
        for name, col in cols.items():
            self.cols.setdefault(name, []).append(col)

    def template(self) -> _Template:
        def col(name: str, dtype: type[np.generic] = np.int64) -> NDArray[Any]:
            parts = self.cols.get(name, [])
            return np.concatenate(parts, dtype=dtype) if parts else np.zeros(0, dtype)

        deg = col("deg")
        start, count, stride = col("block"), col("count"), col("stride")
        return _Template(
            src=col("src"),
            dst=col("dst"),
            step=col("step"),
            dep_ptr=np.concatenate([np.zeros(1, np.int64), np.cumsum(deg)]),
            dep_idx=col("idx"),
            block=start,
            count=count,
            stride=stride,
            reduce=col("reduce", np.bool_),
            n_blocks=self.n,
            sizes=_canonical_sizes(start, count, stride, self.n),
        )


def _hierarchical(coll: Collective, n: int, per_node: int) -> _Template:
    """Ring (one node of ``n``) or hierarchical phases; fine block ``node * L + local``.

    Intra-node rings (rows of ``pos``) move shards ``{d * L + sigma}``; inter-node rings
    (columns: one rail) move single blocks ``b * L + local``.
    """
    size, nodes = per_node, n // per_node
    pos = np.arange(n, dtype=np.int64).reshape(nodes, size)  # [node, local]
    intra = dict(scale=1, offset=0, count=nodes, stride=size)
    inter = dict(scale=size, offset=1, count=1, stride=1)
    phases = _Phases(n)
    if coll is not Collective.ALL_GATHER:
        phases.ring(pos, reduce=True, **intra)
        phases.ring(pos.T, reduce=True, **inter)
    if coll is not Collective.REDUCE_SCATTER:
        phases.ring(pos.T, reduce=False, **inter)
        phases.ring(pos, reduce=False, **intra)
    return phases.template()


# --- pat --------------------------------------------------------------------------------------


def _pat_all_gather(n: int) -> _Template:
    """Bruck all-gather: step k, position i sends blocks i-c+1..i to i + 2^k (module doc)."""
    n_steps = (n - 1).bit_length()  # ceil(log2 n)
    i = np.arange(n, dtype=np.int64)
    cols: dict[str, list[_I64]] = {n_: [] for n_ in ("src", "dst", "step", "block", "count")}
    deg: list[_I64] = []
    idx: list[_I64] = []
    for k in range(n_steps):
        d = 1 << k
        c = min(d, n - d)
        cols["src"].append(i)
        cols["dst"].append((i + d) % n)
        cols["step"].append(np.full(n, k, dtype=np.int64))
        cols["block"].append((i - c + 1) % n)
        cols["count"].append(np.full(n, c, dtype=np.int64))
        # it forwards the blocks that arrived at steps j < k with 2^j < c (distance 2^j..)
        earlier = [jj for jj in range(k) if (1 << jj) < c]
        rows = [jj * n + (i - (1 << jj)) % n for jj in earlier]
        deg.append(np.full(n, len(earlier), dtype=np.int64))
        idx.append(np.stack(rows, axis=1).ravel() if rows else np.zeros(0, np.int64))
    src, dst = np.concatenate(cols["src"]), np.concatenate(cols["dst"])
    start, count = np.concatenate(cols["block"]), np.concatenate(cols["count"])
    stride = np.ones_like(start)
    return _Template(
        src=src,
        dst=dst,
        step=np.concatenate(cols["step"]),
        dep_ptr=np.concatenate([np.zeros(1, np.int64), np.cumsum(np.concatenate(deg))]),
        dep_idx=np.concatenate(idx),
        block=start,
        count=count,
        stride=stride,
        reduce=np.zeros(src.shape[0], dtype=np.bool_),
        n_blocks=n,
        sizes=_canonical_sizes(start, count, stride, n),
    )


def _mirror(ag: _Template) -> _Template:
    """Reduce-scatter from an all-gather: reverse time and every flow (a flow that waited for
    another is now waited for by it), then relabel positions ``p -> -p mod n``."""
    n = ag.n_blocks
    n_steps = int(ag.step[-1]) + 1
    src = (-ag.dst) % n
    step = n_steps - 1 - ag.step
    new = step * n + src  # steps stay n flows wide; sorted by step, then sender
    order = np.empty_like(new)
    order[new] = np.arange(new.shape[0])
    start = (-(ag.block + ag.count - 1)) % n
    owner = np.repeat(np.arange(ag.src.shape[0]), np.diff(ag.dep_ptr))
    rows, cols = new[ag.dep_idx], new[owner]  # reversed: the old prerequisite now waits
    srt = np.lexsort((cols, rows))
    count, stride = ag.count[order], ag.stride[order]
    return _Template(
        src=src[order],
        dst=((-ag.src) % n)[order],
        step=step[order],
        dep_ptr=np.concatenate(
            [np.zeros(1, np.int64), np.cumsum(np.bincount(rows, minlength=new.shape[0]))]
        ),
        dep_idx=cols[srt],
        block=start[order],
        count=count,
        stride=stride,
        reduce=np.ones(new.shape[0], dtype=np.bool_),
        n_blocks=n,
        sizes=_canonical_sizes(start[order], count, stride, n),
    )


# --- tree -------------------------------------------------------------------------------------


def _tree(n: int) -> _Template:
    """Double binary tree all-reduce: half t up and down tree t (module docstring)."""
    parts: list[tuple[_I64, ...]] = []  # per tree: src, dst, step, tree, up flag
    pairs: list[tuple[_I64, _I64]] = []  # (flow, prerequisite), indices before sorting
    base = 0
    for t, parent32 in enumerate(double_binary_tree(n)):
        parent = parent32.astype(np.int64)
        child = np.flatnonzero(parent >= 0)  # every non-root: one up-flow, one down-flow
        height, depth = _levels(parent)
        root_height = int(height[parent < 0][0])
        e = child.shape[0]
        up = base + np.arange(e, dtype=np.int64)  # up-flow of child[x]
        down = up + e  # down-flow into child[x]
        up_of = np.full(n, -1, dtype=np.int64)
        up_of[child] = up
        down_of = np.full(n, -1, dtype=np.int64)
        down_of[child] = down
        par = parent[child]
        has_up = parent[par] >= 0  # the child's parent is not the root
        # up(v) waits for up(c) of each child c of v
        pairs.append((up_of[par[has_up]], up[has_up]))
        # down into v waits for the down-flow into its parent...
        pairs.append((down[has_up], down_of[par[has_up]]))
        # ...or, below the root, for the up-flows of all the root's children
        root_kids = child[~has_up]
        kid_down, kid_up = np.meshgrid(down_of[root_kids], up_of[root_kids], indexing="ij")
        pairs.append((kid_down.ravel(), kid_up.ravel()))
        parts.append(
            (
                np.concatenate([child, par]),
                np.concatenate([par, child]),
                np.concatenate([height[child], root_height + depth[child] - 1]),
                np.full(2 * e, t, dtype=np.int64),
                np.concatenate([np.zeros(e, np.int64), np.ones(e, np.int64)]),
            )
        )
        base += 2 * e
    src, dst, step, tree, down_flag = (np.concatenate(c) for c in zip(*parts, strict=True))
    order = np.lexsort((dst, src, down_flag, tree, step))
    rank_of = np.empty_like(order)
    rank_of[order] = np.arange(order.shape[0])
    row = rank_of[np.concatenate([p[0] for p in pairs])]
    col = rank_of[np.concatenate([p[1] for p in pairs])]
    srt = np.lexsort((col, row))
    block = tree[order]
    ones = np.ones_like(block)
    return _Template(
        src=src[order],
        dst=dst[order],
        step=step[order],
        dep_ptr=np.concatenate(
            [np.zeros(1, np.int64), np.cumsum(np.bincount(row, minlength=order.shape[0]))]
        ),
        dep_idx=col[srt],
        block=block,
        count=ones,
        stride=ones,
        reduce=down_flag[order] == 0,
        n_blocks=2,
        sizes=_canonical_sizes(block, ones, ones, 2),
    )


def _levels(parent: _I64) -> tuple[_I64, _I64]:
    """Height (leaves 0) and depth (root 0) of every node of a tree given by parents."""
    child = np.flatnonzero(parent >= 0)
    height = np.zeros(parent.shape[0], dtype=np.int64)
    depth = np.zeros(parent.shape[0], dtype=np.int64)
    while True:  # one pass per level
        h = height.copy()
        np.maximum.at(h, parent[child], height[child] + 1)
        d = depth.copy()
        d[child] = depth[parent[child]] + 1
        if np.array_equal(h, height) and np.array_equal(d, depth):
            return height, depth
        height, depth = h, d


# --- direct -----------------------------------------------------------------------------------


def _all_to_all(n: int) -> _Template:
    """Position i sends to i + k for k = 1..n-1, the share of block i + k, all at step 0."""
    f = n * (n - 1)
    src = np.repeat(np.arange(n, dtype=np.int32), n - 1)  # int32: n(n-1) flows can be many
    dst = np.arange(n, dtype=np.int32)[:, None] + np.arange(1, n, dtype=np.int32)[None, :]
    np.subtract(dst, n, out=dst, where=dst >= n)

    def sizes(s: int) -> _I64:  # rotated remainder: offset k gets s//n + (k < s % n)
        q, r = divmod(s, n)
        if not r:
            return _const(q, f)
        out = np.full(f, q, dtype=np.int64)
        out += np.tile(np.arange(1, n) < r, n)
        return out

    return _Template(
        src=src,
        dst=dst.reshape(-1),
        step=_const(0, f),
        dep_ptr=_const(0, f + 1),
        dep_idx=np.zeros(0, dtype=np.int64),
        block=dst.reshape(-1),
        count=_const(1, f),
        stride=_const(1, f),
        reduce=_const(False, f, np.bool_),
        n_blocks=n,
        sizes=sizes,
    )


def _const(value: int | bool, size: int, dtype: type[np.generic] = np.int64) -> NDArray[Any]:
    """A read-only constant column that takes no memory (a broadcast view of one value)."""
    return np.broadcast_to(np.array(value, dtype=dtype), (size,))


def _as32(a: NDArray[Any]) -> NDArray[np.int32]:
    """``a`` as int32, keeping constant broadcast columns as views."""
    if a.ndim == 1 and a.size and a.strides[0] == 0:
        return np.broadcast_to(a[:1].astype(np.int32).reshape(()), a.shape)
    return a.astype(np.int32, copy=False)


def _send_recv(n: int) -> _Template:
    pairs = n // 2
    zeros = np.zeros(pairs, dtype=np.int64)
    ones = np.ones(pairs, dtype=np.int64)
    return _Template(
        src=np.arange(0, n, 2, dtype=np.int64),
        dst=np.arange(1, n, 2, dtype=np.int64),
        step=zeros,
        dep_ptr=np.zeros(pairs + 1, dtype=np.int64),
        dep_idx=np.zeros(0, dtype=np.int64),
        block=zeros,
        count=ones,
        stride=ones,
        reduce=np.zeros(pairs, dtype=np.bool_),
        n_blocks=1,
        sizes=lambda s: np.full(pairs, s, dtype=np.int64),
    )


# --- chunks -----------------------------------------------------------------------------------


def _assemble(t: _Template, ranks: _I64, chunk_sizes: _I64) -> Flows:
    """Replicate the template once per chunk, order flows by (step, chunk), map positions to
    ranks. Chunk c's copy of a flow also waits for chunk c-1's copy of the same flow."""
    f = t.src.shape[0]
    n_chunks = chunk_sizes.shape[0]
    if np.array_equal(ranks, np.arange(ranks.shape[0])):  # positions are the ranks
        src, dst = _as32(t.src), _as32(t.dst)
    else:
        rank32 = ranks.astype(np.int32)
        src, dst = rank32[t.src], rank32[t.dst]
    cols: dict[str, NDArray[Any]] = dict(
        src=src,
        dst=dst,
        block=_as32(t.block),
        block_count=_as32(t.count),
        block_stride=_as32(t.stride),
        reduce=t.reduce,
    )
    if n_chunks == 1:
        cols.update(
            nbytes=t.sizes(int(chunk_sizes[0])),
            step=_as32(t.step),
            chunk=_const(0, f, np.int32),
            dep_ptr=t.dep_ptr,
            dep_idx=t.dep_idx,
        )
    else:
        cols = _pipeline(t, cols, chunk_sizes)
    for a in cols.values():
        _frozen(a)
    return Flows(**cols, n_blocks=t.n_blocks)


def _pipeline(
    t: _Template, cols: dict[str, NDArray[Any]], chunk_sizes: _I64
) -> dict[str, NDArray[Any]]:
    """The columns of one template copy per chunk, in (step, chunk) order.

    The output is a sequence of runs (chunk c, algorithm step k) ordered by (c + k, c); each run
    is the template's contiguous slice of step k, so every column is stitched from slices.
    """
    f = t.src.shape[0]
    n_chunks = chunk_sizes.shape[0]
    n_steps = int(t.step[-1]) + 1
    bounds = np.concatenate([[0], np.cumsum(np.bincount(t.step, minlength=n_steps))])
    cc, kk = np.divmod(np.arange(n_chunks * n_steps, dtype=np.int64), n_steps)
    order = np.lexsort((cc, cc + kk))
    runs = list(zip(cc[order].tolist(), kk[order].tolist(), strict=True))
    run_len = np.diff(bounds)[kk[order]]
    run_out = np.empty(n_chunks * n_steps, dtype=np.int64)
    run_out[order] = np.concatenate([[0], np.cumsum(run_len)[:-1]])
    within = np.arange(f, dtype=np.int64) - bounds[t.step]

    def stitch(per_chunk: list[NDArray[Any]], cuts: list[_I64] | None = None) -> NDArray[Any]:
        """Runs of the per-chunk arrays (template order); ``cuts[c]`` are their step bounds."""
        b = [bounds] * n_chunks if cuts is None else cuts
        return np.concatenate([per_chunk[c][b[c][k] : b[c][k + 1]] for c, k in runs])

    out = {name: stitch([col] * n_chunks) for name, col in cols.items()}
    by_size = {int(s): t.sizes(int(s)) for s in np.unique(chunk_sizes)}
    out["nbytes"] = stitch([by_size[int(s)] for s in chunk_sizes])
    out["step"] = np.repeat((cc + kk)[order], run_len).astype(np.int32)
    out["chunk"] = np.repeat(cc[order], run_len).astype(np.int32)

    # dependencies: chunk c's row for template flow x is [copy of x in chunk c-1] (c > 0)
    # followed by x's template dependencies, all mapped to output indices
    t_deg = np.diff(t.dep_ptr)
    out["dep_ptr"] = np.concatenate(
        [np.zeros(1, np.int64), np.cumsum(stitch([t_deg] + [t_deg + 1] * (n_chunks - 1)))]
    )
    owner = np.repeat(np.arange(f, dtype=np.int64), t_deg)
    moved = np.arange(t.dep_idx.shape[0], dtype=np.int64) + owner + 1
    first = t.dep_ptr[:-1] + np.arange(f, dtype=np.int64)
    entries: list[_I64] = []
    cuts: list[_I64] = []
    prev = np.zeros(0, dtype=np.int64)
    for c in range(n_chunks):
        pos = run_out[c * n_steps + t.step] + within  # output index of (c, x)
        if c == 0:
            entries.append(pos[t.dep_idx])
            cuts.append(t.dep_ptr[bounds])
        else:
            e = np.empty(t.dep_idx.shape[0] + f, dtype=np.int64)
            e[first] = prev
            e[moved] = pos[t.dep_idx]
            entries.append(e)
            cuts.append(t.dep_ptr[bounds] + bounds)
        prev = pos
    out["dep_idx"] = stitch(entries, cuts)
    return out
