"""The real-system part: the same sweep on a real Ray cluster gives the same result files as
the local pool. One local Ray started by the executor (``ray.init(num_cpus=2,
include_dashboard=False)``, stopped when the sweep ends), and the cluster ``.ci/run`` starts
with ``ray start --head --num-cpus 2``, reached through ``RAY_ADDRESS`` (skipped without it,
except under CI, where it must be there)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import two_hall_spec_text
from sweep_helpers import env, results, run_cli, small_sweep_run

pytest.importorskip("ray")
pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return small_sweep_run(tmp_path_factory.mktemp("local"), "--workers", "2")


def test_a_local_ray_with_two_cpus_gives_the_local_pools_files(
    local: tuple[Path, Path], tmp_path: Path
) -> None:
    sweep, ref = local
    done = run_cli(sweep, tmp_path / "ray", "--executor", "ray", "--workers", "2")
    assert done.returncode == 0, done.stderr
    assert "8 runs on ray at local (2 CPUs)" in done.stdout
    assert results(tmp_path / "ray") == results(ref)


def test_the_ci_ray_cluster_through_ray_address_gives_the_same_files(
    local: tuple[Path, Path], tmp_path: Path
) -> None:
    address = os.environ.get("RAY_ADDRESS")
    if not address:
        if os.environ.get("CI") == "true":
            pytest.fail("CI runs a Ray cluster (.ci/run: ray start --head); RAY_ADDRESS is unset")
        pytest.skip("no RAY_ADDRESS: start one with 'ray start --head --num-cpus 2'")
    sweep, ref = local
    done = run_cli(sweep, tmp_path / "ray", "--executor", "ray", RAY_ADDRESS=address)
    assert done.returncode == 0, done.stderr
    assert f"runs on ray at {address}" in done.stdout
    assert results(tmp_path / "ray") == results(ref)


def test_cabling_s_hall_routes_on_a_local_ray_write_the_serial_run_s_files(tmp_path: Path) -> None:
    """``clusterloom cable`` of a two-hall spec (``cabling.halls``: one routing task per hall)
    on a local Ray of 2 CPUs writes the cabling and NetBox files of a serial run, byte for
    byte."""
    spec = tmp_path / "two-halls.yaml"
    spec.write_text(two_hall_spec_text())
    got = {}
    for name, args in (
        ("serial", ["--workers", "1"]),
        ("ray", ["--executor", "ray", "--workers", "2"]),
    ):
        out = tmp_path / name
        cmd = [sys.executable, "-m", "clusterloom.cli.main", "cable", str(spec), "-o", str(out)]
        done = subprocess.run([*cmd, *args], env=env(), capture_output=True, text=True, timeout=240)
        assert done.returncode in (0, 1), done.stderr
        got[name] = {
            p.relative_to(out).as_posix(): p.read_bytes()
            for sub in ("cabling", "netbox")
            for p in sorted((out / sub).rglob("*"))
            if p.is_file()
        }
    assert "cabling/cut_sheet.csv" in got["serial"]
    assert got["ray"] == got["serial"]
