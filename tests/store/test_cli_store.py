"""``clusterloom store ...`` and ``design|simulate --store`` as a user meets them: a design
recorded by the command that wrote it, listed, shown and compared (tables and JSON), tokens
added and revoked, a change log imported, bad references and URLs one line with exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from store_fixtures import two_building_spec
from typer.testing import CliRunner

from clusterloom.changes import Approval, ChangePlan, Proposal, append_record
from clusterloom.cli.main import app
from clusterloom.export.outdir import verify_run
from clusterloom.store import open_store

runner = CliRunner()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """Two designs recorded by ``design --store``: the 64-GPU campus, then 32 GPUs of it."""
    root = tmp_path_factory.mktemp("cli")
    url = f"sqlite:///{root / 'store.db'}"
    for n, accelerators in enumerate((64, 32)):
        spec = root / f"spec{n}.yaml"
        spec.write_text(yaml.safe_dump(two_building_spec(accelerators=accelerators)))
        out = root / f"out{n}"
        result = runner.invoke(
            app, ["design", str(spec), "-o", str(out), "--store", "--store-url", url]
        )
        assert result.exit_code == 0, result.output
        assert f"recorded store-campus@{n + 1} (id " in result.stdout
        assert verify_run(out) == []
    return url, root


def _json(args: list[str]) -> object:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_ls_and_show(recorded: tuple[str, Path]) -> None:
    url, _ = recorded
    listed = _json(["store", "ls", "--json", "--store", url])
    assert isinstance(listed, list)
    assert [(d["name"], d["version"]) for d in listed] == [
        ("store-campus", 2),
        ("store-campus", 1),
    ]
    assert listed[0]["parent"] == listed[1]["id"]
    assert [d["summary"]["accelerators"] for d in listed] == [32, 64]
    table = runner.invoke(app, ["store", "ls", "--store", url], env={"COLUMNS": "80"})
    assert table.exit_code == 0
    assert listed[0]["id"] in table.stdout and "store-campus@1" in table.stdout
    shown = _json(["store", "show", "store-campus@1", "--json", "--store", url])
    assert isinstance(shown, dict)
    assert shown["design"]["id"] == listed[1]["id"]
    assert shown["tables"]["cut_sheet"] == 128  # 64 host links and 64 leaf-spine links
    assert "campus" in shown["pictures"]
    text = runner.invoke(app, ["store", "show", listed[1]["id"][:8], "--store", url])
    assert text.exit_code == 0 and "cut_sheet (128 rows)" in text.stdout


def test_diff(recorded: tuple[str, Path]) -> None:
    url, _ = recorded
    diff = _json(["store", "diff", "store-campus@1", "store-campus@2", "--json", "--store", url])
    assert isinstance(diff, dict)
    assert diff["summary"]["accelerators"] == {"a": 64, "b": 32, "delta": -32, "changed": True}
    assert diff["bom"]
    text = runner.invoke(app, ["store", "diff", "store-campus@1", "store-campus@2", "--store", url])
    assert text.exit_code == 0 and "accelerators" in text.stdout and "-32" in text.stdout
    removed = diff["changes"]["counts"]["devices_removed"]
    assert removed == len(diff["changes"]["devices"]["removed"]) > 0  # 64 -> 32 GPUs
    assert f"devices +0 -{removed}" in text.stdout


def test_tokens(recorded: tuple[str, Path]) -> None:
    url, _ = recorded
    added = runner.invoke(app, ["store", "token", "add", "ann", "--role", "write", "--store", url])
    assert added.exit_code == 0, added.output
    lines = added.stdout.strip().splitlines()
    token_id, secret = lines[0].split()[1], lines[-1]
    store = open_store(url)
    got = store.check_token(secret)
    assert got is not None and (got.id, got.user, got.role) == (token_id, "ann", "write")
    listed = runner.invoke(app, ["store", "token", "ls", "--store", url])
    assert token_id in listed.stdout and secret not in listed.stdout
    revoked = runner.invoke(app, ["store", "token", "revoke", token_id, "--store", url])
    assert revoked.exit_code == 0 and store.check_token(secret) is None
    bad = runner.invoke(app, ["store", "token", "add", "ann", "--role", "admin", "--store", url])
    assert bad.exit_code == 2 and bad.stderr.strip().splitlines() == [
        "error: --role 'admin': give read or write"
    ]


def test_import_records(recorded: tuple[str, Path]) -> None:
    url, root = recorded
    log = root / "changes.jsonl"
    plan = ChangePlan("cli-plan", "old", "0" * 64, ())
    for rec in (plan, Proposal("cli-prop", plan, "ann"), Approval("cli-prop", "bob", True)):
        append_record(log, rec)
    first = runner.invoke(app, ["store", "import-records", str(log), "--store", url])
    assert first.exit_code == 0 and "3 records read" in first.stdout and "3 new" in first.stdout
    again = runner.invoke(app, ["store", "import-records", str(log), "--store", url])
    assert again.exit_code == 0 and "0 new" in again.stdout


def test_gc(recorded: tuple[str, Path]) -> None:
    url, _ = recorded
    result = runner.invoke(app, ["store", "gc", "--store", url])
    assert result.exit_code == 0 and result.stdout.startswith("removed 0 blobs")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["store", "show", "nothing"], "error: design 'nothing': not found"),
        (["store", "show", "store-campus@7"], "error: design 'store-campus@7': not found"),
        (["store", "diff", "store-campus@1", "x@y"], "the version after @ must be a number"),
        (["store", "token", "revoke", "nope"], "error: token 'nope': not found"),
        (["store", "import-records", "/nonexistent.jsonl"], "cannot be read"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    recorded: tuple[str, Path], args: list[str], message: str
) -> None:
    url, _ = recorded
    result = runner.invoke(app, [*args, "--store", url])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]
    assert "Traceback" not in result.output


def test_bad_urls_and_flags(tmp_path: Path) -> None:
    for url in ("not a url", "nosuchdb://x/y"):
        result = runner.invoke(app, ["store", "ls", "--store", url])
        assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(two_building_spec(accelerators=32)))
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["design", str(spec), "-o", str(out), "--store", "--store-url", "bad url"]
    )
    assert result.exit_code == 2 and "is not a database URL" in result.stderr
    assert not out.exists()  # refused before any work
    alone = runner.invoke(app, ["design", str(spec), "-o", str(out), "--store-url", "x"])
    assert alone.exit_code == 2 and "give --store too" in alone.stderr
    sim = runner.invoke(app, ["simulate", str(spec), "--store"])
    assert sim.exit_code == 2 and "give -o DIR too" in sim.stderr


def test_simulate_store_records_the_run(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(two_building_spec(accelerators=32)))
    out = tmp_path / "sim"
    result = runner.invoke(
        app,
        [
            "simulate", str(spec), "--traffic", "permutation", "--size", "64KB",
            "--transport", "ideal", "-o", str(out), "--no-progress", "--store",
            "--store-url", url,
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    store = open_store(url)
    (run,) = store.runs()
    assert f"recorded run {run.id}" in result.stdout
    assert run.summary["ideal"]["finished"] == run.summary["ideal"]["total"] == 32
    assert {a.name for a in store.artifacts(run.id)} >= {"flows.parquet", "manifest.json"}
    shown = _json(["store", "show", run.id, "--json", "--store", url])
    assert isinstance(shown, dict) and shown["run"]["id"] == run.id
    assert shown["tables"]["flows"] == 32
    text = runner.invoke(app, ["store", "show", run.id[:6], "--store", url])
    assert text.exit_code == 0 and "ideal" in text.stdout and "32 / 32" in text.stdout


def test_a_designs_simulation_is_recorded_as_its_run(tmp_path: Path) -> None:
    """A spec with a scenario: ``design -o`` writes ``simulation/``, recorded as the design's
    run with its own tables."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    doc = two_building_spec(accelerators=32)
    doc["scenario"] = {"traffic": "permutation", "size": "64KB", "transports": ["ideal"]}
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(doc))
    result = runner.invoke(
        app, ["design", str(spec), "-o", str(tmp_path / "out"), "--store", "--store-url", url]
    )
    assert result.exit_code == 0, result.output
    store = open_store(url)
    (design,) = store.designs()
    (run,) = store.runs(design.id)
    assert run.design_id == design.id and run.scenario["traffic"] == "permutation"
    assert store.tables(run.id) == ["flows", "groups", "link_utilisation", "utilisation"]
    assert "simulation/flows.parquet" in {a.name for a in store.artifacts(design.id)}
    flows = {a.name: a.sha256 for a in store.artifacts(run.id)}["flows.parquet"]
    assert (
        flows == {a.name: a.sha256 for a in store.artifacts(design.id)}["simulation/flows.parquet"]
    )  # one blob, two owners
