"""``clusterloom conformance`` and ``clusterloom packetsim`` as a user meets them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterloom.cli.main import app

runner = CliRunner()


def test_conformance_runs_checks_and_writes_junit(tmp_path: Path) -> None:
    junit = tmp_path / "report.xml"
    result = runner.invoke(
        app,
        [
            "conformance",
            "--transport",
            "mrc-spray,roce-ecmp",
            "--check",
            "LOS-01,ORD-04",
            "--junit",
            str(junit),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "3 passed, 0 failed, 1 not applicable" in result.output
    assert junit.read_text().count("<testcase") == 4


def test_conformance_catalogue_lists_every_check() -> None:
    result = runner.invoke(app, ["conformance", "--catalogue"])
    assert result.exit_code == 0 and "FAIL-04" in result.output and "ISO-02" in result.output


def test_conformance_bad_input_exits_2_with_one_line_per_problem(tmp_path: Path) -> None:
    result = runner.invoke(app, ["conformance", "--transport", "tcp"])
    assert result.exit_code == 2 and "unknown packet transport 'tcp'" in result.output
    bad = tmp_path / "bad.pkt"
    bad.write_text("transport mrc-spray\n1us > datum\n2us ? ack\n")
    result = runner.invoke(app, ["conformance", "--script", str(bad)])
    assert result.exit_code == 2
    assert "line 2" in result.output and "line 3" in result.output
    capture = tmp_path / "x.pcap"
    capture.write_bytes(b"nope")
    result = runner.invoke(app, ["conformance", "--pcap", str(capture)])
    assert result.exit_code == 2 and "not a pcap file" in result.output


def test_conformance_failing_script_exits_1(tmp_path: Path) -> None:
    script = tmp_path / "t.pkt"
    script.write_text(
        "transport roce-ecmp ack_every=1\nside receiver\n1us < data seq=0\n1us > ack cum=5\n"
    )
    result = runner.invoke(app, ["conformance", "--script", str(script)])
    assert result.exit_code == 1 and "fail" in result.output


def test_packetsim_on_an_example(monkeypatch: pytest.MonkeyPatch) -> None:
    from clusterloom.cli import main

    monkeypatch.setattr(main.out, "width", 200)
    result = runner.invoke(
        app,
        [
            "packetsim",
            "--example",
            "fat-tree-k16",
            "--hosts",
            "8",
            "--size",
            "64KB",
            "--transport",
            "mrc-spray,receiver-driven",
            "--crossval",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "8/8" in result.output and "receiver-driven" in result.output


def test_packetsim_bad_transport_and_failure() -> None:
    result = runner.invoke(app, ["packetsim", "--example", "fat-tree-k16", "--transport", "x"])
    assert result.exit_code == 2 and "unknown packet transport" in result.output
    result = runner.invoke(
        app,
        ["packetsim", "--example", "fat-tree-k16", "--hosts", "4", "--fail", "link:9999999@1us"],
    )
    assert result.exit_code == 2 and "no link" in result.output


def _parquet_schemas(directory: Path) -> dict[str, object]:
    import pyarrow.parquet as pq

    return {p.name: pq.read_schema(p) for p in sorted(directory.glob("*.parquet"))}


def test_packetsim_writes_what_simulate_writes(tmp_path: Path) -> None:
    """One writer for both engines: the same files and schemas, the page names the engine."""
    import json

    import pyarrow.parquet as pq

    common = ["--example", "fat-tree-k16", "--hosts", "8", "--size", "64KB", "--fail", "link:9@1us"]
    flow, packet = tmp_path / "flow", tmp_path / "packet"
    ran = runner.invoke(app, ["simulate", *common, "--transport", "mrc-spray,ideal", "-o", flow])
    assert ran.exit_code == 0, ran.output
    ran = runner.invoke(app, ["packetsim", *common, "--transport", "mrc-spray", "-o", packet])
    assert ran.exit_code == 0, ran.output
    assert f"results written to {packet}/" in ran.stdout
    assert sorted(p.name for p in packet.iterdir()) == sorted(p.name for p in flow.iterdir())
    assert _parquet_schemas(packet) == _parquet_schemas(flow)
    flows = pq.read_table(packet / "flows.parquet")
    assert flows.num_rows == 8 and flows.column("fct_us").null_count == 0
    whole = pq.read_table(packet / "groups.parquet").to_pylist()[-1]
    assert whole["name"] == "all flows" and whole["vs_ideal"] >= 1.0  # next to the bound
    assert pq.read_table(packet / "utilisation.parquet").num_rows == 0
    page = (packet / "simulation.html").read_text()
    assert "clusterloom packet-level simulation" in page
    assert "records no link utilisation" in page and "Packet-level counters" in page
    assert "flow-level simulation" in (flow / "simulation.html").read_text()
    assert json.loads((packet / "scenario.json").read_text())["engine"] == "packet"
    listed = json.loads((packet / "manifest.json").read_text())["files"]
    assert {"flows.parquet", "simulation.html", "scenario.json"} <= {f["path"] for f in listed}


_LINE = re.compile(r"^progress: (\S+) (\d+)% \(([\d.,]+) s elapsed, ~([\d.,]+) s left\)$")


@pytest.mark.parametrize(
    ("command", "transport"),
    [
        (["packetsim", "--transport", "mrc-spray", "--size", "4MB"], "mrc-spray"),
        (
            ["simulate", "--transport", "roce-ecmp", "--traffic", "all-to-all", "--size", "256KB"],
            "roce-ecmp",
        ),
    ],
)
def test_piped_progress_is_plain_lines_on_stderr(
    command: list[str], transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Piped (not a terminal): plain lines on stderr with a monotone percentage and an
    estimate of the time left that goes down; none with --no-progress. (Every report is
    printed here; the flow engine reports every event.)"""
    from clusterloom.cli import progress
    from clusterloom.sim.flow import engine

    monkeypatch.setattr(progress, "PLAIN_EVERY_S", 0.0)
    monkeypatch.setattr(engine, "PROGRESS_EVERY", 1)
    args = [*command, "--example", "fat-tree-k16", "--hosts", "64", "--rtol", "1e-9"]
    if command[0] == "packetsim":
        args = args[:-2]
    ran = runner.invoke(app, args)
    assert ran.exit_code == 0, ran.output
    assert "progress:" not in ran.stdout
    lines = [m for m in map(_LINE.match, ran.stderr.splitlines()) if m]
    assert len(lines) >= 3, ran.stderr
    mine = [m for m in lines if m.group(1) == transport]
    percent = [int(m.group(2)) for m in mine]
    left = [float(m.group(4).replace(",", "")) for m in mine]
    assert percent == sorted(percent) and percent[-1] > percent[0]
    assert left[-1] <= left[0] and (left[-1] < left[0] or left[0] == 0.0)
    quiet = runner.invoke(app, [*args, "--no-progress"])
    assert quiet.exit_code == 0 and "progress:" not in quiet.stderr


def test_plain_progress_estimates_from_the_work_done() -> None:
    """Set-up before the first measure does not count; the estimate falls as work is done;
    lines come at most every PLAIN_EVERY_S seconds."""
    from rich.console import Console

    from clusterloom.cli.progress import PLAIN_EVERY_S, Reporter
    from clusterloom.sim.predict import Step

    now = [0.0]
    console = Console(record=True, width=200)
    report = Reporter(console, "lines", clock=lambda: now[0])
    report(Step("roce-ecmp", note="8 flows"))
    for second in range(10, 31):  # 10 s of set-up, then 5% of the bytes a second
        now[0] = float(second)
        report(Step("roce-ecmp", done=5.0 * (second - 10), total=100.0))
    assert PLAIN_EVERY_S == 5.0
    assert console.export_text().splitlines() == [
        "progress: roce-ecmp 0% (10 s elapsed, time left unknown)",
        "progress: roce-ecmp 25% (15 s elapsed, ~15 s left)",
        "progress: roce-ecmp 50% (20 s elapsed, ~10 s left)",
        "progress: roce-ecmp 75% (25 s elapsed, ~5.0 s left)",
        "progress: roce-ecmp 100% (30 s elapsed, ~0.0 s left)",
    ]


def test_packetsim_options_and_their_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    from clusterloom.cli import main

    monkeypatch.setattr(main.out, "width", 200)
    base = ["packetsim", "--example", "fat-tree-k16", "--hosts", "8", "--size", "64KB"]
    ok = runner.invoke(
        app,
        [
            *base,
            *("--transport", "roce-ecmp", "--mtu", "4000", "--queue", "35", "--fail", "none"),
            *("--option", "ecn=off", "--option", "roce-ecmp.dcqcn=0"),
            *("--option", "pfc_xoff=15", "--option", "pfc_xon=12"),
        ],
    )
    assert ok.exit_code == 0, ok.output
    assert "8/8" in ok.output and "failures (from the spec)" not in ok.output
    bad = runner.invoke(app, [*base, "--option", "roce-ecmp.colour=1"])
    assert bad.exit_code == 2
    assert "roce-ecmp.colour" in bad.output and "allowed:" in bad.output and "dcqcn" in bad.output
    bad = runner.invoke(app, [*base, "--queue", "lots"])
    assert bad.exit_code == 2 and "--queue" in bad.output and "packets" in bad.output
    bad = runner.invoke(app, [*base, "--fail", "none", "--fail", "link:1@1us"])
    assert bad.exit_code == 2 and "--fail none" in bad.output


def test_packetsim_says_the_spec_failures_are_applied(monkeypatch: pytest.MonkeyPatch) -> None:
    """The example's scenario fails a spine at 50 us: shown as applied, not silently."""
    from clusterloom.cli import main

    monkeypatch.setattr(main.out, "width", 200)
    args = ["packetsim", "--example", "fat-tree-k16", "--hosts", "8", "--size", "64KB"]
    result = runner.invoke(app, [*args, "--transport", "mrc-spray"])
    assert result.exit_code == 0, result.output
    assert "failures (from the spec): switch:1200@50us applied; --fail none" in result.output


def test_packetsim_unfinished_flows_exit_3_naming_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run cut off by its time limit (end_us) leaves flows unfinished: exit 3, which and
    why."""
    from clusterloom.cli import main

    monkeypatch.setattr(main.out, "width", 200)
    monkeypatch.setattr(main.err, "width", 200)
    result = runner.invoke(
        app,
        [
            *("packetsim", "--example", "fat-tree-k16", "--hosts", "8", "--size", "2MB"),
            *("--transport", "mrc-spray", "--fail", "none", "--option", "end_us=20"),
        ],
    )
    assert result.exit_code == 3, result.output
    assert "8 of 8 flows did not finish" in result.output
    assert "still unfinished at the time limit (20.0 us): flow 0 (0->" in result.output
