"""The structured plant: legs packed into trunks and backbones, links through the hall
distribution frames, their losses, files and checks."""

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

from clusterloom.cabling import validate_cabling
from clusterloom.cabling.bom import cabling_bom, fibres_between
from clusterloom.cabling.media import LEG_FIBERS, MPO_JOINT_DB, SPLICE_DB
from clusterloom.cabling.plant import BACKBONE, TRUNK, pack_legs, plan_plant
from clusterloom.findings import Severity
from clusterloom.pipeline import Design, run_design
from clusterloom.spec import parse_spec
from clusterloom.write import write_design
from helpers import MINIMAL_SPEC

BACKBONE_LEGS = (72, 144, 288, 576)


def test_pack_legs_by_hand() -> None:
    """13 legs of group 0 and 5 of group 1 in 12-leg trunks: a full trunk and one of a single
    leg for group 0, one for group 1. 600 backbone legs: a 6,912-fibre cable (576 legs) and
    the smallest that holds the other 24, an 864-fibre one (72 legs)."""
    cable, leg, group, size = pack_legs(np.array([0] * 13 + [1] * 5), (12,))
    assert cable.tolist() == [0] * 12 + [1] + [2] * 5
    assert leg.tolist() == [*range(1, 13), 1, *range(1, 6)]
    assert group.tolist() == [0, 0, 1] and size.tolist() == [12, 12, 12]
    cable, leg, group, size = pack_legs(np.zeros(600, dtype=np.int64), BACKBONE_LEGS)
    assert size.tolist() == [576, 72] and int(leg.max()) == 576
    assert (cable[576:] == 1).all() and leg[576:].tolist() == list(range(1, 25))


def test_pack_legs_splits_a_remainder_when_small_cables_take_less_room() -> None:
    """Trunk sizes 144 / 864 / 1,728 / 3,456 fibres (12 / 72 / 144 / 288 legs), 12 / 18 / 24 /
    28 mm: 13 legs go in two 144-fibre trunks (2 x 113 mm2 < 254 mm2 of one 864), 100 legs in
    one 1,728 (452 mm2 < 9 x 113 mm2), 300 legs in a 3,456 and one 144 for the last 12."""
    from clusterloom.cabling.media import TRUNK_SIZES

    sizes = tuple(f // 12 for f, _ in TRUNK_SIZES)
    area = tuple(float(np.pi * d * d / 4) for _, d in TRUNK_SIZES)
    for n, expect in ((13, [12, 12]), (100, [144]), (300, [288, 12])):
        cable, leg, _, size = pack_legs(np.zeros(n, dtype=np.int64), sizes, area)
        assert size.tolist() == expect
        assert (leg <= size[cable]).all() and np.unique(cable * 1000 + leg).shape[0] == n


@given(st.lists(st.integers(0, 5), min_size=1, max_size=2000))
@settings(max_examples=60, deadline=None)
def test_pack_legs_properties(groups: list[int]) -> None:
    """Every leg lands once in a cable of its group, within its size; each group uses the
    fewest cables of the largest size, its last the smallest size that holds the rest."""
    g = np.sort(np.array(groups, dtype=np.int64))
    cable, leg, group, size = pack_legs(g, BACKBONE_LEGS)
    assert (group[cable] == g).all() and (leg >= 1).all() and (leg <= size[cable]).all()
    slots = cable * 1000 + leg
    assert np.unique(slots).shape[0] == g.shape[0]
    for k, n in zip(*np.unique(g, return_counts=True), strict=True):
        mine = size[group == k]
        assert mine.shape[0] == -(-n // 576)
        rest = n - 576 * (mine.shape[0] - 1)
        assert mine[-1] == min(s for s in BACKBONE_LEGS if s >= rest)


def test_plan_plant_by_hand() -> None:
    """Frames 0 and 1 in hall 0, frame 2 in hall 1; the halls' distribution frames are 3 and 4::

        [0] ══ t0 (144) ══ [1]                          seven duplex links 0 -> 1: one trunk
        [0] ══ t1 ══ [HDF 3] ══ t2 (864, backbone) ══ [HDF 4] ══ t3 ══ [2]
                                                        a 24-fibre link and three duplex
                                                        links 0 -> 2, one duplex 2 -> 0

    The pair 0-2 takes legs 1-2 (the 24-fibre link, whole legs first) and leg 3 (four duplex
    links at positions 1, 3, 5, 7, in link order); every cable flips a leg, so a duplex link
    at 1-2 on frame 0 arrives at 11-12 on frame 2, whichever end is its a end."""
    a = np.array([0] * 7 + [0, 0, 0, 0, 2])
    b = np.array([1] * 7 + [2, 2, 2, 2, 0])
    slots = np.array([2] * 7 + [2, 24, 2, 2, 2])
    p = plan_plant(
        a,
        b,
        np.ones(12, dtype=bool),
        slots,
        np.arange(12),
        frame_hall=np.array([0, 0, 1, 0, 1]),
        hdf_of_hall=np.array([3, 4]),
    )
    assert p.cable_a.tolist() == [0, 0, 3, 4] and p.cable_b.tolist() == [1, 3, 4, 2]
    assert p.cable_kind.tolist() == [TRUNK, TRUNK, BACKBONE, TRUNK]
    assert p.cable_fibers.tolist() == [144, 144, 864, 144]
    assert p.cable_used.tolist() == [14, 32, 32, 32]
    assert (p.hops[:7] == [0, -1, -1]).all() and (p.hops[7:11] == [1, 2, 3]).all()
    assert p.hops[11].tolist() == [3, 2, 1]  # from its a end, frame 2
    assert p.fiber_a[:7].tolist() == [1, 3, 5, 7, 9, 11, 1]
    assert p.hop_legs[:7, 0].tolist() == [1] * 6 + [2]
    assert p.hop_legs[8].tolist() == [1, 1, 1] and p.span[8] == 12
    duplex_02 = [7, 9, 10]
    assert p.fiber_a[duplex_02].tolist() == [1, 3, 5] and (p.hop_legs[duplex_02] == 3).all()
    assert p.fiber_b[duplex_02].tolist() == [11, 9, 7]
    # link 11 runs 2 -> 0: position 7-8 at frame 0 is its b end, 5-6 at frame 2 its a end
    assert (p.fiber_a[11], p.fiber_b[11]) == (5, 7)


def _two_halls(buildings: int) -> dict[str, Any]:
    """One row of two positions per hall, two halls in one building or one hall in each of
    two buildings 200 m apart: the three racks cannot share a hall."""
    doc: dict[str, Any] = yaml.safe_load(MINIMAL_SPEC)
    template = {"rows": 1, "positions_per_row": 2, "pitch_m": 1.0, "origin_m": [0.5, 1.0]}

    def hall(name: str) -> dict[str, Any]:
        return {"name": name, "width_m": 40, "depth_m": 30, "template": template}

    if buildings == 1:
        doc["site"] = {"buildings": [{"name": "b1", "halls": [hall("h1"), hall("h2")]}]}
    else:
        doc["site"] = {
            "buildings": [
                {"name": "b1", "halls": [hall("h1")]},
                {"name": "b2", "x_m": 200, "halls": [hall("h1")]},
            ]
        }
    return doc


@pytest.fixture(scope="module", params=[1, 2], ids=["two-halls", "two-buildings"])
def apart(request: pytest.FixtureRequest) -> Design:
    return run_design(parse_spec(yaml.safe_dump(_two_halls(request.param))), compare=False)


def test_links_between_halls_go_through_both_hdfs(apart: Design) -> None:
    """A link between halls: trunk to its hall's HDF, backbone, trunk from the far HDF. Its
    channel is the cords plus the three cables, its loss the fibre plus two panels, two MPO
    interconnects, the backbone's two pigtail splices and, between buildings, two more."""
    c = apart.cabling
    assert c is not None
    two_buildings = len(c.pathways.building_names) == 2
    st_ = np.flatnonzero(c.structured)
    inter = st_[c.frame_hall[c.frame_a[st_]] != c.frame_hall[c.frame_b[st_]]]
    assert inter.shape[0] > 0
    assert (c.n_hops[inter] == 3).all()
    assert (c.trunk_kind[c.hops[inter, 1]] == BACKBONE).all()
    assert (c.trunk_kind[c.hops[inter][:, [0, 2]]] == TRUNK).all()
    hdf = c.frame_kind[c.trunk_b[c.hops[inter, 0]]]
    assert (np.minimum(hdf, c.frame_kind[c.trunk_a[c.hops[inter, 0]]]) < 2).all()
    channel = c.cord_a_m[inter] + c.cord_b_m[inter] + c.trunk_length_m[c.hops[inter]].sum(axis=1)
    assert c.length_m[inter] == pytest.approx(channel, abs=1e-3)
    mi = c.medium[inter]
    splices = (4 if two_buildings else 2) * SPLICE_DB
    expected = (
        c.media.db_per_km[mi] * c.length_m[inter] / 1000
        + 2 * c.media.panel_db[mi]
        + 2 * MPO_JOINT_DB
        + splices
    )
    assert c.loss_db[inter] == pytest.approx(expected, abs=1e-4)
    bb = np.unique(c.hops[inter, 1])
    assert (c.trunk_splices[bb] == (4 if two_buildings else 2)).all()
    level = "building" if two_buildings else "hall"
    between = fibres_between(c, level)
    assert sum(f for _, f in between.values()) == int(c.trunk_fibers[bb].sum())
    assert not [f for f in c.findings if f.severity is Severity.ERROR]
    bom = {(x.category, x.item): x.count for x in cabling_bom(c)}
    fibres = int(c.trunk_fibers[bb].sum())
    assert bom[("splice", "fusion splice (labour, not priced)")] == fibres * (
        4 if two_buildings else 2
    )
    assert bom[("patch-panel", "1U 144-fibre MPO panel")] == int(c.frame_panels.sum())


def test_cut_sheet_names_the_path_through_the_hdfs(apart: Design, tmp_path: Path) -> None:
    c = apart.cabling
    assert c is not None
    write_design(apart, tmp_path)
    with open(tmp_path / "cabling" / "cut_sheet.csv") as fh:
        rows = list(csv.DictReader(fh))
    with open(tmp_path / "cabling" / "trunks.csv") as fh:
        cables = {r["trunk"]: r for r in csv.DictReader(fh)}
    via = [r for r in rows if r["via"]]
    assert via and len(via) == int((c.n_hops == 3).sum())
    for r in via:
        hdf_a, backbone, hdf_b = r["via"].split(" > ")
        assert hdf_a.split(" ")[0].endswith("-hdf") and hdf_b.split(" ")[0].endswith("-hdf")
        assert cables[backbone]["kind"] == "backbone"
        assert cables[r["trunk"]]["kind"] == cables[r["b_trunk"]]["kind"] == "trunk"
        assert r["a_frame"] in (cables[r["trunk"]]["a_frame"], cables[r["trunk"]]["b_frame"])
        assert r["b_frame"] in (cables[r["b_trunk"]]["a_frame"], cables[r["b_trunk"]]["b_frame"])
    # the HDF end of a trunk has no panel of its own: its legs plug into the backbone's
    hdf_ends = [r for r in cables.values() if r["kind"] == "trunk" and r["b_frame"].endswith("hdf")]
    assert hdf_ends and all(r["b_panel"] == "" for r in hdf_ends)


def test_a_broken_chain_or_shared_fibre_is_a_polarity_finding(apart: Design) -> None:
    c = apart.cabling
    assert c is not None
    fabrics = apart.fabrics
    three = np.flatnonzero(c.n_hops == 3)
    hops = c.hops.copy()
    hops[three[0], 2] = hops[three[0], 0]  # the last cable does not reach the b frame
    broken = dataclasses.replace(c, hops=hops)
    assert [f for f in validate_cabling(broken, fabrics) if f.code == "polarity"]
    # another link of the same frame pair and span put on the first one's fibres
    i = three[0]
    twin = three[
        (c.frame_a[three] == c.frame_a[i])
        & (c.frame_b[three] == c.frame_b[i])
        & (c.span[three] == c.span[i])
    ]
    assert twin.shape[0] >= 2
    j = twin[1]
    moved = {}
    for name in ("hops", "hop_legs", "fiber_a", "fiber_b"):
        arr = getattr(c, name).copy()
        arr[j] = arr[i]
        moved[name] = arr
    shared = dataclasses.replace(c, **moved)
    found = [f for f in validate_cabling(shared, fabrics) if f.code == "polarity"]
    assert found and "0 links break" in found[0].message
    assert "share cable fibres" in found[0].message


def _grown(accelerators: int, medium: str | None) -> Design:
    doc: dict[str, Any] = yaml.safe_load(MINIMAL_SPEC)
    template = {"rows": 2, "positions_per_row": 2, "pitch_m": 1.0, "origin_m": [0.5, 1.0]}
    hall = {"name": "h1", "width_m": 40, "depth_m": 30, "template": template}
    doc["site"] = {"buildings": [{"name": "b1", "halls": [hall]}]}
    doc["compute"]["accelerators"] = accelerators
    if medium:
        doc["fabrics"]["backend"]["media"] = {"host_leaf": medium, "leaf_spine": medium}
    return run_design(parse_spec(yaml.safe_dump(doc)), compare=False)


@pytest.mark.parametrize("medium", ["sr4-400g", "fr4-400g"], ids=["parallel", "duplex"])
def test_change_puts_pulled_links_on_free_fibres_of_the_old_plant(medium: str) -> None:
    """16 GPUs grow to 24 on two rows of two positions. Every pulled structured link that
    finds room names old cables and legs between its own two frames, on positions no old link
    keeps and no other pulled link takes, with method-B positions; a duplex link first fills
    a leg its frame pair already uses."""
    from clusterloom.cabling.change import plan_change

    small, grown = _grown(16, medium), _grown(24, medium)
    old, new = small.cabling, grown.cabling
    assert old is not None and new is not None
    assert small.placement is not None and grown.placement is not None
    ch = plan_change(old, small.fabrics, small.placement, new, grown.fabrics, grown.placement)
    got = np.flatnonzero(ch.reuse_hops[:, 0] >= 0)
    assert got.shape[0] > 0
    span = new.span[ch.pulled].astype(np.int64)
    # what the old links that stay occupy, then each placed link: never a position twice
    taken: set[tuple[int, int, int]] = set()

    def occupy(hops: Any, legs: Any, frame: str, fa: int, fb: int, span: int) -> None:
        for k, (t, g) in enumerate(zip(hops, legs, strict=True)):
            if t < 0:
                continue
            a, b = old.frame_names[int(old.trunk_a[t])], old.frame_names[int(old.trunk_b[t])]
            assert frame in (a, b), "the chain breaks"
            pos = fa if k % 2 == 0 else fb
            at_a = pos if frame == a else LEG_FIBERS + 1 - (pos + span - 1)
            for p in range(at_a, at_a + span):
                assert (int(t), int(g), p) not in taken
                taken.add((int(t), int(g), p))
            frame = b if frame == a else a

    for i in ch.kept[old.structured[ch.kept]].tolist():
        f = old.frame_names[int(old.frame_a[i])]
        occupy(
            old.hops[i],
            old.hop_legs[i],
            f,
            int(old.fiber_a[i]),
            int(old.fiber_b[i]),
            int(old.span[i]),
        )
    for j in got.tolist():
        i = int(ch.pulled[j])
        fa, fb = int(ch.reuse_fiber_a[j]), int(ch.reuse_fiber_b[j])
        assert fa + fb + span[j] - 1 == LEG_FIBERS + 1
        f = new.frame_names[int(new.frame_a[i])]
        occupy(ch.reuse_hops[j], ch.reuse_legs[j], f, fa, fb, int(span[j]))
    assert ch.reused_fibres == int(new.media.slots[new.medium[ch.pulled[got]]].sum())
    assert ch.reused_fibres <= ch.spare_fibres
    if medium == "fr4-400g":
        legs = {(int(ch.reuse_hops[j, 0]), int(ch.reuse_legs[j, 0])) for j in got.tolist()}
        assert len(legs) < got.shape[0]  # several duplex links share a leg


def test_cli_writes_the_change_file(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from clusterloom.cli.main import app

    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    for path, n in ((old, 16), (new, 24)):
        doc: dict[str, Any] = yaml.safe_load(MINIMAL_SPEC)
        template = {"rows": 2, "positions_per_row": 2, "pitch_m": 1.0, "origin_m": [0.5, 1.0]}
        hall = {"name": "h1", "width_m": 40, "depth_m": 30, "template": template}
        doc["site"] = {"buildings": [{"name": "b1", "halls": [hall]}]}
        doc["compute"]["accelerators"] = n
        path.write_text(yaml.safe_dump(doc))
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["cable", str(new), "--from", str(old), "-o", str(out)])
    assert result.exit_code == 0, result.output
    with open(out / "cabling" / "change.csv") as fh:
        rows = list(csv.DictReader(fh))
    actions = {r["action"] for r in rows}
    assert actions <= {"remove", "re-pull", "add"} and "add" in actions
    added = [r for r in rows if r["action"] != "remove" and r["a_frame"]]
    assert all(r["cables"] == "new" or r["cables"].startswith("t") for r in added)
    assert any(r["cables"].startswith("t") and r["a_fibers"] for r in added)


def test_broken_out_cages_reach_their_frames_through_a_shuffle() -> None:
    """800G switches broken out to 2 x 400G, links on FR4 (duplex) between two halls. A
    structured end at a switch is a lane of a cage: it rides the cage's one MPO cord to a
    shuffle cassette (MPO front and rear, 0.7 dB) instead of its own LC cord to a cassette
    (LC + MPO, 0.6 dB). The BOM counts one cage cord and one shuffle per cage, and LC cords
    only for the other ends."""
    from clusterloom.cabling.media import SHUFFLE_DB
    from helpers import switch_entry

    doc = _two_halls(1)
    doc["catalog"] = {"switches": {"bo800": switch_entry(32, 800, breakouts=(400,))}}
    doc["fabrics"]["backend"]["switch"] = "bo800"
    doc["fabrics"]["backend"]["media"] = {"host_leaf": "fr4-400g", "leaf_spine": "fr4-400g"}
    d = run_design(parse_spec(yaml.safe_dump(doc)), compare=False)
    c = d.cabling
    assert c is not None
    st_ = np.flatnonzero(c.structured)
    assert (c.shuffle_a[st_] == (c.a_breakout[st_] > 1)).all()
    assert (c.shuffle_b[st_] == (c.b_breakout[st_] > 1)).all()
    assert not (c.shuffle_a | c.shuffle_b)[~c.structured].any()
    both = st_[c.shuffle_a[st_] & c.shuffle_b[st_]]
    assert both.shape[0] > 0
    mi = c.medium[st_]
    joints = np.where(c.n_hops[st_] == 3, 2 * MPO_JOINT_DB + 2 * SPLICE_DB, 0.0)
    n_sh = c.shuffle_a[st_].astype(int) + c.shuffle_b[st_]
    expected = (
        c.media.db_per_km[mi] * c.length_m[st_] / 1000
        + 2 * c.media.panel_db[mi]
        + joints
        + n_sh * (SHUFFLE_DB - c.media.panel_db[mi])
    )
    assert c.loss_db[st_] == pytest.approx(expected, abs=1e-4)
    cages = set()
    for side in ("a", "b"):
        sh = np.flatnonzero(getattr(c, f"shuffle_{side}"))
        node = getattr(c, f"{side}_node")[sh]
        port = getattr(c, f"{side}_port")[sh] // 2
        cages |= set(zip(node.tolist(), port.tolist(), strict=True))
    bom = cabling_bom(c)
    cage_cords = sum(x.count for x in bom if x.item.endswith("(cage)"))
    shuffles = sum(x.count for x in bom if x.item.startswith("shuffle cassette"))
    assert cage_cords == shuffles == len(cages)
    lc = sum(x.count for x in bom if x.item == "patch cord SMF LC duplex")
    direct = int((~c.structured & c.realized()).sum())
    assert lc == direct + 2 * st_.shape[0] - int(n_sh.sum())


def test_a_site_sets_its_own_plant_losses() -> None:
    """Low-loss parts and indoor/outdoor backbones (no entrance splices): a link between
    buildings loses the fibre plus two cassettes at 0.15 + 0.2 dB, two 0.2 dB interconnects and
    the backbone's two pigtail splices at 0.05 dB."""
    doc = _two_halls(2)
    doc["fabrics"]["backend"]["media"] = {"host_leaf": "fr4-400g", "leaf_spine": "fr4-400g"}
    doc["site"]["losses"] = {
        "mpo_db": 0.2,
        "lc_db": 0.15,
        "splice_db": 0.05,
        "entrance_splices": False,
    }
    d = run_design(parse_spec(yaml.safe_dump(doc)), compare=False)
    c = d.cabling
    assert c is not None
    three = np.flatnonzero(c.n_hops == 3)
    assert three.shape[0] > 0
    assert (c.trunk_splices[c.hops[three, 1]] == 2).all()
    mi = c.medium[three]
    assert c.media.panel_db[mi] == pytest.approx(np.full(mi.shape[0], 0.35))
    expected = c.media.db_per_km[mi] * c.length_m[three] / 1000 + 2 * 0.35 + 2 * 0.2 + 2 * 0.05
    assert c.loss_db[three] == pytest.approx(expected, abs=1e-4)


def test_bad_plant_losses_name_their_field() -> None:
    from clusterloom.errors import SpecError

    doc = _two_halls(1)
    doc["site"]["losses"] = {"mpo_db": -0.1}
    with pytest.raises(SpecError) as err:
        parse_spec(yaml.safe_dump(doc))
    assert "site.losses.mpo_db" in str(err.value)


def test_packing_that_takes_multimode_past_its_budget_moves_it_to_single_mode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Which trunks are spliced ribbon is known only once the plant is packed. Two halls, 400G
    links between them on sr4-400g (multimode, 1.9 dB): two panels (0.7 dB), two HDF
    interconnects (0.7 dB), the backbone's two splices (0.2 dB) and ~20 m of fibre lose 1.66
    dB. With a 192-fibre ribbon trunk in the table, each frame's 16 legs to its HDF go in one
    spliced ribbon cable: 0.4 dB more, 2.06 dB, past SR's budget, and no other multimode
    optic at 400G takes the same legs. Such links must take single-mode (dr4-400g, 3.0 dB) and
    the plant be packed again, not be left over their budget (nvl72-64k had 13,484)."""
    import clusterloom.cabling.plant as plant_mod

    monkeypatch.setattr(plant_mod, "TRUNK_SIZES", ((144, 12.0), (192, 13.0)))
    d = run_design(parse_spec(yaml.safe_dump(_two_halls(1))), compare=False)
    c = d.cabling
    assert c is not None
    st_ = np.flatnonzero(c.structured)
    inter = st_[c.n_hops[st_] == 3]
    assert inter.shape[0] > 0
    ribbon = (c.trunk_kind == TRUNK) & (c.trunk_fibers > 144)
    assert ribbon[c.hops[inter][:, [0, 2]]].all()  # both trunks of every such channel spliced
    assert {c.media.names[m] for m in c.medium[inter]} == {"dr4-400g"}
    mi = c.medium[inter]
    expected = (
        c.media.db_per_km[mi] * c.length_m[inter] / 1000
        + 2 * c.media.panel_db[mi]
        + 2 * MPO_JOINT_DB
        + 6 * SPLICE_DB  # the backbone's two, two per ribbon trunk
    )
    assert c.loss_db[inter] == pytest.approx(expected, abs=1e-4)
    assert (c.loss_db[inter] <= 3.0).all()
    assert not [f for f in c.findings if f.severity is Severity.ERROR]
