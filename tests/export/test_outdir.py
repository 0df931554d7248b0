"""The output directory as a transaction (``export.outdir``): whole old run or whole new run."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from clusterloom.atomic import atomic_write
from clusterloom.errors import OutputError
from clusterloom.export.outdir import (
    MANIFEST,
    output_run,
    read_manifest,
    verify_run,
)


def _run(target: Path, files: dict[str, str], **kwargs: object) -> None:
    with output_run(target, spec_hash="h", version="v", **kwargs) as run:  # type: ignore[arg-type]
        for name, text in files.items():
            atomic_write(run.staging / name, text)


def _siblings(target: Path) -> list[str]:
    return sorted(p.name for p in target.parent.iterdir())


def test_a_run_appears_whole_with_a_manifest_written_last(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _run(out, {"a.csv": "x\n", "sub/b.json": "{}\n"})
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "a.csv",
        MANIFEST,
        "sub/b.json",
    ]
    manifest = read_manifest(out)
    assert manifest is not None and manifest["spec_hash"] == "h"
    assert [f["path"] for f in manifest["files"]] == ["a.csv", "sub/b.json"]  # type: ignore[index,union-attr]
    assert verify_run(out) == []
    # nothing but the run and its lock beside it
    assert _siblings(out) == [".out.lock", "out"]


def test_a_rerun_replaces_the_previous_run_leaving_no_stale_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _run(out, {"old.csv": "1\n", "both.csv": "old\n"})
    _run(out, {"both.csv": "new\n"})
    assert (out / "both.csv").read_text() == "new\n"
    assert not (out / "old.csv").exists()  # the review: 21 of 29 stale files were left
    assert verify_run(out) == []
    assert _siblings(out) == [".out.lock", "out"]


def test_a_failure_inside_the_run_leaves_the_previous_run_untouched(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _run(out, {"a.csv": "first\n"})
    with pytest.raises(RuntimeError), output_run(out) as run:
        atomic_write(run.staging / "a.csv", "second\n")
        raise RuntimeError("a stage failed half way")
    assert (out / "a.csv").read_text() == "first\n"
    assert verify_run(out) == []
    assert _siblings(out) == [".out.lock", "out"]


def test_leftovers_of_a_killed_run_are_cleaned_by_the_next(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _run(out, {"a.csv": "1\n"})
    for leftover in (".out.run-123-abcd", ".out.old-77-ffff"):
        (tmp_path / leftover / "deep").mkdir(parents=True)
        (tmp_path / leftover / "deep" / "part.csv.tmp").write_text("half")
    (tmp_path / ".other.run-1").mkdir()  # another target's: not ours to touch
    _run(out, {"a.csv": "2\n"})
    assert _siblings(out) == [".other.run-1", ".out.lock", "out"]


def test_a_concurrent_run_is_refused_while_one_holds_the_lock(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _run(out, {"a.csv": "1\n"})
    fd = os.open(tmp_path / ".out.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as another process's run would
        with pytest.raises(OutputError, match="another clusterloom run"):
            _run(out, {"a.csv": "2\n"})
    finally:
        os.close(fd)
    assert (out / "a.csv").read_text() == "1\n"
    _run(out, {"a.csv": "3\n"})  # the lock is released with its holder
    assert (out / "a.csv").read_text() == "3\n"


def test_foreign_files_are_refused_and_with_force_moved_aside_never_deleted(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    (out / "notes").mkdir(parents=True)
    (out / "notes" / "mine.txt").write_text("precious")
    with pytest.raises(OutputError, match="--force"):
        _run(out, {"a.csv": "1\n"})
    assert (out / "notes" / "mine.txt").read_text() == "precious"
    _run(out, {"a.csv": "1\n"}, force=True)
    assert (tmp_path / "out.moved-1" / "notes" / "mine.txt").read_text() == "precious"
    assert verify_run(out) == []
    # an empty directory is not foreign
    (tmp_path / "empty").mkdir()
    _run(tmp_path / "empty", {"a.csv": "1\n"})
    assert verify_run(tmp_path / "empty") == []


@pytest.mark.parametrize("given", ["", "  ", "/", "~", "."])
def test_targets_that_are_not_a_directory_of_their_own_are_refused(
    given: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(OutputError):
        _run(Path(given) if given.strip() else given, {"a.csv": "1\n"})  # type: ignore[arg-type]
    assert sorted(os.listdir(tmp_path)) == before


def test_the_working_directory_and_its_parents_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    monkeypatch.chdir(inner)
    for given in (".", "..", str(tmp_path)):
        with pytest.raises(OutputError, match="working directory"):
            _run(Path(given), {"a.csv": "1\n"})


def test_a_file_as_target_is_refused(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("a file")
    with pytest.raises(OutputError, match="is a file"):
        _run(tmp_path / "out", {"a.csv": "1\n"})


def test_verify_run_finds_a_tampered_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _run(out, {"a.csv": "1\n", "b.csv": "2\n"})
    (out / "a.csv").write_text("changed\n")
    (out / "b.csv").unlink()
    (out / "c.csv").write_text("extra\n")
    assert verify_run(out) == [
        "a.csv: differs from the manifest",
        "b.csv: missing",
        "c.csv: not in the manifest",
    ]
    assert verify_run(tmp_path) == [f"{tmp_path}: no clusterloom manifest"]


def test_the_same_run_twice_gives_the_same_bytes(tmp_path: Path) -> None:
    _run(tmp_path / "a", {"x.csv": "1\n"})
    _run(tmp_path / "b", {"x.csv": "1\n"})
    assert (tmp_path / "a" / MANIFEST).read_bytes() == (tmp_path / "b" / MANIFEST).read_bytes()


def test_a_symlinked_target_writes_where_the_link_points(tmp_path: Path) -> None:
    real = tmp_path / "disk" / "runs"
    real.mkdir(parents=True)
    (tmp_path / "out").symlink_to(real)
    _run(tmp_path / "out", {"a.csv": "1\n"})
    assert (tmp_path / "out").is_symlink()
    assert verify_run(real) == []


def test_without_an_atomic_exchange_two_renames_still_never_mix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where ``renameat2`` is missing (another OS, an old libc) the fallback is two renames."""
    import clusterloom.export.outdir as outdir

    if os.uname().sysname == "Linux":
        assert outdir._renameat2() is not None  # the atomic path is the one taken here
    monkeypatch.setattr(outdir, "_renameat2", lambda: None)
    out = tmp_path / "out"
    _run(out, {"a.csv": "1\n", "gone.csv": "x\n"})
    _run(out, {"a.csv": "2\n"})
    assert (out / "a.csv").read_text() == "2\n" and not (out / "gone.csv").exists()
    assert verify_run(out) == []
    assert _siblings(out) == [".out.lock", "out"]
