"""NetBox import of the structured plant, checked by tracing it as NetBox would: from each
switch or server port through patch cords, panels (front port to rear port position), trunk
and backbone legs (straight profiles), to the far interface."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
import yaml

from clusterloom.export import write_design
from clusterloom.export.cabling_files import NETBOX_CABLE_COLUMNS
from clusterloom.pipeline import Design, run_design
from clusterloom.spec import parse_spec
from helpers import MINIMAL_SPEC


def _site(halls: int, buildings: int, rows: int, medium: str) -> dict[str, Any]:
    """Rows of two positions: ``halls`` halls in one building, or one hall in each of
    ``buildings`` buildings 200 m apart; ``medium`` for every link (a duplex or a parallel
    optic)."""
    doc: dict[str, Any] = yaml.safe_load(MINIMAL_SPEC)
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
    ],
    ids=["two-rows-duplex", "two-halls-duplex", "two-buildings-duplex", "two-halls-parallel"],
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


def test_every_link_traces_to_its_far_interface(exported: Path) -> None:
    cables = _read(exported / "cables.csv") + _read(exported / "cables_plant.csv")
    assert tuple(_read(exported / "cables_plant.csv")[0]) == NETBOX_CABLE_COLUMNS
    fronts = _read(exported / "front_ports.csv")
    rears = {
        (r["device"], r["name"]): int(r["positions"]) for r in _read(exported / "rear_ports.csv")
    }
    interfaces = {(r["device"], r["name"]) for r in _read(exported / "interfaces.csv")}
    front = {(r["device"], r["name"]): r for r in fronts}
    by_rear: dict[tuple[str, str], list[dict[str, str]]] = {}
    for r in fronts:
        by_rear.setdefault((r["device"], r["rear_port"]), []).append(r)
        start, n = int(r["rear_port_position"]), int(r["positions"])
        assert start + n - 1 <= rears[(r["device"], r["rear_port"])]
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
            assert (dev, name) in front
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
                f = front[(dev, name)]
                dev, name, pos = dev, f["rear_port"], int(f["rear_port_position"]) + pos - 1
                j, side = at[("dcim.rearport", dev, name)]
                kind, dev, name = far(j, side)
            elif kind == "dcim.rearport":
                f = next(
                    f
                    for f in by_rear[(dev, name)]
                    if int(f["rear_port_position"])
                    <= pos
                    < int(f["rear_port_position"]) + int(f["positions"])
                )
                pos = pos - int(f["rear_port_position"]) + 1
                j, side = at[("dcim.frontport", dev, f["name"])]
                if cables[j]["label"] == cab["label"]:
                    raise AssertionError(f"{label}: trace turned back")
                kind, dev, name = far(j, side)
            else:
                break
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
    devices = {p["name"] for p in panels}
    assert {r["device"] for r in _read(exported / "rear_ports.csv")} <= devices
    slots = [(p["rack"], p["position"]) for p in panels if p["position"]]
    assert len(slots) == len(set(slots))
    types = _read(exported / "device_types_panels.csv")
    assert {p["device_type"] for p in panels} == {t["model"] for t in types}
    bundles = {b["name"] for b in _read(exported / "cable_bundles.csv")}
    assert {c["bundle"] for c in _read(exported / "cables_plant.csv")} <= bundles
