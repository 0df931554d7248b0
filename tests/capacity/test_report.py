"""plan.html: self-contained, deterministic, every section there; the menu table shows each
move's figures and reasons (a ``Menu``-shaped object); the roofline's roofs by closed form."""

from __future__ import annotations

import re

import numpy as np
import pytest

from capacity_helpers import MENU
from clusterloom.capacity.input import PlanInput
from clusterloom.capacity.model import CapacityProblem, Curves
from clusterloom.capacity.problem import build_problem
from clusterloom.capacity.report import render_plan, roofline, shock_kind
from clusterloom.capacity.scenarios import sample_scenarios


@pytest.fixture(scope="module")
def problem(plan: PlanInput, curves: Curves) -> CapacityProblem:
    return build_problem(plan, curves, sample_scenarios(plan, 200, 3))


def test_page_is_self_contained_and_deterministic(problem: CapacityProblem) -> None:
    html = render_plan("two-sites", problem, MENU)
    assert html == render_plan("two-sites", problem, MENU)
    assert "<script" not in html and "http://" not in html.replace('xmlns="http://www.w3.org', "")
    for sid in ("summary", "fans", "roofline", "coverage", "menu"):
        assert f'<section id="{sid}">' in html
    for cid in ("fan-0", "fan-1", "roof-0", "roof-1", "roof-all"):
        assert f'id="{cid}"' in html
    assert "menu" not in re.findall(r'<section id="(\w+)">', render_plan("x", problem))


def test_menu_rows_carry_figures_and_escaped_reasons(problem: CapacityProblem) -> None:
    html = render_plan("two-sites", problem, MENU)
    table = html[html.index('<table id="menu"') :]
    table = table[: table.index("</table>")]
    rows = table.split("<tr>")[2:]  # after the head
    assert len(rows) == 2
    assert "order switch:sn5600 now" in rows[0] and "$1,234,500" in rows[0]
    assert "$2,000,000" in rows[0] and "$50,000" in rows[0] and "2: s3, s17" in rows[0]
    assert "&lt;b&gt;east&lt;/b&gt; idle" in rows[0]  # a reason is text, never markup


def test_coverage_counts_every_shock_kind(problem: CapacityProblem) -> None:
    html = render_plan("two-sites", problem)
    table = html[html.index('<table id="coverage"') :]
    sc = problem.scenarios
    slips = sum(any(x.startswith("nvidia: deliveries slip") for x in s) for s in sc.shocks)
    one = sum("nvidia: deliveries slip 1 quarter(s)" in s for s in sc.shocks)
    assert (
        shock_kind("nvidia: deliveries slip 2 quarter(s)") == "nvidia: deliveries slip N quarter(s)"
    )
    assert f'<td>nvidia: deliveries slip N quarter(s)</td><td class="n">{slips:,}</td>' in table
    assert 0 < one < slips  # slips of 1 and 2 quarters, counted as one kind


def test_roofs_by_closed_form(problem: CapacityProblem) -> None:
    roofs = roofline(problem)
    cv, sc = problem.curves, problem.scenarios
    # east has both halls from the start in at least half the scenarios' last period:
    # 4,800 kW on the 2-tier curve (linear beyond 1,024 on its last segment)
    p = cv.power_kw[0, 0]
    slope = (p[-1] - p[-2]) / (cv.sizes[-1] - cv.sizes[-2])
    assert np.median(sc.power_kw[:, 0, -1]) == 4800
    assert roofs["power"][0, -1] == pytest.approx(1024 + (4800 - p[-1]) / slope)
    assert np.all(np.diff(roofs["supply"]) >= 0)  # caps only add up
    assert roofs["supply"][0] == 0  # no switch ordered now arrives within its median 2 quarters
