"""``diff_designs`` over real pairs (``diff_pairs.py``: a 64-GPU hall design and five variants,
written once per module) and over generated run files (hypothesis).

Properties: a design against itself is empty; diff(B, A) is diff(A, B).inverse() for every
ordered pair; the BOM delta's total is the difference of the two designs' own totals
(``Design.bom``); links kept + added = B's links, kept + removed = A's; a change of pitch or
medium keeps every link's ends and re-cables all of them; the same inputs give the same bytes.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from diff_pairs import VARIANTS, write_run
from hypothesis import given
from hypothesis import strategies as st

from clusterloom.assist import RunFiles, diff_designs, read_run
from clusterloom.assist.diff import Device, FindingKey, Link, LinkRoute, Rack
from clusterloom.pipeline import Design
from clusterloom.store.summary import run_summary


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Design, Path]]:
    tmp = tmp_path_factory.mktemp("diff")
    return {name: write_run(doc, tmp / name) for name, doc in VARIANTS.items()}


@pytest.fixture(scope="module")
def files(runs: dict[str, tuple[Design, Path]]) -> dict[str, RunFiles]:
    return {name: read_run(path, name, run_summary) for name, (_, path) in runs.items()}


def test_a_design_against_itself_is_empty(files: dict[str, RunFiles]) -> None:
    for name, run in files.items():
        diff = diff_designs(run, run)
        assert diff.empty, name
        assert not any(diff.counts().values())
        assert diff.fibres_pulled == diff.fibres_recovered == ()
        assert diff.blast_racks == diff.blast_planes == diff.blast_jobs == ()


def test_every_variant_differs_from_the_base(files: dict[str, RunFiles]) -> None:
    for name in VARIANTS:
        if name not in ("base", "sim-base"):
            assert not diff_designs(files["base"], files[name]).empty, name
    # a scenario changes no design; with one side not simulated there is nothing to compare
    same = diff_designs(files["base"], files["sim-base"])
    assert same.empty and same.performance == ()


def test_the_diff_read_backwards_is_the_inverse(files: dict[str, RunFiles]) -> None:
    for x, y in itertools.permutations(files, 2):
        forward, backward = diff_designs(files[x], files[y]), diff_designs(files[y], files[x])
        assert backward == forward.inverse(), (x, y)
        assert forward.inverse().inverse() == forward


def test_the_bom_delta_is_the_difference_of_the_designs_totals(
    runs: dict[str, tuple[Design, Path]], files: dict[str, RunFiles]
) -> None:
    base = runs["base"][0].bom
    for name, (design, _) in runs.items():
        diff = diff_designs(files["base"], files[name])
        assert diff.cost_cents == (base.cost_cents, design.bom.cost_cents), name
        assert diff.power_mw == (base.power_mw, design.bom.power_mw), name
        line_delta = sum(x.cost_cents_b - x.cost_cents_a for x in diff.bom)
        assert line_delta == design.bom.cost_cents - base.cost_cents, name


def test_links_added_and_removed_account_for_both_designs(
    runs: dict[str, tuple[Design, Path]], files: dict[str, RunFiles]
) -> None:
    n_base = runs["base"][0].fabric("backend").topology.n_links
    for name, (design, _) in runs.items():
        n = design.fabric("backend").topology.n_links
        diff = diff_designs(files["base"], files[name])
        kept_a = n_base - len(diff.links_removed)
        assert kept_a == n - len(diff.links_added), name
        assert len(diff.links_recabled) <= kept_a
        pulled = sum(p.cables for p in diff.fibres_pulled)
        assert pulled == len(diff.links_added) + len(diff.links_recabled), name
        recovered = sum(p.cables for p in diff.fibres_recovered)
        assert recovered == len(diff.links_removed) + len(diff.links_recabled), name


@pytest.mark.parametrize("variant", ["pitch", "medium"])
def test_same_ends_another_route_is_recabled(files: dict[str, RunFiles], variant: str) -> None:
    diff = diff_designs(files["base"], files[variant])
    assert not diff.links_added and not diff.links_removed
    assert len(diff.links_recabled) == len(files["base"].links) == 128
    if variant == "medium":
        assert {c.a.medium for c in diff.links_recabled} == {"fr2-200g"}
        assert [p.medium for p in diff.fibres_pulled] == ["dr2-200g"]
        assert [p.medium for p in diff.fibres_recovered] == ["fr2-200g"]
    else:  # twice the pitch: no cable gets shorter
        assert all(c.b.order_mm >= c.a.order_mm for c in diff.links_recabled)
        assert sum(p.order_mm for p in diff.fibres_pulled) > sum(
            p.order_mm for p in diff.fibres_recovered
        )
    assert diff.blast_planes == ("backend plane 0",)
    racked = {r.rack for r in files["base"].racks.values()}
    assert set(diff.blast_racks) <= racked | {
        d.rack for d in files["base"].devices.values() if d.rack
    }


def test_growth_adds_the_new_servers_and_racks(files: dict[str, RunFiles]) -> None:
    diff = diff_designs(files["base"], files["grown"])
    new_nodes = [d for d in diff.devices_added if d.startswith("node")]
    assert len(new_nodes) == (128 - 64) // 8
    assert len(diff.racks_added) == len(files["grown"].racks) - len(files["base"].racks) > 0
    assert not diff.devices_removed


def test_a_growth_step_diffs_to_growths_own_rework_figures(
    runs: dict[str, tuple[Design, Path]], tmp_path: Path
) -> None:
    """64 -> 128 GPUs grown from the installed base (``design --installed``): what the diff
    finds is what growth measured, by its own means (``growth/rework.py``)."""
    _, folder = write_run(VARIANTS["grown"], tmp_path / "grown", installed=runs["base"][1])
    rework = json.loads((folder / "design.json").read_text())["growth"]
    diff = diff_designs(read_run(runs["base"][1]), read_run(folder))
    assert len(diff.racks_moved) == rework["racks_moved"]
    assert len(diff.links_removed) == rework["links_repatched"]
    assert len(diff.links_recabled) == rework["fibres_repulled"]
    assert len(diff.links_added) == rework["links_added"] > 0
    assert diff.cost_cents[1] - diff.cost_cents[0] == rework["cost_cents"]


def test_the_json_is_deterministic(
    runs: dict[str, tuple[Design, Path]], files: dict[str, RunFiles]
) -> None:
    again = read_run(runs["grown"][1], "grown")
    text = diff_designs(files["base"], files["grown"]).to_json()
    assert text == diff_designs(read_run(runs["base"][1], "base"), again).to_json()
    data = json.loads(text)
    assert data["counts"]["links_added"] == len(data["links"]["added"])
    assert data["bom"]["cost_usd"]["delta"] == pytest.approx(
        data["bom"]["cost_usd"]["b"] - data["bom"]["cost_usd"]["a"]
    )


def test_the_performance_delta_of_two_simulated_designs(
    runs: dict[str, tuple[Design, Path]], files: dict[str, RunFiles]
) -> None:
    diff = diff_designs(files["sim-base"], files["sim-over"])
    assert [p.transport for p in diff.performance] == ["ideal", "roce-ecmp"]
    for p in diff.performance:
        want = tuple(
            run_summary(runs[name][1] / "simulation")[p.transport]
            for name in ("sim-base", "sim-over")
        )
        assert p.fct_p99_us == (want[0]["fct_p99_us"], want[1]["fct_p99_us"])
        assert p.finished == (want[0]["finished"], want[1]["finished"])
    assert not any("not simulated" in n for n in diff.notes)
    plain = diff_designs(files["base"], files["sim-over"])
    assert plain.performance == ()
    assert "performance: not simulated (both designs need a simulation/)" in plain.notes
    # the same spec simulated the same way: the design does not differ, nor does its prediction
    same = diff_designs(files["sim-base"], files["sim-base"])
    assert same.empty and len(same.performance) == 2
    assert not any(p.changed for p in same.performance)
    assert any(p.changed for p in diff.performance)  # 2:1 leaves: roce-ecmp's flows collide


def test_the_files_read_are_those_reads_names(
    runs: dict[str, tuple[Design, Path]], files: dict[str, RunFiles], tmp_path: Path
) -> None:
    """A copy of a run holding only the files ``reads`` accepts (what the store copies out)
    reads the same, and it holds fewer files than the run."""
    import shutil

    from clusterloom.assist import reads

    run = runs["sim-over"][1]
    names = [p.relative_to(run).as_posix() for p in run.rglob("*") if p.is_file()]
    kept = [n for n in names if reads(n)]
    for name in kept:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(run / name, tmp_path / name)
    assert 0 < len(kept) < len(names)
    assert read_run(tmp_path, "sim-over", run_summary) == files["sim-over"]


def test_a_directory_that_is_not_a_run_is_refused(tmp_path: Path) -> None:
    from clusterloom.errors import SpecError

    with pytest.raises(SpecError, match="not a design run"):
        read_run(tmp_path)


# --- generated run files ---------------------------------------------------------------

_names = st.sampled_from([f"d{i}" for i in range(6)])
_route = st.builds(
    LinkRoute,
    st.sampled_from(["r1", "r2"]),
    st.sampled_from(["r1", "r3"]),
    st.sampled_from(["m1", "m2"]),
    st.integers(0, 3).map(lambda i: 1000 * i),
)


def _link(ends: tuple[str, str], route: LinkRoute) -> Link:
    key = "~".join(sorted(ends))
    return Link(key, "backend", 0, route)


@st.composite
def _run(draw: Any) -> RunFiles:
    ends = draw(st.lists(st.tuples(_names, _names), max_size=6, unique=True))
    links = {lk.ends: lk for lk in (_link(e, draw(_route)) for e in ends)}
    keys = draw(st.lists(st.sampled_from(["sw", "optic", "cord"]), unique=True))
    bom = {
        ("backend", "leaf", "c", k, ""): (
            draw(st.integers(0, 9)),
            draw(st.integers(0, 10**6)),
            draw(st.integers(0, 10**6)),
        )
        for k in keys
    }
    devices = {
        n: Device(n, draw(st.sampled_from(["t1", "t2"])), draw(st.sampled_from(["", "r1"])))
        for n in draw(st.lists(_names, unique=True))
    }
    racks = {
        h: Rack(h, draw(st.sampled_from(["p1", "p2", "p3"])))
        for h in draw(st.lists(st.sampled_from(["k1", "k2", "k3"]), unique=True))
    }
    findings = {
        (s, c, ""): FindingKey(s, c, "")
        for s, c in draw(
            st.lists(st.tuples(st.sampled_from(["info", "error"]), _names), unique=True)
        )
    }
    job = draw(st.sampled_from(["", "llm"]))
    figures = st.fixed_dictionaries(
        {
            "fct_p99_us": st.none() | st.sampled_from([1.5, 2.0]),
            "completion_ms": st.none() | st.just(0.25),
            "finished": st.integers(0, 2),
        }
    )
    simulated = draw(st.none() | st.dictionaries(st.sampled_from(["t1", "t2"]), figures))
    return RunFiles(
        "x", bom, devices, links, racks, findings, job, "cut sheet", "as cabled", simulated
    )


def _nonzero(bom: dict[Any, tuple[int, int, int]]) -> dict[Any, tuple[int, int, int]]:
    return {k: v for k, v in bom.items() if any(v)}


@given(_run(), _run())
def test_inverse_and_empty_on_generated_runs(a: RunFiles, b: RunFiles) -> None:
    """A BOM line of zero quantity, cost and power is the same as no line."""
    forward = diff_designs(a, b)
    assert diff_designs(b, a) == forward.inverse()
    assert diff_designs(a, a).empty
    assert forward.empty == (
        _nonzero(a.bom) == _nonzero(b.bom)
        and a.devices == b.devices
        and a.links == b.links
        and a.racks == b.racks
        and a.findings.keys() == b.findings.keys()
        and not any(p.changed for p in forward.performance)
    )
