"""Rendering: deterministic per-node text, the commands the plan implies, FRR's own parser."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from srv6_fabrics import topology

from clusterloom.srv6 import plan_addresses
from clusterloom.srv6.encoding import to_text
from clusterloom.srv6.frr import render_frr
from clusterloom.srv6.render import Wiring, render_node
from clusterloom.srv6.verify import lab_topology


def test_rendering_is_deterministic_and_names_every_route() -> None:
    plan = plan_addresses(topology((16, 4, 3, 1)))
    w, again = Wiring(plan), Wiring(plan_addresses(topology((16, 4, 3, 1))))
    t = plan.topology
    for n in range(t.n_nodes):
        assert render_node(w, n, 4) == render_node(again, n, 4)
    spine = t.plan.hosts + t.plan.leaves  # spine 0 of plane 0
    text = render_node(w, spine)
    sid, bits = w.end_sid(spine)
    assert (
        f"ip -6 route add {to_text(sid)}/{bits} encap seg6local action End flavors next-csid "
        "lblen 32 nflen 16 dev swp1"
    ) in text
    # a route per neighbour: its 2 leaves below, its 2 cores above, and the block up
    assert text.count("ip -6 route add") == 1 + 2 + 2 + 1
    host = render_node(w, 0, 4)
    assert host.count("ip -6 rule add ipproto udp sport") == 4
    assert host.count("encap seg6 mode") == 4 * (t.plan.hosts - 1)


# .ci/run installs FRR; under CI=true the dry run must not be skipped
@pytest.mark.skipif(
    shutil.which("vtysh") is None and os.environ.get("CI") != "true",
    reason="FRR (vtysh) is not installed",
)
def test_frr_parses_every_switch_configuration(tmp_path: Path) -> None:
    """``vtysh --dryrun`` (FRR 8.4) reads every line and refuses any it does not know."""
    w = Wiring(plan_addresses(lab_topology()))
    t = w.plan.topology
    for n in range(t.plan.hosts, t.n_nodes):
        conf = tmp_path / f"{w.name(n)}.conf"
        conf.write_text(render_frr(w, n))
        done = subprocess.run(
            ["vtysh", "--dryrun", "-f", str(conf)], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stdout + done.stderr
    bad = tmp_path / "bad.conf"
    bad.write_text(render_frr(w, t.plan.hosts) + "ipv6 route nowhere\n")
    done = subprocess.run(["vtysh", "--dryrun", "-f", str(bad)], capture_output=True, text=True)
    assert done.returncode != 0  # the dry run does refuse a bad line


def test_the_render_command_writes_the_nodes_asked_for(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from clusterloom.cli.main import app

    runner = CliRunner()
    out = tmp_path / "r"
    args = ["srv6", "render", "-e", "fat-tree-k16", "-o", str(out), "--evs", "2"]
    result = runner.invoke(app, [*args, "--node", "be-p0-spine0003", "--node", "node00005-gpu0"])
    assert result.exit_code == 0, result.output
    names = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.*") if p.is_file())
    assert names == [
        "frr/be-p0-spine0003.conf",
        "manifest.json",
        "nodes/be-p0-spine0003.sh",
        "nodes/node00005-gpu0.sh",
    ]
    host = (out / "nodes" / "node00005-gpu0.sh").read_text()
    assert host.count("encap seg6 mode encap.red") == 2 * 1023
    bad = runner.invoke(app, [*args, "--node", "be-p0-spine9999"])
    assert bad.exit_code == 2 and "no node 'be-p0-spine9999'" in bad.output
