"""Graph views: the networkx graph, node-link JSON and GraphML hold every node and link of the
topology and load back with networkx; over the size limit nothing is written."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import pytest

from clusterloom import Design
from clusterloom.export import graph as graph_module
from clusterloom.export.graph import to_networkx, write_graphml, write_node_link
from clusterloom.fabric import Role


@pytest.mark.parametrize("fabric", ["backend", "frontend"])
def test_graph_matches_the_topology(demo: Design, fabric: str) -> None:
    t = demo.fabric(fabric).topology
    g = to_networkx(t, catalog=demo.spec.resolved_catalog())
    assert isinstance(g, nx.MultiGraph)
    assert (g.number_of_nodes(), g.number_of_edges()) == (t.n_nodes, t.n_links)
    first_switch = g.nodes[t.plan.hosts]
    assert first_switch["role"] == "leaf" and first_switch["name"].endswith("-p0-leaf0000")
    _, _, data = next(iter(g.edges(0, data=True)))
    assert {"tier", "plane", "capacity_gbps", "latency_ns", "src_port", "dst_port"} <= set(data)
    assert data["capacity_gbps"] == t.plan.speed_gbps


def test_accelerators_have_unique_names(demo: Design) -> None:
    g = to_networkx(demo.fabric("backend").topology, catalog=demo.spec.resolved_catalog())
    names = [d["name"] for _, d in g.nodes(data=True)]
    assert len(set(names)) == len(names)
    assert g.nodes[9]["name"] == "node00001/gpu1" and g.nodes[9]["device"] == "node00001"


def test_files_load_back(ib: Design, tmp_path: Path) -> None:
    t = ib.fabrics[0].topology
    catalog = ib.spec.resolved_catalog()
    assert write_node_link(t, tmp_path / "g.json", catalog=catalog)
    assert write_graphml(t, tmp_path / "g.graphml", catalog=catalog)
    data = json.loads((tmp_path / "g.json").read_text())
    loaded = nx.node_link_graph(data, edges="links")
    assert isinstance(loaded, nx.MultiGraph)
    assert (loaded.number_of_nodes(), loaded.number_of_edges()) == (t.n_nodes, t.n_links)
    graphml = nx.read_graphml(tmp_path / "g.graphml")
    assert (graphml.number_of_nodes(), graphml.number_of_edges()) == (t.n_nodes, t.n_links)
    core = str(t.switch_id(0, Role.CORE, 0))
    assert graphml.nodes[core]["name"] == "be-p0-core0000"
    assert graphml.nodes[core]["tier"] == 3


def test_deterministic_bytes(ib: Design, tmp_path: Path) -> None:
    t = ib.fabrics[0].topology
    catalog = ib.spec.resolved_catalog()
    for name, writer in (("g.json", write_node_link), ("g.graphml", write_graphml)):
        writer(t, tmp_path / f"a-{name}", catalog=catalog)
        writer(t, tmp_path / f"b-{name}", catalog=catalog)
        assert (tmp_path / f"a-{name}").read_bytes() == (tmp_path / f"b-{name}").read_bytes()


def test_over_the_limit_nothing_is_written(
    ib: Design, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = ib.fabrics[0].topology
    catalog = ib.spec.resolved_catalog()
    monkeypatch.setattr(graph_module, "GRAPH_LINK_LIMIT", t.n_links - 1)
    assert write_node_link(t, tmp_path / "g.json", catalog=catalog) is False
    assert write_graphml(t, tmp_path / "g.graphml", catalog=catalog) is False
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="limit"):
        to_networkx(t, catalog=catalog)
