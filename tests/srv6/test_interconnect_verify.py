"""The interconnect's proof on the kernel (``clusterloom srv6 verify-interconnect``): two
tenants with the same IPv6 prefixes, two edges and a WAN node as namespaces, every probe's
ingress captures, delivery to its tenant's router only, the TE fallback after a link failure.
Needs root; skipped without it, except under ``CI=true`` (CI runs as root), where it must run."""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner

from clusterloom.cli.main import app
from clusterloom.srv6 import interconnect_verify as v
from clusterloom.srv6.lab import NETNS_DIR, PREFIX, can_make_namespaces

runner = CliRunner()
WHY = can_make_namespaces()
CI = os.environ.get("CI") == "true"
needs_root = pytest.mark.skipif(WHY is not None and not CI, reason=WHY or "")


def _ours() -> list[str]:
    if not NETNS_DIR.is_dir():
        return []
    mine = f"{PREFIX}{os.getpid()}-"
    return sorted(p.name for p in NETNS_DIR.iterdir() if p.name.startswith(mine))


@needs_root
def test_every_probe_is_delivered_as_planned_and_the_fallback_takes_over() -> None:
    result = runner.invoke(app, ["srv6", "verify-interconnect", "-v"])
    assert result.exit_code == 0, result.output
    assert "built 7 namespaces, 7 veth pairs" in result.output
    # 4 routers x the prefixes at the other edge (one probe per address), 2 of them to the
    # other tenant's IPv4 prefix: lost
    assert "8 probes checked hop by hop, 2 to other tenants' prefixes lost" in result.output
    assert "ce-red-edge1 -> 203.0.113.1: received by none, planned none" in result.output
    assert "ce-red-edge1 -> 2001:db8:2::1: received by ['ce-red-edge2']" in result.output
    assert "ce-blue-edge1 -> 2001:db8:2::1: received by ['ce-blue-edge2']" in result.output
    assert "routes by to-wan1 marked linkdown" in result.output
    assert "policy blue-wan: 2 probes after the failure" in result.output
    assert " 0 failed" in result.output
    assert _ours() == []


@needs_root
def test_a_rendering_that_leaks_is_caught_on_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """red's End.DT6 at edge1 rendered with blue's table: red's packets to 2001:db8:1::1 land
    at blue's router (the same prefix), which the plan never delivers them to."""
    plan = v.lab_plan()
    red = next(a.table for a in plan.attachments if (a.tenant, a.node) == ("red", "edge1"))
    blue = next(a.table for a in plan.attachments if (a.tenant, a.node) == ("blue", "edge1"))
    real = v.render_node

    def leaky(p: object, node: str) -> str:
        text = real(p, node)  # type: ignore[arg-type]
        return text.replace(f"End.DT6 table {red} ", f"End.DT6 table {blue} ")

    monkeypatch.setattr(v, "render_node", leaky)
    report = v.verify_interconnect()
    leaked = [x for x in report.problems if "received by ['ce-blue-edge1'], planned ['ce-red" in x]
    assert leaked, report.problems
    assert _ours() == []


@needs_root
def test_a_failing_check_still_deletes_every_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_: object) -> None:
        raise RuntimeError("a check blew up")

    monkeypatch.setattr(v, "_fail_primary", boom)
    with pytest.raises(RuntimeError):
        v.verify_interconnect()
    assert _ours() == []


def test_without_namespaces_it_says_so_and_exits_2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(v, "can_make_namespaces", lambda: "cannot create a network namespace")
    result = runner.invoke(app, ["srv6", "verify-interconnect"])
    assert result.exit_code == 2
    assert "cannot create a network namespace" in result.output
