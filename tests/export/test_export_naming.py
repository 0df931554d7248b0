"""Stable names: hand-checked examples, round trips through the parsers, and the gather tables
against the topology."""

from __future__ import annotations

import numpy as np
import pytest

from clusterloom import Design, parse_spec, run_design
from clusterloom.export.naming import (
    host_port_name,
    parse_host_port,
    parse_server_name,
    parse_switch_name,
    parse_switch_port,
    server_name,
    switch_name,
    switch_port_name,
    topology_names,
)
from helpers import MINIMAL_SPEC


@pytest.mark.parametrize(
    ("port", "factor", "name"),
    [
        (0, 1, "swp1"),
        (1, 1, "swp2"),
        (63, 1, "swp64"),
        (0, 2, "swp1s1"),
        (1, 2, "swp1s2"),
        (2, 2, "swp2s1"),
        (3, 2, "swp2s2"),
        (127, 2, "swp64s2"),
        (5, 4, "swp2s2"),
        (511, 8, "swp64s8"),
    ],
)
def test_switch_port_names(port: int, factor: int, name: str) -> None:
    assert switch_port_name(port, factor) == name
    assert parse_switch_port(name, factor) == port


def test_breakout_two_numbers_cage_then_lane() -> None:
    assert [switch_port_name(i, 2) for i in range(6)] == [
        "swp1s1", "swp1s2", "swp2s1", "swp2s2", "swp3s1", "swp3s2",
    ]  # fmt: skip


@pytest.mark.parametrize("factor", [1, 2, 4, 8])
def test_switch_port_round_trip(factor: int) -> None:
    names = [switch_port_name(i, factor) for i in range(64 * factor)]
    assert len(set(names)) == len(names)
    assert [parse_switch_port(n, factor) for n in names] == list(range(64 * factor))


@pytest.mark.parametrize(
    ("name", "factor"),
    [("swp1", 2), ("swp1s1", 1), ("swp1s3", 2), ("swp0", 1), ("eth1", 1), ("swp1s0", 2)],
)
def test_port_names_that_do_not_fit_the_factor_are_refused(name: str, factor: int) -> None:
    with pytest.raises(ValueError, match="port"):
        parse_switch_port(name, factor)


def test_port_names_need_a_valid_port_and_factor() -> None:
    with pytest.raises(ValueError):
        switch_port_name(-1, 1)
    with pytest.raises(ValueError):
        switch_port_name(0, 0)


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (("backend", 3, "leaf", 12), "be-p3-leaf0012"),
        (("backend", 0, "spine", 100), "be-p0-spine0100"),
        (("backend", 1, "core", 7), "be-p1-core0007"),
        (("frontend", 0, "leaf", 0), "fe-p0-leaf0000"),
        (("backend", 2, "leaf", 12345), "be-p2-leaf12345"),
    ],
)
def test_switch_names(args: tuple[str, int, str, int], name: str) -> None:
    assert switch_name(*args) == name
    prefix, plane, role, index = parse_switch_name(name)
    assert (plane, role, index) == args[1:]
    assert prefix == {"backend": "be", "frontend": "fe"}[args[0]]


def test_server_and_host_port_names() -> None:
    assert server_name(0) == "node00000"
    assert server_name(16383) == "node16383"
    assert parse_server_name("node00042") == 42
    assert host_port_name("backend", 3, 5) == "gpu3p5"
    assert host_port_name("frontend", 0, 1) == "fe1"
    assert parse_host_port("gpu3p5") == (3, 5)
    assert parse_host_port("fe1") == (None, 1)
    with pytest.raises(ValueError):
        parse_server_name("node1")
    for bad in ("be-p0-leaf0000", "gpu1", "fe"):
        with pytest.raises(ValueError):
            parse_host_port(bad)


def test_two_node_fabric_by_hand() -> None:
    """Two 8-GPU nodes, one 400G port per GPU, qm9700 (64 x 400G, no breakout), one leaf
    per rail; each leaf takes GPU r of both nodes on swp1, swp2 and goes up on swp3, swp4:

    .. code-block:: text

        be-p0-spine0000            be-p0-spine0001
              swp3 |   ...   | swp4
                 be-p0-leaf0000    ...    be-p0-leaf0007
              swp1 |    | swp2
        node00000 gpu0p0  node00001 gpu0p0    (gpu7p0 of each -> leaf0007)
    """
    design = run_design(parse_spec(MINIMAL_SPEC))
    t = design.fabrics[0].topology
    names = topology_names(t, design.spec.resolved_catalog())
    ends = {
        (str(a), str(b)): (str(c), str(d))
        for a, b, c, d in zip(
            names.device(t.link_src), names.interface(t.link_src, t.link_src_port),
            names.device(t.link_dst), names.interface(t.link_dst, t.link_dst_port),
            strict=True,
        )
    }  # fmt: skip
    assert ends[("node00000", "gpu0p0")] == ("be-p0-leaf0000", "swp1")
    assert ends[("node00001", "gpu0p0")] == ("be-p0-leaf0000", "swp2")
    assert ends[("node00000", "gpu7p0")] == ("be-p0-leaf0007", "swp1")
    uplinks = sorted(port for (dev, port) in ends if dev == "be-p0-leaf0000")
    assert uplinks == ["swp3", "swp4"]
    assert {dev for dev, _ in ends.values() if "spine" in dev} == {
        "be-p0-spine0000", "be-p0-spine0001",
    }  # fmt: skip


def test_demo_names_match_the_topology(demo: Design) -> None:
    catalog = demo.spec.resolved_catalog()
    backend = demo.fabric("backend")
    t = backend.topology
    names = topology_names(t, catalog)
    assert names.breakout == {"leaf": 2, "spine": 2}  # sn5600 runs 400G as 2 per 800G cage
    hosts = np.arange(t.plan.hosts)
    assert list(names.device(hosts[[0, 7, 8, 1023]])) == [
        "node00000", "node00000", "node00001", "node00127",
    ]  # fmt: skip
    # link 0: GPU 0 of node 0, port 0, to the first lane of the first cage of leaf 0
    assert names.device(t.link_src[:1])[0] == "node00000"
    assert names.interface(t.link_src[:1], t.link_src_port[:1])[0] == "gpu0p0"
    assert names.device(t.link_dst[:1])[0] == "be-p0-leaf0000"
    assert names.interface(t.link_dst[:1], t.link_dst_port[:1])[0] == "swp1s1"
    # every switch name parses back to its plane, role and index
    for v in range(t.plan.hosts, t.n_nodes, 5):
        prefix, plane, role, index = parse_switch_name(str(names.devices[v]))
        assert prefix == "be"
        assert (plane, index) == (int(t.node_plane[v]), int(t.node_index[v]))
        assert role == ("leaf", "spine", "core")[int(t.node_role[v]) - 1]


def test_every_link_end_has_its_own_name(demo: Design) -> None:
    catalog = demo.spec.resolved_catalog()
    for fd in demo.fabrics:
        t = fd.topology
        names = topology_names(t, catalog)
        nodes = np.concatenate([t.link_src, t.link_dst])
        ports = np.concatenate([t.link_src_port, t.link_dst_port])
        pairs = set(zip(names.device(nodes).tolist(), names.interface(nodes, ports).tolist(),
                        strict=True))  # fmt: skip
        assert len(pairs) == 2 * t.n_links
    frontend = topology_names(demo.fabric("frontend").topology, catalog)
    assert frontend.devices[0] == "node00000"
    assert str(frontend.devices[-1]).startswith("fe-p1-spine")
