"""The real-system part: the same sweep on a real Ray cluster gives the same result files as
the local pool. One local Ray started by the executor (``ray.init(num_cpus=2,
include_dashboard=False)``, stopped when the sweep ends), and the cluster ``.ci/run`` starts
with ``ray start --head --num-cpus 2``, reached through ``RAY_ADDRESS`` (skipped without it,
except under CI, where it must be there)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sweep_helpers import results, run_cli, small_sweep_run

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
