"""Leaves inside the compute rack they serve (``leaf_placement: in-rack``): the rack's units
and power with its leaves in closed form, every host-leaf link inside one rack, refusals that
name the field and the numbers, and a whole ``clusterloom design``.

One row of six 0.6 m positions; two hgx-4 racks (4 nodes of 8 GPUs), each with its own
32-port leaf above the servers at U35::

    [compute00000 + leaf0] [compute00001 + leaf1] [spines] [ ] [ ] [ ]
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clusterloom.cli.main import app
from clusterloom.errors import SpecError
from clusterloom.fabric import design_fabric, fabric_names
from clusterloom.fabric.topology import Role
from clusterloom.findings import Severity
from clusterloom.placement import Placement, place
from clusterloom.spec import ClusterSpec, parse_spec
from clusterloom.units import kilowatts

runner = CliRunner()


def _doc(
    accelerators: int = 64, position_kw: float = 60, planes: int = 1, **backend: Any
) -> dict[str, Any]:
    return {
        "version": 1,
        "name": "inrack",
        "compute": {
            "accelerators": accelerators,
            "accelerators_per_node": 8,
            "nic": {"ports_per_accelerator": planes, "port_speed_gbps": 400},
        },
        "fabrics": {
            "backend": {
                "family": "fat-tree",
                "switch": "sn5600",
                "leaf_placement": "in-rack",
                **backend,
            }
        },
        "site": {
            "buildings": [
                {
                    "name": "b1",
                    "halls": [
                        {
                            "name": "h1",
                            "width_m": 40,
                            "depth_m": 20,
                            "template": {
                                "rows": 2,
                                "positions_per_row": 12,
                                "pitch_m": 0.6,
                                "origin_m": [1.0, 2.0],
                                "position_power_kw": position_kw,
                            },
                        }
                    ],
                }
            ]
        },
    }


def _spec(**kwargs: Any) -> ClusterSpec:
    return parse_spec(yaml.safe_dump(_doc(**kwargs)))


def _place(spec: ClusterSpec) -> Placement:
    fabrics = tuple(design_fabric(spec, f, compare=False) for f in fabric_names(spec))
    return place(spec, fabrics)


def test_rack_units_and_power_with_the_leaf() -> None:
    spec = _spec()
    catalog = spec.resolved_catalog()
    crack, leaf = catalog.racks["hgx-4"], catalog.switches["sn5600"]
    fd = design_fabric(spec, "backend", compare=False)
    assert fd.plan.nodes_per_leaf == crack.servers  # the default leaf fills one rack, not two
    p = _place(spec)
    d = p.demand
    assert d.rack_role.count("leaf") == d.rack_role.count("tor") == 0  # no rack of leaves
    dev = p.device("backend")
    leaves = np.flatnonzero(fd.topology.node_role == Role.LEAF)
    assert leaves.size == 2
    # servers U3..U34 (4 x 8U from U3), the leaf right above them
    assert dev.node_u[leaves].tolist() == [crack.first_u + crack.servers * crack.server_ru] * 2
    assert dev.node_height[leaves].tolist() == [leaf.rack_units] * 2
    assert sorted(dev.node_rack[leaves].tolist()) == [0, 1]
    # servers' draw + the switch + one optic end per uplink (32 at the assumed medium)
    optic_w = catalog.media[fd.plan.media[1]].power_w_per_end
    host_w = catalog.media[fd.plan.media[0]].power_w_per_end
    want = kilowatts(crack.power_kw) + leaf.power_w + 32 * optic_w + 32 * host_w
    assert d.rack_power_w[:2] == pytest.approx([want, want])
    assert d.rack_weight_kg[:2] == pytest.approx([crack.weight_kg + leaf.weight_kg] * 2)
    assert not [f for f in p.findings if f.severity is Severity.ERROR]


@settings(max_examples=8, deadline=None)
@given(
    racks=st.integers(1, 5),
    per_leaf=st.sampled_from([1, 2, 4]),
    planes=st.integers(1, 2),
)
def test_every_host_leaf_link_stays_in_one_rack(racks: int, per_leaf: int, planes: int) -> None:
    spec = _spec(accelerators=racks * 32, planes=planes, nodes_per_leaf=per_leaf)
    fd = design_fabric(spec, "backend", compare=False)
    if (4 // per_leaf) * planes * 2 > 48 - 34:  # 2U leaves above U34 of a 48U rack
        with pytest.raises(SpecError, match="too many"):
            _place(spec)
        return
    p = _place(spec)
    dev = p.device("backend")
    t = fd.topology
    host = t.link_tier == 1
    assert (dev.node_rack[t.link_src[host]] == dev.node_rack[t.link_dst[host]]).all()
    assert (p.demand.rack_kind[dev.node_rack[t.node_role == Role.LEAF]] == 0).all()
    # every leaf of a rack stacked above its servers without overlap (the placement check)
    assert not [f for f in p.findings if f.code == "u-overlap"]
    leaves = t.node_role == Role.LEAF
    assert int(leaves.sum()) == racks * (4 // per_leaf) * planes


def test_a_leaf_serving_two_racks_is_refused_with_the_numbers() -> None:
    with pytest.raises(SpecError) as exc:
        _place(_spec(nodes_per_leaf=8))
    (problem,) = exc.value.problems
    assert problem.where == "fabrics.backend.leaf_placement"
    assert "1 leaf(s) serve nodes of several racks" in problem.message
    assert "serves compute racks 0-1; a rack holds 4 nodes" in problem.message


def test_a_rack_without_room_for_its_leaves_names_it_and_the_excess() -> None:
    doc = _doc()
    # 4 servers of 11U from U3 reach U46; a 2U leaf would reach U48 in a 47U rack: 1U too many
    doc["catalog"] = {
        "racks": {
            "tall": {
                "kind": "compute",
                "rack_units": 47,
                "servers": 4,
                "server_ru": 11,
                "first_u": 3,
                "power_kw": 41,
                "weight_kg": 1400,
            }
        }
    }
    doc["site"]["racks"] = {"compute": "tall"}
    with pytest.raises(SpecError) as exc:
        _place(parse_spec(yaml.safe_dump(doc)))
    (problem,) = exc.value.problems
    assert problem.where == "fabrics.backend.leaf_placement"
    assert "2 compute rack(s) cannot take their leaves (e.g. compute00000 (tall, 47U)" in (
        problem.message
    )
    assert "reach U48, 1U too many" in problem.message


def test_a_rack_drawing_more_than_any_position_names_the_excess() -> None:
    spec = _spec(position_kw=42)
    fd = design_fabric(spec, "backend", compare=False)
    catalog = spec.resolved_catalog()
    extra_w = catalog.switches["sn5600"].power_w + 32 * (
        catalog.media[fd.plan.media[1]].power_w_per_end
        + catalog.media[fd.plan.media[0]].power_w_per_end
    )
    with pytest.raises(SpecError) as exc:
        _place(spec)
    (problem,) = exc.value.problems
    assert problem.where == "site.racks.compute"
    total = 41 + extra_w / 1000
    assert f"= {total:,.1f} kW, {total - 42:,.1f} kW over" in problem.message
    assert "2 compute racks with in-rack leaves" in problem.message


def test_bad_leaf_placement_exits_2_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(_doc(leaf_placement="in-row")))
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    assert "fabrics.backend.leaf_placement" in result.stderr
    assert "Traceback" not in result.output
    path.write_text(yaml.safe_dump(_doc(nodes_per_leaf=8)))
    result = runner.invoke(app, ["design", str(path), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "error: fabrics.backend.leaf_placement: in-rack puts each leaf" in result.stderr


def test_design_end_to_end_names_the_leaf_in_its_compute_rack(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(_doc()))
    out = tmp_path / "out"
    result = runner.invoke(app, ["design", str(path), "-o", str(out)])
    assert result.exit_code == 0, result.output
    with (out / "placement" / "racks.csv").open() as f:
        racks = {r["holds"]: r["rack"] for r in csv.DictReader(f)}
    with (out / "placement" / "elevations.csv").open() as f:
        leaves = [r for r in csv.DictReader(f) if r["role"] == "leaf"]
    assert {(r["rack"], r["u"]) for r in leaves} == {
        (racks["compute00000"], "35"),
        (racks["compute00001"], "35"),
    }
    with (out / "netbox" / "devices.csv").open() as f:
        nb = {r["name"]: (r["rack"], r["position"]) for r in csv.DictReader(f)}
    assert {nb[r["device"]] for r in leaves} == {(r["rack"], "35") for r in leaves}
    with (out / "cabling" / "cut_sheet.csv").open() as f:
        host = [r for r in csv.DictReader(f) if r["tier"] == "1"]
    assert len(host) == 64
    assert all(r["a_rack"] == r["b_rack"] for r in host)
    # copper inside the rack: from the server's port up to U35, 0.6 m into the cable manager
    assert {r["kind"] for r in host} == {"dac"}
    assert max(float(r["length_m"]) for r in host) <= 2.5
