"""The NetBox files imported into a real NetBox 4.6.8 through its own bulk-import views, in the
order ``netbox/IMPORT_ORDER.txt`` states, with no change: every row imports, NetBox holds as
many objects as the files describe, and NetBox's own cable trace from every interface ends on
the far interface the cut sheet names.

NetBox runs with its own Python (3.12) and packages, so ``netbox_driver.py`` drives it in a
subprocess (``NETBOX_DIR/venv/bin/python``) and answers in JSON. ``.ci/run`` starts NetBox
with ``netbox-up.sh`` into ``NETBOX_DIR`` (default ``/var/cache/clusterloom-netbox``) and stops
it after the suite. Without a NetBox the test is skipped, unless ``CI`` is set: then it fails.

Fixtures, made for the test (``clusterloom.spec`` through ``parse_spec``)::

    nb-hall    one hall, 3 rows of 2 positions      32 x 400G: hosts on parallel DR4 (MPO
               ┌──┬──┐ r01                         cords, 1-position panels), leaves to
               ├──┼──┤ r02   racks ─ RDF ─ trunk   spines on duplex FR4 (LC cassettes)
               └──┴──┘ r03
    nb-campus  two buildings, a hall of one row      16 x 200G on Tomahawk 3 cages broken out,
               b1/h1 ─ HDF ═ backbone ═ HDF ─ b2/h1 leaves to spines between the buildings
                                                   (four-fibre duplex lanes on LC cassettes:
                                                   hgx-1k-roce's 128 links NetBox traced to
                                                   nothing)
"""

from __future__ import annotations

import csv
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from clusterloom.export.netbox_setup import SHARED, import_order
from clusterloom.pipeline import Design, run_design
from clusterloom.spec import parse_spec
from clusterloom.write import write_design
from helpers import spec_dict

NETBOX_DIR = Path(os.environ.get("NETBOX_DIR", "/var/cache/clusterloom-netbox"))
DRIVER = Path(__file__).with_name("netbox_driver.py")

pytestmark = pytest.mark.netbox


def _netbox_up() -> str | None:
    """Why NetBox cannot be used here, or None when it can."""
    python = NETBOX_DIR / "venv" / "bin" / "python"
    if not python.exists():
        return f"no NetBox at {NETBOX_DIR} (start it: ../shared/reference/netbox/netbox-up.sh)"
    for port, what in ((5432, "PostgreSQL"), (6379, "Redis")):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return f"NetBox's {what} is not running on 127.0.0.1:{port} (run netbox-up.sh)"
    return None


@pytest.fixture(scope="module")
def netbox() -> Path:
    why = _netbox_up()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set and NetBox is not up: {why}")
        pytest.skip(why)
    return NETBOX_DIR


def _site(buildings: int, rows: int) -> dict[str, Any]:
    template = {"rows": rows, "positions_per_row": 2, "pitch_m": 1.0, "origin_m": [0.5, 1.0]}
    hall = {"name": "h1", "width_m": 40, "depth_m": 30, "template": template}
    return {
        "buildings": [
            {"name": f"b{b + 1}", "x_m": 200 * b, "halls": [hall]} for b in range(buildings)
        ]
    }


def hall_spec() -> dict[str, Any]:
    doc = spec_dict(accelerators=32, name="nb-hall")
    doc["fabrics"]["backend"]["media"] = {"host_leaf": "dr4-400g", "leaf_spine": "fr4-400g"}
    doc["site"] = _site(1, 3)
    return doc


def campus_spec() -> dict[str, Any]:
    doc = spec_dict(
        accelerators=16, port_speed_gbps=200, switch="tomahawk3-32x400g", name="nb-campus"
    )
    doc["fabrics"]["backend"]["media"] = {"host_leaf": "fr2-200g", "leaf_spine": "fr2-200g"}
    doc["site"] = _site(2, 1)
    return doc


def _read(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _rows(path: Path) -> int:
    if path.suffix == ".yaml":
        return sum(1 for d in yaml.safe_load_all(path.read_text()) if d)
    return len(_read(path))


@pytest.fixture(scope="module")
def designs(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Design, Path]]:
    out = []
    for doc in (hall_spec(), campus_spec()):
        d = run_design(parse_spec(yaml.safe_dump(doc)), compare=False)
        folder = tmp_path_factory.mktemp(d.spec.name)
        write_design(d, folder)
        out.append((d, folder))
    return out


@pytest.fixture(scope="module")
def imported(
    netbox: Path, designs: list[tuple[Design, Path]], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """Both designs imported, one after the other, into one fresh NetBox database."""
    job = {
        "netbox": str(netbox),
        "database": "clusterloom_test",
        "shared": sorted(SHARED),
        "designs": [
            {
                "site": d.spec.name,
                "dir": str(folder / "netbox"),
                "steps": [list(step) for step in import_order(d)],
            }
            for d, folder in designs
        ],
    }
    path = tmp_path_factory.mktemp("job") / "job.json"
    path.write_text(json.dumps(job))
    run = subprocess.run(
        [str(netbox / "venv" / "bin" / "python"), str(DRIVER), str(path)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result: dict[str, Any] = json.loads(run.stdout)
    sys.stderr.write(
        "NetBox: "
        + ", ".join(
            f"{r['site']} import {r['import_seconds']} s, trace {r['trace_seconds']} s"
            for r in result["designs"]
        )
        + f" (start {result['setup_seconds']} s)\n"
    )
    return result


def test_import_order_is_written_with_the_files(designs: list[tuple[Design, Path]]) -> None:
    for d, folder in designs:
        text = (folder / "netbox" / "IMPORT_ORDER.txt").read_text()
        for i, (name, page, _) in enumerate(import_order(d), start=1):
            assert f"{i:2d}. {name:<20} {page}" in text, text
            assert (folder / "netbox" / name).exists()


def test_every_row_imports(imported: dict[str, Any], designs: list[tuple[Design, Path]]) -> None:
    for (d, folder), result in zip(designs, imported["designs"], strict=True):
        steps = result["steps"]
        assert [s["file"] for s in steps] == [name for name, _, _ in import_order(d)]
        for s in steps:
            assert s["status"] == 302 and not s["errors"], f"{d.spec.name} {s['file']}: {s}"
            rows = _rows(folder / "netbox" / s["file"])
            assert s["after"] - s["before"] == rows - s["already_there"], s
            if s["file"] not in SHARED or d is designs[0][0]:
                assert s["already_there"] == 0, s


def test_netbox_holds_what_the_files_describe(
    imported: dict[str, Any], designs: list[tuple[Design, Path]]
) -> None:
    for (d, folder), result in zip(designs, imported["designs"], strict=True):
        nb = folder / "netbox"
        counts = result["counts"]
        types = {t["model"]: t for t in yaml.safe_load_all((nb / "device_types.yaml").read_text())}
        devices = _read(nb / "devices.csv") + _read(nb / "panels.csv")
        expect = {
            "locations": _rows(nb / "locations.csv"),
            "racks": _rows(nb / "racks.csv") + _rows(nb / "patch_racks.csv"),
            "devices": len(devices),
            "interfaces": sum(len(types[x["device_type"]].get("interfaces", [])) for x in devices),
            "front_ports": sum(
                len(types[x["device_type"]].get("front-ports", [])) for x in devices
            ),
            "rear_ports": sum(len(types[x["device_type"]].get("rear-ports", [])) for x in devices),
            "cables": _rows(nb / "cables.csv") + _rows(nb / "cables_plant.csv"),
            "bundles": _rows(nb / "cable_bundles.csv"),
        }
        assert counts == expect, d.spec.name


def test_netbox_traces_every_link_to_its_far_interface(
    imported: dict[str, Any], designs: list[tuple[Design, Path]]
) -> None:
    for (d, folder), result in zip(designs, imported["designs"], strict=True):
        cut = _read(folder / "cabling" / "cut_sheet.csv")
        want: dict[tuple[str, str], list[list[str]]] = {}
        for r in cut:
            want[(r["a_device"], r["a_port"])] = [[r["b_device"], r["b_port"]]]
            want[(r["b_device"], r["b_port"])] = [[r["a_device"], r["a_port"]]]
        got = {(t["device"], t["name"]): t for t in result["traces"]}
        assert set(got) == set(want), d.spec.name
        wrong = [
            (end, t["far"], want[end])
            for end, t in got.items()
            if not t["complete"] or t["far"] != want[end] or t["far_type"] != ["Interface"]
        ]
        assert not wrong, f"{d.spec.name}: {len(wrong)} of {len(got)} traces, e.g. {wrong[:3]}"
        assert any(r["a_cord"] for r in cut), "the fixture has structured links"
