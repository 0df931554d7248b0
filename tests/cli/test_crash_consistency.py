"""``design -o out`` killed with SIGKILL at random points: ``out`` is always the previous whole
run or the new whole run (checked against its manifest), never a mix, and the next run cleans
up what the killed one left.

Two specs take turns writing into one directory, so a mix of their files would show (the spec
hash in the manifest says whose run it is, and the manifest must match the files exactly).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clusterloom.examples import example_text
from clusterloom.export.outdir import read_manifest, verify_run
from clusterloom.spec import parse_spec, spec_hash

SPECS = ("fat-tree-k16", "hgx-1k-roce")  # a bare fabric; a site with placement and cabling
KILLS = 8


def _design(example: str, out: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "clusterloom.cli.main",
            "design",
            "--example",
            example,
            "-o",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _whose(out: Path, hashes: dict[str, str]) -> str | None:
    if not out.exists():
        return None
    assert verify_run(out) == [], "the output directory is not one whole run"
    manifest = read_manifest(out)
    assert manifest is not None
    return hashes[str(manifest["spec_hash"])]


def _staging(out: Path) -> list[Path]:
    return sorted(out.parent.glob(f".{out.name}.run-*"))


def _wait_for(condition: object, proc: subprocess.Popen[bytes], limit_s: float = 120) -> bool:
    """Poll ``condition`` (a callable) every millisecond until it holds or ``proc`` ends."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and proc.poll() is None:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.001)
    return False


@pytest.mark.slow
def test_a_killed_design_leaves_the_old_run_or_the_new_one_whole(tmp_path: Path) -> None:
    hashes = {spec_hash(parse_spec(example_text(n))): n for n in SPECS}
    out = tmp_path / "out"
    # how long each spec's run is open (staging directory made to switch), to aim the kills
    open_s = {}
    for example in SPECS:
        proc = _design(example, out)
        assert _wait_for(lambda: bool(_staging(out)), proc)
        started = time.monotonic()
        assert proc.wait(timeout=300) == 0
        open_s[example] = time.monotonic() - started
    current = _whose(out, hashes)
    rng = random.Random(20261201)
    interrupted = 0
    for i in range(KILLS):
        example = SPECS[i % 2]
        proc = _design(example, out)
        assert _wait_for(lambda: bool(_staging(out)), proc)
        if i % 4 == 3:  # at the switch: the manifest is in, the rename about to happen
            _wait_for(lambda: any((s / "manifest.json").exists() for s in _staging(out)), proc)
        else:  # anywhere while the stages run and the files are written
            time.sleep(rng.uniform(0.0, open_s[example]))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        interrupted += bool(_staging(out))
        after = _whose(out, hashes)
        assert after in (current, example), f"kill {i}: {after!r} is neither run"
        current = after
    assert interrupted >= KILLS // 2, "too few kills landed inside a run to test anything"
    # a complete run cleans up every leftover of the killed ones
    proc = _design(SPECS[0], out)
    assert proc.wait(timeout=300) == 0
    assert _whose(out, hashes) == SPECS[0]
    assert sorted(os.listdir(tmp_path)) == [".out.lock", "out"]
