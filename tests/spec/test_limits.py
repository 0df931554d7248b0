"""Input limits of the spec: every bug of the hostile-input review is a case here.

Each case asserts the *clear* answer (a ``SpecError`` naming the field or line), not merely
"no crash", and that it comes quickly: nothing huge is built before it is refused.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from clusterloom.errors import SpecError
from clusterloom.examples import example_text
from clusterloom.pipeline import run_design
from clusterloom.spec import load_spec, parse_spec
from clusterloom.spec.limits import (
    MAX_DEPTH,
    MAX_ITEMS,
    MAX_NODES,
    MAX_SCALAR_CHARS,
    MAX_SITE_POSITIONS,
    MAX_SPEC_BYTES,
    check_yaml_shape,
)


def _example(name: str) -> dict[str, Any]:
    data = yaml.safe_load(example_text(name))
    assert isinstance(data, dict)
    return data


def _set(data: dict[str, Any], path: str, value: object) -> str:
    node: Any = data
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    node[parts[-1]] = value
    return yaml.safe_dump(data)


def _refused(text: str) -> list[str]:
    started = time.perf_counter()
    with pytest.raises(SpecError) as info:
        parse_spec(text)
    assert time.perf_counter() - started < 5.0, "refused, but only after building something big"
    return [str(p) for p in info.value.problems]


# -- numbers out of range: refused at parse time with the field named --------------------------


@pytest.mark.parametrize(
    ("example", "path", "value", "field"),
    [
        # the review's cases
        (
            "hgx-1k-roce",
            "fabrics.backend.link_latency_ns.host_leaf",
            1e18,
            "fabrics.backend.link_latency_ns.host_leaf",
        ),
        (
            "hgx-1k-roce",
            "compute.frontend_nic.ports_per_node",
            2 * 10**12,
            "compute.frontend_nic.ports_per_node",
        ),
        ("moe-2k", "job.model.ffn_hidden", 2**63, "job.model.ffn_hidden"),
        # more of the same family
        ("hgx-1k-roce", "compute.accelerators", 10**30, "compute.accelerators"),
        ("hgx-1k-roce", "compute.nic.port_speed_gbps", 10**9, "compute.nic.port_speed_gbps"),
        ("moe-2k", "job.compute.peak_tflops", float("inf"), "job.compute.peak_tflops"),
        ("moe-2k", "job.model.sequence_length", -4, "job.model.sequence_length"),
        ("moe-2k", "job.latency.scale_out_us", float("nan"), "job.latency.scale_out_us"),
        (
            "hgx-1k-roce",
            "site.buildings.0.halls.0.width_m",
            1e300,
            "site.buildings[0].halls[0].width_m",
        ),
        ("hgx-1k-roce", "site.solver.seed", 2**40, "site.solver.seed"),
    ],
)
def test_a_number_out_of_its_range_is_refused_naming_the_field(
    example: str, path: str, value: object, field: str
) -> None:
    problems = _refused(_set(_example(example), path, value))
    assert any(p.startswith(f"{field}:") for p in problems), problems


def test_a_world_the_parallelism_does_not_divide_is_refused_not_a_zero_division() -> None:
    # the review's case: accelerators 7 with the MoE example gave ZeroDivisionError
    problems = _refused(_set(_example("moe-2k"), "compute.accelerators", 7))
    assert any(p.startswith("job.parallelism:") for p in problems), problems


def test_a_bad_feed_in_a_hall_template_is_a_spec_error_naming_it() -> None:
    # the review's case: a raw pydantic ValidationError escaped
    text = _set(_example("hgx-1k-roce"), "site.buildings.0.halls.0.template.feeds", ["bad feed"])
    problems = _refused(text)
    assert any(p.startswith("site.buildings[0].halls[0].template.feeds[0]:") for p in problems)


def test_a_billion_positions_are_refused_before_they_are_built() -> None:
    # the review's case: rows: 1000000000 ran for minutes and grew past gigabytes
    data = _example("hgx-1k-roce")
    text = _set(data, "site.buildings.0.halls.0.template.rows", 1_000_000_000)
    assert any("template.rows" in p for p in _refused(text))
    # each count within its own range, the product beyond the site's limit
    data = _example("hgx-1k-roce")
    _set(data, "site.buildings.0.halls.0.template.rows", 10_000)
    text = _set(data, "site.buildings.0.halls.0.template.positions_per_row", 10_000)
    problems = _refused(text)
    assert any(f"{MAX_SITE_POSITIONS:,}" in p for p in problems), problems


def test_a_long_value_is_shown_cut_short_in_the_message() -> None:
    text = _set(_example("fat-tree-k16"), "compute.accelerators", "x" * 5_000)
    (problem,) = _refused(text)
    assert problem.startswith("compute.accelerators:")
    assert len(problem) < 300


# -- document limits: refused from the YAML events, before anything is built ------------------


def _bomb(levels: int, fan: int = 10) -> str:
    lines = ["a0: &a0 [" + ", ".join(["lol"] * fan) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fan) + "]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_from_its_text_alone() -> None:
    text = "version: 1\nname: bomb\n" + _bomb(9) + "compute: {accelerators: *a8}\n"
    started = time.perf_counter()
    with pytest.raises(SpecError) as info:
        parse_spec(text)
    assert time.perf_counter() - started < 1.0
    (problem,) = info.value.problems
    assert "aliases expanded" in problem.message and "line " in problem.where


def test_aliases_within_the_limit_are_kept() -> None:
    # anchors are ordinary YAML: a spec that uses one modestly still loads
    text = example_text("fat-tree-k16").replace(
        "version: 1", "version: 1\nx-defaults: &lat {host_leaf: 1000.0}", 1
    )
    check_yaml_shape(text, "spec")  # the shape passes; the unknown field is the schema's
    assert _bomb(5).count("*") == 40
    check_yaml_shape(_bomb(5), "spec")  # 10^5 nodes: within MAX_NODES
    assert 10**5 < MAX_NODES < 10**7
    with pytest.raises(SpecError):
        check_yaml_shape(_bomb(7), "spec")  # 10^7 nodes


def test_deep_nesting_is_refused_naming_the_line() -> None:
    ok = "x: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\n"
    check_yaml_shape(ok, "spec")
    for depth in (MAX_DEPTH + 1, 500, 100_000):  # 500: the review's RecursionError
        text = "version: 1\nx: " + "[" * depth + "]" * depth + "\n"
        with pytest.raises(SpecError) as info:
            parse_spec(text, source="deep.yaml")
        (problem,) = info.value.problems
        # ours, or libyaml's own limit (1,000) met first: either way the line and a reason
        assert problem.where.startswith("deep.yaml line 2"), problem
        assert "nesting depth" in problem.message


def test_a_list_with_too_many_entries_is_refused() -> None:
    text = "x: [" + ",".join(["1"] * (MAX_ITEMS + 1)) + "]\n"
    with pytest.raises(SpecError, match="entries"):
        check_yaml_shape(text, "spec")
    check_yaml_shape("x: [" + ",".join(["1"] * MAX_ITEMS) + "]\n", "spec")


def test_a_huge_scalar_is_refused() -> None:
    with pytest.raises(SpecError, match="length"):
        check_yaml_shape("name: " + "a" * (MAX_SCALAR_CHARS + 1) + "\n", "spec")


def test_a_huge_file_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    with path.open("w") as fh:
        fh.write("version: 1\n# " + "x" * (MAX_SPEC_BYTES + 10) + "\n")
    started = time.perf_counter()
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert time.perf_counter() - started < 1.0
    assert "bytes a spec may have" in str(info.value)


def test_an_unhashable_key_is_a_yaml_error_not_a_type_error() -> None:
    with pytest.raises(SpecError, match="not valid YAML"):
        parse_spec("version: 1\n? [a, b]\n: 1\n")


def test_every_builtin_example_is_within_the_limits() -> None:
    from clusterloom.examples import example_names

    for name in example_names():
        text = example_text(name)
        assert len(text.encode()) < MAX_SPEC_BYTES // 100
        check_yaml_shape(text, name)


def test_the_largest_numbers_in_range_still_design() -> None:
    """The ranges do not refuse what a real design needs: a spec at generous values runs."""
    data = _example("fat-tree-k16")
    _set(data, "fabrics.backend.link_latency_ns", {"host_leaf": 1e9, "leaf_spine": 0.0})
    design = run_design(parse_spec(yaml.safe_dump(data)), compare=False)
    assert design.fabric("backend").topology.n_links > 0
