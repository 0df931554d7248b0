"""Endpoint failover: retiring the EVs a failure kills leaves exactly the programs whose path
avoids it (checked against a path-by-path walk over the topology's links)."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from srv6_fabrics import SHAPES, topology

from clusterloom.errors import SpecError
from clusterloom.fabric.topology import Role, Topology
from clusterloom.srv6 import plan_addresses
from clusterloom.srv6.failover import Failure, host_failover, parse_failure
from clusterloom.srv6.programs import hops_of


def _dead_by_walk(t: Topology, way: list[int], failures: list[Failure], plane: int) -> bool:
    """A path is dead when its plane or one of its switches failed, or every link between two
    of its consecutive nodes did."""
    failed_links = {f.target for f in failures if f.kind == "link"}
    if any(f.kind == "plane" and f.target == plane for f in failures):
        return True
    if any(f.kind == "switch" and f.target in way for f in failures):
        return True
    for a, b in pairwise(way):
        lo, hi = min(a, b), max(a, b)
        links = np.flatnonzero((t.link_src == lo) & (t.link_dst == hi)).tolist()
        if set(links) <= failed_links:
            return True
    return False


def _failures(t: Topology, draw: Callable[[st.SearchStrategy[Any]], Any]) -> list[Failure]:
    p = t.plan
    switch = st.integers(p.hosts, t.n_nodes - 1).map(lambda n: Failure("switch", n))
    link = st.integers(0, t.n_links - 1).map(lambda i: Failure("link", i))
    upper_link = st.sampled_from(np.flatnonzero(t.link_tier >= 2).tolist()).map(
        lambda i: Failure("link", i)
    )
    plane = st.integers(0, p.planes - 1).map(lambda q: Failure("plane", q))
    one = st.one_of(link, upper_link, upper_link, switch, plane)
    return draw(st.lists(one, min_size=1, max_size=4))


@given(st.sampled_from(SHAPES), st.data())
def test_retired_evs_are_exactly_those_whose_path_crosses_a_failure(
    shape: tuple[int, int, int, int], data: st.DataObject
) -> None:
    t = topology(shape)
    plan = plan_addresses(t)
    failures = _failures(t, data.draw)
    host = data.draw(st.integers(0, t.plan.hosts - 1))
    evs = data.draw(st.integers(1, 24))
    fo = host_failover(plan, host, failures, evs)
    live = np.zeros(fo.programs[0].dst.shape[0], dtype=np.int64)
    for pr, retired in zip(fo.programs, fo.retired, strict=True):
        hops = hops_of(pr)
        for d in range(pr.dst.shape[0]):
            for m in range(pr.evs.shape[0]):
                way = [host, *[h for h in hops[d, m].tolist() if h >= 0], int(pr.dst[d])]
                assert bool(retired[d, m]) == _dead_by_walk(t, way, failures, pr.plane)
        live += (~retired).sum(axis=1)
    np.testing.assert_allclose(fo.share, live / evs)


def test_one_spine_link_down_retires_the_evs_through_it_and_keeps_the_rest() -> None:
    """2-tier, 2 spines, 1 link per leaf-spine pair: a source under leaf 0 loses the spine-0
    path to every host on another leaf: half its EVs to them (4 EVs over 2 paths)."""
    t = topology((8, 4, 2, 1))
    plan = plan_addresses(t)
    link = next(
        i
        for i in range(t.n_links)
        if t.link_tier[i] == 2 and t.node_index[t.link_src[i]] == 0
        and t.node_index[t.link_dst[i]] == 0
    )  # fmt: skip
    fo = host_failover(plan, 0, [Failure("link", link)], 4)
    leaf = plan.nic_leaf[:, 0]
    for d, dst in enumerate(fo.programs[0].dst.tolist()):
        want = 1.0 if leaf[dst] == leaf[0] else 0.5
        assert fo.share[d] == want
        assert len(fo.retired_evs(dst)) == (0 if want == 1.0 else 2)


def test_one_of_two_parallel_links_down_retires_nothing() -> None:
    t = topology((12, 8, 2, 1))  # 2 links per leaf-spine pair
    plan = plan_addresses(t)
    up = int(np.flatnonzero(t.link_tier == 2)[0])
    assert host_failover(plan, 0, [Failure("link", up)], 8).retired_count == 0


def test_a_plane_down_retires_that_ports_evs() -> None:
    t = topology((16, 8, 2, 2))
    fo = host_failover(plan_addresses(t), 3, [Failure("plane", 1)], 10)
    assert fo.share.tolist() == [0.5] * 15  # EVs 1, 3, 5, 7, 9 ride port 1 (plane 1)


def test_failures_are_parsed_and_bad_ones_named() -> None:
    t = topology((16, 8, 2, 2))
    assert parse_failure("switch:1/spine/0", t) == Failure("switch", t.switch_id(1, Role.SPINE, 0))
    assert parse_failure("plane:1", t) == Failure("plane", 1)
    for bad in ("link:-1", "switch:0/core/0", "plane:2", "wire:3", "switch:0/spine"):
        with pytest.raises(SpecError) as e:
            parse_failure(bad, t)
        assert e.value.problems[0].where == "--fail"
