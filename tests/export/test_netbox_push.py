"""``clusterloom netbox push`` into a real NetBox 4.6.8 through its REST API: a small design
made for the test is pushed into a fresh database, NetBox then holds as many objects as the
files describe, and a second push creates and updates nothing.

NetBox's web server (``manage.py runserver``, NetBox's own Python) runs on a free port against
a copy of NetBox's migrated database for the module and is stopped after it. Without a NetBox
the test is skipped, unless ``CI`` is set: then it fails (as ``test_netbox_real.py``).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from netbox_driver import fresh_database
from test_netbox_real import NETBOX_DIR, _netbox_up, _read, _rows, _site
from typer.testing import CliRunner

from clusterloom.cli.main import app
from clusterloom.export.netbox_push import push
from clusterloom.pipeline import run_design
from clusterloom.spec import parse_spec
from clusterloom.write import write_design
from helpers import assert_same_baseline, spec_dict

pytestmark = pytest.mark.netbox
pynetbox = pytest.importorskip("pynetbox")

DATABASE = "clusterloom_push_test"
#: Run NetBox's development server against DATABASE (argv: netbox dir, database, address).
SERVE = """
import os, sys
sys.path.insert(0, sys.argv[1] + "/src/netbox")
os.environ["DJANGO_SETTINGS_MODULE"] = "netbox.settings"
import netbox.configuration as c
c.DATABASES["default"]["NAME"] = sys.argv[2]
from django.core.management import execute_from_command_line
execute_from_command_line(["manage.py", "runserver", sys.argv[3], "--noreload", "--skip-checks"])
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        out: dict[str, Any] = json.loads(resp.read())
        return out


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """NetBox's URL and an admin API token, on a fresh copy of the migrated database."""
    why = _netbox_up()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set and NetBox is not up: {why}")
        pytest.skip(why)
    fresh_database(DATABASE)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("netbox") / "server.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen(
            [
                str(NETBOX_DIR / "venv" / "bin" / "python"),
                "-c",
                SERVE,
                str(NETBOX_DIR),
                DATABASE,
                f"127.0.0.1:{port}",
            ],
            stdout=fh,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                got = _post(
                    f"{url}/api/users/tokens/provision/", {"username": "admin", "password": "admin"}
                )
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"NetBox's server did not start: {log.read_text()[-2000:]}")
                time.sleep(0.5)
        token = f"nbt_{got['key']}.{got['token']}" if got.get("version") == 2 else got["key"]
        yield url, token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def outdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small structured design: 8 x 400G on two 4-GPU nodes in one hall of 2 rows (MPO
    cords, LC cassettes): 8 devices, 2 panels, a trunk, 36 cables."""
    doc = spec_dict(accelerators=8, accelerators_per_node=4, name="nb-push")
    doc["fabrics"]["backend"]["media"] = {"host_leaf": "dr4-400g", "leaf_spine": "fr4-400g"}
    doc["site"] = _site(1, 2)
    d = run_design(parse_spec(yaml.safe_dump(doc)), compare=False)
    folder = tmp_path_factory.mktemp("nb-push")
    write_design(d, folder)
    return folder


def test_push_creates_the_files_objects_then_changes_nothing(
    server: tuple[str, str], outdir: Path
) -> None:
    url, token = server
    nb = outdir / "netbox"
    t0 = time.monotonic()
    first = push(outdir, url, token)
    t1 = time.monotonic()
    second = push(outdir, url, token)
    t2 = time.monotonic()
    print(f"NetBox push: first {t1 - t0:.1f} s, second {t2 - t1:.1f} s")
    devices = _read(nb / "devices.csv") + _read(nb / "panels.csv")
    want = {
        "custom fields": _rows(nb / "custom_fields.csv"),
        "sites": _rows(nb / "sites.csv"),
        "locations": _rows(nb / "locations.csv"),
        "rack roles": _rows(nb / "rack_roles.csv"),
        "racks": _rows(nb / "racks.csv") + _rows(nb / "patch_racks.csv"),
        "manufacturers": _rows(nb / "manufacturers.csv"),
        "device roles": _rows(nb / "device_roles.csv"),
        "device types": _rows(nb / "device_types.yaml"),
        "devices": len(devices),
        "cable bundles": _rows(nb / "cable_bundles.csv"),
        "cables": _rows(nb / "cables.csv") + _rows(nb / "cables_plant.csv"),
    }
    want["custom fields"] += 1  # the site's clusterloom_design (push only, not the CSV import)
    assert want["cable bundles"] and want["cables"] > want["devices"], want
    assert {k: first[k].created for k in want} == want
    assert not any(t.updated or t.unchanged for t in first.values()), first
    assert {k: second[k].unchanged for k in want} == want
    assert not any(t.created or t.updated for t in second.values()), second

    # NetBox itself holds them: the devices with every interface the types give them
    api = pynetbox.api(url, token=token)
    site = api.dcim.sites.get(name="nb-push")
    types = {t["model"]: t for t in yaml.safe_load_all((nb / "device_types.yaml").read_text())}
    assert api.dcim.devices.count(site_id=site.id) == len(devices)
    assert api.dcim.interfaces.count(site_id=site.id) == sum(
        len(types[x["device_type"]].get("interfaces", [])) for x in devices
    )
    assert api.dcim.cables.count(site_id=site.id) == want["cables"]

    # a field changed in NetBox is put back, and only that one (through the command)
    rack = api.dcim.racks.get(site_id=site.id, name=_read(nb / "racks.csv")[0]["name"])
    rack.update({"description": "moved by hand"})
    run = CliRunner().invoke(app, ["netbox", "push", str(outdir), "--url", url, "--token", token])
    assert run.exit_code == 0, run.output
    lines = {
        ln.split("│")[1].strip(): ln.split("│")[2:5]
        for ln in run.output.splitlines()
        if ln.count("│") >= 5
    }
    assert [c.strip() for c in lines["racks"]] == ["0", "1", str(want["racks"] - 1)], run.output
    assert [c.strip() for c in lines["cables"]] == ["0", "0", str(want["cables"])], run.output
    assert api.dcim.racks.get(rack.id).description != "moved by hand"


def test_push_errors_are_one_line_each(
    server: tuple[str, str], outdir: Path, tmp_path: Path
) -> None:
    url, token = server
    runner = CliRunner()
    bad_token = runner.invoke(app, ["netbox", "push", str(outdir), "--url", url, "--token", "x"])
    assert bad_token.exit_code == 2, bad_token.output
    assert "token" in bad_token.output and "Traceback" not in bad_token.output
    port = _free_port()
    refused = runner.invoke(
        app, ["netbox", "push", str(outdir), "--url", f"http://127.0.0.1:{port}", "--token", token]
    )
    assert refused.exit_code == 2, refused.output
    assert "cannot reach NetBox" in refused.output
    bad = tmp_path / "bad"
    shutil.copytree(outdir / "netbox", bad / "netbox")
    sites = bad / "netbox" / "sites.csv"
    sites.write_text(sites.read_text().replace(",planned,", ",bogus,"))
    rejected = runner.invoke(app, ["netbox", "push", str(bad), "--url", url, "--token", token])
    assert rejected.exit_code == 2, rejected.output
    assert "sites nb-push" in rejected.output and "status" in rejected.output, rejected.output
    assert "Traceback" not in rejected.output


# -- NetBox as the installed baseline, and a grown design pushed in place (issue 17) ---------


def test_netbox_read_back_equals_the_run_directory(server: tuple[str, str], outdir: Path) -> None:
    """Through patch panels and a trunk (NetBox's own path tracing): the same links, racks,
    spec and fabrics as ``read_installed`` of the directory."""
    from clusterloom.growth import read_installed
    from clusterloom.growth.netbox import read_netbox

    url, token = server
    push(outdir, url, token)  # the first test pushed it already: then nothing changes
    got = read_netbox(url, token, "nb-push")
    assert_same_baseline(got, read_installed(outdir))
    assert got.ignored == {}


def _grown_runs(tmp: Path) -> dict[str, Path]:
    """2 one-GPU nodes grown to 4 (one row: direct cables, one per link; 5 devices, then 7):
    the spine stripe changes, 2 of the 4 installed links are re-patched, 6 added."""
    doc = spec_dict(accelerators=2, accelerators_per_node=1, name="nb-grow")
    doc["site"] = _site(1, 1)
    doc["site"]["buildings"][0]["halls"][0]["template"]["positions_per_row"] = 4
    runs = {}
    for n, before in ((2, None), (4, "2")):
        doc["compute"]["accelerators"] = n
        path = tmp / f"g{n}.yaml"
        path.write_text(yaml.safe_dump(doc))
        args = ["design", str(path), "-o", str(tmp / str(n))]
        if before is not None:
            args += ["--installed", str(runs[before])]
        run = CliRunner().invoke(app, args)
        assert run.exit_code in (0, 1), run.output
        runs["big" if before else "small"] = runs[str(n)] = tmp / str(n)
    return runs


def _link_set(out: Path) -> set[str]:
    import csv

    with open(out / "cabling" / "cut_sheet.csv", newline="") as fh:
        return {
            f"{r['a_device']}:{r['a_port']}~{r['b_device']}:{r['b_port']}"
            for r in csv.DictReader(fh)
        }


def _quiet(report: dict[str, Any]) -> bool:
    return not any(t.created or t.updated or t.tagged or t.deleted for t in report.values())


def test_a_grown_design_pushed_in_place_then_shrunk_then_deleted(
    server: tuple[str, str],
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Growth: every link the change plan adds is a cable made or moved, every link it
    removes a cable moved or tagged (one cable per link here); NetBox read back equals the
    grown run's directory, and grown from NetBox the design is the one grown from the
    directory. Shrunk back: the links the small design lacks are moved, deleted or tagged and
    left (read back: the small design again; pushed again, nothing changes), then deleted
    with --delete-removed."""
    from clusterloom.growth import read_installed
    from clusterloom.growth.netbox import read_netbox

    url, token = server
    tmp = tmp_path_factory.mktemp("nb-grow")
    runs = _grown_runs(tmp)
    push(runs["small"], url, token)
    # a device clusterloom did not make, on the site: left out, counted, never touched
    api = pynetbox.api(url, token=token)
    site = api.dcim.sites.get(name="nb-grow")
    node = api.dcim.devices.get(site_id=site.id, name="node00000")
    foreign = api.dcim.devices.create(
        name="someone-elses", device_type=node.device_type.id, role=node.role.id, site=site.id
    )
    # grown from NetBox, through the command: the same design as grown from the directory
    monkeypatch.setenv("NETBOX_TOKEN", token)
    args = ["design", str(tmp / "g4.yaml"), "-o", str(tmp / "grown-from-netbox")]
    run = CliRunner().invoke(app, [*args, "--installed", f"{url}/?site=nb-grow"])
    assert run.exit_code in (0, 1), run.output
    said = f"installed: NetBox {url} site nb-grow: 4 links, 3 racks; left out (not clusterloom's"
    assert said in run.output and "removed): 1 devices" in run.output, run.output
    g = json.loads((runs["big"] / "design.json").read_text())["growth"]
    from_nb = json.loads((tmp / "grown-from-netbox" / "design.json").read_text())["growth"]
    assert {k: v for k, v in from_nb.items() if k != "installed"} == {
        k: v for k, v in g.items() if k != "installed"
    }
    sheet = "cabling/cut_sheet.csv"
    assert (tmp / "grown-from-netbox" / sheet).read_bytes() == (runs["big"] / sheet).read_bytes()
    grown = push(runs["big"], url, token)
    assert g["links_repatched"] == 2 and g["links_added"] == 6, g
    cables = grown["cables"]
    assert cables.created + cables.updated == g["links_added"], grown
    assert cables.updated + cables.tagged + cables.deleted == g["links_repatched"], grown
    assert cables.updated > 0  # the re-patched links' cables moved, not made again
    assert cables.unchanged == g["links_installed"] - g["links_repatched"]
    assert grown["devices"].created == 2 and grown["devices"].tagged == 0  # two new nodes
    back = read_netbox(url, token, "nb-grow")
    assert_same_baseline(back, read_installed(runs["big"]))
    assert back.ignored == {"devices": 1}

    small, big = _link_set(runs["small"]), _link_set(runs["big"])
    shrunk = push(runs["small"], url, token)
    cables = shrunk["cables"]
    assert cables.created + cables.updated == len(small - big), shrunk
    assert cables.updated + cables.tagged + cables.deleted == len(big - small), shrunk
    assert cables.tagged > 0 and shrunk["devices"].tagged == 2, shrunk
    assert_same_baseline(read_netbox(url, token, "nb-grow"), read_installed(runs["small"]))
    assert _quiet(push(runs["small"], url, token))  # already tagged: nothing changes

    tagged = api.dcim.cables.count(site_id=site.id, tag="clusterloom-removed")
    assert tagged == cables.tagged
    run = CliRunner().invoke(
        app,
        ["netbox", "push", str(runs["small"]), "--url", url, "--token", token, "--delete-removed"],
    )
    assert run.exit_code == 0, run.output
    assert api.dcim.cables.count(site_id=site.id, tag="clusterloom-removed") == 0
    assert api.dcim.devices.count(site_id=site.id) == 1 + len(
        _read(runs["small"] / "netbox" / "devices.csv")
    )
    assert api.dcim.devices.get(foreign.id) is not None
    assert api.dcim.cables.count(site_id=site.id) == len(small)
    assert_same_baseline(read_netbox(url, token, "nb-grow"), read_installed(runs["small"]))
