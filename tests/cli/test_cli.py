"""The command line as a user meets it: exit codes, one line per problem, no tracebacks."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterloom.cli.main import app
from clusterloom.errors import SpecError
from clusterloom.examples import example_names, example_text

runner = CliRunner()

SMALL = """\
version: 1
name: small
compute:
  accelerators: 64
  accelerators_per_node: 8
  nic: {ports_per_accelerator: 1, port_speed_gbps: 400}
fabrics:
  backend: {switch: sn5600}
"""


def _write(tmp_path: Path, text: str, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_examples_lists_every_builtin() -> None:
    result = runner.invoke(app, ["examples"])
    assert result.exit_code == 0
    listed = [line.split()[0] for line in result.stdout.splitlines() if line.strip()]
    assert listed == list(example_names())
    assert {"hgx-1k-roce", "rail-16k", "nvl72-64k", "mrc-131k"} <= set(listed)


def test_validate_good_spec_exits_zero(tmp_path: Path) -> None:
    result = runner.invoke(app, ["validate", str(_write(tmp_path, SMALL))])
    assert result.exit_code == 0, result.output
    assert "0 errors" in result.stdout


def test_unknown_field_is_one_line_with_path_and_exit_2(tmp_path: Path) -> None:
    bad = SMALL.replace("backend: {switch: sn5600}", "backend: {switch: sn5600, colour: red}")
    result = runner.invoke(app, ["validate", str(_write(tmp_path, bad))])
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1
    assert lines[0].startswith("error: fabrics.backend.colour: unknown field")
    assert "Traceback" not in result.output


def test_several_problems_one_line_each(tmp_path: Path) -> None:
    bad = SMALL.replace("accelerators: 64", "accelerators: 65").replace(
        "switch: sn5600", "switch: nosuch"
    )
    result = runner.invoke(app, ["fabric", str(_write(tmp_path, bad))])
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    wheres = [line.split(":")[1].strip() for line in lines]
    assert "compute.accelerators" in wheres
    assert "fabrics.backend.switch" in wheres


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, SMALL + "  broken: [\n")
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    assert "line " in result.stderr
    assert "Traceback" not in result.output


def test_impossible_fabric_names_the_field(tmp_path: Path) -> None:
    big = SMALL.replace("accelerators: 64", "accelerators: 65536").replace(
        "backend: {switch: sn5600}", "backend: {switch: sn5600, tiers: 2}"
    )
    result = runner.invoke(app, ["fabric", str(_write(tmp_path, big))])
    assert result.exit_code == 2
    assert "error: fabrics.backend.tiers: 2 tiers reach at most" in result.stderr


def test_missing_file_and_both_inputs_are_refused(tmp_path: Path) -> None:
    missing = runner.invoke(app, ["validate", str(tmp_path / "nope.yaml")])
    assert missing.exit_code == 2
    assert "cannot read" in missing.stderr
    both = runner.invoke(app, ["validate", str(_write(tmp_path, SMALL)), "--example", "rail-16k"])
    assert both.exit_code == 2
    unknown = runner.invoke(app, ["validate", "--example", "nosuch"])
    assert unknown.exit_code == 2
    assert "known: " in unknown.stderr


def test_debug_lets_the_exception_through(tmp_path: Path) -> None:
    bad = SMALL.replace("version: 1", "version: 7")
    result = runner.invoke(app, ["--debug", "validate", str(_write(tmp_path, bad))])
    assert isinstance(result.exception, SpecError)


def test_init_writes_a_loadable_spec_and_refuses_to_overwrite(tmp_path: Path) -> None:
    target = tmp_path / "cluster.yaml"
    first = runner.invoke(app, ["init", str(target)])
    assert first.exit_code == 0, first.output
    assert target.read_text() == example_text("hgx-1k-roce")
    target.write_text("mine")
    second = runner.invoke(app, ["init", str(target)])
    assert second.exit_code == 2
    assert target.read_text() == "mine"
    forced = runner.invoke(app, ["init", str(target), "--example", "rail-16k", "--force"])
    assert forced.exit_code == 0
    assert target.read_text() == example_text("rail-16k")
    assert list(tmp_path.iterdir()) == [target]  # no temporary files left behind


@pytest.mark.parametrize("name", ["hgx-1k-roce", "rail-16k", "nvl72-64k"])
def test_fabric_on_examples(name: str) -> None:
    result = runner.invoke(app, ["fabric", "--example", name])
    assert result.exit_code == 0, result.output
    assert "options compared" in result.stdout


def test_workload_command_prints_the_step(tmp_path: Path) -> None:
    from helpers import job_spec

    result = runner.invoke(app, ["workload", str(_write(tmp_path, job_spec()))])
    assert result.exit_code == 0, result.output
    assert "step time" in result.stdout and "Biggest communication costs" in result.stdout
    no_job = runner.invoke(app, ["workload", str(_write(tmp_path, SMALL, "nojob.yaml"))])
    assert no_job.exit_code == 2
    assert no_job.stderr.strip().splitlines() == [
        "error: job: this spec has no job section to derive traffic from"
    ]


def test_bad_job_is_one_line_per_problem(tmp_path: Path) -> None:
    from helpers import job_spec

    bad = job_spec(parallelism={"tp": 2, "pp": 4, "dp": 4})
    result = runner.invoke(app, ["workload", str(_write(tmp_path, bad))])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert any(
        line.startswith("error: job.parallelism: tp 2 x pp 4 x cp 1 x dp 4") for line in lines
    )
    assert "Traceback" not in result.output


def test_simulate_compares_transports_and_refuses_bad_input(tmp_path: Path) -> None:
    spec = str(_write(tmp_path, SMALL))
    ok = runner.invoke(app, ["simulate", spec, "--transport", "roce-ecmp,ideal", "--size", "1MB"])
    assert ok.exit_code == 0, ok.output
    assert "roce-ecmp" in ok.stdout and "ideal" in ok.stdout and "1.00x" in ok.stdout
    fixed = runner.invoke(
        app,
        [
            "simulate",
            spec,
            "--transport",
            "mrc-spray",
            "--option",
            "mrc-spray.balance=0",
            "--option",
            "mrc-spray.evs=8",
            "--size",
            "1MB",
        ],
    )
    assert fixed.exit_code == 0, fixed.output
    for args, fragment in (
        (["--transport", "tcp-reno"], "unknown transport 'tcp-reno'"),
        (["--fail", "link:99999@1ms"], "no link 99999"),
        (["--fail", "link:1@soon"], "expected KIND:TARGET@START"),
        (["--traffic", "bogus"], "unknown traffic 'bogus'"),
        (["--size", "lots"], "not a size"),
        (["--option", "mrc-spray.evs=0"], "positive whole number"),
        (["--option", "mrc-spray.balance=2"], "1 (on) or 0 (off)"),
        (["--option", "tcp.cwnd=1"], "unknown transport 'tcp'"),
        (["--option", "mrc-spray.colour=1"], "unknown option of mrc-spray"),
        (["--option", "evs=16"], "expected TRANSPORT.KEY=NUMBER"),
    ):
        bad = runner.invoke(app, ["simulate", spec, *args])
        assert bad.exit_code == 2, (args, bad.output)
        assert fragment in bad.stderr and "Traceback" not in bad.output


def test_simulate_takes_the_spec_scenario_and_sweeps(tmp_path: Path) -> None:
    scenario = SMALL + (
        "scenario:\n"
        "  traffic: all-to-all\n"
        "  size: 64kB\n"
        "  transports: [roce-ecmp, ideal]\n"
        "  failures: ['link:70@5us']\n"
    )
    spec = str(_write(tmp_path, scenario))
    result = runner.invoke(app, ["simulate", spec])
    assert result.exit_code == 0, result.output
    assert "all-to-all: 4,032 flows, failures: link:70@5us" in result.stdout
    assert "mrc-spray" not in result.stdout
    swept = runner.invoke(
        app,
        [
            "simulate",
            spec,
            "--sweep",
            "leaf_spine",
            "--max-links",
            "3",
            "--jobs",
            "1",
            "--transport",
            "roce-ecmp",
        ],
    )
    assert swept.exit_code == 0, swept.output
    assert "every leaf_spine link failed in turn" in swept.stdout
    bad = runner.invoke(app, ["simulate", spec, "--sweep", "core"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output


def test_a_failure_after_the_run_is_refused(tmp_path: Path) -> None:
    spec = str(_write(tmp_path, SMALL))
    late = runner.invoke(app, ["simulate", spec, "--transport", "ideal", "--fail", "link:70@1s"])
    assert late.exit_code == 2
    assert "after every transport finished" in late.stderr and "Traceback" not in late.output


def test_command_line_transport_options_override_the_scenario() -> None:
    from clusterloom.sim.scenario import merge_options as _transport_options

    merged = _transport_options(
        {"mrc-spray": {"evs": 128.0, "detect_s": 1e-5}, "roce-ecmp": {"qps": 4.0}},
        ["mrc-spray.evs=16", "mrc-spray.balance=0"],
    )
    assert merged == {
        "mrc-spray": {"evs": 16.0, "detect_s": 1e-5, "balance": 0.0},
        "roce-ecmp": {"qps": 4.0},
    }
