"""Up-down paths chosen per hop by entropy value: valid, shortest, diverse, failure-aware."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from clusterloom.fabric.topology import generate
from clusterloom.sim.paths import build_router, path_count, route
from helpers import build_plan, kport_plan


def _check_paths(router, src, dst, port, paths) -> None:  # type: ignore[no-untyped-def]
    """Every path starts at src's port, ends at dst's port, alternates up then down, and each
    hop starts where the previous one ended."""
    t = router.topology
    for row, s, d, q in zip(paths, src, dst, port, strict=True):
        hops = row[row >= 0]
        assert hops.size in (2, 4, 6)
        links, up = hops // 2, hops % 2 == 0
        assert up[: hops.size // 2].all() and not up[hops.size // 2 :].any()
        assert links[0] == router.host_link[s, q] and links[-1] == router.host_link[d, q]
        at = s
        for link, is_up in zip(links, up, strict=True):
            a, b = int(t.link_src[link]), int(t.link_dst[link])
            assert at == (a if is_up else b)
            at = b if is_up else a
        assert at == d


@pytest.mark.parametrize(
    "plan",
    [
        pytest.param(lambda: build_plan(accelerators=512, switch="qm9700"), id="2-tier-rail"),
        pytest.param(lambda: kport_plan(128, 8, tiers=3), id="3-tier-fat-tree"),
        pytest.param(
            lambda: build_plan(
                accelerators=1024, switch="qm9700", ports_per_accelerator=2, port_speed_gbps=400
            ),
            id="2-planes",
        ),
    ],
)
def test_paths_are_valid_and_cover_every_equal_cost_path(plan) -> None:  # type: ignore[no-untyped-def]
    t = generate(plan())
    r = build_router(t)
    rng = np.random.default_rng(7)
    hosts, ports = r.host_link.shape
    n = 400
    src = rng.integers(0, hosts, n)
    dst = (src + rng.integers(1, hosts, n)) % hosts
    port = rng.integers(0, ports, n)
    ev = rng.integers(0, 2**40, n)
    paths = route(r, src, dst, port, ev, seed=3)
    _check_paths(r, src, dst, port, paths)
    # many entropy values between one pair reach every equal-cost path (small fabrics)
    s, d = int(src[0]), int(dst[0])
    evs = np.arange(20_000)
    many = route(r, np.full(evs.size, s), np.full(evs.size, d), np.zeros(evs.size, np.int64), evs)
    assert len({tuple(p) for p in many.tolist()}) == path_count(r, s, d, 0)


def test_failed_links_are_avoided_and_unreachable_flows_get_no_path() -> None:
    t = generate(build_plan(accelerators=512, switch="qm9700"))
    r = build_router(t)
    n = 2000
    src = np.zeros(n, dtype=np.int64)
    dst = np.full(n, 300)
    port = np.zeros(n, dtype=np.int64)
    ev = np.arange(n)
    before = route(r, src, dst, port, ev)
    used = before[:, 1] // 2  # the leaf uplink each EV chose
    dead = int(np.bincount(used).argmax())
    alive = np.ones(t.n_links, dtype=bool)
    alive[dead] = False
    after = route(r, src, dst, port, ev, alive=alive)
    assert not np.isin(after // 2, [dead]).any()
    _check_paths(r, src, dst, port, after)
    # the load moves to the other uplinks: every remaining uplink of the leaf is used
    assert set((after[:, 1] // 2).tolist()) == set(used.tolist()) - {dead}
    # the host's own link dead: no path at all
    alive[r.host_link[0, 0]] = False
    assert (route(r, src[:3], dst[:3], port[:3], ev[:3], alive=alive) == -1).all()


def test_same_inputs_same_paths() -> None:
    t = generate(kport_plan(128, 8, tiers=3))
    r = build_router(t)
    args = (np.arange(64), (np.arange(64) + 17) % 128, np.zeros(64, np.int64), np.arange(64) * 31)
    assert np.array_equal(route(r, *args, seed=5), route(r, *args, seed=5))
    assert not np.array_equal(route(r, *args, seed=5), route(r, *args, seed=6))


def test_a_dead_link_near_the_destination_is_avoided_from_the_first_hop() -> None:
    """3 tiers: the link from a spine down to the destination leaf fails. A source in another
    pod must not climb to the spine index whose far spine can no longer reach that leaf: every
    EV still finds a live path (a regression: some EVs used to end with no path)."""
    t = generate(kport_plan(128, 8, tiers=3))
    r = build_router(t)
    dst = 0
    leaf_b = int(t.link_dst[r.host_link[dst, 0]])
    down_to_b = np.flatnonzero((t.link_tier == 2) & (t.link_src == leaf_b))
    alive = np.ones(t.n_links, dtype=bool)
    alive[down_to_b[0]] = False
    n = 512
    src = np.full(n, 127, dtype=np.int64)  # the last host: another pod
    paths = route(r, src, np.full(n, dst), np.zeros(n, np.int64), np.arange(n), alive=alive)
    assert (paths[:, 0] >= 0).all()
    assert not np.isin(paths // 2, [down_to_b[0]]).any()
    _check_paths(r, src, np.full(n, dst), np.zeros(n, np.int64), paths)


@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=50))
def test_compiled_hop_hash_is_splitmix64(values: list[int]) -> None:
    """The router's compiled per-hop hash and the vectorized ``splitmix64`` the transports use
    are one function."""
    from clusterloom.sim.paths import _mix, splitmix64

    x = np.array(values, dtype=np.uint64)
    assert [int(_mix(np.uint64(v))) for v in x] == splitmix64(x).tolist()


@pytest.mark.parametrize(
    "plan",
    [
        pytest.param(lambda: build_plan(accelerators=512, switch="qm9700"), id="2-tier-rail"),
        pytest.param(lambda: kport_plan(128, 8, tiers=3), id="3-tier-fat-tree"),
        pytest.param(lambda: kport_plan(96, 8, tiers=3), id="3-tier-partial"),
        pytest.param(
            lambda: build_plan(
                accelerators=1024, switch="qm9700", ports_per_accelerator=2, port_speed_gbps=400
            ),
            id="2-planes",
        ),
    ],
)
@given(seed=st.integers(0, 2**32 - 1))
def test_the_healthy_fabrics_direct_picks_are_the_general_ones(plan, seed: int) -> None:  # type: ignore[no-untyped-def]
    """With every link live the direct pick (``cands[h % count]`` where every candidate of
    a hop is valid) routes each row onto the links the general pass, testing every
    candidate, gives; and it routes the rows of a whole fat tree by itself."""
    import dataclasses

    from clusterloom.sim.paths import _route_fast, route_view

    r = build_router(generate(plan()))
    rng = np.random.default_rng(seed)
    hosts, ports = r.host_link.shape
    n = 300
    src = rng.integers(0, hosts, n)
    dst = np.where(rng.random(n) < 0.1, src, (src + rng.integers(1, hosts, n)) % hosts)
    port = rng.integers(0, ports, n)
    ev = rng.integers(0, 2**32, n)
    view = route_view(r)
    assert view.fast
    general = dataclasses.replace(view, fast=False)
    got = route(r, src, dst, port, ev, seed=seed, view=view)
    assert got.tolist() == route(r, src, dst, port, ev, seed=seed, view=general).tolist()
    done = np.zeros(n, dtype=np.bool_)
    fresh = route_view(r)
    _route_fast(
        r.host_link, r.up, r.down, r.lower_slot, fresh.link_src, fresh.link_dst,
        fresh.node_pod, r.topology.plan.tiers, src, dst, port, ev, np.uint64(seed),
        np.uint64(seed ^ 0x5EED), fresh.up_any, fresh.down_any, fresh.n_up, fresh.n_down,
        fresh.upper, fresh.same, fresh.cross, fresh.far, np.full_like(got, -1), done,
    )  # fmt: skip
    assert done.all() or "partial" in str(plan)
    dead = np.ones(r.topology.n_links, dtype=bool)
    dead[int(rng.integers(0, dead.size))] = False
    assert not route_view(r, dead).fast  # a dead link: the general pass only
