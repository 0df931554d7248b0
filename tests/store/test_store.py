"""The design store on SQLite: a real small design recorded from the directory ``design -o``
writes; its files against the manifest, versions and parents, blobs stored once, pictures,
findings, summary figures, references, runs, gc and tokens."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from sqlalchemy import text
from store_fixtures import design_dir, two_building_spec

from clusterloom.findings import Severity
from clusterloom.pipeline import Design
from clusterloom.store import Store, StoreError, open_store
from clusterloom.store.summary import staged_findings
from clusterloom.units import to_usd, to_watts


def _manifest(run_dir: Path) -> dict[str, tuple[str, int]]:
    doc = json.loads((run_dir / "manifest.json").read_text())
    return {e["path"]: (e["sha256"], e["bytes"]) for e in doc["files"]}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_artifacts_are_the_manifests_files(store: Store, campus: tuple[Design, Path]) -> None:
    design, run_dir = campus
    rec = store.record_design(design, run_dir)
    listed = _manifest(run_dir)
    got = {a.name: a for a in store.artifacts(rec.id)}
    assert set(got) == set(listed) | {"manifest.json"}
    for name, (sha, size) in listed.items():
        assert (got[name].sha256, got[name].size) == (sha, size)
        blob = store.artifact_path(rec.id, name)
        assert _sha(blob) == sha and blob.is_relative_to(store.blobs.root)
    assert got["cabling/cut_sheet.csv"].media_type == "text/csv"
    assert got["design.json"].media_type == "application/json"


def test_same_design_twice_is_version_two_with_blobs_once(
    store: Store, campus: tuple[Design, Path]
) -> None:
    design, run_dir = campus
    first = store.record_design(design, run_dir, user="ann")
    stored = store.blobs.stored()
    second = store.record_design(design, run_dir, user="bob")
    assert (first.version, second.version) == (1, 2)
    assert (first.parent, second.parent) == (None, first.id)
    assert first.spec_hash == second.spec_hash == design.provenance.spec_hash
    assert store.blobs.stored() == stored  # every file, table and picture stored once
    assert [d.id for d in store.designs()] == [second.id, first.id]  # newest first
    assert len(store.specs()) == 1 and store.specs()[0]["version"] == 1
    with store.engine.connect() as con:
        assert con.execute(text("SELECT count(*) FROM blobs")).scalar() == len(stored)
    assert len({a.sha256 for a in store.artifacts(second.id)}) <= len(stored)


def test_spec_versions_follow_the_name(store: Store, tmp_path: Path) -> None:
    small, small_dir = design_dir(two_building_spec(accelerators=32), tmp_path / "a")
    big, big_dir = design_dir(two_building_spec(accelerators=64), tmp_path / "b")
    a = store.record_design(small, small_dir)
    b = store.record_design(big, big_dir)
    specs = {s["hash"]: s for s in store.specs("store-campus")}
    assert specs[b.spec_hash]["version"] == 2 and specs[b.spec_hash]["parent"] == a.spec_hash
    assert specs[a.spec_hash]["parent"] is None
    explicit = store.record_design(small, small_dir, parent=b.ref)
    assert explicit.parent == b.id and explicit.version == 3


def test_summary_figures_are_the_designs(store: Store, campus: tuple[Design, Path]) -> None:
    design, run_dir = campus
    s = store.record_design(design, run_dir).summary
    assert s["accelerators"] == 64 and s["nodes"] == 8
    assert s["switches"] == design.bom.switches
    assert s["cost_usd"] == to_usd(design.bom.cost_cents)
    assert s["power_w"] == to_watts(design.bom.power_mw)
    assert s["links"] == design.fabric("backend").topology.n_links
    assert design.cabling is not None
    assert s["cables"] == design.cabling.totals.realized
    assert s["halls"] == 2 and s["bom_basis"] == "cabling"
    counts = {sev: sum(1 for f in design.findings if f.severity is sev) for sev in Severity}
    assert (s["errors"], s["warnings"], s["checks_passed"]) == (
        counts[Severity.ERROR],
        counts[Severity.WARNING],
        counts[Severity.INFO],
    )


def test_findings_keep_their_stage_and_order(store: Store, campus: tuple[Design, Path]) -> None:
    design, run_dir = campus
    rec = store.record_design(design, run_dir)
    found = store.findings(rec.id)
    assert found == staged_findings(design)
    assert [(f["severity"], f["code"], f["message"], f["object"]) for f in found] == [
        (f.severity.value, f.code, f.message, f.where) for f in design.findings
    ]
    assert {f["stage"] for f in found} <= {"fabric:backend", "placement", "cabling"}
    assert {"fabric:backend", "placement", "cabling"} <= {f["stage"] for f in found}


def test_pictures_are_svg_by_name(store: Store, campus: tuple[Design, Path]) -> None:
    design, run_dir = campus
    rec = store.record_design(design, run_dir)
    names = store.pictures(rec.id)
    assert names[0] == "tiers/backend"
    assert {"campus", "hall/b1/h1", "hall/b2/h1", "fibres"} <= set(names)
    assert any(n.startswith("fill/") for n in names)
    for name in names:
        assert store.picture(rec.id, name).lstrip().startswith("<svg")
    with pytest.raises(StoreError, match="not a picture"):
        store.picture(rec.id, "hall/../../etc/passwd")


def test_references(
    store: Store, campus: tuple[Design, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    design, run_dir = campus
    ids = iter(["abcdef100000", "abcdef200000"])
    monkeypatch.setattr("clusterloom.store.store.new_id", lambda: next(ids))
    one = store.record_design(design, run_dir)
    two = store.record_design(design, run_dir)
    assert store.design("abcdef100000") == one
    assert store.design("store-campus@1") == one
    assert store.design("store-campus") == two  # a name alone: its newest version
    assert store.design("abcdef2") == two
    with pytest.raises(StoreError, match="ambiguous"):
        store.design("abcdef")
    for bad in ("abcde", "store-campus@9", "store-campus@x", "nothing", "'; DROP TABLE designs"):
        with pytest.raises(StoreError):
            store.design(bad)
    with pytest.raises(StoreError, match="not found"):
        store.run("abcdef100000")


@pytest.mark.parametrize(
    "name", ["../x", "/etc/passwd", "cabling/../manifest.json", "", "cabling", "./design.json"]
)
def test_traversal_like_names_are_refused(
    store: Store, campus: tuple[Design, Path], name: str
) -> None:
    design, run_dir = campus
    rec = store.record_design(design, run_dir)
    with pytest.raises(StoreError, match="not an artifact"):
        store.artifact_path(rec.id, name)


def test_unknown_owner_is_refused(store: Store) -> None:
    for call in (store.artifacts, store.tables):
        with pytest.raises(StoreError, match="not found"):
            call("../../etc")
    with pytest.raises(StoreError, match="not found"):
        store.artifact_path("000000000000", "design.json")


def test_a_changed_run_directory_is_refused(store: Store, tmp_path: Path) -> None:
    design, run_dir = design_dir(two_building_spec(accelerators=32), tmp_path / "out")
    with (run_dir / "bom.csv").open("a") as fh:
        fh.write("tampered\n")
    with pytest.raises(StoreError, match=r"bom\.csv differs from the manifest"):
        store.record_design(design, run_dir)
    assert store.designs() == []
    with pytest.raises(StoreError, match=r"no design\.json"):
        store.record_design(design, tmp_path)


def test_gc_removes_only_unreferenced_blobs(store: Store, campus: tuple[Design, Path]) -> None:
    design, run_dir = campus
    rec = store.record_design(design, run_dir)
    kept = store.blobs.stored()
    orphan, size = store.blobs.put_bytes(b"nobody refers to me")
    fresh, _ = store.blobs.put_bytes(b"written a moment ago")
    old = time.time() - 7200
    os.utime(store.blobs.path(orphan), (old, old))
    assert store.gc() == (1, size)  # the fresh one is within the grace period
    assert store.blobs.stored() == {**kept, fresh: len(b"written a moment ago")}
    for a in store.artifacts(rec.id):
        assert _sha(store.artifact_path(rec.id, a.name)) == a.sha256
    assert store.gc(grace_s=0) == (1, len(b"written a moment ago"))
    assert store.blobs.stored() == kept
    assert store.gc(grace_s=0) == (0, 0)
    assert store.table(rec.id, "cut_sheet", limit=1).total > 0


def test_blobs_are_whole_and_once(store: Store, tmp_path: Path) -> None:
    sha, size = store.blobs.put_bytes(b"x" * 10)
    again = store.blobs.put_file(_write(tmp_path / "f", b"x" * 10))
    assert again == (sha, size) == (hashlib.sha256(b"x" * 10).hexdigest(), 10)
    assert [p.name for p in store.blobs.root.rglob("*") if p.is_file()] == [sha]
    with pytest.raises(StoreError, match="not a blob hash"):
        store.blobs.path("../" + "0" * 61)


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_tokens_keep_only_a_hash(store: Store) -> None:
    token_id, secret = store.add_token("ann", "write")
    read_id, read_secret = store.add_token("bob", "read")
    got = store.check_token(secret)
    assert got is not None and (got.id, got.user, got.role, got.revoked) == (
        token_id,
        "ann",
        "write",
        False,
    )
    assert store.check_token(read_secret) is not None
    assert store.check_token(read_secret).role == "read"  # type: ignore[union-attr]
    with store.engine.connect() as con:
        rows = con.execute(text("SELECT * FROM tokens")).fetchall()
    dumped = repr(rows)
    assert secret not in dumped and read_secret not in dumped
    assert hashlib.sha256(secret.encode()).hexdigest() in dumped
    store.revoke_token(token_id)
    assert store.check_token(secret) is None
    assert store.check_token(read_secret) is not None
    assert store.check_token("not-a-token") is None and store.check_token("") is None
    assert store.check_token(secret[:-1]) is None
    with pytest.raises(StoreError, match="not found"):
        store.revoke_token("nope")
    with pytest.raises(StoreError, match="read or write"):
        store.add_token("ann", "admin")  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="user"):
        store.add_token("", "read")
    assert [(t.id, t.revoked) for t in store.tokens()] == [(token_id, True), (read_id, False)]


def test_a_run_is_recorded_with_its_figures(
    store: Store, campus: tuple[Design, Path], campus_run: Path
) -> None:
    design, run_dir = campus
    rec = store.record_design(design, run_dir)
    run = store.record_run(campus_run, design_id=rec.ref)
    assert run.design_id == rec.id and store.runs(rec.id) == [run] and store.run(run.id) == run
    assert run.scenario == json.loads((campus_run / "scenario.json").read_text())
    flows = pq.read_table(campus_run / "flows.parquet").to_pylist()
    assert set(run.summary) == {"roce-ecmp", "ideal"}
    for transport, figures in run.summary.items():
        mine = [f for f in flows if f["transport"] == transport]
        finished = [f["fct_us"] for f in mine if f["fct_us"] is not None]
        assert figures["total"] == len(mine) and figures["finished"] == len(finished)
        assert figures["fct_max_us"] == pytest.approx(max(finished))
        assert figures["fct_p50_us"] <= figures["fct_p99_us"] <= figures["fct_max_us"]
    assert run.summary["ideal"]["vs_ideal"] == pytest.approx(1.0)
    assert store.tables(run.id) == ["flows", "groups", "link_utilisation", "utilisation"]
    page = store.table(run.id, "flows", sort="fct_us", descending=True, limit=1)
    assert page.rows[0][page.columns.index("fct_us")] == pytest.approx(
        max(f["fct_us"] for f in flows if f["fct_us"] is not None)
    )
    names = {a.name for a in store.artifacts(run.id)}
    assert {"flows.parquet", "scenario.json", "simulation.html", "manifest.json"} <= names
    with pytest.raises(StoreError, match=r"scenario\.json"):
        store.record_run(run_dir, design_id=None)


def test_open_store_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLUSTERLOOM_STORE", f"sqlite:///{tmp_path / 'env' / 'x.db'}")
    s = open_store()
    assert s.blobs.root == tmp_path / "env" / "x.db.blobs" and (tmp_path / "env" / "x.db").exists()
    s.close()
    monkeypatch.delenv("CLUSTERLOOM_STORE")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    s = open_store()
    assert (tmp_path / "home" / ".clusterloom" / "store.db").is_file()
    s.close()
    for bad in ("not a url", "nosuchdb://x/y", "postgresql+psycopg://u@127.0.0.1:1/none"):
        with pytest.raises(StoreError) as info:
            open_store(bad)
        assert "\n" not in str(info.value)
    with pytest.raises(StoreError) as info:
        open_store("postgresql://u:hunter2@127.0.0.1:1/none")
    assert "hunter2" not in str(info.value)


def test_a_jobs_summary_has_its_step_time_and_no_site_figures() -> None:
    """No site: no racks, halls or cables; a job: its predicted step time in ms; findings from
    the workload stage keep that stage."""
    from clusterloom.store.summary import design_summary
    from helpers import design_of, job_spec

    design = design_of(job_spec())
    assert design.workload is not None
    s = design_summary(design)
    assert s["step_ms"] == pytest.approx(design.workload.timing.step_s * 1e3)
    assert s["bom_basis"] == "estimate" and not {"racks", "halls", "cables"} & set(s)
    stages = [f["stage"] for f in staged_findings(design)]
    assert stages == sorted(stages, key=lambda st: st != "workload")  # the workload's first
    assert stages.count("workload") == len(design.workload.findings)
