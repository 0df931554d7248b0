"""The pictures the explorer serves: every rack of a hall plan carries its name and links to its
page, every hall of the campus overview carries its name; a rack elevation numbers every unit
and draws each device where it sits, and refuses a device it could not draw truthfully."""

from __future__ import annotations

import re
from urllib.parse import quote
from xml.etree import ElementTree

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterloom import Design
from clusterloom.pipeline import run_design
from clusterloom.report._svg import PictureError, standalone
from clusterloom.report.placement import U_PX, campus_svg, hall_svg, rack_elevation_svg
from clusterloom.spec import parse_spec
from helpers import MINIMAL_SPEC

NS = "{http://www.w3.org/2000/svg}"


def _xml(svg: str) -> ElementTree.Element:
    """The picture parsed as the file the store keeps (with its namespace)."""
    return ElementTree.fromstring(standalone(svg))


@pytest.fixture(scope="module")
def two_halls() -> Design:
    """One building of two halls (2 rows of 6 positions each): the tiny fabric's racks."""
    doc = yaml.safe_load(MINIMAL_SPEC)
    template = {"rows": 2, "positions_per_row": 6, "pitch_m": 1.0, "origin_m": [0.5, 1.0]}
    halls = [{"name": n, "width_m": 20, "depth_m": 12, "template": template} for n in ("h1", "h2")]
    doc["site"] = {"buildings": [{"name": "b1", "halls": halls}]}
    return run_design(parse_spec(yaml.safe_dump(doc)), compare=False)


def test_every_rack_of_a_hall_carries_its_name_and_links_to_its_page(two_halls: Design) -> None:
    p = two_halls.placement
    assert p is not None
    for h in range(p.floor.n_halls):
        svg = hall_svg(p, h, rack_href="../rack/{rack}")
        root = _xml(svg)  # well-formed XML, with the SVG namespace
        assert root.tag == f"{NS}svg" and root.get("data-hall") == p.floor.hall_names[h]
        links = {a.get("data-rack"): a.get("href") for a in root.iter(f"{NS}a")}
        mine = np.flatnonzero(p.floor.pos_hall[p.rack_position] == h)
        assert sorted(links) == sorted(p.rack_names[r] for r in mine.tolist())
        for name, href in links.items():
            assert href == f"../rack/{quote(str(name), safe='')}"
        # each rack's group holds its coloured rectangle and its position label
        for a in root.iter(f"{NS}a"):
            assert [e.get("class") for e in a] == ["rack", "pos"]
        assert f"Hall {p.floor.hall_names[h]}: 2 rows, 12 positions, {len(mine)} racks" in svg


def test_without_a_template_racks_carry_their_name_but_no_link(two_halls: Design) -> None:
    p = two_halls.placement
    assert p is not None
    root = _xml(hall_svg(p, 0))
    assert not list(root.iter(f"{NS}a"))
    named = [g.get("data-rack") for g in root.iter(f"{NS}g") if g.get("data-rack")]
    assert len(named) == int((p.floor.pos_hall[p.rack_position] == 0).sum()) > 0


def test_campus_overview_names_and_links_every_hall(two_halls: Design) -> None:
    p = two_halls.placement
    assert p is not None
    root = _xml(campus_svg(p, hall_href="hall/{hall}"))
    tiles = {a.get("data-hall"): a.get("href") for a in root.iter(f"{NS}a")}
    assert tiles == {n: "hall/" + quote(n, safe="") for n in p.floor.hall_names}
    title = next(t.text for t in root.iter(f"{NS}text") if t.get("class") == "title")
    racks, usable = int(p.halls.racks.sum()), int(p.halls.usable.sum())
    assert title is not None and title.startswith(
        f"Campus: 1 building, 2 halls, {racks:,} racks on {usable:,} usable positions"
    )
    assert racks == p.n_racks
    # the static report links to the plans' anchors in the page instead
    static = _xml(campus_svg(p))
    assert {a.get("href") for a in static.iter(f"{NS}a")} == {
        "#hall-" + n.replace("/", "-") for n in p.floor.hall_names
    }


def _boxes(svg: str) -> dict[str, tuple[int, int, float, float]]:
    root = _xml(svg)
    out = {}
    for g in root.iter(f"{NS}g"):
        if g.get("class") == "device":
            rect = g.find(f"{NS}rect")
            assert rect is not None
            name = str(g.get("data-device"))
            out[name] = (
                int(str(g.get("data-u"))),
                int(str(g.get("data-height"))),
                float(str(rect.get("y"))),
                float(str(rect.get("height"))),
            )
    return out


def test_rack_elevation_numbers_every_unit_and_places_devices() -> None:
    devices = [("node00000", "server", 3, 8), ("leaf0001", "leaf", 42, 1)]
    svg = rack_elevation_svg("b1-h1-r01-p07", 48, devices)
    numbers = [int(t) for t in re.findall(r'<text class="u"[^>]*>(\d+)</text>', svg)]
    assert numbers == list(range(1, 49))
    assert svg.count('class="empty-u"') == 48 - 9
    assert "2 devices, 9U used, 39U free" in svg
    boxes = _boxes(svg)
    # U1 is at the bottom: the leaf at U42 is above the server at U3..U10, each U_PX per unit
    (_, _, y_srv, h_srv), (_, _, y_leaf, h_leaf) = boxes["node00000"], boxes["leaf0001"]
    assert y_leaf < y_srv
    assert h_srv + 2 == pytest.approx(8 * U_PX) and h_leaf + 2 == pytest.approx(U_PX)
    assert (y_srv - y_leaf) == pytest.approx((42 - 10) * U_PX)
    assert ">node00000</text>" in svg and "server · 8U" in svg


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=0, max_size=8), st.integers(0, 10))
def test_elevation_of_stacked_devices_keeps_units_and_order(sizes: list[int], gap: int) -> None:
    """Devices stacked from U1 with ``gap`` units between them: each box is as tall as its
    units, and a higher unit is drawn higher."""
    devices, u = [], 1
    for i, size in enumerate(sizes):
        devices.append((f"d{i}", "leaf", u, size))
        u += size + gap
    height = max(u - 1, 1)
    boxes = _boxes(rack_elevation_svg("r", height, devices))
    assert len(boxes) == len(devices)
    ys = [boxes[n][2] for n, *_ in devices]
    assert ys == sorted(ys, reverse=True)
    for name, _, _, size in devices:
        assert boxes[name][3] + 2 == pytest.approx(size * U_PX)


@pytest.mark.parametrize(
    ("devices", "says"),
    [
        ([("a", "leaf", 0, 1)], "device a at U0 of 1U leaves the rack's U1..U4"),
        ([("a", "leaf", 4, 2)], "device a at U4 of 2U leaves"),
        ([("a", "leaf", 1, 2), ("b", "spine", 2, 1)], "devices a and b share U2"),
    ],
)
def test_elevation_refuses_what_it_cannot_draw(
    devices: list[tuple[str, str, int, int]], says: str
) -> None:
    with pytest.raises(PictureError, match=re.escape(says)):
        rack_elevation_svg("r", 4, devices)


def test_tray_fill_labels_each_row_with_its_fullest_tray(two_halls: Design) -> None:
    from clusterloom.cabling import SEGMENT_KINDS
    from clusterloom.report.cabling import hall_fill_svg

    c = two_halls.cabling
    assert c is not None
    pw = c.pathways
    seen: list[float] = []
    for h, hall in enumerate(pw.hall_names):
        svg = hall_fill_svg(c, h)
        _xml(svg)
        rows = re.findall(r'<text class="row-label"[^>]*>([^<]+)</text>', svg)
        peaks = [float(v) for v in re.findall(r'class="row-peak" data-fill="([\d.]+)"', svg)]
        mine = [r for r in range(len(pw.row_names)) if pw.row_hall[r] == h]
        assert rows == [pw.row_names[r].rsplit("/", 1)[1] for r in mine]
        for r, peak in zip(mine, peaks, strict=True):
            # the row's segments by name: both ends are nodes of that row
            prefix = pw.row_names[r] + "/"
            segs = [
                s
                for s in range(pw.n_segments)
                if SEGMENT_KINDS[int(pw.seg_kind[s])] == "row"
                and pw.node_names[int(pw.seg_a[s])].startswith(prefix)
                and pw.node_names[int(pw.seg_b[s])].startswith(prefix)
            ]
            expected = max(float(c.seg_fill[s]) / pw.tray(s).fill for s in segs)
            assert peak == pytest.approx(expected, abs=1e-4)
        seen.extend(peaks)
        assert f"Tray fill, hall {hall}: fullest " in svg
    assert max(seen) > 0, "no row carries a cable: the test would prove nothing"


def test_pictures_are_standalone_svg_files_naming_racks_and_halls(two_halls: Design) -> None:
    from clusterloom.report.pictures import pictures

    pics = pictures(two_halls)
    p = two_halls.placement
    assert p is not None
    halls = p.floor.hall_names
    assert {"campus", *(f"hall/{h}" for h in halls), *(f"fill/{h}" for h in halls)} <= set(pics)
    for name, svg in pics.items():
        root = ElementTree.fromstring(svg)  # each one parses on its own, namespace and all
        assert root.tag == f"{NS}svg", name
        assert standalone(svg) == svg
    racks = {
        a.get("data-rack")
        for h in halls
        for a in ElementTree.fromstring(pics[f"hall/{h}"]).iter()
        if a.get("data-rack")
    }
    assert racks == set(p.rack_names)
