"""The MCP server (``clusterloom.assist.mcp``) through the SDK's own in-process client: every
tool listed with its schemas and called on a 64-GPU hall (``diff_pairs.spec``); each result
checked against the library's own figures and closed forms; bad input of every kind answered
with findings naming the field, never an exception; the same call twice, the same bytes.

    hall h1: 2 rows x 4 positions        64 x 200G GPUs, 8 nodes, rail-optimized
    +--+--+--+--+                        leaves tomahawk3-32x400g (16 down, 16 up)
    |  |  |  |  |  row 1                 1:1 -> bisection 64 x 200G / 2 = 6.4 Tb/s
    +--+--+--+--+                        2:1 -> 3.2 Tb/s
    |  |  |  |  |  row 2
    +--+--+--+--+
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import jsonschema
import pytest
import yaml
from diff_pairs import spec as hall_spec
from mcp import Client
from mcp_types import CallToolResult

from clusterloom.assist.mcp import TOOLS
from clusterloom.assist.mcp.server import create_server
from clusterloom.pipeline import run_design
from clusterloom.spec import parse_spec

T = TypeVar("T")

BASE = yaml.safe_dump(hall_spec())
GROWN = yaml.safe_dump(hall_spec(accelerators=128))
OVERSUB = yaml.safe_dump(hall_spec(leaf=2))
NO_SITE = yaml.safe_dump({k: v for k, v in hall_spec().items() if k != "site"})
HTSIM_OUT = yaml.safe_dump(
    {**hall_spec(), "scenario": {"traffic": "htsim", "htsim_file": "/etc/passwd"}}
)


def _run(server: Any, body: Callable[[Client], Awaitable[T]], **kw: Any) -> T:
    async def main() -> T:
        async with Client(server, **kw) as client:
            return await body(client)

    return anyio.run(main)


def call(server: Any, name: str, args: dict[str, Any]) -> CallToolResult:
    return _run(server, lambda c: c.call_tool(name, args))


def data(result: CallToolResult) -> dict[str, Any]:
    assert result.structured_content is not None
    # the text content is the same JSON, for clients that read only text
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mcp-root")
    (path / "cluster.yaml").write_text(BASE)
    return path


@pytest.fixture(scope="module")
def server(root: Path) -> Any:
    return create_server(root)


@pytest.fixture(scope="module")
def schemas(server: Any) -> dict[str, Any]:
    tools = _run(server, lambda c: c.list_tools()).tools
    return {t.name: t for t in tools}


def checked(schemas: dict[str, Any], name: str, result: CallToolResult) -> dict[str, Any]:
    """The structured output, validated against the output schema the tool lists."""
    out = data(result)
    jsonschema.validate(out, schemas[name].output_schema)
    assert set(out) >= {"ok", "errors", "warnings", "findings"}
    errors = [f for f in out["findings"] if f["severity"] == "error"]
    assert out["errors"] == len(errors) and out["ok"] == (not errors)
    return out


def test_lists_every_tool_with_its_schemas(schemas: dict[str, Any]) -> None:
    assert (
        sorted(schemas)
        == sorted(TOOLS)
        == sorted(["validate", "size", "place", "cable", "simulate", "diff", "propose", "plan"])
    )
    for name, tool in schemas.items():
        assert tool.input_schema == TOOLS[name].inputs.model_json_schema()
        assert tool.description and tool.title
        out = tool.output_schema
        assert {"ok", "errors", "warnings", "findings"} <= set(out["required"])
        assert tool.annotations.read_only_hint == (name not in {"cable", "simulate"})
    spec_arg = schemas["size"].input_schema["properties"]["spec"]
    assert spec_arg["anyOf"][0]["maxLength"] == 2**20  # spec.limits.MAX_SPEC_BYTES
    # the goal and the floors are typed by their own models
    assert "Goal" in schemas["propose"].input_schema["$defs"]
    assert "Floors" in schemas["plan"].input_schema["$defs"]
    rtol = schemas["simulate"].input_schema["properties"]["rtol"]
    assert (rtol["minimum"], rtol["maximum"]) == (1e-12, 0.5)


def test_the_legacy_handshake_lists_them_too(server: Any) -> None:
    tools = _run(server, lambda c: c.list_tools(), mode="legacy").tools
    assert sorted(t.name for t in tools) == sorted(TOOLS)


def test_validate_gives_every_stage_finding(server: Any, schemas: dict[str, Any]) -> None:
    out = checked(schemas, "validate", call(server, "validate", {"path": "cluster.yaml"}))
    design = run_design(parse_spec(BASE), compare=False, place=False)
    assert out["ok"] is True
    assert out["findings"] == [f.to_dict() for f in design.findings]
    assert out["warnings"] == sum(f.severity == "warning" for f in design.findings)
    assert len(out["spec_hash"]) == 64
    # with place, placement's and cabling's checks are there as well
    placed = checked(schemas, "validate", call(server, "validate", {"spec": BASE, "place": True}))
    codes = {f["code"] for f in placed["findings"]} - {f["code"] for f in out["findings"]}
    assert codes, "placing and cabling add their own checks"


def test_size_gives_the_plan_and_the_bisection(server: Any, schemas: dict[str, Any]) -> None:
    for text, leaf in ((BASE, 1.0), (OVERSUB, 2.0)):
        out = checked(schemas, "size", call(server, "size", {"spec": text}))
        (fabric,) = out["fabrics"]
        plan = fabric["plan"]
        assert plan["name"] == "backend" and plan["tiers"] == 2 and plan["planes"] == 1
        assert plan["speed_gbps"] == 200 and fabric["oversubscription_leaf"] == leaf
        # 64 hosts at 200 Gb/s, half of them on each side, behind leaves at leaf:1
        assert fabric["bisection_bps_total"] == 64 * 200 * 10**9 // 2 / leaf
        assert fabric["bisection_bps_total"] == plan["bisection_bps_per_plane"] * plan["planes"]
        roles = {t["role"]: t for t in plan["switch_tiers"]}
        assert roles["leaf"]["model"] == "tomahawk3-32x400g"
        assert out["bom"]["switches"] == sum(t["count"] for t in plan["switch_tiers"])


def test_place_and_cable_summaries_are_the_designs(
    server: Any, schemas: dict[str, Any], root: Path
) -> None:
    design = run_design(parse_spec(BASE), compare=False)
    assert design.placement is not None and design.cabling is not None
    placed = checked(schemas, "place", call(server, "place", {"spec": BASE}))
    assert placed["placement"]["racks"] == design.placement.n_racks
    assert sum(h["racks"] for h in placed["placement"]["halls"]) == design.placement.n_racks

    out = checked(schemas, "cable", call(server, "cable", {"spec": BASE, "output": "runs/base"}))
    cabling = out["cabling"]
    links = sum(fd.topology.n_links for fd in design.fabrics)
    assert cabling["links"] == cabling["realized"] == links
    assert sum(m["links"] for m in cabling["by_medium"]) == links
    assert {m["medium"] for m in cabling["by_medium"]} == {"fr2-200g"}
    assert out["bom"]["cost_usd"] == pytest.approx(design.bom.cost_cents / 100)
    assert out["bom"]["switches"] == design.bom.switches
    assert out["written"] == "runs/base"
    assert (root / "runs" / "base" / "design.json").is_file()


def test_simulate_is_next_to_the_closed_form(
    server: Any, schemas: dict[str, Any], root: Path
) -> None:
    args = {"spec": BASE, "size": "256KB", "transports": ["roce-ecmp", "ideal"]}
    out = checked(schemas, "simulate", call(server, "simulate", {**args, "output": "sim"}))
    by = {t["transport"]: t for t in out["transports"]}
    # a permutation of 256 KB flows at 200 Gb/s on a non-blocking fabric: 256e3 x 8 / 200e9
    assert by["ideal"]["completion_us"] == pytest.approx(10.24)
    assert by["ideal"]["fct_p99_us"] == pytest.approx(10.24)
    assert by["ideal"]["vs_ideal"] == 1.0
    assert by["roce-ecmp"]["completion_us"] >= by["ideal"]["completion_us"]
    assert all(t["finished"] == t["flows"] == 64 for t in out["transports"])
    assert out["scenario"]["traffic"] == "permutation"
    assert json.loads((root / "sim" / "scenario.json").read_text())["seed"] == 0
    # a failed link leaves flows without a path: said as a warning per transport
    failed = checked(
        schemas, "simulate", call(server, "simulate", {**args, "failures": ["link:17@10us"]})
    )
    assert failed["ok"] is True
    unfinished = {t["transport"] for t in failed["transports"] if t["finished"] < t["flows"]}
    warned = {f["where"] for f in failed["findings"] if f["code"] == "incomplete"}
    assert unfinished and warned == unfinished


def test_diff_of_a_written_run_and_specs(server: Any, schemas: dict[str, Any]) -> None:
    call(server, "cable", {"spec": BASE, "output": "runs/a"})
    same = checked(
        schemas, "diff", call(server, "diff", {"a": {"path": "runs/a"}, "b": {"spec": BASE}})
    )
    assert same["ok"] is True and same["diff"]["empty"] is True
    assert (same["diff"]["a"], same["diff"]["b"]) == ("a: runs/a", "b: spec text")
    grown = checked(
        schemas, "diff", call(server, "diff", {"a": {"path": "cluster.yaml"}, "b": {"spec": GROWN}})
    )
    counts = grown["diff"]["counts"]
    grown_links = (
        run_design(parse_spec(GROWN), compare=False, place=False).fabrics[0].topology.n_links
    )
    base_links = (
        run_design(parse_spec(BASE), compare=False, place=False).fabrics[0].topology.n_links
    )
    assert counts["links_added"] - counts["links_removed"] == grown_links - base_links > 0


def test_a_design_that_fails_its_checks_gives_findings_not_a_design(
    server: Any, schemas: dict[str, Any]
) -> None:
    result = call(server, "cable", {"example": "tight-site-findings"})
    out = checked(schemas, "cable", result)
    assert out["ok"] is False and result.is_error is False  # a result, not a failed call
    assert out["cabling"] is None and out["placement"] is None and out["bom"] is None
    assert {f["code"] for f in out["findings"] if f["severity"] == "error"} == {
        "optical-budget",
        "tray-fill",
    }
    assert {"bad-input", "bad-argument"}.isdisjoint(f["code"] for f in out["findings"])


BAD = [
    # (tool, arguments, code, where the finding points)
    ("validate", {"spec": "version: 1\nname: [\n"}, "bad-input", "spec line 3, column 1"),
    (
        "validate",
        {"spec": BASE.replace("accelerators: 64", "accelerators: 0")},
        "bad-input",
        "compute.accelerators",
    ),
    ("size", {}, "bad-input", "spec"),
    ("size", {"spec": BASE, "example": "moe-2k"}, "bad-input", "spec, example"),
    ("size", {"spec": BASE, "bogus": 1}, "bad-argument", "bogus"),
    ("size", {"spec": 12}, "bad-argument", "spec"),
    ("size", {"example": "no-such"}, "bad-input", "example"),
    ("simulate", {"spec": BASE, "rtol": 5}, "bad-argument", "rtol"),
    ("simulate", {"spec": BASE, "hosts": 0}, "bad-argument", "hosts"),
    ("simulate", {"spec": BASE, "transports": ["warp"]}, "bad-input", None),
    ("simulate", {"spec": BASE, "traffic": "htsim:../flows.cm"}, "bad-input", "traffic"),
    ("validate", {"path": "../outside.yaml"}, "bad-input", "path"),
    ("simulate", {"spec": HTSIM_OUT}, "bad-input", "scenario.htsim_file"),
    ("diff", {"a": {"spec": HTSIM_OUT}, "b": {"spec": BASE}}, "bad-input", "a.scenario.htsim_file"),
    ("validate", {"path": "/etc/passwd"}, "bad-input", "path"),
    ("validate", {"path": "missing.yaml"}, "bad-input", "path"),
    ("validate", {"path": "escape/passwd"}, "bad-input", "path"),
    ("cable", {"spec": BASE, "output": "../elsewhere"}, "bad-input", "output"),
    ("cable", {"spec": BASE, "output": "."}, "bad-input", "output"),
    ("cable", {"spec": BASE, "output": "not-a-run"}, "refused", "cable"),
    ("place", {"spec": NO_SITE}, "bad-input", "site"),
    ("diff", {"a": {"path": "cluster.yaml"}}, "bad-argument", "b"),
    ("diff", {"a": {"path": "/"}, "b": {"spec": BASE}}, "bad-input", "a.path"),
    ("diff", {"a": {}, "b": {"spec": BASE}}, "bad-input", "a"),
    ("diff", {"a": {"path": "not-a-run"}, "b": {"spec": BASE}}, "bad-input", "a.path"),
    ("nonesuch", {}, "bad-argument", "name"),
]


@pytest.mark.parametrize(
    ("tool", "args", "code", "where"), BAD, ids=[str(i) for i in range(len(BAD))]
)
def test_bad_input_gives_findings_naming_the_field(
    server: Any,
    schemas: dict[str, Any],
    root: Path,
    tool: str,
    args: dict[str, Any],
    code: str,
    where: str | None,
) -> None:
    (root / "escape").is_symlink() or os.symlink("/etc", root / "escape")
    (root / "not-a-run").mkdir(exist_ok=True)
    (root / "not-a-run" / "notes.txt").write_text("mine")
    result = call(server, tool, args)
    out = data(result)
    if tool in schemas:
        jsonschema.validate(out, schemas[tool].output_schema)
    assert out["ok"] is False and result.is_error is True
    assert {f["code"] for f in out["findings"]} == {code}
    if where is not None:
        assert where in [f["where"] for f in out["findings"]], out["findings"]
    assert all(f["message"] for f in out["findings"])
    design_fields = set(out) - {"ok", "errors", "warnings", "findings"}
    assert all(out[k] is None for k in design_fields)
    assert (root / "not-a-run" / "notes.txt").read_text() == "mine"  # never touched


def test_outputs_are_deterministic(server: Any) -> None:
    for name, args in (("cable", {"spec": BASE}), ("size", {"example": "hgx-1k-roce"})):
        first, second = call(server, name, args), call(server, name, args)
        assert first.content[0].text == second.content[0].text  # type: ignore[union-attr]


def test_progress_is_reported_and_increases(server: Any) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    async def body(client: Client) -> CallToolResult:
        return await client.call_tool("cable", {"spec": BASE}, progress_callback=progress)

    _run(server, body)
    assert [m for _, _, m in seen] == ["fabric:backend", "placement", "cabling"]
    done = [d for d, _, _ in seen]
    assert all(a < b for a, b in itertools.pairwise(done))
    assert {t for _, t, _ in seen} == {3}

    # the simulator's tasks: one unit each (two transports and the ideal bound), increasing
    seen.clear()

    async def simulated(client: Client) -> CallToolResult:
        args = {"spec": BASE, "size": "256KB", "transports": ["roce-ecmp", "ideal"]}
        return await client.call_tool("simulate", args, progress_callback=progress)

    _run(server, simulated)
    done = [d for d, _, _ in seen]
    assert len(done) >= 2 and all(a < b for a, b in itertools.pairwise(done))
    assert all(t == 3 for _, t, _ in seen)


def test_diff_with_predict_gives_the_performance_delta(
    server: Any, schemas: dict[str, Any]
) -> None:
    a, b = (yaml.safe_dump(hall_spec(leaf=x, scenario=True)) for x in (1, 2))
    args = {"a": {"spec": a}, "b": {"spec": b}, "predict": True}
    out = checked(schemas, "diff", call(server, "diff", args))
    ideal = next(p for p in out["diff"]["performance"] if p["transport"] == "ideal")
    # 256 KB at 200 Gb/s: 10.24 us; behind 2:1 leaves every flow gets half the rate
    assert ideal["fct_p99_us"]["a"] == pytest.approx(10.24)
    assert ideal["fct_p99_us"]["b"] == pytest.approx(20.48)


def test_htsim_traffic_is_read_under_the_root(
    server: Any, schemas: dict[str, Any], root: Path
) -> None:
    """One 256 KB connection from an htsim file (relative to the root): alone on its path, it
    completes in 256e3 x 8 / 200e9 = 10.24 us, whether named by ``traffic`` or by the spec."""
    (root / "flows.cm").write_text("Nodes 2\nConnections 1\n0->1 start 0 size 256000\n")
    by_traffic = {"spec": BASE, "traffic": "htsim:flows.cm", "transports": ["ideal"]}
    in_spec = yaml.safe_dump(
        {**hall_spec(), "scenario": {"traffic": "htsim", "htsim_file": "flows.cm"}}
    )
    for args in (by_traffic, {"spec": in_spec, "transports": ["ideal"]}):
        out = checked(schemas, "simulate", call(server, "simulate", args))
        (ideal,) = out["transports"]
        assert ideal["flows"] == 1 and ideal["completion_us"] == pytest.approx(10.24)


#: 128 GPUs at 400G each, rail-optimized on one switch, 2 planes, 1:1 or 2:1 leaves
GOAL: dict[str, Any] = {
    "version": 1,
    "name": "tiny",
    "compute": {"accelerators": 128},
    "network": {
        "bandwidth_per_accelerator_gbps": 400,
        "transports": ["roce-ecmp"],
        "max_oversubscription": {"leaf": 2},
    },
    "failure": {"planes_down": 1, "floors": {"bisection": 0.5}},
    "space": {
        "families": ["rail-optimized"],
        "switches": ["tomahawk4-64x400g"],
        "tiers": [2],
        "planes": [2],
        "leaf_oversubscription": [1, 2],
    },
}


def test_propose_is_the_librarys_front(server: Any, schemas: dict[str, Any]) -> None:
    from clusterloom.assist.goal import goal_from_dict
    from clusterloom.assist.propose import propose

    result = call(server, "propose", {"goal": GOAL})
    out = checked(schemas, "propose", result)
    want = propose(goal_from_dict(GOAL))
    assert out["ok"] is True and out["proposal"] == json.loads(json.dumps(want.to_dict()))
    assert out["proposal"]["front"], "the goal is met"
    assert out["findings"] == [f.to_dict() for f in want.findings]
    # the same goal as YAML text gives the same bytes
    again = call(server, "propose", {"text": yaml.safe_dump(GOAL)})
    assert again.content[0].text == result.content[0].text  # type: ignore[union-attr]
    # a budget nothing meets: a warning naming the binding constraint, an empty front
    poor = checked(
        schemas,
        "propose",
        call(server, "propose", {"goal": {**GOAL, "budget": {"max_cost_usd": 1}}}),
    )
    assert poor["ok"] is True and poor["proposal"]["front"] == []
    assert [f["code"] for f in poor["findings"] if f["severity"] == "warning"] == ["goal-unmet"]


@pytest.fixture(scope="module")
def installed(server: Any) -> str:
    assert data(call(server, "cable", {"spec": BASE, "output": "runs/installed"}))["ok"]
    return "runs/installed"


def test_plan_is_the_librarys_plan(
    server: Any, schemas: dict[str, Any], root: Path, installed: str
) -> None:
    from clusterloom.assist.floors import Floors
    from clusterloom.assist.plan import plan_change

    args = {"baseline": installed, "target": {"spec": GROWN}, "simulate": False}
    result = call(server, "plan", args)
    out = checked(schemas, "plan", result)
    want = plan_change(root / installed, parse_spec(GROWN), Floors(), simulate=False)
    assert out["ok"] is True and out["plan"] == json.loads(json.dumps(want.to_dict()))
    assert out["plan"]["change"] == "growth" and out["plan"]["reaches_target"] is True
    assert call(server, "plan", args).content[0].text == result.content[0].text  # type: ignore[union-attr]
    # a floor no order of the steps keeps: the findings name it and the step, no plan
    strict = call(server, "plan", {**args, "floors": {"bisection": 0.99}})
    refused = checked(schemas, "plan", strict)
    assert refused["ok"] is False and refused["plan"] is None and strict.is_error is False
    floors = [f for f in refused["findings"] if f["code"] == "plan-floor"]
    assert floors and all(f["where"].startswith("change.steps[") for f in floors)


BAD_LIFECYCLE = [
    (
        "propose",
        {"goal": {**GOAL, "compute": {"accelerators": 0}}},
        "bad-argument",
        "goal.compute.accelerators",
    ),
    (
        "propose",
        {"goal": {**GOAL, "network": {**GOAL["network"], "transports": ["warp"]}}},
        "bad-input",
        "goal.network.transports[0]",
    ),
    ("propose", {"text": "version: 1\nname: [\n"}, "bad-input", "text line 3, column 1"),
    ("propose", {"example": "no-such"}, "bad-input", "example"),
    ("propose", {}, "bad-input", "goal"),
    ("propose", {"path": "../goal.yaml"}, "bad-input", "path"),
    ("plan", {"baseline": "../x", "target": {"spec": GROWN}}, "bad-input", "baseline"),
    ("plan", {"baseline": "cluster.yaml", "target": {"spec": GROWN}}, "bad-input", "baseline"),
    ("plan", {"baseline": "runs/installed", "target": {}}, "bad-input", "target.spec"),
    (
        "plan",
        {"baseline": "runs/installed", "target": {"path": "/etc/passwd"}},
        "bad-input",
        "target.path",
    ),
    (
        "plan",
        {"baseline": "runs/installed", "target": {"spec": GROWN}, "floors": {"plane": 2}},
        "bad-argument",
        "floors.plane",
    ),
]


@pytest.mark.parametrize(
    ("tool", "args", "code", "where"),
    BAD_LIFECYCLE,
    ids=[str(i) for i in range(len(BAD_LIFECYCLE))],
)
def test_bad_goals_and_plans_give_findings(
    server: Any,
    schemas: dict[str, Any],
    installed: str,
    tool: str,
    args: dict[str, Any],
    code: str,
    where: str,
) -> None:
    result = call(server, tool, args)
    out = checked(schemas, tool, result)
    assert out["ok"] is False and result.is_error is True
    assert {f["code"] for f in out["findings"]} == {code}
    assert where in [f["where"] for f in out["findings"]], out["findings"]
    assert out["proposal" if tool == "propose" else "plan"] is None
