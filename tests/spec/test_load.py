"""Reading a spec: a valid document parses; every kind of bad input gives a ``SpecError`` whose
problems name the field (or YAML line) and say what to change."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from clusterloom.errors import ClusterloomError, Problem, SpecError
from clusterloom.spec import ClusterSpec, load_spec, parse_spec, spec_hash
from helpers import MINIMAL_SPEC, spec_dict, spec_yaml, switch_entry


def problems_of(text: str) -> tuple[Problem, ...]:
    with pytest.raises(SpecError) as info:
        parse_spec(text)
    problems = info.value.problems
    assert problems, "a SpecError must carry at least one problem"
    return problems


def problem_at(problems: tuple[Problem, ...], where: str) -> Problem:
    hits = [p for p in problems if p.where == where]
    assert hits, f"no problem at {where!r}; got {[str(p) for p in problems]}"
    return hits[0]


def with_nic(nic: str, text: str = MINIMAL_SPEC) -> str:
    return text.replace("accelerators_per_node: 8\n", f"accelerators_per_node: 8\n  nic: {nic}\n")


# --- a valid spec ---------------------------------------------------------------------------


def test_minimal_spec_parses_with_defaults() -> None:
    spec = parse_spec(MINIMAL_SPEC)
    assert isinstance(spec, ClusterSpec)
    assert spec.name == "tiny"
    assert spec.compute.accelerators == 16
    assert spec.compute.nodes == 2
    assert spec.compute.nic.ports_per_accelerator == 1
    assert spec.compute.nic.scale_out == 1
    assert spec.compute.nic.scale_up == 0
    backend = spec.fabrics.backend
    assert backend.family == "rail-optimized"
    assert backend.tiers == "auto"
    assert backend.planes is None
    assert backend.switch_for("leaf") == backend.switch_for("core") == "qm9700"
    assert backend.oversubscription.leaf == backend.oversubscription.spine == 1.0
    assert spec.fabrics.frontend is None


def test_load_spec_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(MINIMAL_SPEC, encoding="utf-8")
    assert load_spec(path) == parse_spec(MINIMAL_SPEC)


def test_load_spec_missing_file_is_a_spec_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(SpecError) as info:
        load_spec(missing)
    assert info.value.problems[0].where == str(missing)
    assert "cannot read" in info.value.problems[0].message


def test_spec_error_is_a_clusterloom_error_and_prints_every_problem() -> None:
    text = MINIMAL_SPEC.replace("accelerators: 16", "accelerators: 12").replace(
        "qm9700", "no-such-switch"
    )
    with pytest.raises(ClusterloomError) as info:
        parse_spec(text)
    err = info.value
    assert isinstance(err, SpecError)
    assert str(err).splitlines() == [str(p) for p in err.problems]


def test_custom_catalog_switch_is_known() -> None:
    text = spec_yaml(
        accelerators=16,
        port_speed_gbps=100,
        switch="kport",
        catalog_switches={"kport": switch_entry(16, 100)},
    )
    spec = parse_spec(text)
    assert spec.resolved_catalog().switches["kport"].radix(100) == 16


# --- unknown fields ---------------------------------------------------------------------------


def test_unknown_top_level_field_lists_allowed_fields() -> None:
    problem = problem_at(problems_of(MINIMAL_SPEC + "colour: red\n"), "colour")
    assert "unknown field" in problem.message
    for allowed in ("version", "name", "compute", "fabrics", "catalog"):
        assert allowed in problem.message


@pytest.mark.parametrize(
    ("text", "where", "allowed"),
    [
        (
            MINIMAL_SPEC + "    colour: blue\n",
            "fabrics.backend.colour",
            ("family", "planes", "tiers", "switch", "oversubscription"),
        ),
        (
            with_nic("{colour: blue}"),
            "compute.nic.colour",
            ("ports_per_accelerator", "port_speed_gbps", "scale_out_ports"),
        ),
        (
            MINIMAL_SPEC + "    oversubscription: {leaf: 2, colour: blue}\n",
            "fabrics.backend.oversubscription.colour",
            ("leaf", "spine"),
        ),
        (
            MINIMAL_SPEC.replace("switch: qm9700", "switch: {leaf: qm9700, colour: blue}"),
            "fabrics.backend.switch.colour",
            ("leaf", "spine", "core"),
        ),
    ],
    ids=["fabric", "nic", "oversubscription", "switch-choice"],
)
def test_unknown_nested_field_gives_dotted_path_and_allowed_fields(
    text: str, where: str, allowed: tuple[str, ...]
) -> None:
    problem = problem_at(problems_of(text), where)
    assert "unknown field" in problem.message
    for name in allowed:
        assert name in problem.message


def test_unknown_field_in_catalog_entry_lists_allowed_fields() -> None:
    entry = {**switch_entry(16, 100), "colour": "blue"}
    text = spec_yaml(
        accelerators=16, port_speed_gbps=100, switch="kport", catalog_switches={"kport": entry}
    )
    problem = problem_at(problems_of(text), "catalog.switches.kport.colour")
    assert "unknown field" in problem.message
    assert "port_speed_gbps" in problem.message


def test_switch_choice_typo_reports_only_the_typo() -> None:
    text = MINIMAL_SPEC.replace("switch: qm9700", "switch: {leaf: qm9700, colour: blue}")
    assert [p.where for p in problems_of(text)] == ["fabrics.backend.switch.colour"]


def test_missing_required_field_is_named() -> None:
    text = MINIMAL_SPEC.replace("    switch: qm9700\n", "    family: fat-tree\n")
    problem = problem_at(problems_of(text), "fabrics.backend.switch")
    assert "missing" in problem.message


# --- YAML-level errors ------------------------------------------------------------------------


def test_yaml_syntax_error_reports_line_and_column() -> None:
    text = textwrap.dedent(
        """\
        version: 1
        name: tiny
        compute:
          accelerators: 16
           accelerators_per_node: 8
        """
    )
    with pytest.raises(SpecError) as info:
        parse_spec(text, source="cluster.yaml")
    (problem,) = info.value.problems
    assert problem.where.startswith("cluster.yaml")
    assert "line 5" in problem.where
    assert "column 25" in problem.where  # the ':' after accelerators_per_node
    assert "not valid YAML" in problem.message
    assert isinstance(info.value.__cause__, yaml.YAMLError)


@pytest.mark.parametrize(
    ("text", "key", "line"),
    [
        (MINIMAL_SPEC + "name: again\n", "name", "line 9, column 1"),
        (MINIMAL_SPEC + "    switch: sn5600\n", "switch", "line 9, column 5"),
        (
            MINIMAL_SPEC.replace("  accelerators_per_node: 8\n", "  accelerators: 8\n"),
            "accelerators",
            "line 5, column 3",
        ),
    ],
    ids=["top-level", "nested", "nested-earlier"],
)
def test_duplicate_key_is_refused(text: str, key: str, line: str) -> None:
    """The second occurrence of the key is the one reported."""
    (problem,) = problems_of(text)
    assert f"'{key}'" in problem.message
    assert "twice" in problem.message
    assert problem.where == f"<spec> {line}"


@pytest.mark.parametrize("text", ["", "- 1\n- 2\n", "just a string\n", "42\n"])
def test_document_that_is_not_a_mapping_is_refused(text: str) -> None:
    (problem,) = problems_of(text)
    assert "mapping" in problem.message


# --- version ----------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["2", "0", "'1'", "1.1"])
def test_version_other_than_1_is_refused(version: str) -> None:
    (problem,) = problems_of(MINIMAL_SPEC.replace("version: 1", f"version: {version}"))
    assert problem.where == "version"
    assert "version 1" in problem.message


def test_missing_version_is_refused() -> None:
    (problem,) = problems_of(MINIMAL_SPEC.replace("version: 1\n", ""))
    assert problem.where == "version"


# --- semantic checks --------------------------------------------------------------------------


def test_accelerators_not_whole_nodes() -> None:
    problems = problems_of(MINIMAL_SPEC.replace("accelerators: 16", "accelerators: 12"))
    problem = problem_at(problems, "compute.accelerators")
    assert "multiple of 8" in problem.message


def test_accelerators_not_whole_scale_up_domains() -> None:
    text = MINIMAL_SPEC.replace(
        "accelerators_per_node: 8\n", "accelerators_per_node: 8\n  scale_up: {domain_size: 12}\n"
    )
    problems = problems_of(text)
    problem = problem_at(problems, "compute.scale_up.domain_size")
    assert "multiple of accelerators_per_node" in problem.message


@pytest.mark.parametrize(
    ("switch", "where"),
    [
        ("no-such-switch", "fabrics.backend.switch"),
        ("{leaf: qm9700, spine: no-such-switch}", "fabrics.backend.switch.spine"),
        ("{leaf: qm9700, core: no-such-switch}", "fabrics.backend.switch.core"),
    ],
)
def test_unknown_switch_names_the_field_and_known_switches(switch: str, where: str) -> None:
    problems = problems_of(MINIMAL_SPEC.replace("switch: qm9700", f"switch: {switch}"))
    problem = problem_at(problems, where)
    assert "unknown switch 'no-such-switch'" in problem.message
    assert "qm9700" in problem.message
    assert "tomahawk5-64x800g" in problem.message


def test_port_speed_the_switch_cannot_break_out_to() -> None:
    problems = problems_of(with_nic("{port_speed_gbps: 800}"))
    problem = problem_at(problems, "fabrics.backend.switch")
    assert "qm9700" in problem.message
    assert "800G" in problem.message
    assert "400G" in problem.message and "200G" in problem.message  # what it does offer


@pytest.mark.parametrize("speed", [400, 200])
def test_port_speeds_the_switch_offers_are_accepted(speed: int) -> None:
    spec = parse_spec(with_nic(f"{{port_speed_gbps: {speed}}}"))
    assert spec.compute.nic.port_speed_gbps == speed


def test_planes_must_divide_host_ports() -> None:
    text = with_nic("{ports_per_accelerator: 4}").replace(
        "switch: qm9700", "switch: qm9700\n    planes: 3"
    )
    problem = problem_at(problems_of(text), "fabrics.backend.planes")
    assert "3 planes" in problem.message
    assert "divisor of 4" in problem.message


def test_planes_divide_scale_out_ports_not_all_ports() -> None:
    # 4 NIC ports but only 2 on the backend: 4 planes cannot work, 2 can
    text = with_nic("{ports_per_accelerator: 4, scale_out_ports: 2}")
    problem_at(
        problems_of(text.replace("switch: qm9700", "switch: qm9700\n    planes: 4")),
        "fabrics.backend.planes",
    )
    spec = parse_spec(text.replace("switch: qm9700", "switch: qm9700\n    planes: 2"))
    assert spec.fabrics.backend.planes == 2
    assert spec.compute.nic.scale_up == 2


def test_scale_out_ports_more_than_ports_per_accelerator_is_refused() -> None:
    problems = problems_of(with_nic("{ports_per_accelerator: 2, scale_out_ports: 3}"))
    problem = problem_at(problems, "compute.nic")
    assert "scale_out_ports (3)" in problem.message
    assert "ports_per_accelerator (2)" in problem.message


def test_scalable_units_on_a_fat_tree_are_refused() -> None:
    text = MINIMAL_SPEC + "    family: fat-tree\n    scalable_unit_nodes: 2\n"
    problem_at(problems_of(text), "fabrics.backend.scalable_unit_nodes")


# --- oversubscription -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "value"),
    [
        ("'3:1'", 3.0),
        ("3", 3.0),
        ("'3:2'", 1.5),
        ("1.5", 1.5),
        ("'1:1'", 1.0),
        # written the other way round, as many operators do: the larger side is the downlink
        ("'1:3'", 3.0),
        ("'2:3'", 1.5),
        ("'1:7'", 7.0),
    ],
)
def test_oversubscription_ratio_forms(given: str, value: float) -> None:
    spec = parse_spec(MINIMAL_SPEC + f"    oversubscription: {{leaf: {given}, spine: {given}}}\n")
    assert spec.fabrics.backend.oversubscription.leaf == value
    assert spec.fabrics.backend.oversubscription.spine == value


def test_oversubscription_string_and_number_are_the_same_spec() -> None:
    as_ratio = parse_spec(MINIMAL_SPEC + "    oversubscription: {leaf: '3:1'}\n")
    as_number = parse_spec(MINIMAL_SPEC + "    oversubscription: {leaf: 3}\n")
    assert as_ratio == as_number
    assert spec_hash(as_ratio) == spec_hash(as_number)


def test_a_ratio_either_way_round_is_the_same_spec() -> None:
    one = parse_spec(MINIMAL_SPEC + "    oversubscription: {leaf: '1:7'}\n")
    other = parse_spec(MINIMAL_SPEC + "    oversubscription: {leaf: '7:1'}\n")
    assert one == other and spec_hash(one) == spec_hash(other)


@pytest.mark.parametrize(
    "given", ["'3:0'", "'0:3'", "'-1:3'", "'a:b'", "'3:1:1'", "'inf:1'", "0.5", "65", "'1:65'"]
)
def test_bad_oversubscription_is_refused(given: str) -> None:
    problems = problems_of(MINIMAL_SPEC + f"    oversubscription: {{leaf: {given}}}\n")
    problem_at(problems, "fabrics.backend.oversubscription.leaf")


# --- several problems at once -----------------------------------------------------------------


def test_schema_problems_are_reported_together() -> None:
    text = MINIMAL_SPEC.replace("name: tiny\n", "").replace(
        "  backend:\n", "  backend:\n    colour: blue\n"
    )
    text += "colour: red\n"
    problems = problems_of(text)
    assert len(problems) >= 3
    wheres = {p.where for p in problems}
    assert {"name", "colour", "fabrics.backend.colour"} <= wheres


def test_semantic_problems_are_reported_together() -> None:
    text = with_nic("{ports_per_accelerator: 4}")
    text = text.replace("accelerators: 16", "accelerators: 12")
    text = text.replace("switch: qm9700", "switch: no-such-switch\n    planes: 3")
    problems = problems_of(text)
    assert len(problems) >= 3
    wheres = {p.where for p in problems}
    assert {"compute.accelerators", "fabrics.backend.switch", "fabrics.backend.planes"} <= wheres
    assert len(set(problems)) == len(problems), "a problem is reported twice"


# --- spec_hash --------------------------------------------------------------------------------

REORDERED_SPEC = """\
# the same cluster as MINIMAL_SPEC, keys reordered and in flow style
fabrics: {backend: {switch: "qm9700"}}
compute:
    accelerators_per_node:   8
    accelerators: 16
name: 'tiny'
version: 1
"""


def test_spec_hash_ignores_key_order_and_formatting() -> None:
    h = spec_hash(parse_spec(MINIMAL_SPEC))
    assert len(h) == 64 and int(h, 16) >= 0
    assert spec_hash(parse_spec(REORDERED_SPEC)) == h
    assert spec_hash(parse_spec(MINIMAL_SPEC)) == h  # stable across calls


def test_spec_hash_ignores_order_of_catalog_entries() -> None:
    doc = spec_dict(
        accelerators=16,
        port_speed_gbps=100,
        switch="a",
        catalog_switches={"a": switch_entry(16), "b": switch_entry(32)},
    )
    flipped = dict(doc, catalog={"switches": {"b": switch_entry(32), "a": switch_entry(16)}})
    assert spec_hash(parse_spec(yaml.safe_dump(doc))) == spec_hash(
        parse_spec(yaml.safe_dump(flipped, sort_keys=False))
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("accelerators: 16", "accelerators: 24"),
        ("name: tiny", "name: tiny2"),
        ("switch: qm9700", "switch: sn5600"),
        ("switch: qm9700", "switch: qm9700\n    tiers: 2"),
    ],
)
def test_spec_hash_changes_when_a_value_changes(old: str, new: str) -> None:
    changed = MINIMAL_SPEC.replace(old, new)
    assert changed != MINIMAL_SPEC
    assert spec_hash(parse_spec(changed)) != spec_hash(parse_spec(MINIMAL_SPEC))


def test_boolean_oversubscription_is_refused() -> None:
    text = spec_yaml(accelerators=64, switch="sn5600", leaf_oversubscription=True)
    with pytest.raises(SpecError) as info:
        parse_spec(text)
    assert info.value.problems[0].where == "fabrics.backend.oversubscription.leaf"
