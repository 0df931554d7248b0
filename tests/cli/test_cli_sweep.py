"""``clusterloom sweep`` as a user meets it: bad sweep files refused naming the field, the
results the same serially and in a pool, a sweep killed midway and rerun, a failing task
retried and reported while the rest finish."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from clusterloom.errors import SpecError
from clusterloom.sweep.file import MAX_RUNS, expand, parse_sweep
from sweep_helpers import SMALL_SWEEP, command, env, results, run_cli, small_sweep_run


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The small sweep run once, uninterrupted, serially."""
    return small_sweep_run(tmp_path_factory.mktemp("ref"), "--workers", "1")


def test_a_sweep_writes_one_part_per_run_with_a_manifest_and_a_page(
    reference: tuple[Path, Path],
) -> None:
    _, out = reference
    parts = sorted((out / "parts").rglob("*.parquet"))
    assert len(parts) == 8
    manifest = json.loads((out / "manifest.json").read_text())
    assert [p["path"] for p in manifest["parts"]] == [p.relative_to(out).as_posix() for p in parts]
    rows = [pq.read_table(p, partitioning=None).to_pylist()[0] for p in parts]
    assert all(p.stem == r["key"] for p, r in zip(parts, rows, strict=True))
    assert {p.parent.name for p in parts} == {"transport=roce-ecmp", "transport=mrc-spray"}
    assert {(r["transport"], r["failure"], r["seed"]) for r in rows} == {
        (t, f, s)
        for t in ("roce-ecmp", "mrc-spray")
        for f in ("none", "link:17@2us")
        for s in (0, 1)
    }
    for r in rows:  # every run next to its bound: never faster than the ideal transport
        assert r["finished"] == r["flows"] == 16
        assert r["makespan_ps"] >= r["ideal_makespan_ps"] > 0
        assert r["vs_ideal"] == pytest.approx(r["makespan_ps"] / r["ideal_makespan_ps"])
    page = (out / "sweep.html").read_text()
    assert "Student t" in page and page.count('class="bar"') == 4  # 2 failures x 2 transports
    assert json.loads((out / "failed.json").read_text()) == []


def test_the_same_sweep_in_a_pool_gives_the_same_files(
    reference: tuple[Path, Path], tmp_path: Path
) -> None:
    sweep, out = reference
    done = run_cli(sweep, tmp_path / "pool", "--workers", "2")
    assert done.returncode == 0, done.stderr
    assert results(tmp_path / "pool") == results(out)


def test_a_rerun_runs_nothing_again(reference: tuple[Path, Path]) -> None:
    sweep, out = reference
    before = results(out)
    done = run_cli(sweep, out, "--workers", "1")
    assert done.returncode == 0, done.stderr
    assert "0 runs on local" in done.stdout and "8 kept" in done.stdout
    assert results(out) == before


def _parts(directory: Path) -> int:
    return len(list((directory / "parts").rglob("*.parquet"))) if directory.exists() else 0


def test_a_killed_sweep_keeps_its_finished_runs_and_the_rerun_completes_it(
    reference: tuple[Path, Path], tmp_path: Path
) -> None:
    sweep, ref = reference
    out = tmp_path / "killed"
    proc = subprocess.Popen(command(sweep, out, "--workers", "1"), env=env())
    deadline = time.monotonic() + 120
    while _parts(out) < 3 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    kept = {p.stem for p in (out / "parts").rglob("*.parquet")}
    assert 3 <= len(kept) < 8, "the kill came too late to test anything"
    done = run_cli(sweep, out, "--workers", "1")
    assert done.returncode == 0, done.stderr
    assert f"{len(kept)} kept" in done.stdout
    starts = Counter(
        json.loads(line)["key"]
        for line in (out / "journal.jsonl").read_text().splitlines()
        if json.loads(line)["event"] == "start"
    )
    assert all(starts[k] == 1 for k in kept)  # finished before the kill: never run again
    assert max(starts.values()) <= 2  # running at the kill: at most once more
    assert results(out) == results(ref)


def test_a_task_that_fails_is_retried_then_reported_and_the_rest_finish(tmp_path: Path) -> None:
    sweep = tmp_path / "bad-value.yaml"
    sweep.write_text(
        SMALL_SWEEP.replace("seeds: 2", "seeds: 1").replace(
            "  failure:", '  traffic: [permutation, "htsim:missing.cm"]\n  failure:'
        )
    )
    done = run_cli(sweep, tmp_path / "out", "--workers", "2", "--retries", "1")
    assert done.returncode == 3, done.stderr
    failed = json.loads((tmp_path / "out" / "failed.json").read_text())
    assert len(failed) == 4 and all(f["run"]["traffic"] == "htsim:missing.cm" for f in failed)
    assert done.stderr.count("failed: ") == 4 and "after 2 attempts" in done.stderr
    assert _parts(tmp_path / "out") == 4  # the permutation runs all finished
    journal = [json.loads(x) for x in (tmp_path / "out" / "journal.jsonl").read_text().splitlines()]
    bad = {f["key"] for f in failed}
    assert Counter(j["key"] for j in journal if j["event"] == "start" and j["key"] in bad) == {
        k: 2 for k in bad
    }


BAD = {
    "grid:\n  transport: [roce-ecmp]\n  colour: [red]\n": "grid.colour: not a field of the",
    "grid:\n  transport: []\n": "grid.transport: is empty",
    "grid: {}\n": "grid: is empty",
    "runs: []\n": "runs: is empty",
    "grid:\n  transport: [roce-ecmp]\nvariants:\n  big: {fabrics.backend.colour: 3}\n": (
        "variants.big.fabrics.backend.colour: not a field of the spec"
    ),
    "grid:\n  transport: [roce-ecmp]\nvariants:\n  big: {compute.accelerators_per_node: 3}\n": (
        "variants.big.compute.accelerators"
    ),
    "grid:\n  transport: [roce-ecmp]\nseeds: 0\n": "seeds: give a count >= 1",
    "grid:\n  transport: [roce-ecmp]\nsedes: 3\n": "sedes: Extra inputs are not permitted",
}


@pytest.mark.parametrize(("body", "message"), BAD.items(), ids=list(range(len(BAD))))
def test_a_bad_sweep_file_exits_2_naming_the_field(tmp_path: Path, body: str, message: str) -> None:
    sweep = tmp_path / "bad.yaml"
    sweep.write_text(f"version: 1\nexample: fat-tree-k16\n{body}")
    done = run_cli(sweep, tmp_path / "out")
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()  # refused before anything ran


def test_a_grid_over_the_limit_needs_yes() -> None:
    n = MAX_RUNS // 2 + 1
    sf = parse_sweep(f"version: 1\nexample: x\ngrid:\n  transport: [a, b]\nseeds: {n}\n")
    with pytest.raises(SpecError, match=f"{2 * n:,} runs are more than {MAX_RUNS:,}; confirm"):
        expand(sf)
    assert len(expand(sf, yes=True)) == 2 * n


def test_an_unreachable_ray_address_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sweep = tmp_path / "small.yaml"
    sweep.write_text(SMALL_SWEEP)
    done = run_cli(sweep, tmp_path / "out", "--executor", f"ray://127.0.0.1:{port}")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and f"no Ray cluster answers at ray://127.0.0.1:{port}" in (
        done.stderr
    )
    assert not (tmp_path / "out").exists()


def test_simulate_sweep_through_the_executor_gives_the_library_sweeps_rows(tmp_path: Path) -> None:
    """``simulate --sweep`` is a sweep: its rows, read back from ``-o``, are the ones the flow
    engine's own tier sweep (``sim.flow.sweep.sweep``, one process) computes."""
    from clusterloom.examples import example_text
    from clusterloom.fabric import generate, plan_fabric
    from clusterloom.sim.predict import predict_sweep
    from clusterloom.sim.scenario import resolve_scenario
    from clusterloom.spec import parse_spec
    from clusterloom.sweep.dataset import read_parts
    from clusterloom.sweep.tier import tier_rows, tier_tasks

    spec = parse_spec(example_text("fat-tree-k16"))
    topology = generate(plan_fabric(spec))
    scenario = resolve_scenario(
        spec, topology, size="256KB", hosts=32, transports=["roce-ecmp", "mrc-spray"]
    )
    expected = predict_sweep(
        topology, scenario, "leaf_spine", fail_at="3us", max_links=3, processes=1
    )
    argv = ["simulate", "--example", "fat-tree-k16", "--size", "256KB", "--hosts", "32"]
    argv += ["--transport", "roce-ecmp,mrc-spray", "--sweep", "leaf_spine", "--fail-at", "3us"]
    argv += ["--max-links", "3", "--jobs", "2", "--no-progress", "-o", str(tmp_path / "tier")]
    done = subprocess.run(
        [sys.executable, "-m", "clusterloom.cli.main", *argv],
        env=env(),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    assert "8 runs on local (2 workers)" in done.stdout
    tasks = tier_tasks(spec, topology, scenario, "leaf_spine", fail_at="3us", max_links=3)
    got = tier_rows(read_parts(tmp_path / "tier"), tasks)
    assert got == expected
