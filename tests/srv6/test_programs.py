"""Path programs: valid up/down paths, uSIDs that steer the packet there, EVs spread over
distinct paths (even reuse beyond), and the whole-table closed forms against the table."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from srv6_fabrics import SHAPES, topology

from clusterloom.errors import SpecError
from clusterloom.fabric.topology import Role, Topology
from clusterloom.srv6 import plan_addresses, programs_for
from clusterloom.srv6.encoding import Format
from clusterloom.srv6.plan import PlanOptions
from clusterloom.srv6.programs import hops_of
from clusterloom.srv6.render import Wiring
from clusterloom.srv6.summary import summarize
from clusterloom.srv6.verify import predict


def _linked(t: Topology) -> set[tuple[int, int]]:
    return set(zip(t.link_src.tolist(), t.link_dst.tolist(), strict=True))


@given(
    st.sampled_from(SHAPES),
    st.data(),
    st.sampled_from([Format(32, 16), Format(64, 16), Format(96, 16), Format(32, 32)]),
)
def test_every_program_is_a_valid_up_down_path_its_usids_steer_to(
    shape: tuple[int, int, int, int], data: st.DataObject, fmt: Format
) -> None:
    t = topology(shape)
    plan = plan_addresses(t, PlanOptions(fmt=fmt))
    host = data.draw(st.integers(0, t.plan.hosts - 1))
    port = data.draw(st.integers(0, plan.host_ports - 1))
    evs = data.draw(st.integers(1, 40))
    pr = programs_for(plan, host, port, evs)
    linked, hops = _linked(t), hops_of(pr)
    w = Wiring(plan)
    for d in range(pr.dst.shape[0]):
        dst = int(pr.dst[d])
        for m in range(pr.evs.shape[0]):
            row = [h for h in hops[d, m].tolist() if h >= 0]
            way = [host, *row, dst]
            for a, b in pairwise(way):
                assert (min(a, b), max(a, b)) in linked
            roles = [int(t.node_role[n]) for n in way]
            top = roles.index(max(roles))
            assert roles[: top + 1] == sorted(roles[: top + 1])  # up, then down
            assert roles[top:] == sorted(roles[top:], reverse=True)
            assert len(set(roles[top : top + 1])) == 1 and roles.count(max(roles)) == 1
            assert {int(t.node_plane[n]) for n in row} == {pr.plane}
            assert int(t.node_index[row[0]]) == int(plan.nic_leaf[host, port])
            # the uSIDs: each End at its transit switch, the last destination the NIC SID
            arrived = predict(w, pr, d, m)
            assert [h.node for h in arrived] == way[1:]
            assert arrived[-1].destination == plan.nic_sid(dst, port)
            assert arrived[-1].segments_left in (None, 0)


@pytest.mark.parametrize("shape", SHAPES)
def test_evs_of_a_pair_take_distinct_paths_then_reuse_evenly(
    shape: tuple[int, int, int, int],
) -> None:
    t = topology(shape)
    plan = plan_addresses(t)
    for evs in (1, 3, 16, 128):
        pr = programs_for(plan, 1, 0, evs)
        hops = hops_of(pr)
        k = pr.evs.shape[0]
        for d in range(pr.dst.shape[0]):
            n = int(pr.n_paths[d])
            counts = np.bincount(pr.path[d], minlength=n)
            assert counts.max() - counts.min() <= 1 and counts.sum() == k
            if k <= n:
                assert len({tuple(h) for h in hops[d].tolist()}) == k  # distinct paths


def test_the_path_count_per_class_is_the_fabrics() -> None:
    t = topology((64, 8, 3, 2))  # 4 spines per pod, 2 cores per group
    pr = programs_for(plan_addresses(t), 0, 0, 8)
    p = t.plan
    leaf = pr.plan.nic_leaf[:, 0]
    for d, dst in enumerate(pr.dst.tolist()):
        same_leaf = leaf[dst] == leaf[0]
        same_pod = leaf[dst] // p.pod_leaves == leaf[0] // p.pod_leaves
        want = 1 if same_leaf else (4 if same_pod else 8)
        assert int(pr.n_paths[d]) == want


def test_a_source_spreads_its_evs_over_every_spine_of_its_pod() -> None:
    t = topology((16, 8, 2, 2))
    pr = programs_for(plan_addresses(t), 0, 1, 2)
    spines = {int(t.node_index[h]) for h in hops_of(pr)[:, :, 1].ravel().tolist() if h >= 0}
    assert spines == set(range(t.plan.spines))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("fmt", [Format(32, 16), Format(96, 16)])
def test_the_closed_form_summary_is_the_sum_of_every_nics_table(
    shape: tuple[int, int, int, int], fmt: Format
) -> None:
    plan = plan_addresses(topology(shape), PlanOptions(fmt=fmt))
    evs = 12
    s = summarize(plan, evs)
    entries = nbytes = 0
    per_nic = []
    for h in range(plan.topology.plan.hosts):
        host_bytes = 0
        for port in range(plan.host_ports):
            pr = programs_for(plan, h, port, evs)
            entries += pr.entries
            host_bytes += pr.nbytes
        nbytes += host_bytes
        per_nic.append(host_bytes)
    assert (s.programs, s.nbytes) == (entries, nbytes)
    assert (s.nic_bytes_max, s.nic_bytes_min) == (max(per_nic), min(per_nic))


def test_a_bad_source_is_refused_naming_it() -> None:
    plan = plan_addresses(topology((8, 4, 2, 1)))
    with pytest.raises(SpecError) as e:
        programs_for(plan, 99, 5, 0)
    assert [p.where for p in e.value.problems] == ["host", "port", "evs"]


def test_the_roles_order_is_leaf_spine_core() -> None:
    assert Role.HOST < Role.LEAF < Role.SPINE < Role.CORE  # the up/down check relies on it
