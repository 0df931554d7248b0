"""The addressing plan: layout, checks, and bad input refused naming the field and numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from srv6_fabrics import topology
from typer.testing import CliRunner

from clusterloom.cli.main import app
from clusterloom.errors import SpecError
from clusterloom.fabric.topology import Role
from clusterloom.srv6 import plan_addresses
from clusterloom.srv6.encoding import Format, to_text
from clusterloom.srv6.plan import PlanOptions
from clusterloom.srv6.summary import check_plan

runner = CliRunner()


def test_blocks_locators_and_nic_sids_follow_the_layout() -> None:
    t = topology((16, 8, 2, 2))  # 4 leaves, 2 spines per plane
    plan = plan_addresses(t, PlanOptions(growth=0.5))
    assert plan.caps == (6, 3, 0)  # ceil(4 * 1.5), ceil(2 * 1.5)
    assert to_text(plan.block(1)) == "fcbb:bb01::"
    assert to_text(plan.locator(0, Role.LEAF, 0)) == "fcbb:bb00:1::"
    assert to_text(plan.locator(1, Role.SPINE, 1)) == "fcbb:bb01:8::"  # 1 + 6 + 1
    leaf = int(plan.nic_leaf[5, 1])
    local = int(plan.nic_local[5, 1])
    assert to_text(plan.nic_sid(5, 1)) == f"fcbb:bb01:{leaf + 1:x}:{local:x}::"
    assert local >= 1  # 0 is the leaf's own End


def test_the_checks_pass_on_a_good_plan_and_find_a_reused_sid() -> None:
    plan = plan_addresses(topology((16, 4, 3, 1)))
    found = {f.code: f for f in check_plan(plan)}
    assert found["srv6-sid-reuse"].severity.value == "info"
    assert found["srv6-locator-route"].severity.value == "info"
    assert "57,343" in found["srv6-growth-room"].message
    broken = plan.nic_local.copy()
    broken[1, 0] = broken[0, 0]  # two NIC ports on one leaf port: one SID twice
    if plan.nic_leaf[1, 0] != plan.nic_leaf[0, 0]:
        pytest.skip("hosts 0 and 1 are not on one leaf")
    object.__setattr__(plan, "nic_local", broken)
    codes = {f.code: f.severity.value for f in check_plan(plan)}
    assert codes["srv6-sid-reuse"] == "error"


@pytest.mark.parametrize(
    ("options", "field", "numbers"),
    [
        # 40 switches per plane with 500% growth held back: 240 > 223 8-bit global uSIDs
        (PlanOptions(fmt=Format(32, 8), growth=5.0), "srv6.usid_bits", "8-bit uSIDs hold 223"),
        (PlanOptions(prefix="fcbb:bb00::/32"), "srv6.prefix", "holds 1 /32 blocks"),
        (PlanOptions(loopbacks="fcbb:bb00:1::/64"), "srv6.prefix", "overlaps srv6.loopbacks"),
        (PlanOptions(links="fd00:0:10::/80"), "srv6.loopbacks", "overlaps srv6.links"),
        (PlanOptions(fmt=Format(112, 24)), "srv6.usid_bits", "too few for one"),
        (PlanOptions(prefix="fcbb::1/24"), "srv6.prefix", "not an IPv6 prefix"),
        (PlanOptions(links="fd00:0:11::/120"), "srv6.links", "needed"),
    ],
)
def test_bad_plans_are_refused_naming_the_field(
    options: PlanOptions, field: str, numbers: str
) -> None:
    t = topology((64, 8, 3, 2))  # 2 planes, 40 switches per plane
    with pytest.raises(SpecError) as e:
        plan_addresses(t, options)
    assert any(p.where == field and numbers in p.message for p in e.value.problems)


def test_the_command_writes_the_srv6_directory(tmp_path: Path) -> None:
    out = tmp_path / "design"
    result = runner.invoke(app, ["srv6", "plan", "-e", "fat-tree-k16", "-o", str(out)])
    assert result.exit_code == 0, result.output
    srv6 = out / "srv6"
    summary = json.loads((srv6 / "summary.json").read_text())
    assert summary["nic_sids"] == 1024 and summary["switch_locators"] == 320
    rows = (srv6 / "sids.csv").read_text().splitlines()
    assert len(rows) == 1 + 2 * 320 + 1024
    assert len(list((srv6 / "nodes").iterdir())) == 320 == len(list((srv6 / "frr").iterdir()))
    assert "Path programs" in (srv6 / "index.html").read_text()
    first = {p.name: p.read_bytes() for p in srv6.rglob("*") if p.is_file()}
    again = runner.invoke(app, ["srv6", "plan", "-e", "fat-tree-k16", "-o", str(out)])
    assert again.exit_code == 0
    assert {p.name: p.read_bytes() for p in srv6.rglob("*") if p.is_file()} == first


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--usid-bits", "12"], "srv6.usid_bits: 12 is not one of 8, 16, 24, 32"),
        (["--block-bits", "112", "--usid-bits", "24"], "too few for one 24-bit uSID"),
        (["--usid-bits", "8"], "8-bit uSIDs hold 223"),
        (["--prefix", "fcbb::/40"], "holds 0 /32 blocks"),
        (
            ["--loopbacks", "fcbb:bb00:7::/64"],
            "srv6.prefix: fcbb:bb00::/24 overlaps srv6.loopbacks",
        ),
        (["--links", "fd00::/16"], "srv6.loopbacks: fd00:0:10::/64 overlaps srv6.links"),
    ],
)
def test_bad_input_exits_2_with_one_line_per_problem(args: list[str], says: str) -> None:
    result = runner.invoke(app, ["srv6", "plan", "-e", "rail-16k", *args])
    assert result.exit_code == 2
    assert says in result.output
    assert "Traceback" not in result.output


def test_programs_and_failover_commands() -> None:
    result = runner.invoke(app, ["srv6", "programs", "-e", "fat-tree-k16", "--host", "3"])
    assert result.exit_code == 0, result.output
    assert "130,944 programs (1,023 destinations x 128 EVs)" in result.output
    result = runner.invoke(
        app, ["srv6", "failover", "-e", "fat-tree-k16", "--fail", "switch:0/core/0"]
    )
    assert result.exit_code == 0, result.output
    # core 0 is 1 of the 64 cross-pod paths (8 spines x 8 cores); 128 EVs over 64 paths: 2 EVs
    # each, so each of the 960 hosts outside host 0's pod (1,024 - 64) loses 2 EVs: 126/128 kept
    assert "1,920 of 130,944 (destination, EV) programs retired" in result.output
    assert "over 960 of 1,023 destinations; lowest share kept 98.4%" in result.output
    bad = runner.invoke(app, ["srv6", "failover", "-e", "fat-tree-k16", "--fail", "core:1"])
    assert bad.exit_code == 2 and "--fail" in bad.output


@pytest.mark.parametrize("fmt", [Format(32, 16), Format(96, 16), Format(40, 24), Format(64, 32)])
def test_the_vectorized_nic_sids_are_the_nic_sids(fmt: Format) -> None:
    from clusterloom.srv6.summary import nic_sid_halves

    plan = plan_addresses(topology((16, 8, 2, 2)), PlanOptions(fmt=fmt))
    halves = nic_sid_halves(plan)
    for host in range(16):
        for port in range(plan.host_ports):
            hi, lo = (int(x) for x in halves[host * plan.host_ports + port])
            assert hi << 64 | lo == plan.nic_sid(host, port)
