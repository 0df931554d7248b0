"""Traffic for the flow-level simulator: generators, validation, and the workload conversion."""

from __future__ import annotations

import numpy as np
import pytest

from clusterloom.errors import SpecError
from clusterloom.sim.traffic import (
    Traffic,
    all_to_all,
    from_step_flows,
    incast,
    permutation,
    ring_all_reduce,
)
from clusterloom.workload.algorithms import Algorithm, Collective
from clusterloom.workload.flows import step_flows
from clusterloom.workload.ops import CollectiveOp, LinkClass


def _op(
    name: str,
    coll: Collective,
    algo: Algorithm,
    nbytes: int,
    groups: list[list[int]],
    link: LinkClass = LinkClass.SCALE_OUT,
    per_step: float = 1.0,
) -> CollectiveOp:
    g = np.array(groups, dtype=np.int32)
    return CollectiveOp("dp", name, "backward", coll, algo, nbytes, per_step, g, link)


# -- generators ----------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 5, 64])
def test_permutation_is_a_derangement_for_many_seeds(n: int) -> None:
    for seed in range(200):
        t = permutation(n, 1000, seed=seed).validate()
        assert len(t) == n
        assert not np.any(t.src == t.dst)
        assert np.array_equal(np.sort(t.dst), np.arange(n))
        assert np.array_equal(t.flows_from(), np.ones(n)) and np.array_equal(
            t.flows_to(), np.ones(n)
        )
        assert np.array_equal(t.bytes_to(), np.full(n, 1000))


def test_permutation_is_deterministic_by_seed() -> None:
    assert permutation(64, 5, seed=7) == permutation(64, 5, seed=7)
    assert permutation(64, 5, seed=7) != permutation(64, 5, seed=8)
    rng = np.random.default_rng(3)
    first = permutation(16, 5, seed=rng)
    assert first != permutation(16, 5, seed=rng)  # a Generator advances


def test_permutation_needs_two_hosts() -> None:
    with pytest.raises(ValueError):
        permutation(1, 5, seed=0)


@pytest.mark.parametrize("n", [1, 2, 3, 8])
def test_all_to_all_counts(n: int) -> None:
    t = all_to_all(n, 7).validate()
    assert len(t) == n * (n - 1)
    assert np.array_equal(t.flows_from(), np.full(n, n - 1))
    assert np.array_equal(t.flows_to(), np.full(n, n - 1))
    assert np.array_equal(t.bytes_from(), np.full(n, 7 * (n - 1)))
    pairs = set(zip(t.src.tolist(), t.dst.tolist(), strict=True))
    assert len(pairs) == len(t) and all(s != d for s, d in pairs)


def test_incast_shape() -> None:
    t = incast(4, 100, receiver=2, n_hosts=8).validate()
    assert t.n_hosts == 8 and len(t) == 4
    assert np.array_equal(t.dst, np.full(4, 2))
    assert np.array_equal(t.src, [0, 1, 3, 4])
    assert t.bytes_to()[2] == 400 and t.bytes_to().sum() == 400
    assert incast(3, 1).n_hosts == 4
    with pytest.raises(ValueError):
        incast(8, 1, n_hosts=8)
    with pytest.raises(ValueError):
        incast(2, 1, receiver=5)


@pytest.mark.parametrize(("n", "size"), [(2, 10), (4, 4000), (4, 10), (7, 1), (8, 1 << 30)])
def test_ring_all_reduce_volumes(n: int, size: int) -> None:
    t = ring_all_reduce(n, size).validate()
    assert len(t) == n
    assert np.array_equal(t.dst, (t.src + 1) % n)
    assert t.total_bytes == 2 * (n - 1) * size
    ideal = 2 * (n - 1) * size / n
    assert np.all(np.abs(t.nbytes - ideal) <= 1)
    if size % n == 0:
        assert np.all(t.nbytes == 2 * (n - 1) * size // n)
    assert t.group_names == ("ring all-reduce",) and np.all(t.group == 0)


def test_ring_all_reduce_matches_the_aggregated_decomposition() -> None:
    """The direct form equals from_step_flows of the workload stage's ring decomposition."""
    for n, size in [(4, 4000), (5, 1003), (8, 77)]:
        op = _op("ar", Collective.ALL_REDUCE, Algorithm.RING, size, [list(range(n))])
        flows = step_flows((op,), ranks_per_domain=1, channels=1)
        got = from_step_flows(flows, (op,))
        want = ring_all_reduce(n, size, name="ar")
        assert got == want


# -- from_step_flows -----------------------------------------------------------------------------


def _ops() -> tuple[CollectiveOp, ...]:
    return (
        _op(
            "all-reduce", Collective.ALL_REDUCE, Algorithm.RING, 4096, [[0, 1, 2, 3], [4, 5, 6, 7]]
        ),
        _op("all-to-all", Collective.ALL_TO_ALL, Algorithm.DIRECT, 999, [[0, 2, 4, 6]], per_step=3),
        _op("pp", Collective.SEND_RECV, Algorithm.DIRECT, 500, [[1, 5]], LinkClass.SCALE_UP, 2.5),
        _op("tree", Collective.ALL_REDUCE, Algorithm.TREE, 1000, [[0, 1, 2, 3, 4, 5, 6, 7]]),
    )


@pytest.mark.parametrize("channels", [1, 2])
def test_from_step_flows_aggregates_bytes_per_op_and_pair(channels: int) -> None:
    ops = _ops()
    flows = step_flows(ops, ranks_per_domain=4, channels=channels)
    t = from_step_flows(flows, ops).validate()
    assert t.group_names == tuple(op.name for op in ops)
    assert t.n_hosts == 8 and t.total_bytes == flows.nbytes_total
    assert len(t) < len(flows)
    for k in range(len(ops)):
        want = np.zeros((8, 8), dtype=np.int64)
        sel = flows.op == k
        np.add.at(want, (flows.src[sel], flows.dst[sel]), flows.nbytes[sel])
        got = np.zeros((8, 8), dtype=np.int64)
        mine = t.group == k
        np.add.at(got, (t.src[mine], t.dst[mine]), t.nbytes[mine])
        assert np.array_equal(got, want)
        # one flow per (src, dst, port): scale-out ops split into `channels` flows per pair
        pairs = np.count_nonzero(want)
        per_pair = 1 if ops[k].link is LinkClass.SCALE_UP else channels
        assert np.count_nonzero(mine) == pairs * per_pair


def test_from_step_flows_serializes_ops_per_sending_rank() -> None:
    """With the barrier flows folded back into direct dependencies, every flow of a rank's op
    waits for exactly the flows that rank sent in its previous op."""
    ops = _ops()
    t = from_step_flows(step_flows(ops, ranks_per_domain=4, channels=2), ops).without_barriers()
    assert not t.barrier.any()
    assert np.all(t.levels() >= 0)
    rows = t.dep_rows()
    # every dependency: same sending rank, strictly earlier op
    assert np.array_equal(t.src[rows], t.src[t.dep_idx])
    assert np.all(t.group[t.dep_idx] < t.group[rows])
    for f in range(len(t)):
        r, k = t.src[f], t.group[f]
        earlier = np.flatnonzero((t.src == r) & (t.group < k))
        if earlier.shape[0] == 0:
            assert t.deps(f).shape[0] == 0
            continue
        prev = t.group[earlier].max()  # the rank's previous op
        want = np.flatnonzero((t.src == r) & (t.group == prev))
        assert np.array_equal(np.sort(t.deps(f)), want)
    # the tree all-reduce waits, on rank 1, for rank 1's point-to-point send
    tree_on_1 = np.flatnonzero((t.group == 3) & (t.src == 1))
    assert all(set(t.group[t.deps(f)].tolist()) == {2} for f in tree_on_1.tolist())


def test_barrier_flows_replace_the_quadratic_edges() -> None:
    """The all-to-all after the ring all-reduce sends 6 flows per rank (3 peers x 2 channels)
    after 2: one barrier per such rank, 2 + 6 edges instead of 12. Barriers are zero-byte, in
    no group, from the rank to its first destination of the next op, and wait only for the
    rank's flows (never for another barrier)."""
    ops = _ops()
    flows = step_flows(ops, ranks_per_domain=4, channels=2)
    t = from_step_flows(flows, ops).validate()
    direct = t.without_barriers()
    b = np.flatnonzero(t.barrier)
    assert b.size > 0 and np.all(b >= len(t) - b.size)  # appended after the real flows
    assert np.all(t.nbytes[b] == 0) and np.all(t.group[b] == -1)
    assert t.total_bytes == direct.total_bytes == flows.nbytes_total
    assert not t.barrier[t.dep_idx[t.barrier[t.dep_rows()]]].any()
    for x in b.tolist():
        waiting = np.flatnonzero(np.isin(t.dep_rows(), [x]))
        after = t.dep_rows()[waiting]
        assert np.all(t.src[t.deps(x)] == t.src[x]) and np.all(t.src[after] == t.src[x])
        assert t.dst[x] == t.dst[after.min()]
        assert len(set(t.group[after].tolist())) == 1
    assert t.n_deps < direct.n_deps
    assert t.n_deps <= 2 * int((~t.barrier).sum())
    # ring-only traffic needs no barrier (a = b = 1)
    ring = _op("ar", Collective.ALL_REDUCE, Algorithm.RING, 4000, [[0, 1, 2, 3]])
    two = (ring, ring)
    assert not from_step_flows(step_flows(two, ranks_per_domain=1, channels=1), two).barrier.any()


def test_barrier_dependencies_are_linear_on_the_moe_example() -> None:
    """The moe-2k example's expert all-to-alls: about 24.5M direct edges, linear with barriers."""
    from clusterloom.examples import example_text
    from clusterloom.spec import parse_spec
    from clusterloom.workload import design_workload

    w = design_workload(parse_spec(example_text("moe-2k")))
    t = from_step_flows(w.flows, w.ops, n_hosts=w.layout.world)
    real = int((~t.barrier).sum())
    assert t.barrier.any()
    assert t.n_deps <= 2 * real
    assert t.total_bytes == w.flows.nbytes_total
    assert np.all(t.levels() >= 0)


def test_without_barriers_is_identity_without_barriers() -> None:
    t = ring_all_reduce(4, 100)
    assert t.without_barriers() is t
    chained = Traffic.from_arrays(
        [0, 0, 0, 0, 0],
        [1, 2, 1, 1, 2],
        [5, 5, 0, 0, 5],
        deps=[[], [], [0, 1], [2], [3]],
        barrier=[False, False, True, True, False],
    )
    direct = chained.without_barriers()
    assert len(direct) == 3 and direct.deps(2).tolist() == [0, 1]


def test_a_barrier_with_bytes_is_a_problem() -> None:
    t = Traffic.from_arrays([0], [1], [5], barrier=[True])
    with pytest.raises(SpecError, match="barrier with bytes"):
        t.validate()


def test_from_step_flows_repeat_scales_by_per_step() -> None:
    ops = _ops()
    flows = step_flows(ops, ranks_per_domain=4, channels=1)
    once = from_step_flows(flows, ops)
    whole = from_step_flows(flows, ops, repeat=True)
    per_step = np.array([op.per_step for op in ops])
    assert np.array_equal(whole.nbytes, np.rint(once.nbytes * per_step[once.group]))
    assert np.array_equal(whole.dep_idx, once.dep_idx)


def test_from_step_flows_empty() -> None:
    t = from_step_flows(step_flows((), ranks_per_domain=1, channels=1), ())
    assert len(t) == 0 and t.n_hosts == 0


# -- the Traffic table ---------------------------------------------------------------------------


def test_arrays_are_read_only_and_typed() -> None:
    t = ring_all_reduce(4, 100)
    assert t.src.dtype == np.int32 and t.nbytes.dtype == np.int64 and t.group.dtype == np.int32
    with pytest.raises(ValueError):
        t.nbytes[0] = 1


def test_structural_errors_raise_value_error() -> None:
    with pytest.raises(ValueError, match="rows"):
        Traffic(
            src=np.array([0, 1], dtype=np.int32),
            dst=np.array([1, 0, 2], dtype=np.int32),
            nbytes=np.array([1, 1], dtype=np.int64),
            start_ps=np.array([0, 0], dtype=np.int64),
            dep_ptr=np.array([0, 0, 0], dtype=np.int64),
            dep_idx=np.array([], dtype=np.int64),
            group=np.array([-1, -1], dtype=np.int32),
            n_hosts=3,
        )
    with pytest.raises(ValueError, match="dep_ptr"):
        Traffic(
            src=np.array([0], dtype=np.int32),
            dst=np.array([1], dtype=np.int32),
            nbytes=np.array([1], dtype=np.int64),
            start_ps=np.array([0], dtype=np.int64),
            dep_ptr=np.array([0, 2], dtype=np.int64),
            dep_idx=np.array([0], dtype=np.int64),
            group=np.array([-1], dtype=np.int32),
            n_hosts=2,
        )


def test_levels_and_topological_order() -> None:
    """0 -> 2 -> 3, 1 -> 3: flow 3 waits for 1 and 2."""
    t = Traffic.from_arrays([0, 1, 2, 3], [1, 2, 3, 0], 5, deps=[[], [], [0], [2, 1]])
    assert t.levels().tolist() == [0, 0, 1, 2]
    assert t.topological_order().tolist() == [0, 1, 2, 3]


def test_validate_reports_every_problem() -> None:
    t = Traffic.from_arrays(
        [0, 1, 2, 5], [1, 1, 0, 0], [1, 1, -1, 1], n_hosts=4, deps=[[1], [0], [], []]
    )
    with pytest.raises(SpecError) as err:
        t.validate()
    messages = {p.where: p.message for p in err.value.problems}
    assert "outside hosts" in messages["flow 3"]
    assert "own host" in messages["flow 1"]
    assert "negative nbytes" in messages["flow 2"]
    assert "cycle" in messages["flows 0, 1"]
    bad_dep = Traffic.from_arrays([0], [1], 1, deps=[[4]])
    assert "outside" in bad_dep.problems()[0].message


def test_concat_renumbers_dependencies_and_groups() -> None:
    a = ring_all_reduce(3, 30, name="a")
    b = Traffic.from_arrays([0, 1], [1, 0], 8, deps=[[], [0]], n_hosts=5)
    c = Traffic.concat(a, b, a)
    assert len(c) == 8 and c.n_hosts == 5
    assert c.deps(4).tolist() == [3]
    assert c.group.tolist() == [0, 0, 0, -1, -1, 1, 1, 1]
    assert c.group_names == ("a", "a")
    assert np.array_equal(c.bytes_per_group(), [120, 120])
    c.validate()
    assert len(Traffic.concat()) == 0
