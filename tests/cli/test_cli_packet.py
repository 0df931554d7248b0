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
