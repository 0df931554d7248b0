"""Collective algorithms as flows: closed-form volumes, conservation, dependency structure and
data-flow correctness.

Data flow is checked by replaying the flows on a model of every rank's buffer (``replay``): for
each rank and (chunk, block) the set of ranks whose contribution it holds, as a bitmask. A flow
copies the sender's blocks to the receiver, or adds them into the receiver's (``reduce``; adding
a contribution twice is a bug). Flows run in a random topological order of their dependencies,
so a missing dependency shows up as a wrong final state.

Groups are drawn with Hypothesis: 1..64 distinct ranks in random order at random offsets, sizes
that n does not divide, 1..4 chunks and, for hierarchical, every ranks_per_node dividing n.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, fields
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import clusterloom.workload.algorithms as algorithms
from clusterloom.workload.algorithms import (
    Algorithm,
    Collective,
    Flows,
    bus_bandwidth_factor,
    decompose,
    double_binary_tree,
    supported,
)

AR, AG, RS = Collective.ALL_REDUCE, Collective.ALL_GATHER, Collective.REDUCE_SCATTER
A2A, SR = Collective.ALL_TO_ALL, Collective.SEND_RECV
RING, TREE, HIER = Algorithm.RING, Algorithm.TREE, Algorithm.HIERARCHICAL
DIRECT, PAT = Algorithm.DIRECT, Algorithm.PAT
COMBOS = [(c, a) for c in Collective for a in supported(c)]
ARRAYS = [f.name for f in fields(Flows) if f.name != "n_blocks"]


# --- drawing cases ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    coll: Collective
    algo: Algorithm
    ranks: tuple[int, ...]
    nbytes: int
    per_node: int = 1
    chunks: int = 1

    @property
    def n(self) -> int:
        return len(self.ranks)

    def flows(self) -> Flows:
        return decompose(
            self.coll,
            self.algo,
            list(self.ranks),
            self.nbytes,
            ranks_per_node=self.per_node,
            chunks=self.chunks,
        )

    @property
    def chunk_sizes(self) -> list[int]:
        """The chunks the buffer is cut into (never more than nbytes)."""
        c = min(self.chunks, self.nbytes) or 1
        return [self.nbytes // c + (i < self.nbytes % c) for i in range(c)]

    def per_position(self, per_rank: np.ndarray) -> list[int]:
        return [int(per_rank[r]) for r in self.ranks]


def block_sizes(s: int, p: int) -> list[int]:
    return [s // p + (j < s % p) for j in range(p)]


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


sizes = st.one_of(st.integers(0, 300), st.integers(0, 10**6), st.integers(0, 10**13))


@st.composite
def cases(
    draw: st.DrawFn,
    combos: list[tuple[Collective, Algorithm]] = COMBOS,
    max_n: int = 64,
    min_n: int = 1,
    max_chunks: int = 4,
) -> Case:
    coll, algo = draw(st.sampled_from(combos))
    n = draw(st.integers(min_n, max_n))
    if coll is SR:
        n = max(2, n - n % 2)
        ranks = draw(st.lists(st.integers(0, 5000), min_size=n, max_size=n))
        ranks = [r if i % 2 == 0 or r != ranks[i - 1] else r + 1 for i, r in enumerate(ranks)]
    else:
        ranks = draw(st.lists(st.integers(0, 5000), min_size=n, max_size=n, unique=True))
    per_node = draw(st.sampled_from(divisors(n))) if algo is HIER else 1
    if draw(st.booleans()):  # sizes that n and the chunks divide: the closed forms are exact
        nbytes = n * draw(st.integers(1, 4)) * draw(st.integers(0, 10**6))
        chunks = draw(st.sampled_from([1, 2, 4])) if nbytes % 4 == 0 else 1
    else:
        nbytes = draw(sizes)
        chunks = draw(st.integers(1, max_chunks))
    return Case(coll, algo, tuple(ranks), nbytes, per_node, chunks)


# --- replay -----------------------------------------------------------------------------------


def topological_order(flows: Flows, seed: int) -> list[int]:
    """A random topological order of the dependency graph (asserts it is acyclic)."""
    rng = random.Random(seed)
    n = len(flows)
    ptr, idx = flows.dep_ptr.tolist(), flows.dep_idx.tolist()
    waiting = [ptr[i + 1] - ptr[i] for i in range(n)]
    users: list[list[int]] = [[] for _ in range(n)]
    for i in range(n):
        for d in idx[ptr[i] : ptr[i + 1]]:
            users[d].append(i)
    ready = [(rng.random(), i) for i in range(n) if waiting[i] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        _, i = heapq.heappop(ready)
        order.append(i)
        for u in users[i]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, (rng.random(), u))
    assert len(order) == n, "dependency cycle"
    return order


def replay(case: Case, flows: Flows, seed: int) -> dict[tuple[int, int, int], int]:
    """Final buffers: (position, chunk, block) -> bitmask of the contributing positions."""
    pos = {r: i for i, r in enumerate(case.ranks)}
    n, nb = case.n, flows.n_blocks
    chunks = len(case.chunk_sizes)
    state: dict[tuple[int, int, int], int] = {}
    for p in range(n):
        for c in range(chunks):
            if case.coll is AG:
                state[p, c, p] = 1 << p
            else:
                for b in range(nb):
                    state[p, c, b] = 1 << p
    src, dst = flows.src.tolist(), flows.dst.tolist()
    chunk, reduce = flows.chunk.tolist(), flows.reduce.tolist()
    for i in topological_order(flows, seed):
        s, d, c = pos[src[i]], pos[dst[i]], chunk[i]
        for b in flows.blocks(i).tolist():
            value = state.get((s, c, b), 0)
            assert value, f"flow {i} sends block {b} that rank {s} does not hold"
            if reduce[i]:
                held = state.get((d, c, b), 0)
                assert held & value == 0, f"flow {i} reduces a contribution twice"
                state[d, c, b] = held | value
            else:
                state[d, c, b] = value
    return state


# --- the public surface -----------------------------------------------------------------------


def test_all_lists_the_public_definitions() -> None:
    defined = {
        k
        for k, v in vars(algorithms).items()
        if not k.startswith("_") and getattr(v, "__module__", None) == algorithms.__name__
    }
    assert set(algorithms.__all__) == defined


@pytest.mark.parametrize(
    ("coll", "n", "factor"),
    [
        (AR, 1, 0.0),
        (AR, 2, 1.0),
        (AR, 8, 1.75),
        (AR, 1024, 2 * 1023 / 1024),
        (AG, 8, 0.875),
        (RS, 8, 0.875),
        (A2A, 8, 0.875),
        (AG, 1, 0.0),
        (SR, 2, 1.0),
        (SR, 64, 1.0),
    ],
)
def test_bus_bandwidth_factor(coll: Collective, n: int, factor: float) -> None:
    assert bus_bandwidth_factor(coll, n) == pytest.approx(factor)
    assert bus_bandwidth_factor(coll.value, n) == bus_bandwidth_factor(coll, n)


def test_bus_bandwidth_factor_needs_a_rank() -> None:
    with pytest.raises(ValueError, match="at least one rank"):
        bus_bandwidth_factor(AR, 0)


def test_supported_table() -> None:
    assert supported(AR) == (RING, TREE, HIER)
    assert supported("all-gather") == (RING, HIER, PAT)
    assert supported(RS) == (RING, HIER, PAT)
    assert supported(A2A) == (DIRECT,)
    assert supported(SR) == (DIRECT,)


@pytest.mark.parametrize(
    ("coll", "algo"), [(c, a) for c in Collective for a in Algorithm if a not in supported(c)]
)
def test_unsupported_combinations_raise(coll: Collective, algo: Algorithm) -> None:
    with pytest.raises(ValueError, match="supported"):
        decompose(coll, algo, [0, 1], 100)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(collective="all-sum"), "unknown collective"),
        (dict(algorithm="butterfly"), "unknown algorithm"),
        (dict(ranks=[]), "at least one rank"),
        (dict(ranks=[[0, 1], [2, 3]]), "one-dimensional"),
        (dict(ranks=[0.0, 1.0]), "integers"),
        (dict(ranks=[0, 1, 1]), "distinct"),
        (dict(ranks=[-1, 0]), "0.."),
        (dict(nbytes=-1), "nbytes"),
        (dict(nbytes=2**62), "overflow"),
        (dict(chunks=0), "chunks"),
        (dict(ranks_per_node=0), "ranks_per_node"),
        (dict(algorithm="hierarchical", ranks=[0, 1, 2], ranks_per_node=2), "whole number"),
        (dict(collective="send-recv", algorithm="direct", ranks=[0, 1, 2]), "pairs"),
        (dict(collective="send-recv", algorithm="direct", ranks=[0, 1, 3, 3]), "own rank"),
    ],
)
def test_bad_input_raises_value_error(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = dict(
        collective="all-reduce", algorithm="ring", ranks=[0, 1, 2, 3], nbytes=100
    )
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        decompose(**args)  # type: ignore[arg-type]


@pytest.mark.parametrize(("coll", "algo"), COMBOS)
def test_one_rank_or_no_bytes_gives_no_flows(coll: Collective, algo: Algorithm) -> None:
    if coll is not SR:
        assert len(decompose(coll, algo, [7], 1000)) == 0
    assert len(decompose(coll, algo, [3, 5], 0)) == 0


def test_send_recv_pairs_may_share_ranks() -> None:
    """A pipeline shift 0 -> 1 -> 2 -> 3 as pairs; each pair moves the whole buffer."""
    flows = decompose(SR, DIRECT, [0, 1, 1, 2, 2, 3], 1000, chunks=2)
    assert list(zip(flows.src.tolist(), flows.dst.tolist(), strict=True)) == [
        (0, 1),
        (1, 2),
        (2, 3),
        (0, 1),
        (1, 2),
        (2, 3),
    ]
    assert flows.nbytes.tolist() == [500] * 6
    assert flows.step.tolist() == [0, 0, 0, 1, 1, 1]
    assert [flows.deps(i).tolist() for i in range(6)] == [[], [], [], [0], [1], [2]]


def test_chunks_are_capped_at_nbytes() -> None:
    flows = decompose(AR, RING, [0, 1], 3, chunks=8)
    assert sorted(set(flows.chunk.tolist())) == [0, 1, 2]
    assert flows.total_bytes == 2 * 1 * 3


# --- structure --------------------------------------------------------------------------------


def expected_shape(case: Case) -> tuple[int, int] | None:
    """(number of flows, number of steps) of the decomposition, None when not closed-form."""
    n, c = case.n, len(case.chunk_sizes)
    if case.nbytes == 0 or (n == 1 and case.coll is not SR):
        return 0, 0
    local, nodes = case.per_node, n // case.per_node
    log = (n - 1).bit_length()
    per_chunk: dict[tuple[Collective, Algorithm], tuple[int, int]] = {
        (AR, RING): (2 * (n - 1) * n, 2 * (n - 1)),
        (AG, RING): ((n - 1) * n, n - 1),
        (RS, RING): ((n - 1) * n, n - 1),
        (AG, PAT): (log * n, log),
        (RS, PAT): (log * n, log),
        (AR, HIER): (2 * (local - 1 + nodes - 1) * n, 2 * (local - 1 + nodes - 1)),
        (AG, HIER): ((local - 1 + nodes - 1) * n, local - 1 + nodes - 1),
        (RS, HIER): ((local - 1 + nodes - 1) * n, local - 1 + nodes - 1),
        (A2A, DIRECT): (n * (n - 1), 1),
        (SR, DIRECT): (n // 2, 1),
    }
    if (case.coll, case.algo) not in per_chunk:
        return None
    flows, steps = per_chunk[case.coll, case.algo]
    return flows * c, steps + c - 1


@given(cases())
def test_structure(case: Case) -> None:
    flows = case.flows()
    flows.validate()  # sizes >= 0, no flow to itself, deps in range at strictly smaller steps
    shape = expected_shape(case)
    if shape is not None:
        assert (len(flows), flows.n_steps) == shape
    for name in ARRAYS:
        arr = getattr(flows, name)
        assert not arr.flags.writeable, name
    assert flows.src.dtype == np.int32 and flows.nbytes.dtype == np.int64
    assert flows.step.dtype == np.int32 and flows.dep_idx.dtype == np.int64
    if len(flows):
        # ranks used are exactly the given ranks
        used = set(flows.src.tolist()) | set(flows.dst.tolist())
        assert used == set(case.ranks)
        # flows are sorted by (step, chunk): index order is a topological order
        key = flows.step.astype(np.int64) * 1000 + flows.chunk
        assert np.all(np.diff(key) >= 0)
        owner = np.repeat(np.arange(len(flows)), np.diff(flows.dep_ptr))
        assert np.all(flows.dep_idx < owner)
        assert int(flows.nbytes.sum()) == flows.total_bytes


@given(cases(max_n=24), st.integers(0, 2**32))
@settings(max_examples=60)
def test_dependency_graph_is_acyclic(case: Case, seed: int) -> None:
    topological_order(case.flows(), seed)


@given(cases(combos=[(AR, RING), (AG, RING), (RS, RING)], max_n=32))
def test_ring_dependencies(case: Case) -> None:
    """Step k out of rank i waits for exactly step k-1 into rank i, and for chunk c-1's step k
    out of rank i (same ring, one channel)."""
    flows = case.flows()
    n = case.n
    algo_step = (flows.step - flows.chunk).tolist()
    src, dst, chunk = flows.src.tolist(), flows.dst.tolist(), flows.chunk.tolist()
    out_of = {(chunk[i], algo_step[i], src[i]): i for i in range(len(flows))}
    into = {(chunk[i], algo_step[i], dst[i]): i for i in range(len(flows))}
    successor = {case.ranks[i]: case.ranks[(i + 1) % n] for i in range(n)}
    for i in range(len(flows)):
        assert dst[i] == successor[src[i]]
        c, k = chunk[i], algo_step[i]
        want = {into.get((c, k - 1, src[i])), out_of.get((c - 1, k, src[i]))} - {None}
        assert set(flows.deps(i).tolist()) == want


@given(cases(combos=[(AR, HIER), (AG, HIER), (RS, HIER)]))
def test_hierarchical_stays_on_rails(case: Case) -> None:
    """Intra-node flows stay in their node; inter-node flows join ranks of the same local index
    (the same rail) and carry 2(m-1)·S (all-reduce) or (m-1)·S bytes in total over m nodes."""
    flows = case.flows()
    pos = {r: i for i, r in enumerate(case.ranks)}
    src = np.array([pos[r] for r in flows.src.tolist()], dtype=np.int64)
    dst = np.array([pos[r] for r in flows.dst.tolist()], dtype=np.int64)
    node_s, local_s = np.divmod(src, case.per_node)
    node_d, local_d = np.divmod(dst, case.per_node)
    inter = node_s != node_d
    assert np.all(local_s[inter] == local_d[inter])
    nodes = case.n // case.per_node
    phases = 2 if case.coll is AR else 1
    if len(flows):
        assert int(flows.nbytes[inter].sum()) == phases * (nodes - 1) * case.nbytes


@given(cases(combos=[(AG, PAT), (RS, PAT)], min_n=2))
def test_pat_distances_halve_or_double(case: Case) -> None:
    """All-gather step k sends to rank i + 2^k; reduce-scatter step k to i + 2^(K-1-k)."""
    flows = case.flows()
    n, log = case.n, (case.n - 1).bit_length()
    pos = {r: i for i, r in enumerate(case.ranks)}
    k = flows.step - flows.chunk
    distance = np.array(
        [(pos[d] - pos[s]) % n for s, d in zip(flows.src.tolist(), flows.dst.tolist(), strict=True)]
    )
    expected = 2 ** (k if case.coll is AG else log - 1 - k)
    assert np.array_equal(distance, expected % n)


def test_all_to_all_rotated_order() -> None:
    """Sources in order; each sends to src+1, src+2, ... (mod n), spreading incast."""
    flows = decompose(A2A, DIRECT, [10, 11, 12, 13], 4000)
    pairs = list(zip(flows.src.tolist(), flows.dst.tolist(), strict=True))
    assert pairs == [
        (10, 11), (10, 12), (10, 13),
        (11, 12), (11, 13), (11, 10),
        (12, 13), (12, 10), (12, 11),
        (13, 10), (13, 11), (13, 12),
    ]  # fmt: skip
    assert flows.nbytes.tolist() == [1000] * 12
    assert flows.n_deps == 0 and flows.n_steps == 1


@given(cases(max_n=24, max_chunks=3))
def test_determinism(case: Case) -> None:
    a, b = case.flows(), case.flows()
    assert a.n_blocks == b.n_blocks
    for name in ARRAYS:
        assert getattr(a, name).dtype == getattr(b, name).dtype
        assert (
            np.ascontiguousarray(getattr(a, name)).tobytes()
            == np.ascontiguousarray(getattr(b, name)).tobytes()
        )


@given(cases(max_n=32))
def test_chunks_pipeline(case: Case) -> None:
    """Chunk c runs the same flows as chunk 0, one step later, each waiting for its copy in
    chunk c-1; the chunk sizes add up to the buffer."""
    flows = case.flows()
    if not len(flows):
        return
    keys = ("src", "dst", "block", "block_count", "block_stride", "reduce")
    per_chunk = [np.flatnonzero(flows.chunk == c) for c in range(len(case.chunk_sizes))]
    k0 = flows.step[per_chunk[0]]
    for c, rows in enumerate(per_chunk):
        # the copy of chunk 0's j-th flow, in (step, then template) order
        assert np.array_equal(flows.step[rows], k0 + c)
        for key in keys:
            assert np.array_equal(getattr(flows, key)[rows], getattr(flows, key)[per_chunk[0]])
        if c:
            prev = per_chunk[c - 1]
            for j, i in enumerate(rows.tolist()):
                assert int(prev[j]) in flows.deps(i).tolist()


# --- volumes ----------------------------------------------------------------------------------


FORMULA = {  # bytes sent per rank as a fraction of S, for n ranks
    (AR, RING): lambda n: Fraction(2 * (n - 1), n),
    (AR, HIER): lambda n: Fraction(2 * (n - 1), n),
    (AG, RING): lambda n: Fraction(n - 1, n),
    (RS, RING): lambda n: Fraction(n - 1, n),
    (AG, HIER): lambda n: Fraction(n - 1, n),
    (RS, HIER): lambda n: Fraction(n - 1, n),
    (AG, PAT): lambda n: Fraction(n - 1, n),
    (RS, PAT): lambda n: Fraction(n - 1, n),
    (A2A, DIRECT): lambda n: Fraction(n - 1, n),
}


def rounding_slack(case: Case) -> int:
    """How far (bytes, per chunk) integer blocks may put a rank off the closed form: each block
    is within one byte of s/n; ring skips one or two blocks, a hierarchical shard is m blocks,
    pat forwards up to n-1 blocks."""
    nodes = case.n // case.per_node
    return {
        RING: 2 if case.coll is AR else 1,
        HIER: nodes + 2,
        PAT: case.n - 1,
        DIRECT: 1,
    }[case.algo]


@given(cases(combos=list(FORMULA)))
def test_closed_form_volumes(case: Case) -> None:
    flows = case.flows()
    n, s = case.n, case.nbytes
    world = max(case.ranks) + 1
    sent = case.per_position(flows.bytes_sent_per_rank(world))
    received = case.per_position(flows.bytes_received_per_rank(world))
    fraction = FORMULA[case.coll, case.algo](n)
    chunks = case.chunk_sizes

    # totals are exact: 2(n-1)·S for all-reduce, (n-1)·S otherwise (all-to-all: the shares
    # other than the rank's own, with the remainder rotated)
    total = fraction * n * s
    if case.coll is A2A:
        total = Fraction(n * sum((n - 1) * (c // n) + max(c % n - 1, 0) for c in chunks))
    assert sum(sent) == sum(received) == total

    slack = rounding_slack(case) * len(chunks)
    for v in sent + received:
        assert abs(v - fraction * s) <= slack
    if s % (n * len(chunks)) == 0:
        assert all(v == fraction * s for v in sent + received)


@given(cases(combos=[(AG, RING), (AG, HIER), (AG, PAT), (RS, PAT), (A2A, DIRECT)]))
def test_per_rank_exact_volumes(case: Case) -> None:
    """All-gather: every rank receives the S minus its own contribution. PAT reduce-scatter
    (the mirror image) sends exactly that. All-to-all: every rank sends and receives the same."""
    flows = case.flows()
    world = max(case.ranks) + 1
    sent = case.per_position(flows.bytes_sent_per_rank(world))
    received = case.per_position(flows.bytes_received_per_rank(world))
    if case.n == 1 or case.nbytes == 0:
        assert sent == received == [0] * case.n
        return
    own = [sum(block_sizes(c, case.n)[p] for c in case.chunk_sizes) for p in range(case.n)]
    if case.coll is AG:
        assert received == [case.nbytes - o for o in own]
    elif case.coll is RS:
        assert sent == [case.nbytes - o for o in own]
    else:
        assert len(set(sent)) == 1 and sent == received


@given(cases(combos=[*FORMULA, (AR, TREE)]))
def test_flow_sizes_match_their_blocks(case: Case) -> None:
    """Every flow carries exactly the bytes of its blocks (array_split sizes per chunk;
    all-to-all rotates the remainder by the offset from the sender)."""
    flows = case.flows()
    pos = {r: i for i, r in enumerate(case.ranks)}
    for i in range(len(flows)):
        s = case.chunk_sizes[int(flows.chunk[i])]
        blocks = flows.blocks(i).tolist()
        if case.coll is A2A:
            (b,) = blocks
            offset = (b - pos[int(flows.src[i])]) % case.n
            assert pos[int(flows.dst[i])] == b
            assert flows.nbytes[i] == s // case.n + (offset < s % case.n)
        else:
            sizes_ = block_sizes(s, flows.n_blocks)
            assert len(set(blocks)) == len(blocks)
            assert flows.nbytes[i] == sum(sizes_[b] for b in blocks)


# --- data flow --------------------------------------------------------------------------------


@given(cases(combos=[c for c in COMBOS if c[0] in (AR, AG, RS)], max_n=40), st.integers(0, 2**32))
@settings(max_examples=150)
def test_replay_computes_the_collective(case: Case, seed: int) -> None:
    """After the flows, in any order their dependencies allow: all-reduce leaves every block on
    every rank reduced over all ranks; reduce-scatter leaves rank p's block p reduced over all;
    all-gather leaves every rank holding every rank's contribution."""
    flows = case.flows()
    state = replay(case, flows, seed)
    if not len(flows):
        return
    assert set(flows.reduce.tolist()) <= ({False} if case.coll is AG else {True, False})
    full = (1 << case.n) - 1
    for p in range(case.n):
        for c in range(len(case.chunk_sizes)):
            if case.coll is AR:
                assert all(state[p, c, b] == full for b in range(flows.n_blocks))
            elif case.coll is RS:
                assert state[p, c, p] == full
            else:
                assert all(state.get((p, c, b)) == 1 << b for b in range(case.n))


@given(cases(combos=[(A2A, DIRECT), (SR, DIRECT)], max_n=24))
def test_direct_delivers_every_share_once(case: Case) -> None:
    """All-to-all: position s sends position d its share d (block d) once per chunk, and nothing
    to itself. Send-recv: one flow per pair and chunk."""
    flows = case.flows()
    chunks = range(len(case.chunk_sizes)) if case.nbytes else range(0)
    if case.coll is A2A:
        pos = {r: i for i, r in enumerate(case.ranks)}
        got = sorted(
            (pos[int(flows.src[i])], pos[int(flows.dst[i])], int(flows.chunk[i]), b)
            for i in range(len(flows))
            for b in flows.blocks(i).tolist()
        )
        others = [(s, d) for s in range(case.n) for d in range(case.n) if s != d]
        want = sorted((s, d, c, d) for s, d in others for c in chunks)
    else:
        got = sorted(
            (int(flows.src[i]), int(flows.dst[i]), int(flows.chunk[i]), *flows.blocks(i).tolist())
            for i in range(len(flows))
        )
        pairs = zip(case.ranks[0::2], case.ranks[1::2], strict=True)
        want = sorted((s, d, c, 0) for s, d in pairs for c in chunks)
    assert got == want


# --- double binary tree -----------------------------------------------------------------------


def test_double_binary_tree_for_12_ranks() -> None:
    """Tree 0 for 12 ranks: 0 -> 8; 8 -> 4, 10; 4 -> 2, 6; 2 -> 1, 3; 6 -> 5, 7; 10 -> 9, 11.
    Tree 1 is its mirror image (r -> 11 - r): 11 -> 3; 3 -> 7, 1; and so on."""
    tree0, tree1 = double_binary_tree(12)
    assert tree0.tolist() == [-1, 2, 4, 2, 8, 6, 4, 6, 0, 10, 8, 10]
    assert tree1.tolist() == [1, 3, 1, 11, 5, 7, 5, 3, 9, 7, 9, -1]


def _children(parent: np.ndarray, r: int) -> list[int]:
    return sorted(np.flatnonzero(parent == r).tolist())


@pytest.mark.parametrize("n", range(1, 130))
def test_double_binary_tree_structure(n: int) -> None:
    """Properties that define the construction, checked independently of the formula:
    tree 0 is rooted at 0 whose only child is the largest power of two below n, and below that
    it is an in-order binary search tree over 1..n-1 (left child < parent < right child) of
    logarithmic height; tree 1 is tree 0 mirrored (even n) or shifted by one (odd n); the two
    are complementary (no rank is a leaf in both)."""
    tree0, tree1 = double_binary_tree(n)
    for parent in (tree0, tree1):
        assert np.count_nonzero(parent < 0) == 1
        assert np.bincount(parent[parent >= 0], minlength=n).max(initial=0) <= 2
    if n > 1:
        assert _children(tree0, 0) == [1 << (n - 1).bit_length() - 1]
    height = 0
    for r in range(1, n):
        kids = _children(tree0, r)
        if len(kids) == 2:
            assert kids[0] < r < kids[1]
        x, depth = r, 0
        while tree0[x] >= 0:
            x, depth = int(tree0[x]), depth + 1
        assert x == 0
        height = max(height, depth)
    assert height <= max(1, (n - 1).bit_length())
    map1 = (lambda r: n - 1 - r) if n % 2 == 0 else (lambda r: (r + 1) % n)
    for r in range(n):
        up = int(tree0[r])
        assert tree1[map1(r)] == (-1 if up < 0 else map1(up))
    inner = [np.bincount(p[p >= 0], minlength=n) > 0 for p in (tree0, tree1)]
    assert not np.any(~inner[0] & ~inner[1]) or n == 1  # no rank is a leaf in both
    both = np.flatnonzero(inner[0] & inner[1]).tolist()
    assert both == ([] if n % 2 == 0 or n == 1 else [0])


@given(cases(combos=[(AR, TREE)], max_n=64))
def test_tree_volumes(case: Case) -> None:
    """Half t (block t: the first gets the odd byte) goes up and down tree t, so a rank sends and
    receives sum_t H_t·deg_t bytes, deg_t its number of tree-t neighbours; 2(n-1)·S in total."""
    flows = case.flows()
    world = max(case.ranks) + 1
    sent = case.per_position(flows.bytes_sent_per_rank(world))
    received = case.per_position(flows.bytes_received_per_rank(world))
    degree = [
        np.bincount(p[p >= 0], minlength=case.n) + (p >= 0) for p in double_binary_tree(case.n)
    ]
    halves = [sum(block_sizes(c, 2)[t] for c in case.chunk_sizes) for t in (0, 1)]
    want = [int(halves[0] * degree[0][p] + halves[1] * degree[1][p]) for p in range(case.n)]
    if case.nbytes == 0:
        want = [0] * case.n
    assert sent == received == want
    assert sum(sent) == 2 * (case.n - 1) * case.nbytes


def test_tree_steps_for_8_ranks() -> None:
    """Up the trees (leaves first), then down from the roots; the root's down-flows wait for
    all its children's up-flows."""
    flows = decompose(AR, TREE, list(range(8)), 800)
    tree0, _ = double_binary_tree(8)  # 0 -> 4 -> {2, 6}, 2 -> {1, 3}, 6 -> {5, 7}
    ups = [i for i in range(len(flows)) if flows.reduce[i] and flows.block[i] == 0]
    assert [(int(flows.src[i]), int(flows.step[i])) for i in ups] == [
        (1, 0), (3, 0), (5, 0), (7, 0), (2, 1), (6, 1), (4, 2),
    ]  # fmt: skip
    root_down = [
        i for i in range(len(flows)) if not flows.reduce[i] and flows.src[i] == 0
        and flows.block[i] == 0
    ]  # fmt: skip
    (i,) = root_down
    assert [int(flows.src[d]) for d in flows.deps(i)] == [4]
    assert int(tree0[4]) == 0


# --- Flows helpers ----------------------------------------------------------------------------


def test_concat_rebases_dependencies() -> None:
    a = decompose(AR, RING, [0, 1, 2], 300)
    b = decompose(AG, RING, [3, 4], 100, chunks=2)
    both = Flows.concat([a, b])
    both.validate()
    assert len(both) == len(a) + len(b)
    assert both.total_bytes == a.total_bytes + b.total_bytes
    for i in range(len(b)):
        assert both.deps(len(a) + i).tolist() == (b.deps(i) + len(a)).tolist()
    assert both.n_blocks == 0  # 3 and 2 blocks: not comparable
    assert Flows.concat([a, a]).n_blocks == 3
    assert len(Flows.concat([])) == 0


def test_shift_steps_and_from_arrays() -> None:
    flows = Flows.from_arrays([0, 1], [1, 0], [10, 20], step=[0, 1], dep_ptr=[0, 0, 1], dep_idx=[0])
    flows.validate()
    assert flows.deps(1).tolist() == [0]
    assert flows.blocks(0).tolist() == []
    later = flows.shift_steps(5)
    assert later.step.tolist() == [5, 6] and later.n_steps == 7
    assert later.dep_idx is flows.dep_idx
    with pytest.raises(ValueError, match="int32"):
        flows.shift_steps(-1)
    with pytest.raises(ValueError, match="shape"):
        Flows.from_arrays([0, 1], [1], [1, 1])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(src=[0], dst=[0], nbytes=[1]), "own rank"),
        (dict(src=[0], dst=[1], nbytes=[-1]), "negative"),
        (dict(src=[0, 1], dst=[1, 0], nbytes=[1, 1], dep_ptr=[0, 1, 1], dep_idx=[1]), "step"),
        (dict(src=[0], dst=[1], nbytes=[1], dep_ptr=[0, 1], dep_idx=[5]), "range"),
    ],
)
def test_validate_rejects(kwargs: dict[str, list[int]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Flows.from_arrays(**kwargs).validate()  # type: ignore[arg-type]


def test_bytes_per_rank_exact_beyond_float_precision() -> None:
    big = 2**60 + 1
    flows = Flows.from_arrays([0, 0, 1], [1, 2, 2], [big, big, 3])
    assert flows.bytes_sent_per_rank(3).tolist() == [2 * big, 3, 0]
    assert flows.bytes_received_per_rank(3).tolist() == [0, big, big + 3]
    with pytest.raises(ValueError, match="outside"):
        flows.bytes_sent_per_rank(1)


# --- scale ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_ring_all_reduce_1024_ranks() -> None:
    """2(n-1)·n flows for n = 1024, each rank sending 2(n-1)/n of the buffer (no timing here:
    timings are measured, not asserted)."""
    n, s = 1024, 1 << 30
    flows = decompose(AR, RING, np.arange(n)[::-1], s)
    assert len(flows) == 2 * (n - 1) * n
    flows.validate()
    sent = flows.bytes_sent_per_rank(n)
    assert np.all(np.abs(sent * n - 2 * (n - 1) * s) < 2 * n)
    assert int(sent.sum()) == 2 * (n - 1) * s
