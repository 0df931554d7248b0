"""Reconciliation: the unit and date rules as closed forms, refused units named by field,
provenance per field, trust graded as the generated history says, conflicts named, the
example sources giving back the example plan, and the command's exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clusterloom.capacity.actuals import parse_actuals, read_actuals
from clusterloom.capacity.input import example_plan, load_plan, parse_plan, quarter_index
from clusterloom.capacity.reconcile import grade_trust, reconcile
from clusterloom.capacity.sources import (
    Rules,
    demand_to_accelerators,
    load_sources,
    parse_sources,
    power_to_it_mw,
    to_quarter,
)
from clusterloom.cli.main import app
from clusterloom.errors import SpecError

PLANS = example_plan().parent
SOURCES = PLANS / "two-sites-sources.yaml"
ACTUALS = PLANS / "two-sites-actuals.csv"
runner = CliRunner()


def _doc(sources: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "version": 1,
        "horizon": {"start": "2027Q1", "periods": 2},
        "sites": {"east": ["EAST-DC"]},
        "sources": sources,
        **extra,
    }


def _parse(doc: dict[str, Any]) -> Any:
    return parse_sources(yaml.safe_dump(doc))


def _hall(power: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "site": "EAST-DC",
        "hall": "b1/h1",
        "power": power,
        "rows": 2,
        "positions_per_row": 8,
        "position_power_kw": 40,
        **extra,
    }


# ---- rules ---------------------------------------------------------------------------------


def test_unit_rules_closed_forms() -> None:
    names = {"east": "east"}
    rules = Rules(pue={"east": 1.25}, power_factor=0.9, gpus_per_node=8, nodes_per_rack=4)
    assert power_to_it_mw(3.0, "facility_mw", rules, "east", names).value == pytest.approx(2.4)
    assert power_to_it_mw(3000, "facility_kw", rules, "east", names).value == pytest.approx(2.4)
    # 1,000 kVA x 0.9 = 900 kW of facility power, / 1.25 = 720 kW of IT
    assert power_to_it_mw(1000, "facility_kva", rules, "east", names).value == pytest.approx(0.72)
    assert power_to_it_mw(2400, "it_kw", Rules(), "east", names).value == pytest.approx(2.4)
    assert demand_to_accelerators(3, "racks", rules).value == 3 * 4 * 8
    assert demand_to_accelerators(5, "nodes", rules).value == 40
    assert demand_to_accelerators(7, "gpus", Rules()).value == 7


@settings(max_examples=60, deadline=None)
@given(st.floats(0.01, 500), st.floats(1.0, 3.0))
def test_facility_over_pue_is_it(it_mw: float, pue: float) -> None:
    rules = Rules(pue=pue)
    back = power_to_it_mw(it_mw * pue, "facility_mw", rules, "east", {"east": "east"})
    assert back.value == pytest.approx(it_mw, rel=1e-12)
    assert f"pue {pue:g}" in back.rule


def test_dates_map_to_quarters_by_the_declared_rule() -> None:
    q3 = quarter_index("2027Q3")
    assert to_quarter("2027Q3", None) == q3
    assert to_quarter("2027-08-14", "containing") == q3
    assert to_quarter("2027-08-14", "following") == q3 + 1
    assert to_quarter("2027-07-01", "following") == q3  # a quarter's first day is its own
    assert to_quarter("2027-09", "containing") == q3
    with pytest.raises(ValueError, match=r"without a rule: declare rules\.dates"):
        to_quarter("2027-08-14", None)
    with pytest.raises(ValueError, match="not a date"):
        to_quarter("2027-02-30", "containing")


@pytest.mark.parametrize(
    ("source", "where", "words"),
    [
        (
            {"name": "a", "halls": [_hall({"value": 3.0, "unit": "facility_mw"})]},
            "sources[0].halls[0].power.unit",
            "inconsistent with the model's it_mw without a rule: declare rules.pue",
        ),
        (
            {
                "name": "a",
                "rules": {"pue": 1.2},
                "halls": [_hall({"value": 900, "unit": "facility_kva"})],
            },
            "sources[0].halls[0].power.unit",
            "declare rules.power_factor",
        ),
        (
            {"name": "a", "halls": [_hall({"value": 3.0, "unit": "btu_per_hour"})]},
            "sources[0].halls[0].power.unit",
            "not one of",
        ),
        (
            {
                "name": "a",
                "rules": {"gpus_per_node": 8},
                "demand": [
                    {
                        "program": "p",
                        "site": "east",
                        "unit": "racks",
                        "levels": [0.5],
                        "values": {"2027Q1": [1], "2027Q2": [2]},
                    }
                ],
            },
            "sources[0].demand[0].unit",
            "declare rules.nodes_per_rack",
        ),
        (
            {
                "name": "a",
                "demand": [
                    {
                        "program": "p",
                        "site": "east",
                        "unit": "gpus",
                        "levels": [0.5],
                        "values": {"2027-03": [1], "2027Q2": [2]},
                    }
                ],
            },
            "sources[0].demand[0].values.2027-03",
            "declare rules.dates",
        ),
        (
            {"name": "a", "halls": [_hall({"value": 2.0, "unit": "it_mw"}, site="nowhere")]},
            "sources[0].halls[0].site",
            "no site 'nowhere'",
        ),
    ],
)
def test_a_unit_without_its_rule_is_refused_naming_the_field(
    source: dict[str, Any], where: str, words: str
) -> None:
    with pytest.raises(SpecError) as exc:
        _parse(_doc([source]))
    assert [p.where for p in exc.value.problems] == [where]
    assert words in exc.value.problems[0].message


def test_negative_power_and_non_monotone_quantiles_are_refused() -> None:
    bad = {
        "name": "a",
        "halls": [_hall({"value": -1.0, "unit": "it_mw"})],
        "demand": [
            {
                "program": "p",
                "site": "east",
                "unit": "gpus",
                "levels": [0.1, 0.5],
                "values": {"2027Q1": [10, 5], "2027Q2": [10, 20]},
            }
        ],
    }
    with pytest.raises(SpecError) as exc:
        _parse(_doc([bad]))
    wheres = {p.where for p in exc.value.problems}
    assert "sources[0].halls[0].power.value" in wheres
    assert any(w.startswith("sources[0].demand[0]") for w in wheres)
    assert any("not monotone" in p.message for p in exc.value.problems)


# ---- trust ---------------------------------------------------------------------------------


def _history_doc(hits: dict[str, int], n: int) -> tuple[Any, tuple[Any, ...]]:
    """Sources whose past demand figures were right ``hits[name]`` times out of ``n``
    (right: the actual; wrong: 40 % over it)."""
    periods = [f"{2020 + i // 4}Q{i % 4 + 1}" for i in range(n)]
    actual = {p: 100.0 + 10 * i for i, p in enumerate(periods)}
    rows = ["quantity,site,program,period,value"]
    rows += [f"demand,east,p,{p},{v:g}" for p, v in actual.items()]
    sources = []
    for name, h in hits.items():
        history = [
            {
                "quantity": "demand",
                "site": "EAST-DC",
                "program": "p",
                "date": p,
                "value": actual[p] * (1.0 if i < h else 1.4),
                "unit": "gpus",
            }
            for i, p in enumerate(periods)
        ]
        sources.append({"name": name, "history": history})
    return _parse(_doc(sources)), parse_actuals("\n".join(rows) + "\n")


def test_trust_grades_are_ordered_as_the_history_says() -> None:
    doc, actuals = _history_doc({"good": 9, "middling": 5, "poor": 1}, 10)
    trust = grade_trust(doc, actuals)
    scores = {s: trust[(s, "demand")].score for s in ("good", "middling", "poor")}
    # grades are rounded to 6 decimals
    assert scores == pytest.approx({"good": 10 / 12, "middling": 6 / 12, "poor": 2 / 12}, abs=1e-6)
    assert trust[("good", "demand")].checked == 10 and trust[("good", "demand")].agreed == 9
    # no history of power: the prior
    assert trust[("good", "it_power")].score == 0.5 and trust[("good", "it_power")].checked == 0
    assert trust[("poor", "demand")].mean_error == pytest.approx(0.4 * 9 / 10)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 8), st.data())
def test_a_source_right_more_often_grades_higher(n: int, data: st.DataObject) -> None:
    a = data.draw(st.integers(0, n))
    b = data.draw(st.integers(0, n))
    doc, actuals = _history_doc({"a": a, "b": b}, n)
    trust = grade_trust(doc, actuals)
    ta, tb = trust[("a", "demand")].score, trust[("b", "demand")].score
    assert (ta > tb) == (a > b) and (ta == tb) == (a == b)


def test_no_actuals_gives_every_source_the_prior() -> None:
    trust = grade_trust(load_sources(SOURCES), None)
    assert {t.score for t in trust.values()} == {0.5}


# ---- choosing, provenance, conflicts -------------------------------------------------------


def _two_power_sources(good_hits: int, poor_hits: int, poor_mw: float) -> Any:
    periods = ["2026Q1", "2026Q2", "2026Q3", "2026Q4"]
    rows = ["quantity,site,program,period,value"] + [f"it_power_kw,east,,{p},2000" for p in periods]

    def history(h: int) -> list[dict[str, Any]]:
        return [
            {
                "quantity": "it_power",
                "site": "east",
                "date": p,
                "value": 2000 if i < h else 3000,
                "unit": "it_kw",
            }
            for i, p in enumerate(periods)
        ]

    doc = _parse(
        _doc(
            [
                {
                    "name": "good",
                    "rules": {"pue": 1.25},
                    "halls": [_hall({"value": 2.5, "unit": "facility_mw"})],
                    "history": history(good_hits),
                },
                {
                    "name": "poor",
                    "halls": [_hall({"value": poor_mw, "unit": "it_mw"})],
                    "history": history(poor_hits),
                },
            ]
        )
    )
    return reconcile(doc, actuals=parse_actuals("\n".join(rows) + "\n"))


def test_power_is_the_trust_weighted_mean_with_provenance() -> None:
    result = _two_power_sources(4, 0, 3.0)
    prov = {p.field: p for p in result.provenance}
    field = prov["sites.east.b1.h1.power.it_mw"]
    # good: 2.5 / 1.25 = 2.0 MW at trust 5/6; poor: 3.0 MW at trust 1/6
    assert field.value == pytest.approx((5 / 6 * 2.0 + 1 / 6 * 3.0) / 1.0, rel=1e-6)
    claims = {c.source: c for c in field.claims}
    assert claims["good"].original == "2.5 facility_mw" and "pue 1.25" in claims["good"].rule
    assert claims["poor"].original == "3 it_mw" and claims["poor"].value == 3.0
    assert field.chosen_by == "trust-weighted mean"
    assert "sites.east.b1.h1.rows" in prov
    # the poor source is below the conflict trust: its disagreement is no conflict
    assert result.conflicts == ()
    hall = result.fragment["sites"][0]["buildings"][0]["halls"][0]
    assert hall["power"] == {"it_mw": pytest.approx(field.value), "pue": 1.25}


def test_trusted_sources_that_disagree_are_a_conflict() -> None:
    result = _two_power_sources(4, 4, 3.0)
    (conflict,) = result.conflicts
    assert conflict.field == "sites.east.b1.h1.power.it_mw"
    assert {c.source for c in conflict.claims} == {"good", "poor"}
    assert conflict.spread == pytest.approx((3.0 - 2.0) / 2.5)
    assert "metered IT load" in conflict.settle
    # within the tolerance: no conflict
    assert _two_power_sources(4, 4, 2.05).conflicts == ()


def test_the_example_sources_give_back_the_example_plan() -> None:
    plan = load_plan(example_plan())
    result = reconcile(load_sources(SOURCES), actuals=read_actuals(ACTUALS), plan=plan)
    assert result.plan is not None
    # the sources' figures are the plan's: the enriched plan is the plan (its ready
    # distributions kept, their medians being the sources' quarters), but for east/b1/h1,
    # now ready since 2026Q2 (before the horizon: ready from its start, as none is), and
    # east/b1/h2's power, now IT MW (2.4) where the plan gave facility MW (3.0 / 1.25)
    assert result.plan.programs == plan.programs
    assert result.plan.model_dump(exclude={"sites"}) == plan.model_dump(exclude={"sites"})
    for mine, theirs in zip(result.plan.sites, plan.sites, strict=True):
        for h_mine, h_theirs in zip(mine.halls, theirs.halls, strict=True):
            assert h_mine.power.it_kw == pytest.approx(h_theirs.power.it_kw)
            assert h_mine.positions == h_theirs.positions
            assert h_mine.ready == h_theirs.ready or (h_theirs.ready, h_mine.ready) == (
                None,
                "2026Q2",
            )
    assert parse_plan(result.document()) == result.plan
    trust = {(t.source, t.kind): t.score for t in result.trust}
    assert trust[("program-forecast", "demand")] > trust[("vendor-schedule", "demand")]
    assert trust[("vendor-schedule", "demand")] > trust[("finance", "demand")]
    assert [c.field for c in result.conflicts] == ["sites.west.b1.h1.ready"]
    prov = {p.field: p for p in result.provenance}
    kva = {c.source: c for c in prov["sites.east.b1.h2.power.it_mw"].claims}["facilities"]
    assert "facility_kva" in kva.original and "power factor 0.95" in kva.rule
    median = prov["programs.pretrain.demand.east.2027Q3.p50"]
    assert median.value == pytest.approx(384)
    assert {c.source for c in median.claims} == {"finance", "program-forecast", "vendor-schedule"}
    # without a plan: sites and programs the plan reader takes
    alone = reconcile(load_sources(SOURCES), actuals=read_actuals(ACTUALS))
    data = plan.model_dump(mode="json", exclude_none=True)
    data.update(alone.fragment)
    assert parse_plan(yaml.safe_dump(data)).programs == plan.programs


def test_a_plans_ready_distribution_moves_to_the_sources_median() -> None:
    plan = load_plan(example_plan())
    doc = yaml.safe_load(SOURCES.read_text())
    doc["sources"][0]["halls"][1]["ready"] = "2028-02-01"  # east/b1/h2: 2028Q1, median 2027Q3
    result = reconcile(parse_sources(yaml.safe_dump(doc)), plan=plan)
    assert result.plan is not None
    ready = result.plan.sites[0].buildings[0].halls[1].ready
    assert ready is not None and not isinstance(ready, str)
    assert ready.quarters == ["2027Q4", "2028Q1", "2028Q3"]  # 2027Q2, Q3, 2028Q1 moved +2
    assert ready.levels == [0.1, 0.5, 0.9]
    prov = {p.field: p for p in result.provenance}["sites.east.b1.h2.ready"]
    assert prov.value == "2028Q1" and "moved +2" in prov.note


def test_a_spread_from_one_source_and_medians_from_all() -> None:
    demand = [
        {
            "name": "spread",
            "demand": [
                {
                    "program": "p",
                    "site": "east",
                    "unit": "gpus",
                    "levels": [0.1, 0.5, 0.9],
                    "values": {"2027Q1": [80, 100, 140], "2027Q2": [100, 120, 160]},
                }
            ],
        },
        {
            "name": "point",
            "rules": {"gpus_per_node": 8},
            "demand": [
                {
                    "program": "p",
                    "site": "EAST-DC",
                    "unit": "nodes",
                    "levels": [0.5],
                    "values": {"2027Q1": [15], "2027Q2": [10]},
                }
            ],
        },
        {"name": "floor", "rules": {"pue": 1.2}, "halls": [_hall({"value": 2.0, "unit": "it_mw"})]},
    ]
    result = reconcile(_parse(_doc(demand)))
    forecast = result.fragment["programs"][0]["demand"]["east"]
    assert forecast["levels"] == [0.1, 0.5, 0.9]
    # equal trust: medians (100 + 120) / 2 = 110 and (120 + 80) / 2 = 100, the spread kept;
    # the second quarter is raised to the first (cumulative demand), and said so
    assert forecast["accelerators"] == [[90, 110, 150], [90, 110, 150]]
    notes = [p for p in result.provenance if p.chosen_by == "cumulative rule"]
    assert [p.field for p in notes] == ["programs.p.demand.east.2027Q2"]
    # a period no source gives is refused, naming the field
    demand[0]["demand"][0]["values"].pop("2027Q2")
    demand[1]["demand"][0]["values"].pop("2027Q2")
    with pytest.raises(SpecError) as exc:
        reconcile(_parse(_doc(demand)))
    assert exc.value.problems[0].where == "programs.p.demand.east"
    assert "2027Q2" in exc.value.problems[0].message


# ---- the command ---------------------------------------------------------------------------


def test_reconcile_command_writes_one_deterministic_run(tmp_path: Path) -> None:
    outs = []
    for name in ("a", "b"):
        args = ["capacity", "reconcile", str(SOURCES), "--actuals", str(ACTUALS)]
        args += ["--plan", str(example_plan()), "-o", str(tmp_path / name)]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        assert "conflicts that remain" in result.output and "program-forecast" in result.output
        outs.append(tmp_path / name)
    files = ["plan.yaml", "provenance.json", "trust.json", "conflicts.json"]
    for f in files:
        assert (outs[0] / f).read_bytes() == (outs[1] / f).read_bytes(), f
    manifest = json.loads((outs[0] / "manifest.json").read_text())
    assert sorted(f["path"] for f in manifest["files"]) == sorted(files)
    load_plan(outs[0] / "plan.yaml")


def test_reconcile_command_exits_2_naming_the_field(tmp_path: Path) -> None:
    doc = yaml.safe_load(SOURCES.read_text())
    doc["sources"][0]["rules"].pop("pue")
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(doc))
    result = runner.invoke(app, ["capacity", "reconcile", str(bad), "-o", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    assert "sources[0].halls[0].power.unit" in result.output
    assert "without a rule" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "o").exists()


def test_a_forecast_given_twice_by_one_source_under_two_names_is_refused() -> None:
    entry = {"program": "p", "unit": "gpus", "levels": [0.5], "values": {"2027Q1": [1]}}
    doc = _doc([{"name": "a", "demand": [{**entry, "site": "east"}, {**entry, "site": "EAST-DC"}]}])
    with pytest.raises(SpecError) as exc:
        _parse(doc)
    assert [p.where for p in exc.value.problems] == ["sources[0].demand[1]"]
    assert "demand of p at east is given twice" in exc.value.problems[0].message


def test_mutated_sources_give_a_result_or_a_spec_error() -> None:
    """The example sources with one to three fields deleted or set to a wrong value: parsed
    and reconciled (alone, enriching the plan, with actuals), never another exception."""
    import copy
    import random

    base = yaml.safe_load(SOURCES.read_text())
    plan = load_plan(example_plan())
    actuals = read_actuals(ACTUALS)
    values: list[Any] = [None, 0, -1, 1e12, "x", [], {}, "2027-13", "2027Q5", "EAST-DC", 3.5]
    values += ["2027-02-30", [1, 2], "facility_kva", "nodes", "racks", "west"]

    def paths(o: Any, pre: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        out = [pre]
        items = o.items() if isinstance(o, dict) else enumerate(o) if isinstance(o, list) else ()
        for k, v in items:
            out += paths(v, (*pre, k))
        return out

    every = paths(base)[1:]
    rng = random.Random(0)
    outcomes = {"ok": 0, "refused": 0}
    for _ in range(60):
        doc = copy.deepcopy(base)
        for _ in range(rng.randint(1, 3)):
            path = rng.choice(every)
            parent = doc
            try:
                for k in path[:-1]:
                    parent = parent[k]
                if rng.random() < 0.3:
                    del parent[path[-1]]
                else:
                    parent[path[-1]] = rng.choice(values)
            except (KeyError, IndexError, TypeError):
                continue
        try:
            parsed = parse_sources(yaml.safe_dump(doc))
            for kw in ({}, {"plan": plan}, {"actuals": actuals, "plan": plan}):
                try:
                    reconcile(parsed, **kw)  # type: ignore[arg-type]
                    outcomes["ok"] += 1
                except SpecError:
                    outcomes["refused"] += 1
        except SpecError:
            outcomes["refused"] += 1
    assert outcomes["ok"] > 0 and outcomes["refused"] > 0


def test_a_program_the_correlated_plan_lacks_is_refused() -> None:
    doc = yaml.safe_load(SOURCES.read_text())
    doc["sources"][2]["demand"][0]["program"] = "newcomer"
    with pytest.raises(SpecError) as exc:
        reconcile(parse_sources(yaml.safe_dump(doc)), plan=load_plan(example_plan()))
    assert [p.where for p in exc.value.problems] == ["programs.newcomer"]
    assert "correlation" in exc.value.problems[0].message


def test_trust_per_site_pools_the_sources_record_elsewhere() -> None:
    """A source right four times at east and wrong four times at west: each site graded by its
    own record with the other's as a prior of weight 2; a site with no history borrows."""
    periods = ["2026Q1", "2026Q2", "2026Q3", "2026Q4"]
    rows = ["quantity,site,program,period,value"]
    rows += [f"it_power_kw,{s},,{p},2000" for s in ("east", "west") for p in periods]

    def claims(site: str, kw: float) -> list[dict[str, Any]]:
        return [
            {"quantity": "it_power", "site": site, "date": p, "value": kw, "unit": "it_kw"}
            for p in periods
        ]

    hall = {"hall": "b1/h1", "power": {"value": 2.0, "unit": "it_mw"}, "rows": 1}
    hall |= {"positions_per_row": 4, "position_power_kw": 40}
    doc = _parse(
        _doc(
            [
                {
                    "name": "mixed",
                    "rules": {"pue": 1.2},
                    "halls": [{**hall, "site": "east"}, {**hall, "site": "west"}],
                    "history": claims("east", 2000) + claims("west", 3000),
                },
                {"name": "east-only", "history": claims("east", 2000)},
            ],
            sites={"east": [], "west": [], "north": []},
        )
    )
    trust = grade_trust(doc, parse_actuals("\n".join(rows) + "\n"))
    mixed = trust[("mixed", "it_power")]
    assert mixed.score == pytest.approx(5 / 10, abs=1e-6)  # 4 of 8 overall
    assert mixed.at("east") == pytest.approx((4 + 2 * (1 / 6)) / 6, abs=1e-6)
    assert mixed.at("west") == pytest.approx((0 + 2 * (5 / 6)) / 6, abs=1e-6)
    assert mixed.at("north") == pytest.approx(mixed.score, abs=1e-6)
    assert trust[("east-only", "it_power")].at("west") == pytest.approx(5 / 6, abs=1e-6)
    result = reconcile(doc, actuals=parse_actuals("\n".join(rows) + "\n"))
    prov = {p.field: p for p in result.provenance}
    assert prov["sites.west.b1.h1.power.it_mw"].claims[0].trust == mixed.at("west")
    assert prov["sites.east.b1.h1.power.it_mw"].claims[0].trust == mixed.at("east")
