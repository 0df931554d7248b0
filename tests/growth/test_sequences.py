"""Growth sequences on the built-in examples, fabric by fabric: each step stabilized against the
previous step's result (what the previous step installed).

hgx-1k-roce, 1,024 -> 1,280 -> 2,048 GPUs (backend: 51.2T at 128 x 400G)::

    1,024: 16 leaves ── 8 spines, 8 links a pair (spines full)
    1,280: 24 leaves ── 16 spines, 4 a pair: each old pair keeps its 4 lowest leaf ports,
           the other 4 move: 16 leaves x 8 spines x 4 = 512 forced
    2,048: 32 leaves ── 16 spines, 4 a pair (128 of 128 ports): nothing moves

rail-16k (QM9700, 64 x 400G, 3 tiers; pods of 4 scalable units = 32 leaves, 32 spines a pod,
core group j = the cores above spine j of every pod)::

    48 -> 64 SUs: 12 -> 16 pods, 8 cores a group both times (ceil(16 x 32 / 64) = 8): nothing moves
    32 -> 64 SUs: 4 -> 8 cores a group; each installed core keeps its identity and its group
           (stabilize numbers the 4 new cores of each group after the 128 installed ones), so
           every installed spine keeps its 4 cores and the stripe halving alone moves links:
           8 to 4 links a spine-core pair, 256 installed spines x 4 cores x 4 = 4,096 forced,
           every one listed. (Before the renumbering, installed core 4g+k landed in group
           (4g+k) // 8 and 8 x (16 + 31 x 32) = 8,064 were forced.)
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
import yaml

from clusterloom.examples import example_text
from clusterloom.fabric import design_fabric
from clusterloom.fabric.stable import installed_links_of, stabilize
from clusterloom.fabric.topology import Topology
from clusterloom.spec import ClusterSpec, builtin_catalog, parse_spec


def example(name: str, accelerators: int) -> ClusterSpec:
    doc = yaml.safe_load(example_text(name))
    doc["compute"]["accelerators"] = accelerators
    doc.pop("job", None)  # a job sized for the full example
    doc.pop("scenario", None)
    return parse_spec(yaml.safe_dump(doc))


def _chain(name: str, fabric: str, sizes: list[int]) -> list[tuple[Topology, int, list[str]]]:
    """(topology installed after the step, forced, moves as 'a ~ b') of every step."""
    installed = design_fabric(example(name, sizes[0]), fabric, compare=False).topology
    out = [(installed, 0, [])]
    for n in sizes[1:]:
        st = stabilize(
            design_fabric(example(name, n), fabric, compare=False).topology,
            installed_links_of(installed),
        )
        assert st.kept + len(st.moves) == installed.n_links
        assert len(st.moves) == st.forced
        installed = st.topology
        out.append((installed, st.forced, [f"{m.a} ~ {m.b}" for m in st.moves]))
    return out


def _expected_hgx_moves(t: Topology) -> list[str]:
    """The leaf-spine links of the 1,024-GPU backend beyond 4 a pair, each pair's highest leaf
    ports: computed from the installed topology alone."""
    pairs: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    up = np.flatnonzero(t.link_tier == 2)
    for i in up.tolist():
        pairs[(int(t.link_src[i]), int(t.link_dst[i]))].append(
            (int(t.link_src_port[i]), int(t.link_dst_port[i]))
        )
    out = []
    for (lo, hi), ports in pairs.items():
        for a, b in sorted(ports)[4:]:
            out.append(
                f"leaf p0/{t.node_index[lo]} port {a} ~ spine p0/{t.node_index[hi]} port {b}"
            )
    return sorted(out)


def test_hgx_1k_to_1_25k_to_2k_moves_exactly_the_forced_links_then_none() -> None:
    (t1k, _, _), (_, forced, moves), (_, forced_2k, moves_2k) = _chain(
        "hgx-1k-roce", "backend", [1024, 1280, 2048]
    )
    assert forced == 512 == 16 * 8 * 4
    assert sorted(moves) == _expected_hgx_moves(t1k)
    assert (forced_2k, moves_2k) == (0, [])


@pytest.mark.parametrize("fabric", ["backend", "frontend"])
def test_hgx_every_installed_link_stays_from_1_25k_to_2k(fabric: str) -> None:
    steps = _chain("hgx-1k-roce", fabric, [1280, 1536, 2048])
    assert [forced for _, forced, _ in steps] == [0, 0, 0]


@pytest.mark.parametrize("fabric", ["backend", "frontend"])
def test_rail_16k_adding_scalable_units_where_the_cores_have_room(fabric: str) -> None:
    steps = _chain("rail-16k", fabric, [48 * 256, 56 * 256, 64 * 256])
    assert [forced for _, forced, _ in steps] == [0, 0, 0]
    installed, grown = steps[0][0], steps[-1][0]
    assert grown.n_links > installed.n_links


def test_rail_16k_doubling_lists_every_forced_spine_core_move() -> None:
    (t32, _, _), (_, forced, moves) = _chain("rail-16k", "backend", [32 * 256, 64 * 256])
    assert forced == len(moves) == 256 * 4 * 4
    assert all(" ~ core p0/" in m and m.startswith("spine p0/") for m in moves)
    # each installed spine moves 4 of the 8 links to each of its 4 installed cores, no more
    per_pair = defaultdict(int)
    for m in moves:
        per_pair[m.split(" port")[0] + " ~ " + m.split(" ~ ")[1].split(" port")[0]] += 1
    assert len(per_pair) == 256 * 4 and set(per_pair.values()) == {4}
    assert all(int(m.split("core p0/")[1].split()[0]) < 128 for m in moves)
    # every installed spine-core link is either kept or listed, none twice
    sc = int((t32.link_tier == 3).sum())
    assert sc == 256 * 32 and len(set(moves)) == forced


def test_rail_16k_doubling_would_keep_its_links_with_the_core_layer_over_built() -> None:
    t32 = design_fabric(example("rail-16k", 32 * 256), compare=False).topology
    fd = design_fabric(
        example("rail-16k", 64 * 256),
        compare=False,
        installed=installed_links_of(t32),
        baseline=example("rail-16k", 32 * 256),
    )
    shapes = {a.name: a for a in fd.alternatives}
    over = shapes["over-build the spine layer"]
    qm9700 = builtin_catalog().switches["qm9700"].cost_usd
    assert over.links_repatched == 0
    assert over.first_build_usd == 128 * qm9700  # 256 cores from the start instead of 128
    # InfiniBand at 400G: the catalog's only switch has 64 ports, none larger to reserve on
    reserve = shapes["reserve core ports"]
    assert "no infiniband switch in the catalog has more than 64 ports" in reserve.infeasible
    assert reserve.shape == "cores of 128 ports at 400G"  # 16 pods x 8 links a spine-core pair
