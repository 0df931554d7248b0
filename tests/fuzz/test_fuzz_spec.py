"""Fuzzing the cluster spec: mutated built-in examples through the loader and the design stages.

The contract: any text gives a ``ClusterSpec`` or a ``SpecError`` (or, from a stage, another
``ClusterloomError``); any other exception is a bug. Mutations: drop a field, insert an unknown
one, retype a value, extreme numbers, unicode and markup in strings, deep nesting, aliases, and
cuts of the text. Specs that parse go through the fabric and workload stages and placement's
pre-checks (the solve itself is left to the placement tests: it is bounded by its effort, not by
the input). Inputs that ever failed are kept in ``corpus/spec/`` and replayed.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterloom.errors import ClusterloomError, SpecError
from clusterloom.examples import example_names, example_text
from clusterloom.pipeline import run_design
from clusterloom.placement import check_site
from clusterloom.spec import parse_spec

CORPUS = Path(__file__).parent / "corpus" / "spec"
EXAMPLES = {name: yaml.safe_load(example_text(name)) for name in example_names()}
#: specs beyond this many accelerators are parsed but not designed (time, not correctness)
DESIGN_UP_TO = 140_000

EXTREMES: list[object] = [
    0,
    -1,
    1,
    7,
    2**31,
    2**63,
    10**30,
    -(10**30),
    1e18,
    1e308,
    -1e308,
    float("inf"),
    float("-inf"),
    float("nan"),
    0.5,
    1e-300,
    "",
    "x" * 300,
    "[/x] [bold]",
    "ü\u202e\x00",
    "3:0",
    "0:0",
    [],
    {},
    None,
    True,
    [1, [2, [3]]],
    {"a": {"b": 1}},
]
MUTATIONS = ("drop", "extreme", "retype", "insert", "nest", "duplicate")


def _paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _paths(value, (*path, i))
    return out


def _parent(doc: Any, path: tuple[Any, ...]) -> Any:
    for part in path[:-1]:
        doc = doc[part]
    return doc


def _mutate(doc: dict[str, Any], pick: int, kind: str, value: object) -> None:
    paths = [p for p in _paths(doc) if p]
    path = paths[pick % len(paths)]
    parent, key = _parent(doc, path), path[-1]
    if kind == "drop":
        del parent[key]
    elif kind == "extreme":
        parent[key] = value
    elif kind == "retype":
        old = parent[key]
        parent[key] = str(old) if not isinstance(old, str) else [old]
    elif kind == "insert":
        target = parent[key] if isinstance(parent[key], dict) else parent
        if isinstance(target, dict):
            target[f"unknown_{pick % 7}"] = value
    elif kind == "nest":
        parent[key] = [[[[parent[key]]]]]
    elif kind == "duplicate" and isinstance(parent, list):
        parent.append(copy.deepcopy(parent[key]))


@st.composite
def mutated_specs(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(sorted(EXAMPLES)))
    doc = copy.deepcopy(EXAMPLES[name])
    for _ in range(draw(st.integers(1, 4))):
        _mutate(
            doc,
            draw(st.integers(0, 10_000)),
            draw(st.sampled_from(MUTATIONS)),
            draw(st.sampled_from(EXTREMES)),
        )
    text = yaml.safe_dump(doc, allow_unicode=True)
    tail = draw(st.sampled_from(["", "cut", "alias", "deep", "junk"]))
    if tail == "cut":
        text = text[: draw(st.integers(0, len(text)))]
    elif tail == "alias":
        levels = draw(st.integers(1, 9))
        bomb = "x0: &x0 [a, a, a, a, a, a, a, a, a, a]\n" + "".join(
            f"x{i}: &x{i} [" + ", ".join([f"*x{i - 1}"] * 10) + "]\n" for i in range(1, levels)
        )
        text = bomb + text
    elif tail == "deep":
        depth = draw(st.integers(1, 2_000))
        text += "deep: " + "[" * depth + "]" * depth + "\n"
    elif tail == "junk":
        text += draw(st.text(max_size=200))
    return text


def check_contract(text: str) -> None:
    """The fuzzers' one assertion: only the project's own errors, never another exception."""
    try:
        spec = parse_spec(text)
    except SpecError as exc:
        assert exc.problems, "a SpecError must say what is wrong"
        for problem in exc.problems:
            assert str(problem).strip() and "\n" not in str(problem).strip()
        return
    if spec.compute.accelerators > DESIGN_UP_TO:
        return
    try:
        design = run_design(spec, place=False, compare=False)
        if spec.site is not None:
            check_site(spec, design.fabrics)
    except ClusterloomError:
        return


@settings(settings.get_profile("clusterloom-fuzz"))
@given(mutated_specs())
def test_mutated_specs_give_a_design_or_a_clear_error(text: str) -> None:
    check_contract(text)


@settings(settings.get_profile("clusterloom-fuzz"))
@given(st.text(max_size=2_000))
def test_arbitrary_text_gives_a_design_or_a_clear_error(text: str) -> None:
    check_contract(text)


@pytest.mark.parametrize("case", sorted(CORPUS.glob("*.yaml")), ids=lambda p: p.stem)
def test_corpus_cases_that_once_failed(case: Path) -> None:
    check_contract(case.read_text(encoding="utf-8"))


def test_the_corpus_is_not_empty() -> None:
    assert len(list(CORPUS.glob("*.yaml"))) >= 5
