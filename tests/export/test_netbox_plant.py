"""NetBox import of the structured plant, checked by tracing it as NetBox would: from each
switch or server port through patch cords, panels (front port to rear port position), trunk
and backbone legs (straight profiles), to the far interface."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
import yaml

from clusterloom.export.cabling_files import NETBOX_CABLE_COLUMNS
from clusterloom.pipeline import Design, run_design
from clusterloom.spec import parse_spec
from clusterloom.write import write_design
from helpers import MINIMAL_SPEC, spec_dict


def _site(halls: int, buildings: int, rows: int, medium: str) -> dict[str, Any]:
    """Rows of two positions: ``halls`` halls in one building, or one hall in each of
    ``buildings`` buildings 200 m apart; ``medium`` for every link (a duplex or a parallel
    optic)."""
    doc: dict[str, Any] = yaml.safe_load(MINIMAL_SPEC)
    if medium.endswith("-200g"):  # lanes of broken-out cages: four-fibre duplex links
        doc = spec_dict(
            accelerators=32, port_speed_gbps=200, switch="tomahawk3-32x400g", name="tiny"
        )
    doc["fabrics"]["backend"]["media"] = {"host_leaf": medium, "leaf_spine": medium}
    template = {"rows": rows, "positions_per_row": 2, "pitch_m": 1.0, "origin_m": [0.5, 1.0]}

    def hall(i: int) -> dict[str, Any]:
        return {"name": f"h{i}", "width_m": 40, "depth_m": 30, "template": template}

    doc["site"] = {
        "buildings": [
            {"name": f"b{b + 1}", "x_m": 200 * b, "halls": [hall(i + 1) for i in range(halls)]}
            for b in range(buildings)
        ]
    }
    return doc


@pytest.fixture(
    scope="module",
    params=[
        (1, 1, 2, "fr4-400g"),
        (2, 1, 1, "fr4-400g"),
        (1, 2, 1, "fr4-400g"),
        (2, 1, 1, "dr4-400g"),
        (1, 2, 1, "fr2-200g"),
    ],
    ids=[
        "two-rows-duplex",
        "two-halls-duplex",
        "two-buildings-duplex",
        "two-halls-parallel",
        "two-buildings-cage-lanes",
    ],
)
def exported(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    d: Design = run_design(parse_spec(yaml.safe_dump(_site(*request.param))), compare=False)
    out = tmp_path_factory.mktemp("nb")
    write_design(d, out)
    return out / "netbox"


def _read(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _names(value: str) -> list[str]:
    return value.split(",")


def _panel_ports(
    exported: Path,
) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int], list[dict[str, Any]]]:
    """Rear ports (positions), front ports (positions) and port mappings of every panel, as
    NetBox creates them from the panel's device type in ``device_types.yaml``."""
    types = {
        t["model"]: t for t in yaml.safe_load_all((exported / "device_types.yaml").read_text())
    }
    rears: dict[tuple[str, str], int] = {}
    fronts: dict[tuple[str, str], int] = {}
    maps: list[dict[str, Any]] = []
    for panel in _read(exported / "panels.csv"):
        t, dev = types[panel["device_type"]], panel["name"]
        rears |= {(dev, r["name"]): r["positions"] for r in t.get("rear-ports", [])}
        fronts |= {(dev, f["name"]): f["positions"] for f in t.get("front-ports", [])}
        maps += [{**m, "device": dev} for m in t.get("port-mappings", [])]
    return rears, fronts, maps


def test_every_link_traces_to_its_far_interface(exported: Path) -> None:
    """NetBox's trace, by its rules (``CablePath.from_origin`` in 4.6): a cable keeps the
    position (straight profiles); a front port reaches its rear port at the position its
    mapping names, and a rear port position the front port mapped onto it. Every position of
    a multi-position front port needs a mapping of its own (NetBox's front-port CSV import
    made only the first: the HDF interconnects now come from device types)."""
    cables = _read(exported / "cables.csv") + _read(exported / "cables_plant.csv")
    assert tuple(_read(exported / "cables_plant.csv")[0]) == NETBOX_CABLE_COLUMNS
    rears, fronts, maps = _panel_ports(exported)
    interfaces = {(r["device"], r["name"]) for r in _read(exported / "interfaces.csv")}
    to_rear = {(m["device"], m["front_port"], m["front_port_position"]): m for m in maps}
    to_front = {(m["device"], m["rear_port"], m["rear_port_position"]): m for m in maps}
    assert len(to_rear) == len(to_front) == len(maps)
    for (dev, name), positions in fronts.items():
        for q in range(1, positions + 1):
            m = to_rear[(dev, name, q)]
            assert m["rear_port_position"] <= rears[(dev, m["rear_port"])]
    # which cable ends on each termination
    at: dict[tuple[str, str, str], tuple[int, str]] = {}
    for i, cab in enumerate(cables):
        for side in ("a", "b"):
            for name in _names(cab[f"side_{side}_name"]):
                key = (cab[f"side_{side}_type"], cab[f"side_{side}_device"], name)
                assert key not in at, f"{key} ends two cables"
                at[key] = (i, side)
    for kind, dev, name in at:
        if kind == "dcim.interface":
            assert (dev, name) in interfaces
        elif kind == "dcim.frontport":
            assert (dev, name) in fronts
        else:
            assert (dev, name) in rears
    assert any(c["profile"] == "single-1c6p" or c["bundle"] for c in cables)

    def far(i: int, side: str) -> tuple[str, str, str]:
        other = "b" if side == "a" else "a"
        c = cables[i]
        return (
            c[f"side_{other}_type"],
            c[f"side_{other}_device"],
            _names(c[f"side_{other}_name"])[0],
        )

    traced = 0
    for i, cab in enumerate(cables):
        if cab["side_a_type"] != "dcim.interface" or not cab["label"].endswith("/A"):
            continue
        label = cab["label"][:-2]
        kind, dev, name = far(i, "a")
        pos = 1
        for _ in range(12):
            if kind == "dcim.frontport":
                m = to_rear[(dev, name, pos)]
                name, pos = m["rear_port"], m["rear_port_position"]
                j, side = at[("dcim.rearport", dev, name)]
            elif kind == "dcim.rearport":
                m = to_front[(dev, name, pos)]
                name, pos = m["front_port"], m["front_port_position"]
                j, side = at[("dcim.frontport", dev, name)]
                if cables[j]["label"] == cab["label"]:
                    raise AssertionError(f"{label}: trace turned back")
            else:
                break
            kind, dev, name = far(j, side)
        assert kind == "dcim.interface", f"{label} ends on {kind} {dev} {name}"
        j, _ = at[("dcim.interface", dev, name)]
        assert cables[j]["label"] == label + "/B", f"{label} reaches {cables[j]['label']}"
        traced += 1
    assert traced > 0


def test_panels_stand_in_known_racks(exported: Path) -> None:
    racks = {r["name"] for r in _read(exported / "racks.csv")}
    racks |= {r["name"] for r in _read(exported / "patch_racks.csv")}
    panels = _read(exported / "panels.csv")
    assert panels and {p["rack"] for p in panels} <= racks
    slots = [(p["rack"], p["position"]) for p in panels if p["position"]]
    assert len(slots) == len(set(slots))
    types = {t["model"] for t in yaml.safe_load_all((exported / "device_types.yaml").read_text())}
    assert {p["device_type"] for p in panels} <= types
    bundles = {b["name"] for b in _read(exported / "cable_bundles.csv")}
    assert {c["bundle"] for c in _read(exported / "cables_plant.csv")} <= bundles
    assert all(b.startswith("tiny/t") for b in bundles)  # unique per design (its site)
