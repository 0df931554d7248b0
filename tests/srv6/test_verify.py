"""The proof on the kernel (``clusterloom srv6 verify``): namespaces, veth pairs, the rendered
commands, probes checked hop by hop, a link failure survived by the endpoints alone. Needs
root; skipped without it, except under ``CI=true`` (CI runs as root), where it must run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterloom.cli.main import app
from clusterloom.srv6.lab import NETNS_DIR, PREFIX, can_make_namespaces

runner = CliRunner()
WHY = can_make_namespaces()
CI = os.environ.get("CI") == "true"


def _ours() -> list[str]:
    if not NETNS_DIR.is_dir():
        return []
    mine = f"{PREFIX}{os.getpid()}-"
    return sorted(p.name for p in NETNS_DIR.iterdir() if p.name.startswith(mine))


@pytest.mark.skipif(WHY is not None and not CI, reason=WHY or "")
def test_verify_checks_every_hop_and_the_failover_on_this_kernel() -> None:
    result = runner.invoke(app, ["srv6", "verify"])
    assert result.exit_code == 0, result.output
    assert " 0 failed" in result.output
    assert result.output.count("48 probes checked hop by hop") == 2
    assert result.output.count("8 retired") == 2
    assert _ours() == []  # every namespace made was deleted


@pytest.mark.skipif(WHY is not None and not CI, reason=WHY or "")
def test_a_failing_check_still_deletes_every_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    from clusterloom.srv6 import verify as v

    def boom(*_: object) -> None:
        raise RuntimeError("a check blew up")

    monkeypatch.setattr(v, "_fail_link", boom)
    with pytest.raises(RuntimeError):
        v.verify()
    assert _ours() == []


def test_without_namespaces_it_says_so_and_exits_2(monkeypatch: pytest.MonkeyPatch) -> None:
    from clusterloom.srv6 import verify as v

    monkeypatch.setattr(v, "can_make_namespaces", lambda: "cannot create a network namespace")
    result = runner.invoke(app, ["srv6", "verify"])
    assert result.exit_code == 2
    assert "cannot create a network namespace" in result.output


def test_the_sweep_deletes_namespaces_of_gone_processes(tmp_path: Path) -> None:
    if WHY is not None:
        pytest.skip(WHY)
    import subprocess

    from clusterloom.srv6.lab import sweep

    dead = 2**22 + 17  # above pid_max's default: no such process
    name = f"{PREFIX}{dead}-0"
    subprocess.run(["ip", "netns", "add", name], check=True)
    assert name in sweep()
    assert not (NETNS_DIR / name).exists()
