"""``clusterloom conformance`` and ``clusterloom packetsim`` as a user meets them."""

from __future__ import annotations

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
