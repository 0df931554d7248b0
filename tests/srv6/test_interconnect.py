"""The cloud interconnect: service SIDs, policy paths, isolation on a deliberately broken plan,
rendering and FRR's own parser, bad input refused naming the field and the numbers.

The lab interconnect (``interconnect_verify.LAB_INTERCONNECT``)::

    ce-blue-edge1, ce-red-edge1          ce-blue-edge2, ce-red-edge2
                 \\                                 /
                  edge1 ------- wan1 ------- edge2
                     \\_______________________/
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clusterloom.cli.main import app
from clusterloom.errors import SpecError
from clusterloom.spec import parse_spec
from clusterloom.srv6.encoding import block_value, to_text
from clusterloom.srv6.interconnect import InterconnectPlan, plan_interconnect
from clusterloom.srv6.interconnect_check import isolation_findings, reachability, walk
from clusterloom.srv6.interconnect_render import render_frr, render_node
from clusterloom.srv6.interconnect_verify import LAB_INTERCONNECT, lab_plan
from clusterloom.srv6.verify import LAB_SPEC

runner = CliRunner()


def _plan(section: str) -> InterconnectPlan:
    spec = parse_spec(LAB_SPEC + section)
    assert spec.interconnect is not None
    return plan_interconnect(spec.interconnect)


def _ring(n: int, extra: str = "", policies: str = "") -> str:
    """A ring of ``n`` nodes a, b, c, ... with tenant t attached at a and c."""
    names = [chr(ord("a") + i) for i in range(n)]
    links = "".join(f"    - {{a: {x}, b: {names[(i + 1) % n]}}}\n" for i, x in enumerate(names))
    nodes = "".join(f"    - {{name: {x}}}\n" for x in names)
    return (
        "interconnect:\n  nodes:\n" + nodes + "  links:\n" + links + extra + "  tenants:\n"
        "    - name: t\n      attachments:\n"
        '        - {node: a, prefixes: ["2001:db8:a::/48"]}\n'
        '        - {node: c, prefixes: ["2001:db8:c::/48", "192.0.2.0/24"]}\n' + policies
    )


def test_service_sids_are_unique_local_and_in_their_nodes_locator() -> None:
    plan = lab_plan()
    fmt = plan.fmt
    sids = [s.sid for s in plan.services]
    assert len(set(sids)) == len(sids) == 6  # blue: DT6, DT6 + DX4; red: DT6 + DX4, DX6
    low = 128 - plan.service_bits
    for s in plan.services:
        node = plan.node(s.node)
        assert block_value(s.sid, fmt) == plan.block
        assert s.sid >> (low + fmt.usid_bits) == node.locator >> (low + fmt.usid_bits)
        assert fmt.global_limit < (s.sid >> low) & 0xFFFF < 1 << 16  # a local uSID
        assert s.sid & ((1 << low) - 1) == 0
    # closed form: a node's first local uSID is 2^16 - 2^13 = 0xe000, then in tenant order
    by = {(s.tenant, s.node, s.behavior): to_text(s.sid) for s in plan.services}
    assert by[("blue", "edge1", "End.DT6")] == "fcbb:bc00:1:e000::"
    assert by[("red", "edge1", "End.DT6")] == "fcbb:bc00:1:e001::"
    assert by[("red", "edge1", "End.DX4")] == "fcbb:bc00:1:e002::"
    assert by[("red", "edge2", "End.DX6")] == "fcbb:bc00:2:e002::"
    for a in plan.attachments:  # each family of an attachment has exactly one service
        mine = [s for s in plan.services if (s.node, s.attachment) == (a.node, a.ifname)]
        assert len(mine) == bool(a.prefixes6) + bool(a.prefixes4)
        for s in mine:
            if s.behavior == "End.DT6":
                assert s.table == a.table
            else:
                assert s.next_hop in (to_text(a.router_address), a.router_address4)


def test_explicit_service_sids_are_kept_and_assignment_steps_around_them() -> None:
    section = LAB_INTERCONNECT.replace(
        '{node: edge1, prefixes: ["2001:db8:1::/48"]}',
        '{node: edge1, prefixes: ["2001:db8:1::/48"], sid: "fcbb:bc00:1:e001::"}',
    )
    by = {(s.tenant, s.behavior, s.node): to_text(s.sid) for s in _plan(section).services}
    assert by[("blue", "End.DT6", "edge1")] == "fcbb:bc00:1:e001::"
    assert by[("red", "End.DT6", "edge1")] == "fcbb:bc00:1:e000::"  # the lowest free
    assert by[("red", "End.DX4", "edge1")] == "fcbb:bc00:1:e002::"


@pytest.mark.parametrize(
    ("sid", "message"),
    [
        ("fcbb:bd00:1:e000::", "fcbb:bd00:1:e000:: is outside the block fcbb:bc00::/32"),
        (
            "fcbb:bc00:2:e000::",
            "not in the locator fcbb:bc00:1::/48 of node 'edge1' (its uSID is 2, the node's 1)",
        ),
        ("fcbb:bc00:1:5::", "function 5 must be a local uSID in 57344..65535"),
    ],
)
def test_a_service_sid_outside_its_place_is_refused(sid: str, message: str) -> None:
    section = LAB_INTERCONNECT.replace(
        '{node: edge1, prefixes: ["2001:db8:1::/48"]}',
        f'{{node: edge1, prefixes: ["2001:db8:1::/48"], sid: "{sid}"}}',
    )
    with pytest.raises(SpecError) as err:
        _plan(section)
    (problem,) = err.value.problems
    assert problem.where == "interconnect.tenants[0].attachments[0].sid"
    assert message in problem.message


def test_the_explicit_list_is_honoured_and_the_fallback_is_link_disjoint_and_shortest() -> None:
    """Ring a-b-c-d-e-f: primary a b c (via b); the fallback avoids a~b and b~c: a f e d c.
    From a, d is 3 hops either way and the tie goes to b, so the fallback needs waypoint e."""
    plan = _plan(
        _ring(6, policies="  policies:\n    - {name: p, tenant: t, from: a, to: c, via: [b]}\n")
    )
    (p,) = plan.policies
    assert p.primary == ("a", "b", "c")
    assert p.fallback == ("a", "f", "e", "d", "c")
    assert p.fallback_via == ("e",)
    routes = {r.metric: r for r in plan.routes if r.node == "a" and r.prefix == "2001:db8:c::/48"}
    for metric, path in ((100, p.primary), (200, p.fallback)):
        hops, svc = walk(plan, "a", routes[metric].segments)
        assert ("a", *[h.node for h in hops]) == path  # the packet follows the planned path
        assert svc is not None and svc.node == "c" and svc.behavior == "End.DT6"
    # container e, then c's DT6: fcbb:bc00:5:3:e000:: (e is the 5th node, c the 3rd)
    assert [to_text(s) for s in routes[200].segments] == ["fcbb:bc00:5:3:e000::"]
    # every hop sees the container shifted by one uSID per End, and no SRH
    hops, _ = walk(plan, "a", routes[200].segments)
    assert [(h.node, to_text(h.destination), h.segments_left) for h in hops] == [
        ("f", "fcbb:bc00:5:3:e000::", None),
        ("e", "fcbb:bc00:5:3:e000::", None),
        ("d", "fcbb:bc00:3:e000::", None),
        ("c", "fcbb:bc00:3:e000::", None),
    ]


def test_an_explicit_fallback_is_honoured_and_none_means_none() -> None:
    given = _ring(
        6,
        policies="  policies:\n    - {name: p, tenant: t, from: a, to: c, via: [b], "
        "fallback: [e]}\n",
    )
    (p,) = _plan(given).policies
    assert p.fallback_via == ("e",)
    assert p.fallback == ("a", "f", "e", "d", "c")
    (p,) = _plan(given.replace("fallback: [e]", "fallback: none")).policies
    assert p.fallback is None
    plan = _plan(given.replace("fallback: [e]", "fallback: none"))
    assert {r.metric for r in plan.routes if r.node == "a" and r.segments} == {100}


def test_a_line_has_no_disjoint_fallback() -> None:
    section = _ring(3).replace("    - {a: c, b: a}\n", "")  # a - b - c
    (p,) = _plan(
        section + "  policies:\n    - {name: p, tenant: t, from: a, to: c, via: [b]}\n"
    ).policies
    assert p.fallback is None and p.fallback_via is None


def test_a_waypoint_that_cannot_reach_the_next_is_refused() -> None:
    """Two islands: a - b - c - d and e - f; a policy a -> c through e."""
    section = _ring(4, extra="").replace("  links:\n", "  links:\n    - {a: e, b: f}\n")
    section = section.replace(
        "    - {name: d}\n", "    - {name: d}\n    - {name: e}\n    - {name: f}\n"
    )
    with pytest.raises(SpecError) as err:
        _plan(section + "  policies:\n    - {name: p, tenant: t, from: a, to: c, via: [e]}\n")
    (problem,) = err.value.problems
    assert problem.where == "interconnect.policies[0].from"
    assert problem.message == "'a' cannot reach 'e' over interconnect.links"


@pytest.mark.parametrize(
    ("change", "where", "message"),
    [
        (("via: [wan1]", "via: [wan9]"), "interconnect.policies[0].via[0]", "no node 'wan9'"),
        (
            ('"2001:db8:2::/48", "203.0.113.0/24"', '"2001:db8:2::/48", "2001:db8:2:8::/64"'),
            "interconnect.tenants[0].attachments[1].prefixes[1]",
            "2001:db8:2:8::/64 overlaps 2001:db8:2::/48",
        ),
        (
            ('["2001:db8:1::/48"]', '["fcbb:bc00:7::/48"]'),
            "interconnect.tenants[0].attachments[0].prefixes[0]",
            "fcbb:bc00:7::/48 collides with interconnect.block fcbb:bc00::/32",
        ),
        (
            ("interconnect:\n", "interconnect:\n  block: fcbb:bc00::/112\n"),
            "interconnect.usid_bits",
            "a /112 block leaves room for 1 16-bit uSID, a service SID needs 2",
        ),
    ],
)
def test_bad_input_exits_2_naming_the_field_and_the_numbers(
    change: tuple[str, str], where: str, message: str, tmp_path: Path
) -> None:
    assert change[0] in LAB_INTERCONNECT
    spec = tmp_path / "spec.yaml"
    spec.write_text(LAB_SPEC + LAB_INTERCONNECT.replace(*change))
    result = runner.invoke(app, ["srv6", "interconnect", str(spec)])
    assert result.exit_code == 2, result.output
    assert f"{where}: " in result.output and message in result.output
    assert "Traceback" not in result.output


def test_two_tenants_may_share_a_prefix_and_stay_apart() -> None:
    plan = lab_plan()
    assert isolation_findings(plan) == []
    reach = reachability(plan)
    assert len(reach) == len(plan.routes)  # every route of every table followed
    for x in reach:
        assert x.target is not None and x.target.tenant == x.source.tenant


def test_a_plan_broken_on_purpose_is_caught() -> None:
    """red's End.DT6 at edge1 looking up blue's table: red's 2001:db8:1::/48 lands at blue."""
    plan = lab_plan()
    blue = next(a.table for a in plan.attachments if a.tenant == "blue")
    services = tuple(
        dataclasses.replace(s, table=blue)
        if (s.tenant, s.node, s.behavior) == ("red", "edge1", "End.DT6")
        else s
        for s in plan.services
    )
    found = isolation_findings(dataclasses.replace(plan, services=services))
    assert [f.code for f in found] == ["isolation", "unreached"]
    assert "red@edge2: 2001:db8:1::/48 (shortest) reaches blue@edge1" in found[0].message
    assert found[1].message == "red@edge2 cannot reach 2001:db8:1::/48 of red@edge1"


def test_rendering_is_deterministic_and_holds_every_behaviour() -> None:
    plan, again = lab_plan(), lab_plan()
    for n in plan.nodes:
        assert render_node(plan, n.name) == render_node(again, n.name)
        assert render_frr(plan, n.name) == render_frr(again, n.name)
    e1, e2 = render_node(plan, "edge1"), render_node(plan, "edge2")
    assert (
        "ip -6 route add fcbb:bc00:1::/48 encap seg6local action End flavors next-csid "
        "lblen 32 nflen 16 dev to-edge2"
    ) in e1
    assert "fcbb:bc00:1:e000::/64 encap seg6local action End.DT6 table 100 dev to-edge2" in e1
    assert "fcbb:bc00:1:e002::/64 encap seg6local action End.DX4 nh4 100.64.0.5 dev att1" in e1
    assert "fcbb:bc00:2:e002::/64 encap seg6local action End.DX6 nh6 fd00:0:20::d dev att1" in e2
    assert "ip -6 rule add iif att1 table 101 pref 1001" in e1
    assert (
        "ip -6 route add 2001:db8:2::/48 encap seg6 mode encap.red segs fcbb:bc00:3:2:e000:: "
        "dev to-wan1 metric 100 table 100"
    ) in e1
    assert "segs fcbb:bc00:2:e000:: dev to-edge2 metric 200 table 100" in e1
    assert "table" not in render_node(plan, "wan1")  # the WAN node knows no tenant


@pytest.mark.skipif(shutil.which("vtysh") is None, reason="FRR (vtysh) is not installed")
def test_frr_parses_every_node_configuration(tmp_path: Path) -> None:
    plan = lab_plan()
    for n in plan.nodes:
        conf = tmp_path / f"{n.name}.conf"
        conf.write_text(render_frr(plan, n.name))
        done = subprocess.run(
            ["vtysh", "--dryrun", "-f", str(conf)], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stdout + done.stderr


def test_the_command_writes_one_file_per_node_and_the_plan(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(LAB_SPEC + LAB_INTERCONNECT)
    result = runner.invoke(app, ["srv6", "interconnect", str(spec), "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "isolation: 11 routes followed, 0 problems" in result.output
    out = tmp_path / "out"
    assert sorted(p.name for p in (out / "nodes").iterdir()) == ["edge1.sh", "edge2.sh", "wan1.sh"]
    assert (out / "frr" / "edge1.conf").read_text() == render_frr(lab_plan(), "edge1")
    assert (
        '"fallback": [\n        "edge1",\n        "edge2"\n      ]'
        in (out / "interconnect.json").read_text()
    )
    spec.write_text(LAB_SPEC)
    result = runner.invoke(app, ["srv6", "interconnect", str(spec)])
    assert result.exit_code == 2
    assert "interconnect: the spec has no interconnect section" in result.output


@settings(max_examples=150, deadline=None)
@given(
    block=st.sampled_from(["fcbb:bc00::/32", "fcbb::/16", "fcbb:bc00::/33", "10.0.0.0/8", "x"]),
    usid_bits=st.sampled_from([8, 16, 24, 32]),
    links=st.sampled_from(["fd00:0:20::/64", "fd00::/126", "100.64.0.0/24", "fcbb:bc00::/48"]),
    links4=st.sampled_from(["100.64.0.0/22", "100.64.0.0/31", "fd00::/64", "2001:db8:1::/48"]),
    sid=st.one_of(
        st.none(),
        st.text(alphabet="0123456789abcdef:/.xz", max_size=24),
        st.sampled_from(["fcbb:bc00:1:e000::", "::"]),
    ),
)
def test_any_addressing_is_planned_or_refused_as_bad_input(
    block: str, usid_bits: int, links: str, links4: str, sid: str | None
) -> None:
    """Whatever the block, uSID length, link prefixes and SID: a plan, or SpecError."""
    head = (
        f"interconnect:\n  block: {json.dumps(block)}\n  usid_bits: {usid_bits}\n"
        f"  links_prefix: {json.dumps(links)}\n  links4_prefix: {json.dumps(links4)}\n"
    )
    section = head + LAB_INTERCONNECT.removeprefix("interconnect:\n")
    if sid is not None:
        section = section.replace(
            '{node: edge1, prefixes: ["2001:db8:1::/48"]}',
            f'{{node: edge1, prefixes: ["2001:db8:1::/48"], sid: {json.dumps(sid)}}}',
        )
    try:
        plan = _plan(section)
    except SpecError as exc:
        assert exc.problems and all(p.where.startswith("interconnect") for p in exc.problems)
    else:
        assert isolation_findings(plan) == []


def test_the_documented_section_plans() -> None:
    """docs/spec.md's interconnect example is a valid section and plans as it says."""
    text = (Path(__file__).parents[2] / "docs" / "spec.md").read_text()
    section = text.split("## The interconnect section")[1].split("```yaml\n")[1].split("```")[0]
    plan = _plan(section)
    assert plan.node("wan1").usid == 9 and plan.node("edge2").usid == 2
    by = {(s.tenant, s.node, s.behavior): to_text(s.sid) for s in plan.services}
    assert by[("blue", "edge2", "End.DX6")] == "fcbb:bc00:2:e000::"  # given
    assert by[("blue", "edge2", "End.DX4")] == "fcbb:bc00:2:e001::"  # the next free
    assert plan.policies[0].fallback == ("edge1", "edge2")
    assert isolation_findings(plan) == []


def test_a_section_implying_too_many_routes_is_refused_before_planning() -> None:
    """60 attachments of one tenant x 30 prefixes each: 60 x 1,800 = 108,000 routes."""
    section = {
        "nodes": [{"name": f"n{i}"} for i in range(60)],
        "links": [{"a": f"n{i}", "b": f"n{i + 1}"} for i in range(59)],
        "tenants": [
            {
                "name": "t",
                "attachments": [
                    {"node": f"n{i}", "prefixes": [f"2001:db8:{i:x}:{j:x}::/64" for j in range(30)]}
                    for i in range(60)
                ],
            }
        ],
    }
    with pytest.raises(SpecError) as err:
        parse_spec(LAB_SPEC + yaml.safe_dump({"interconnect": section}))
    assert str(err.value) == (
        "interconnect.tenants: 108,000 tenant routes (attachments x their tenant's prefixes), "
        "more than 100,000; split the interconnect"
    )
