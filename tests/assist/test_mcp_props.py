"""Properties of the MCP tools over generated input: whatever JSON a client sends, a tool
answers with its output model (never an exception) and ``ok`` false comes with an error
finding; no path an agent names resolves outside the root."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clusterloom.assist.mcp import TOOLS, Call, Root, call_tool
from clusterloom.errors import SpecError

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=8,
)
NAMES = sorted({k for t in TOOLS.values() for k in t.inputs.model_fields} | {"bogus"})


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Root:
    path = tmp_path_factory.mktemp("props")
    (path / "a").mkdir()
    os.symlink("/", path / "a" / "up")
    return Root(path)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from([*TOOLS, "nope"]),
    args=st.dictionaries(st.sampled_from(NAMES), JSON, max_size=4),
)
def test_any_arguments_give_an_output_not_an_exception(
    root: Root, name: str, args: dict[str, Any]
) -> None:
    out = call_tool(name, args, Call(root))
    kind = TOOLS[name].outputs if name in TOOLS else type(out)
    assert isinstance(out, kind)
    errors = [f for f in out.findings if f.severity == "error"]
    assert out.ok == (not errors) and out.errors == len(errors)
    assert all(f.code != "internal-error" for f in out.findings), out.findings
    kind.model_validate(out.model_dump(mode="json"))  # the output fits its own schema


SEGMENT = st.sampled_from(["..", ".", "a", "up", "b", "", "/", "etc"])


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(SEGMENT, min_size=1, max_size=6))
def test_no_path_resolves_outside_the_root(root: Root, parts: list[str]) -> None:
    given_path = "/".join(parts)
    for check in (root.existing, root.output):
        try:
            path = check("path", given_path)
        except SpecError as exc:
            assert [p.where for p in exc.problems] == ["path"]
            continue
        assert Path(path).resolve().is_relative_to(root.path)
