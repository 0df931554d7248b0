"""The exit-code contract as a hostile user meets it: text never read as markup, one line per
problem with exit 2, exit 70 for a bug, a quiet end on a closed pipe, -o as a transaction."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterloom.cli import main as cli
from clusterloom.cli.main import app
from clusterloom.export.outdir import verify_run

runner = CliRunner()


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "a[/x].yaml"],  # a file name that is markup
        ["validate", "[bold]" * 3 + "[/]" * 500 + ".yaml"],
        ["simulate", "--example", "fat-tree-k16", "--traffic", "[/x]"],
        ["simulate", "--example", "fat-tree-k16", "--traffic", "[" * 500 + "]" * 500],
    ],
)
def test_brackets_in_messages_are_printed_as_text(args: list[str]) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    (line,) = _lines(result.stderr)
    assert line.startswith("error: ")
    # the bracketed text arrives as typed: nothing eaten as a style, no crash
    shown = args[-1]
    assert shown in line.replace("\n", "") or shown[:50] in line


def test_a_spec_with_brackets_in_its_description_designs(tmp_path: Path) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "version: 1\nname: br\ndescription: '[/x] [red]not a style[/red]'\n"
        "compute: {accelerators: 16}\nfabrics: {backend: {switch: qm9700}}\n"
    )
    result = runner.invoke(app, ["fabric", str(spec)])
    assert result.exit_code == 0, result.output


def test_an_internal_error_is_one_line_and_exit_70(monkeypatch: pytest.MonkeyPatch) -> None:
    import clusterloom.pipeline

    def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("integer modulo by zero")

    monkeypatch.setattr(clusterloom.pipeline, "run_design", broken)
    result = runner.invoke(app, ["validate", "--example", "fat-tree-k16"])
    assert result.exit_code == cli.EXIT_BUG
    (line,) = _lines(result.stderr)
    assert "internal error" in line and "ZeroDivisionError" in line and "--debug" in line
    # with --debug the traceback is the user's
    result = runner.invoke(app, ["--debug", "validate", "--example", "fat-tree-k16"])
    assert isinstance(result.exception, ZeroDivisionError)
    cli._state["debug"] = False


def test_a_closed_pipe_ends_quietly() -> None:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before anything is written, as `| head -0` does
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "clusterloom.cli.main", "examples"],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write)
    assert proc.returncode == cli.EXIT_CLOSED_PIPE
    assert proc.stderr == ""


@pytest.mark.parametrize("given", ["", "/", "."])
def test_unusable_output_directories_are_refused(
    given: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["design", "--example", "fat-tree-k16", "-o", given])
    assert result.exit_code == 2
    (line,) = _lines(result.stderr)
    assert line.startswith("error: -o ")
    assert os.listdir(tmp_path) == []


def test_a_second_run_into_the_same_directory_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    fd = os.open(tmp_path / ".out.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # a run in progress
        result = runner.invoke(app, ["design", "--example", "fat-tree-k16", "-o", str(out)])
    finally:
        os.close(fd)
    assert result.exit_code == 2
    assert "another clusterloom run" in result.stderr
    assert not out.exists()


def test_design_writes_a_whole_run_and_flows_only_when_asked(tmp_path: Path) -> None:
    spec = tmp_path / "job.yaml"
    from helpers import job_spec

    spec.write_text(job_spec(parallelism={"tp": 2, "pp": 2}))
    out = tmp_path / "out"
    result = runner.invoke(app, ["design", str(spec), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert verify_run(out) == []
    assert (out / "workload.json").exists() and not (out / "flows.npz").exists()
    result = runner.invoke(app, ["design", str(spec), "-o", str(out), "--flows"])
    assert result.exit_code == 0, result.output
    assert (out / "flows.npz").exists() and verify_run(out) == []


def test_validate_does_not_place_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """`validate` on a site answers from placement's pre-checks; the solve only with --place."""
    import clusterloom.placement.halls as halls  # where the hall models are solved

    def no_solve(*args: object, **kwargs: object) -> None:
        raise AssertionError("validate solved a placement")

    monkeypatch.setattr(halls, "place_hall", no_solve)
    result = runner.invoke(app, ["validate", "--example", "hgx-1k-roce"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["validate", "--example", "hgx-1k-roce", "--place"])
    assert result.exit_code == cli.EXIT_BUG  # the patched solve ran: placement was asked for


def test_validate_still_refuses_a_site_too_small(tmp_path: Path) -> None:
    import yaml

    from clusterloom.examples import example_text

    data = yaml.safe_load(example_text("hgx-1k-roce"))
    hall = data["site"]["buildings"][0]["halls"][0]
    hall["template"]["positions_per_row"] = 4  # every row kept, too short for the racks
    hall["blocked"] = []
    spec = tmp_path / "small.yaml"
    spec.write_text(yaml.safe_dump(data))
    result = runner.invoke(app, ["validate", str(spec)])
    assert result.exit_code == 2
    assert any("rack positions" in line for line in _lines(result.stderr)), result.stderr


@pytest.mark.parametrize("command", ["simulate", "packetsim"])
def test_a_simulation_whose_flows_did_not_all_finish_exits_3(command: str) -> None:
    """A host port down for good leaves its flows unfinished: the run did not complete."""
    args = [command, "--example", "fat-tree-k16", "--hosts", "8", "--size", "64KB"]
    args += ["--transport", "mrc-spray", "--fail", "port:0:0@0"]
    result = runner.invoke(app, args)
    assert result.exit_code == 3, result.output
    (line,) = [ln for ln in _lines(result.stderr) if ln.startswith("incomplete")]
    assert "mrc-spray" in line and "did not finish" in line
    # the same run with that port only slowed (a gray failure) completes
    result = runner.invoke(app, [*args[:-1], "port:0:0@0*0.5"])
    assert result.exit_code == 0, result.output
