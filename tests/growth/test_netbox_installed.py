"""NetBox as the installed baseline, without a NetBox: the mapping from NetBox's REST records
(faked from a run's own files, as ``netbox push`` would leave them) to ``Installed``, its
refusals, and the ordering of cable moves a grown design's push makes.

The records are what the API answers: devices, racks and cables with their tags, cabled
interfaces with the far end NetBox's path tracing reached (``connected_endpoints``).
"""

from __future__ import annotations

import csv
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from clusterloom.cli.main import app
from clusterloom.errors import SpecError
from clusterloom.export.netbox_push import OURS, REMOVED, Pusher, design_record
from clusterloom.growth import check_installed, read_installed
from clusterloom.growth.netbox import installed_from_netbox, netbox_source
from clusterloom.spec import parse_spec
from helpers import assert_same_baseline, installed_rows, spec_dict

#: 16 GPUs in one row of four positions: three racks, every link a direct cable
_DOC = spec_dict(accelerators=16, name="nb-fake")
_ROW = {"rows": 1, "positions_per_row": 4, "pitch_m": 1.0, "origin_m": [0.5, 1.0]}
_HALL = {"name": "h1", "width_m": 40, "depth_m": 30, "template": _ROW}
_DOC["site"] = {"buildings": [{"name": "b1", "halls": [_HALL]}]}
SPEC = yaml.safe_dump(_DOC)

Record = dict[str, Any]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("nbfake")
    (tmp / "s.yaml").write_text(SPEC)
    result = CliRunner().invoke(app, ["design", str(tmp / "s.yaml"), "-o", str(tmp / "out")])
    assert result.exit_code in (0, 1), result.output
    return tmp / "out"


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _tags(*slugs: str) -> list[Record]:
    return [{"id": i, "slug": s, "name": s} for i, s in enumerate(slugs)]


def records(out: Path) -> dict[str, Any]:
    """The site, devices, racks, cabled interfaces and cables a push of ``out`` leaves."""
    ours = _tags(OURS)
    devices = [
        {"id": i + 1, "name": r["name"], "tags": ours}
        for i, r in enumerate(_csv(out / "netbox" / "devices.csv"))
    ]
    dev = {d["name"]: d["id"] for d in devices}
    racks = [
        {"id": i + 1, "name": r["name"], "facility_id": r["facility_id"], "tags": ours}
        for i, r in enumerate(_csv(out / "netbox" / "racks.csv"))
    ]
    interfaces: list[Record] = []
    cables: list[Record] = []
    for c, row in enumerate(_csv(out / "cabling" / "cut_sheet.csv"), start=1):
        a, b = len(interfaces) + 1, len(interfaces) + 2
        for me, far, side in ((a, b, "a"), (b, a, "b")):
            interfaces.append(
                {
                    "id": me,
                    "name": row[f"{side}_port"],
                    "device": {"id": dev[row[f"{side}_device"]], "name": row[f"{side}_device"]},
                    "cable": {"id": c},
                    "connected_endpoints": [{"id": far}],
                }
            )
        cables.append(
            {
                "id": c,
                "label": row["label"],
                "tags": ours,
                "a_terminations": [{"object_type": "dcim.interface", "object_id": a}],
                "b_terminations": [{"object_type": "dcim.interface", "object_id": b}],
            }
        )
    site = {"id": 1, "name": "nb-fake", "custom_fields": {"clusterloom_design": design_record(out)}}
    return {"site_rec": site, "devices": devices, "racks": racks} | {
        "interfaces": interfaces,
        "cables": cables,
    }


def _read(recs: dict[str, Any]) -> Any:
    return installed_from_netbox("NetBox fake site nb-fake", "nb-fake", **recs)


def test_the_records_of_a_push_map_to_the_directorys_baseline(run: Path) -> None:
    got, want = _read(records(run)), read_installed(run)
    assert_same_baseline(got, want)
    assert len(got.racks) == 3
    assert sum(len(r) for r in installed_rows(got).values()) == len(
        _csv(run / "cabling" / "cut_sheet.csv")
    )
    assert got.ignored == {}


def test_objects_clusterloom_did_not_make_or_tagged_removed_are_ignored_and_counted(
    run: Path,
) -> None:
    recs = records(run)
    want = installed_rows(read_installed(run))
    # a device of someone else's cabled to a free leaf port; a rack of theirs
    leaf = next(d for d in recs["devices"] if "leaf" in d["name"])
    recs["devices"].append({"id": 900, "name": "mgmt-sw1", "tags": []})
    recs["racks"].append({"id": 900, "name": "b1-h1-r09-p01", "facility_id": "x", "tags": []})
    recs["interfaces"] += [
        {"id": 901, "name": "swp60", "device": {"id": leaf["id"]}, "cable": {"id": 900},
         "connected_endpoints": [{"id": 902}]},
        {"id": 902, "name": "eth0", "device": {"id": 900}, "cable": {"id": 900},
         "connected_endpoints": [{"id": 901}]},
    ]  # fmt: skip
    recs["cables"].append({"id": 900, "label": "theirs", "tags": [], "a_terminations": []})
    # a clusterloom cable a later push tagged removed: not part of the installed design
    gone = recs["cables"][0]
    gone["tags"] = _tags(OURS, REMOVED)
    got = _read(recs)
    assert got.ignored == {
        "devices": 1,
        "racks": 1,
        "cables": 1,
        "cables tagged clusterloom-removed": 1,
        "links": 2,
    }
    rows = installed_rows(got)
    assert sum(map(len, rows.values())) == sum(map(len, want.values())) - 1
    assert set(rows["backend"]) <= set(want["backend"])


def _refused(recs: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as exc:
        _read(recs)
    return [str(p) for p in exc.value.problems]


def test_a_device_referenced_twice_is_refused_naming_it(run: Path) -> None:
    recs = records(run)
    recs["devices"][1]["name"] = recs["devices"][0]["name"]
    assert _refused(recs)[0] == f"NetBox device {recs['devices'][0]['name']}: referenced twice"


def test_a_cable_to_an_interface_that_does_not_exist_is_refused(run: Path) -> None:
    recs = records(run)
    cable = recs["cables"][3]
    cable["b_terminations"][0]["object_id"] = 99999
    (problem,) = _refused(recs)
    assert problem.startswith(f"NetBox cable {cable['label']}: its b end is interface 99999")


def test_a_path_that_reaches_no_interface_is_refused_naming_the_interface(run: Path) -> None:
    recs = records(run)
    iface = recs["interfaces"][0]
    iface["connected_endpoints"] = []
    problems = _refused(recs)
    assert f"NetBox interface {iface['device']['name']}:{iface['name']}" in problems[0]
    assert "incomplete path" in problems[0]


def test_a_name_that_is_not_clusterloom_s_is_refused_naming_the_link(run: Path) -> None:
    recs = records(run)
    recs["interfaces"][0]["name"] = "eth7"
    (problem,) = _refused(recs)
    assert problem.startswith("NetBox link ") and "eth7" in problem


def test_a_site_without_the_design_field_is_refused(run: Path) -> None:
    recs = records(run)
    recs["site_rec"]["custom_fields"] = {}
    (problem,) = _refused(recs)
    assert problem.startswith("NetBox site nb-fake: has no clusterloom design")


def test_another_family_or_planes_removed_are_refused_as_for_a_directory(run: Path) -> None:
    from dataclasses import replace

    installed = _read(records(run))
    doc = yaml.safe_load(SPEC)
    doc["fabrics"]["backend"]["family"] = "fat-tree"
    with pytest.raises(SpecError) as exc:
        check_installed(installed, parse_spec(yaml.safe_dump(doc)))
    assert exc.value.problems[0].where == "fabrics.backend.family"
    family, planes = installed.fabrics["backend"]
    more = replace(installed, fabrics={"backend": (family, planes + 1)})
    with pytest.raises(SpecError) as exc:
        check_installed(more, parse_spec(SPEC))
    assert "1 installed plane(s) removed" in exc.value.problems[0].message


def test_a_netbox_is_named_by_its_url_with_the_site_the_spec_s_name_by_default() -> None:
    assert netbox_source("run1", "x") is None
    assert netbox_source("https://nb.example/", "x") == ("https://nb.example", "x")
    got = netbox_source("http://10.0.0.1:8000/nb/?site=hall-2", "x")
    assert got == ("http://10.0.0.1:8000/nb", "hall-2")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_netbox_that_cannot_be_reached_or_no_token_exits_2_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pynetbox")
    (tmp_path / "s.yaml").write_text(SPEC)
    url = f"http://127.0.0.1:{_free_port()}"
    args = ["place", str(tmp_path / "s.yaml"), "--installed", url]
    monkeypatch.delenv("NETBOX_TOKEN", raising=False)
    no_token = CliRunner().invoke(app, args)
    assert no_token.exit_code == 2 and "set NETBOX_TOKEN" in no_token.output, no_token.output
    monkeypatch.setenv("NETBOX_TOKEN", "t")
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and f"cannot reach NetBox at {url}" in lines[0], result.output


# -- cable moves of a grown design's push, on a fake NetBox that holds one cable per port ------


class FakeCables:
    """A cables endpoint that refuses, as NetBox does, a cable on a port another one holds."""

    def __init__(self, cables: dict[int, tuple[str, str]]) -> None:
        self.cables = dict(cables)
        self.log: list[tuple[str, int]] = []

    def _ends(self, p: dict[str, Any]) -> tuple[str, str]:
        return (p["a_terminations"][0]["object_id"], p["b_terminations"][0]["object_id"])

    def _put(self, cid: int, ends: tuple[str, str]) -> None:
        for other, held in self.cables.items():
            assert other == cid or not set(held) & set(ends), f"port of cable {other} taken"
        self.cables[cid] = ends

    def create(self, payloads: list[dict[str, Any]]) -> list[Any]:
        out = []
        for p in payloads:
            cid = max(self.cables, default=0) + 1
            self._put(cid, self._ends(p))
            self.log.append(("create", cid))
            out.append(type("Rec", (), {"id": cid})())
        return out

    def update(self, payloads: list[dict[str, Any]]) -> list[Any]:
        for p in payloads:
            if "a_terminations" in p:
                self._put(p["id"], self._ends(p))
            self.log.append(("update", p["id"]))
        return payloads

    def delete(self, ids: list[int]) -> bool:
        for i in ids:
            del self.cables[i]
            self.log.append(("delete", i))
        return True


def _cable(a: str, b: str) -> tuple[frozenset[tuple[str, str]], str, dict[str, Any]]:
    ends = [{"object_type": "dcim.interface", "object_id": x} for x in (a, b)]
    key = frozenset(("dcim.interface", x) for x in (a, b))
    return key, f"{a}~{b}", {"a_terminations": ends[:1], "b_terminations": ends[1:], "tags": []}


def test_moved_cables_go_in_an_order_where_every_port_is_free_and_a_cycle_is_broken() -> None:
    """Installed: 1 p-q, 2 r-s, 3 u-v, 4 w-x (kept), 5 y-z (removed, on no port reused), 6 m-n.
    Wanted: w-x; q-r (moves 1: takes r, which 2 holds until it moves); s-t (moves 2); v-m
    and n-u (3 and 6 each take a port of the other: a cycle); k-l (new)."""
    held = {1: ("p", "q"), 2: ("r", "s"), 3: ("u", "v"), 4: ("w", "x"), 5: ("y", "z")}
    held[6] = ("m", "n")
    ep = FakeCables(held)
    have = {}
    for cid, (a, b) in held.items():
        key, _, payload = _cable(a, b)
        have[key] = {**payload, "id": cid, "tags": [1]}
    want = [_cable(*e) for e in (("w", "x"), ("q", "r"), ("s", "t"), ("v", "m"), ("n", "u"))]
    want.append(_cable("k", "l"))
    p = Pusher(api=None)
    p.tag = {OURS: 1, REMOVED: 2}
    p._sync_cables(ep, have, want)
    t = p.report["cables"]
    assert sorted(ep.cables.values()) == sorted(
        [("k", "l"), ("n", "u"), ("q", "r"), ("s", "t"), ("v", "m"), ("w", "x"), ("y", "z")]
    )
    assert ep.log.index(("update", 2)) < ep.log.index(("update", 1))  # r freed before taken
    assert (t.unchanged, t.updated, t.deleted, t.created) == (1, 3, 1, 2)
    assert ep.cables[5] == ("y", "z")  # removed, on no port reused: left for the tagging
    assert [r["id"] for r in p.have["cables"].values()] == [5]


def test_a_push_keeps_a_user_s_tags_and_clears_a_removed_tag() -> None:
    """A user's own tag stays; an object tagged removed that the design has again is not."""
    ep = FakeCables({})
    p = Pusher(api=None)
    p.tag = {OURS: 1, REMOVED: 2}
    want = [(k, k, {"name": k, "tags": []}) for k in ("kept", "back", "new")]
    have = {
        "kept": {"id": 1, "name": "kept", "tags": [7, 1]},  # a user's tag 7
        "back": {"id": 2, "name": "back", "tags": [1, 2, 7]},  # tagged removed, designed again
    }
    ep.create = lambda payloads: [type("Rec", (), {"id": 3})() for _ in payloads]  # type: ignore[method-assign]
    sent: list[dict[str, Any]] = []
    ep.update = lambda payloads: sent.extend(payloads) or payloads  # type: ignore[method-assign]
    p.sync("devices", ep, have, want)
    assert sent == [{"id": 2, "tags": [1, 7]}]
    t = p.report["devices"]
    assert (t.created, t.updated, t.unchanged) == (1, 1, 1)
