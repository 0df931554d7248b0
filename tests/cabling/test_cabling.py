"""Cabling: hand-checked runs, structured cabling, validators that fail, bad input, NetBox
columns, determinism, properties on generated sites and the command line."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clusterloom.cabling import TRAYS, Cabling, Tray, cable, order_length, validate_cabling
from clusterloom.cabling.bom import cabling_bom
from clusterloom.cabling.change import plan_change
from clusterloom.cabling.media import LEG_FIBERS
from clusterloom.cli.main import app
from clusterloom.export.cabling_files import NETBOX_CABLE_COLUMNS
from clusterloom.findings import Severity
from clusterloom.pipeline import Design, run_design
from clusterloom.spec import parse_spec
from clusterloom.write import write_design
from helpers import MINIMAL_SPEC

runner = CliRunner()


def _doc(rows: int = 1, positions: int = 3, **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(MINIMAL_SPEC)
    template = {
        "rows": rows,
        "positions_per_row": positions,
        "pitch_m": 1.0,
        "origin_m": [0.5, 1.0],
    }
    hall = {"name": "h1", "width_m": 40, "depth_m": 30, "template": template}
    doc["site"] = {"buildings": [{"name": "b1", "halls": [hall]}]}
    doc.update(extra)
    return doc


def _design(doc: dict[str, Any]) -> Design:
    return run_design(parse_spec(yaml.safe_dump(doc)), compare=False)


def _errors(findings: Any, code: str | None = None) -> list[Any]:
    return [
        f for f in findings if f.severity is Severity.ERROR and (code is None or f.code == code)
    ]


@pytest.fixture(scope="module")
def row_of_three() -> Design:
    return _design(_doc())


@pytest.fixture(scope="module")
def two_rows() -> Design:
    """Two rows of two positions: three racks, so some links leave their row."""
    return _design(_doc(rows=2, positions=2))


def test_row_of_three_cut_sheet_by_hand(row_of_three: Design) -> None:
    """Two 8-GPU nodes on 400G InfiniBand (qm9700): 16 host-leaf and 16 leaf-spine links.
    Placement puts the leaves in the middle of one row, positions 1 m apart::

        tray 2.7 m ====p01=========p02=========p03====
                        |           |           |
                     [spine]     [leaves]   [compute]   node 0 at U3, node 1 at U11 (8U)

    Link 0 (node00000 gpu0 -> leaf 0, U3, 1U):
      port heights (3 - 1 + 8/2) x 0.04445 = 0.2667 m and (3 - 1 + 1/2) x 0.04445 = 0.1111 m;
      drops 2.4333 + 2.5889, along the row 1.0 m: 6.0222 m; slack 5 % + 0.5 m: 6.823 m.
      400G media by cost: dac-400g (2.5 m) is too short, aec-400g (7 m) takes it; ordered 7 m.
    Each row segment carries 16 AEC cables of 7.0 mm: 16 x 38.48 mm2 = 615.75 mm2.
    """
    c = row_of_three.cabling
    assert c is not None
    names = {
        row_of_three.placement.demand.rack_role[r]: n  # type: ignore[union-attr]
        for r, n in enumerate(row_of_three.placement.rack_names)
    }  # type: ignore[union-attr]
    assert names == {"spine": "b1-h1-r01-p01", "leaf": "b1-h1-r01-p02", "compute": "b1-h1-r01-p03"}
    assert c.length_m[0] == pytest.approx(6.8233, abs=1e-3)
    assert c.order_m[0] == 7.0
    assert c.media.names[int(c.medium[0])] == "aec-400g"
    assert not c.structured.any()
    row = c.pathways.seg_kind == 0
    loaded = c.seg_area_mm2[row] > 0
    assert loaded.sum() == 2
    assert c.seg_area_mm2[row][loaded] == pytest.approx([615.7521601] * 2)
    assert c.seg_cables[row][loaded].tolist() == [16, 16]
    assert not _errors(c.findings)


def test_structured_links_add_up(two_rows: Design) -> None:
    """A link that leaves its row::

        row 1  [compute]--cord A--RDF r01 (row head, nearer the door)
                                   ||  MPO trunk: cross-aisle, then row 2's tray
        row 2  ...........[network rack: panels at its top]--cord B (inside the rack)

    Its channel is cord A + trunk + cord B; its loss the fibre's attenuation over the channel
    plus two panels; its fibres sit at positions p (frame r01) and 13 - p (frame r02)."""
    c = two_rows.cabling
    assert c is not None
    st_ = np.flatnonzero(c.structured)
    assert st_.shape[0] > 0
    t = c.trunk[st_]
    assert (t >= 0).all()
    assert c.length_m[st_] == pytest.approx(
        c.cord_a_m[st_] + c.trunk_length_m[t] + c.cord_b_m[st_], abs=1e-3
    )
    mi = c.medium[st_]
    expected = c.media.db_per_km[mi] * c.length_m[st_] / 1000 + 2 * c.media.panel_db[mi]
    assert c.loss_db[st_] == pytest.approx(expected, abs=1e-4)
    assert ((c.fiber_a[st_] + c.fiber_b[st_] + c.span[st_] - 1) == LEG_FIBERS + 1).all()
    # an assembly never goes through a panel
    assert not c.media.assembly[mi].any()
    # a network rack is its own frame, a compute rack uses its row's
    kind = two_rows.placement.demand.rack_kind  # type: ignore[union-attr]
    for rack, frame in ((c.a_rack[st_], c.frame_a[st_]), (c.b_rack[st_], c.frame_b[st_])):
        assert ((frame >= c.n_row_frames) == (kind[rack] == 1)).all()
    assert (c.frame_a[st_] != c.frame_b[st_]).all()
    # the trunk runs between the two rows' frames
    pos = two_rows.placement.rack_position  # type: ignore[union-attr]
    rows = two_rows.placement.floor.pos_row  # type: ignore[union-attr]
    assert (rows[pos[c.a_rack[st_]]] != rows[pos[c.b_rack[st_]]]).all()
    assert not _errors(c.findings)


def test_bom_counts_match_the_links(two_rows: Design) -> None:
    c = two_rows.cabling
    assert c is not None
    bom = cabling_bom(c)
    optical = c.realized() & ~c.media.assembly[c.medium]
    assert sum(x.count for x in bom if x.category == "transceiver") == 2 * int(optical.sum())
    cords = int((optical & ~c.structured).sum() + 2 * (optical & c.structured).sum())
    assert sum(x.count for x in bom if x.category == "patch-cord") == cords
    assert sum(x.count for x in bom if x.category == "trunk") == c.n_trunks
    assemblies = int((c.realized() & c.media.assembly[c.medium]).sum())
    assert sum(x.count for x in bom if x.category == "cable") == assemblies


def test_order_length_buckets() -> None:
    got = order_length(np.array([0.2, 1.0, 1.01, 6.8, 99.0, 101.0, 260.0]))
    assert got.tolist() == [0.5, 1.0, 1.5, 7.0, 100.0, 125.0, 275.0]


# --- validators that fail -------------------------------------------------------------------


def _replace(c: Cabling, **arrays: Any) -> Cabling:
    return dataclasses.replace(c, **arrays)


def test_validators_catch_a_duplicated_link(row_of_three: Design) -> None:
    c = row_of_three.cabling
    assert c is not None
    link = c.link.copy()
    link[1] = link[0]
    a_port, a_node = c.a_port.copy(), c.a_node.copy()
    a_port[1], a_node[1] = a_port[0], a_node[0]
    bad = _replace(c, link=link, a_port=a_port, a_node=a_node)
    found = validate_cabling(bad, row_of_three.fabrics)
    assert _errors(found, "realized-once")
    assert _errors(found, "port-reuse")
    assert _errors(found, "labels")


def test_validators_catch_reach_budget_and_polarity(two_rows: Design) -> None:
    c = two_rows.cabling
    assert c is not None
    length = c.length_m.copy()
    order = c.order_m.copy()
    order[:] = 999.0
    length[:] = 99_999.0
    loss = c.loss_db.copy()
    loss[:] = 50.0
    fiber_b = c.fiber_b.copy()
    fiber_b[c.structured] = 1 + (fiber_b[c.structured] % 12)
    bad = _replace(c, length_m=length, order_m=order, loss_db=loss, fiber_b=fiber_b)
    found = validate_cabling(bad, two_rows.fabrics)
    reach = _errors(found, "reach")
    assert reach and "reach" in reach[0].message and "link" in reach[0].where
    assert _errors(found, "optical-budget")
    assert _errors(found, "polarity")


def test_full_tray_is_named_with_its_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(TRAYS, "row", Tray("tiny test tray", 100.0, 0.5))
    d = _design(_doc())
    assert d.cabling is not None
    (first, *_) = _errors(d.cabling.findings, "tray-fill")
    assert first.where.startswith("row:b1/h1/r01/")
    assert "615 mm2" in first.message or "616 mm2" in first.message
    assert "50 mm2" in first.message
    assert "it needs 13 such pathways" in first.message  # 615.75 / 50 = 12.3


def test_site_pathways_size_the_trays() -> None:
    """The same 615.75 mm2 of cable in a row tray the site declares as 10 x 10 mm at 50 %
    (50 mm2): the finding asks for 13 such trays; the site giving ``count: 13`` of them clears
    it. Unset kinds keep the defaults."""
    doc = _doc()
    doc["site"]["pathways"] = {"row": {"width_mm": 10, "depth_mm": 10, "fill": 0.5}}
    (first, *_) = _errors(_design(doc).cabling.findings, "tray-fill")  # type: ignore[union-attr]
    assert "in a 10 x 10 mm tray that may carry 50 mm2" in first.message
    assert "it needs 13 such pathways" in first.message
    doc["site"]["pathways"]["row"]["count"] = 13
    enough = _design(doc).cabling
    assert enough is not None
    assert not _errors(enough.findings, "tray-fill")
    assert enough.pathways.seg_capacity_mm2.max() == pytest.approx(
        max(13 * 50.0, TRAYS["hall"].area_mm2 * TRAYS["hall"].fill)
    )


def test_pathway_kinds_are_the_spec_s() -> None:
    from typing import get_args

    from clusterloom.cabling.pathways import SEGMENT_KINDS
    from clusterloom.spec.site import PathwayKind

    assert set(get_args(PathwayKind)) == set(SEGMENT_KINDS) == set(TRAYS)


@pytest.mark.parametrize(
    ("given", "fragment"),
    [
        ({"row": {"width_mm": 600}}, "a tray needs both width_mm and depth_mm"),
        ({"row": {"width_mm": 600, "depth_mm": 100, "ducts": 4}}, "not both or neither"),
        ({"row": {"count": 2}}, "not both or neither"),
        ({"attic": {"width_mm": 600, "depth_mm": 100}}, "attic"),
        ({"campus": {"ducts": 6, "duct_diameter_mm": 100, "fill": 1.5}}, "fill"),
    ],
)
def test_bad_pathways_are_refused_with_their_field(given: dict[str, Any], fragment: str) -> None:
    from clusterloom.errors import SpecError

    doc = _doc()
    doc["site"]["pathways"] = given
    with pytest.raises(SpecError) as info:
        parse_spec(yaml.safe_dump(doc))
    text = " | ".join(f"{p.where}: {p.message}" for p in info.value.problems)
    assert "site.pathways" in text and fragment in text, text


def _recable(design: Design, media: dict[str, Any]) -> Cabling:
    """Cable ``design``'s fabrics and placement again with ``media`` overriding the catalog
    (the catalog changed after the fabrics were sized)."""
    doc = yaml.safe_load(yaml.safe_dump(design.spec.model_dump(mode="json", exclude_none=True)))
    doc["catalog"] = {"media": media}
    spec = parse_spec(yaml.safe_dump(doc))
    assert design.placement is not None
    return cable(spec, design.fabrics, design.placement)


_400G = ("dac-400g", "aec-400g", "aoc-400g", "sr4-400g", "dr4-400g", "fr4-400g", "lr4-400g")


def test_no_medium_at_the_speed_is_a_port_type_finding(row_of_three: Design) -> None:
    """Every 400G medium gone (overridden to 200G): no link can be realized, each fabric tier
    gets a port-type finding naming the speed, and realized-once counts what is missing."""
    media = {n: {"kind": "smf", "speed_gbps": 200, "reach_m": 500, "fibers": 4} for n in _400G}
    c = _recable(row_of_three, media)
    found = _errors(c.findings, "port-type")
    assert len(found) == 2 and "at 400G" in found[0].message
    assert found[0].where == "backend tier 1"
    assert not c.realized().any()
    (missing,) = _errors(c.findings, "realized-once")
    assert "32 of 32 links not realized" in missing.message


def test_a_link_no_medium_reaches(row_of_three: Design) -> None:
    kinds = ("dac", "aec", "aoc", "mmf", "smf", "smf", "smf")
    fibers = (0, 0, 0, 8, 8, 2, 2)
    media = {
        n: {"kind": k, "speed_gbps": 400, "reach_m": 1, "fibers": f}
        for n, k, f in zip(_400G, kinds, fibers, strict=True)
    }
    c = _recable(row_of_three, media)
    found = _errors(c.findings, "no-medium")
    assert found and "longest reach is 1 m" in found[0].message
    assert "needs 6.8 m" in found[0].message or "needs 7.0 m" in found[0].message
    assert "link" in found[0].where


def test_cli_writes_what_it_could_and_exits_1(tmp_path: Path) -> None:
    """A medium named for both tiers whose reach (1 m) is too short: every link is realized
    with it, the reach check fails, the files are written whole and the exit code is 1."""
    doc = _doc()
    doc["fabrics"]["backend"]["media"] = {"host_leaf": "sr4-400g", "leaf_spine": "sr4-400g"}
    doc["catalog"] = {
        "media": {"sr4-400g": {"kind": "mmf", "speed_gbps": 400, "reach_m": 1, "fibers": 8}}
    }
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump(doc))
    result = runner.invoke(app, ["cable", str(spec), "-o", str(tmp_path / "out")])
    assert result.exit_code == 1, result.output
    assert "reach" in result.output
    sheet = (tmp_path / "out" / "cabling" / "cut_sheet.csv").read_text().splitlines()
    assert len(sheet) == 33
    assert not list((tmp_path / "out" / "cabling").glob(".*.tmp"))


# --- outputs -----------------------------------------------------------------------------


def test_netbox_cables_match_the_interfaces(row_of_three: Design, tmp_path: Path) -> None:
    write_design(row_of_three, tmp_path)
    with open(tmp_path / "netbox" / "cables.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert tuple(rows[0].keys()) == NETBOX_CABLE_COLUMNS
    assert len(rows) == 32
    with open(tmp_path / "netbox" / "interfaces.csv", newline="") as fh:
        interfaces = {(r["device"], r["name"]) for r in csv.DictReader(fh)}
    ends = [(r["side_a_device"], r["side_a_name"]) for r in rows]
    ends += [(r["side_b_device"], r["side_b_name"]) for r in rows]
    assert set(ends) == interfaces and len(ends) == len(interfaces)
    assert {r["type"] for r in rows} == {"dac-active"}
    assert {r["length_unit"] for r in rows} == {"m"}
    assert len({r["label"] for r in rows}) == 32
    with open(tmp_path / "cabling" / "cut_sheet.csv", newline="") as fh:
        sheet = list(csv.DictReader(fh))
    assert sheet[0]["label"] == "B1-0000000" and sheet[0]["order_m"] == "7"
    assert sheet[0]["a_device"] == "node00000" and sheet[0]["a_rack"] == "b1-h1-r01-p03"


def test_same_spec_same_bytes(tmp_path: Path) -> None:
    doc = _doc(rows=2, positions=2)
    for out in ("a", "b"):
        write_design(_design(doc), tmp_path / out)
    for name in ("cut_sheet.csv", "trunks.csv", "pull_list.csv", "bom.csv"):
        a = (tmp_path / "a" / "cabling" / name).read_bytes()
        assert a == (tmp_path / "b" / "cabling" / name).read_bytes(), name
    assert (tmp_path / "a" / "netbox" / "cables.csv").read_bytes() == (
        tmp_path / "b" / "netbox" / "cables.csv"
    ).read_bytes()


# --- properties --------------------------------------------------------------------------


@settings(max_examples=6)
@given(
    rows=st.integers(1, 3),
    positions=st.integers(3, 6),
    nodes=st.sampled_from([2, 4, 8]),
)
def test_generated_sites_cable_cleanly(rows: int, positions: int, nodes: int) -> None:
    """On any floor that holds the racks: every link realized once, lengths at least the
    floor distance, structured exactly when a link leaves its row, no error findings."""
    doc = _doc(rows=rows, positions=positions)
    doc["compute"]["accelerators"] = 8 * nodes
    try:
        d = _design(doc)
    except Exception as exc:  # a floor too small for the racks is placement's refusal
        from clusterloom.errors import SpecError

        assert isinstance(exc, SpecError)
        return
    c, p = d.cabling, d.placement
    assert c is not None and p is not None
    assert c.n_links == sum(fd.topology.n_links for fd in d.fabrics)
    assert not _errors(c.findings), c.findings
    dist = np.concatenate([p.link_distance_m(fd) for fd in d.fabrics])
    assert (c.length_m + 1e-3 >= dist).all()
    row = p.floor.pos_row[p.rack_position]
    assert (c.structured == (row[c.a_rack] != row[c.b_rack])).all()


# --- command line -------------------------------------------------------------------------


def test_cli_cable_example_and_exit_codes(tmp_path: Path) -> None:
    ok = runner.invoke(app, ["cable", "--example", "hgx-1k-roce", "-o", str(tmp_path)])
    assert ok.exit_code == 0, ok.output
    assert "links realized" in ok.output
    assert (tmp_path / "cabling" / "cut_sheet.csv").exists()
    assert (tmp_path / "netbox" / "cables.csv").exists()
    assert "Tray fill" in (tmp_path / "report.html").read_text()
    no_site = tmp_path / "nosite.yaml"
    no_site.write_text(MINIMAL_SPEC)
    bad = runner.invoke(app, ["cable", str(no_site)])
    assert bad.exit_code == 2


@pytest.fixture(scope="module")
def two_rows_cabling(two_rows: Design) -> tuple[Cabling, Design]:
    assert two_rows.cabling is not None
    return two_rows.cabling, two_rows


@settings(max_examples=25)
@given(data=st.data())
def test_any_duplicated_or_miswired_link_is_caught(
    two_rows_cabling: tuple[Cabling, Design], data: st.DataObject
) -> None:
    """Copy one link's identity onto another, or shift one structured link's far-end fibre:
    the validators name it every time."""
    c, design = two_rows_cabling
    n = c.n_links
    i = data.draw(st.integers(0, n - 1))
    j = data.draw(st.integers(0, n - 1).filter(lambda x: x != i))
    arrays = {k: getattr(c, k).copy() for k in ("link", "fabric", "a_node", "a_port")}
    for k in arrays:
        arrays[k][j] = arrays[k][i]
    found = validate_cabling(_replace(c, **arrays), design.fabrics)
    assert _errors(found, "realized-once") and _errors(found, "port-reuse")
    structured = np.flatnonzero(c.structured)
    k = data.draw(st.sampled_from(structured.tolist()))
    shift = data.draw(st.integers(1, 11))
    fiber_b = c.fiber_b.copy()
    fiber_b[k] = (fiber_b[k] - 1 + shift) % LEG_FIBERS + 1
    found = validate_cabling(_replace(c, fiber_b=fiber_b), design.fabrics)
    (pol,) = _errors(found, "polarity")
    assert f"link {int(c.link[k])}" in pol.message or "1 links" in pol.message


# --- change ------------------------------------------------------------------------------


def test_change_against_itself_is_empty(two_rows: Design) -> None:
    c, p = two_rows.cabling, two_rows.placement
    assert c is not None and p is not None
    ch = plan_change(c, two_rows.fabrics, p, c, two_rows.fabrics, p)
    assert ch.added.shape[0] == ch.changed.shape[0] == ch.removed.shape[0] == 0
    assert ch.rewired == 0 and ch.unchanged == c.n_links
    assert ch.new_trunks == 0 and ch.reused_fibres == 0


def test_change_of_a_grown_spec_adds_and_accounts_for_every_link(two_rows: Design) -> None:
    """Two nodes grow to four on the same floor (two rows of four positions). Every link of the
    new design is added, changed or unchanged; every old one removed, changed or unchanged; the
    structured links pulled use spare fibres of the old trunks before new trunks."""
    small = _design(_doc(rows=2, positions=4))
    doc = _doc(rows=2, positions=4)
    doc["compute"]["accelerators"] = 32
    grown = _design(doc)
    old, new = small.cabling, grown.cabling
    assert old is not None and new is not None
    assert small.placement is not None and grown.placement is not None
    ch = plan_change(old, small.fabrics, small.placement, new, grown.fabrics, grown.placement)
    assert ch.added.shape[0] + ch.changed.shape[0] + ch.unchanged == new.n_links
    assert ch.removed.shape[0] + ch.changed.shape[0] + ch.unchanged == old.n_links
    assert ch.added.shape[0] >= new.n_links - old.n_links > 0
    assert 0 <= ch.reused_fibres <= ch.spare_fibres
    assert ch.rewired == ch.changed.shape[0] + ch.removed.shape[0]


def test_cli_cable_from_an_existing_design(tmp_path: Path) -> None:
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(yaml.safe_dump(_doc(rows=2, positions=4)))
    grown = _doc(rows=2, positions=4)
    grown["compute"]["accelerators"] = 32
    new.write_text(yaml.safe_dump(grown))
    result = runner.invoke(app, ["cable", str(new), "--from", str(old)])
    assert result.exit_code == 0, result.output
    assert "cables added" in result.output and "links rewired" in result.output
    same = runner.invoke(app, ["cable", str(old), "--from", str(old)])
    assert "0 cables added, 0 changed, 0 removed" in same.output


def test_change_reuses_spare_trunk_fibres_first() -> None:
    """Two rows of two positions; 16 GPUs grow to 24. Old: 16 links leave their row on
    sr4-400g (8 fibres: a whole 12-position leg each), 16 x 12 = 192 positions in two
    144-fibre trunks, 96 spare. New: all 24 of its structured links are pulled (none keeps
    both ends, racks and frames of an old one), so the 16 old ones are re-pulled and free
    their legs too: all 288 old positions are spare, the 24 x 12 = 288 positions of the
    pulled links fit in them and no new trunk is needed."""
    small = _design(_doc(rows=2, positions=2))
    doc = _doc(rows=2, positions=2)
    doc["compute"]["accelerators"] = 24
    grown = _design(doc)
    old, new = small.cabling, grown.cabling
    assert old is not None and new is not None
    assert small.placement is not None and grown.placement is not None
    sr4 = old.media.index("sr4-400g")
    assert int(old.structured.sum()) == 16 and (old.medium[old.structured] == sr4).all()
    assert old.n_trunks == 2 and int(old.trunk_fibers_used.sum()) == 192
    ch = plan_change(old, small.fabrics, small.placement, new, grown.fabrics, grown.placement)
    pulled = np.concatenate([ch.added, ch.changed])
    assert int(new.structured[pulled].sum()) == 24
    assert ch.kept.shape[0] == 0 or not old.structured[ch.kept].any()
    assert ch.spare_fibres == 288 and ch.reused_fibres == 288 and ch.new_trunks == 0


def test_two_buildings_trunks_cross_the_campus() -> None:
    """Two buildings 200 m apart, one row of two positions each: the three racks cannot share a
    building, so some links run hall door -> riser -> duct bank -> riser -> hall door. Their
    trunks are counted between the buildings, on the campus segment, and drawn in the report."""
    from clusterloom.cabling.bom import fibres_between
    from clusterloom.report import render_report

    doc = _doc(rows=1, positions=2)
    hall = doc["site"]["buildings"][0]["halls"][0]
    doc["site"]["buildings"] = [
        {"name": "b1", "halls": [hall]},
        {"name": "b2", "x_m": 200, "halls": [hall]},
    ]
    d = _design(doc)
    c = d.cabling
    assert c is not None
    between = fibres_between(c, "building")
    assert list(between) == [("b1", "b2")]
    trunks, fibres = between[("b1", "b2")]
    campus = np.flatnonzero(c.pathways.seg_kind == 5)
    assert campus.shape[0] == 1 and c.pathways.seg_length_m[campus[0]] == 200.0
    assert int(c.seg_trunks[campus[0]]) == trunks > 0 and int(c.seg_fibers[campus[0]]) == fibres
    cross = c.structured & (c.length_m > 200)
    assert cross.any() and not _errors(c.findings)
    html = render_report(d)
    assert "Fibres between buildings" in html and f"{fibres:,} fibres, 200 m" in html
