"""Stable fabric generation: a grown fabric keeps the installed link ends (fabric/stable.py).

hgx-1k-roce's backend, one plane, 51.2T switches at 128 x 400G::

    1,024 GPUs: 16 leaves x 64 up ── 8 spines (128 ports each, full: 8 links per pair)
    1,280 GPUs: 24 leaves x 64 up ── 16 spines (96 used: 4 links per pair)
    1,536 GPUs: 24 leaves          ── 16 spines (the 3rd unit's leaves fill their host ports)

1k -> 1.25k: the spine layer must grow, so each old pair keeps 4 of its 8 links and 32 of
every old leaf's 64 uplinks move (16 x 32 = 512, the lower bound). 1.25k -> 1.5k: the spines
had room; nothing moves.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import yaml
from growth_strategies import growth_steps
from hypothesis import given, settings

from clusterloom.errors import SpecError
from clusterloom.examples import example_text
from clusterloom.fabric import design_fabric
from clusterloom.fabric.sizing import fabric_spec
from clusterloom.fabric.stable import installed_links_of, stabilize
from clusterloom.fabric.topology import Role, Topology
from clusterloom.fabric.validate import validate_topology
from clusterloom.spec import ClusterSpec, parse_spec
from helpers import build_spec


def grown(accelerators: int) -> ClusterSpec:
    doc = yaml.safe_load(example_text("hgx-1k-roce"))
    doc["compute"]["accelerators"] = accelerators
    return parse_spec(yaml.safe_dump(doc))


def _pairs(t: Topology) -> dict[tuple[int, int, int], int]:
    """Links per (tier, lower, upper) among switches."""
    sw = t.link_tier >= 2
    keys, counts = np.unique(
        np.stack([t.link_tier[sw], t.link_src[sw], t.link_dst[sw]], axis=1),
        axis=0,
        return_counts=True,
    )
    return {tuple(k): int(c) for k, c in zip(keys.tolist(), counts.tolist(), strict=True)}


def _shape(t: Topology) -> tuple[dict[tuple[int, int, int], int], list[tuple[int, ...]]]:
    """:func:`_pairs` below the cores, and the cores up to their names: each core's plane,
    group and spines with their link counts (``stabilize`` renames cores, never regroups)."""
    pairs = _pairs(t)
    core = t.node_role == Role.CORE
    below = {k: n for k, n in pairs.items() if not core[k[2]]}
    per_core: dict[int, list[int]] = {}
    for (_, lo, hi), n in pairs.items():
        if core[hi]:
            per_core.setdefault(hi, []).extend((lo, n))
    cores = [
        (int(t.node_plane[c]), int(t.node_pod[c]), *per_core.get(c, []))
        for c in np.flatnonzero(core).tolist()
    ]
    return below, sorted(cores)


def _ends(t: Topology) -> set[tuple[int, ...]]:
    """Every link by identity (role, plane, index, port at both ends)."""
    s, d = t.link_src, t.link_dst
    cols = [
        t.node_role[s],
        t.node_plane[s],
        t.node_index[s],
        t.link_src_port,
        t.node_role[d],
        t.node_plane[d],
        t.node_index[d],
        t.link_dst_port,
    ]
    return {tuple(r) for r in np.stack(cols, axis=1).tolist()}


@pytest.mark.parametrize("fabric", ["backend", "frontend"])
@pytest.mark.parametrize(("before", "after"), [(1024, 1280), (1280, 1536), (1024, 2048)])
def test_the_grown_fabric_has_the_generated_shape_and_passes_every_check(
    fabric: str, before: int, after: int
) -> None:
    old = design_fabric(grown(before), fabric, compare=False).topology
    spec = grown(after)
    new = design_fabric(spec, fabric, compare=False).topology
    st = stabilize(new, installed_links_of(old))
    assert _pairs(st.topology) == _pairs(new)
    assert st.topology.n_links == new.n_links
    findings = validate_topology(st.topology, fabric_spec(spec, fabric), spec.resolved_catalog())
    assert [f for f in findings if f.severity == "error"] == []
    # every installed link is kept or listed as a move, never silently rewired
    assert st.kept + len(st.moves) == old.n_links
    assert len(_ends(old) & _ends(st.topology)) == st.kept
    assert len(st.moves) == st.forced  # no move beyond what the new shape forces


def test_a_spine_layer_that_must_grow_moves_exactly_the_forced_links() -> None:
    old = design_fabric(grown(1024), compare=False).topology
    new = design_fabric(grown(1280), compare=False).topology
    st = stabilize(new, installed_links_of(old))
    assert (st.kept, len(st.moves), st.forced) == (1024 + 512, 512, 512)
    assert {m.reason for m in st.moves} == {
        "the stripe of this leaf-spine pair goes from 8 to 4 links (the upper layer grows to "
        "16 switches)"
    }
    # the shape that avoids it, with its cost (every shape in tests/growth/test_alternatives.py)
    grown_fd = design_fabric(
        grown(1280), compare=False, installed=installed_links_of(old), baseline=grown(1024)
    )
    (finding,) = [f for f in grown_fd.findings if f.code == "growth-repatch"]
    assert "over-build the spine layer: 16 spines (sn5600, 64 of 128 ports" in finding.message
    assert "+$440,000 at first build" in finding.message  # 8 more sn5600 at $55,000
    # today's generator restripes from scratch: far more links change ends
    assert len(_ends(old) - _ends(new)) > 512


@pytest.mark.parametrize("fabric", ["backend", "frontend"])
def test_where_the_spine_has_room_every_installed_link_is_kept(fabric: str) -> None:
    old = design_fabric(grown(1280), fabric, compare=False).topology
    new = design_fabric(grown(1536), fabric, compare=False).topology
    st = stabilize(new, installed_links_of(old))
    assert st.moves == () and st.kept == old.n_links
    assert _ends(old) <= _ends(st.topology)


def test_a_fabric_stabilized_against_itself_is_unchanged() -> None:
    t = design_fabric(grown(1280), compare=False).topology
    st = stabilize(t, installed_links_of(t))
    assert _ends(st.topology) == _ends(t) and st.moves == ()


@settings(max_examples=40, deadline=None)
@given(growth_steps())
def test_any_growth_keeps_the_shape_and_moves_only_what_it_forces(
    step: tuple[dict[str, Any], int, int],
) -> None:
    kwargs, before, after = step
    apn = kwargs["accelerators_per_node"]
    try:
        old_spec = build_spec(accelerators=before * apn, **kwargs)
        new_spec = build_spec(accelerators=after * apn, **kwargs)
        old = design_fabric(old_spec, compare=False).topology
        new = design_fabric(new_spec, compare=False).topology
    except SpecError:
        return  # a shape the sizing refuses
    st_ = stabilize(new, installed_links_of(old))
    assert _shape(st_.topology) == _shape(new)
    assert np.array_equal(np.bincount(st_.topology.link_tier), np.bincount(new.link_tier))
    findings = validate_topology(
        st_.topology, fabric_spec(new_spec, "backend"), new_spec.resolved_catalog()
    )
    assert [f.code for f in findings if f.severity == "error"] == []
    assert st_.kept + len(st_.moves) == old.n_links
    assert len(_ends(old) & _ends(st_.topology)) == st_.kept
    assert len(st_.moves) == st_.forced


def test_a_port_referenced_twice_keeps_the_first_link_and_moves_the_other() -> None:
    """Two installed leaf-spine links claim the same leaf port (the second one's port is
    overwritten with the first one's): where the spines have room, the first in order keeps
    it, the other is the one forced move, and its pair gets a link on a free port instead."""
    from dataclasses import replace

    old = design_fabric(grown(1280), compare=False).topology
    new = design_fabric(grown(1536), compare=False).topology
    links = installed_links_of(old)
    up = np.flatnonzero(links.tier == 2)
    first, second = up[0], up[1]  # the same leaf, consecutive uplink ports
    assert links.a_index[first] == links.a_index[second]
    a_port = links.a_port.copy()
    a_port[second] = a_port[first]
    st = stabilize(new, replace(links, a_port=a_port))
    assert [m.reason for m in st.moves] == [
        "this port is referenced twice in the installed baseline"
    ]
    assert st.forced == 1 and st.kept == old.n_links - 1
    assert _shape(st.topology) == _shape(new)
