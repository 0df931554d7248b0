"""Fuzzing the plan input: the example plan mutated (the spec fuzzer's mutations) through
``parse_plan``, and a plan that parses through the scenarios and the costs. The contract: a
``PlanInput`` or a ``SpecError`` with one line per problem, never another exception. Inputs
that ever failed are kept in ``corpus/plan/`` and replayed. (The curves run the design
stages, which the spec fuzzer covers.)"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from test_fuzz_spec import EXTREMES, MUTATIONS, _mutate

from clusterloom.capacity.input import example_plan, parse_plan
from clusterloom.capacity.problem import build_costs
from clusterloom.capacity.scenarios import sample_scenarios
from clusterloom.errors import SpecError

CORPUS = Path(__file__).parent / "corpus" / "plan"
EXAMPLE = yaml.safe_load(example_plan().read_text())


@st.composite
def mutated_plans(draw: st.DrawFn) -> str:
    doc = copy.deepcopy(EXAMPLE)
    for _ in range(draw(st.integers(1, 4))):
        _mutate(
            doc,
            draw(st.integers(0, 10_000)),
            draw(st.sampled_from(MUTATIONS)),
            draw(st.sampled_from(EXTREMES)),
        )
    text = yaml.safe_dump(doc, allow_unicode=True)
    if draw(st.booleans()):
        text = text[: draw(st.integers(0, len(text)))]
    return text


def check_contract(text: str) -> None:
    try:
        plan = parse_plan(text)
    except SpecError as exc:
        assert exc.problems, "a SpecError must say what is wrong"
        for problem in exc.problems:
            assert str(problem).strip() and "\n" not in str(problem).strip()
        return
    sc = sample_scenarios(plan, 16, 0)
    assert sc.demand.shape == (16, len(plan.sites), plan.horizon.periods)
    build_costs(plan)


@settings(settings.get_profile("clusterloom-fuzz"))
@given(mutated_plans())
def test_mutated_plans_give_a_plan_or_a_clear_error(text: str) -> None:
    check_contract(text)


@pytest.mark.parametrize("case", sorted(CORPUS.glob("*.yaml")), ids=lambda p: p.stem)
def test_corpus_cases_that_once_failed(case: Path) -> None:
    check_contract(case.read_text(encoding="utf-8"))
