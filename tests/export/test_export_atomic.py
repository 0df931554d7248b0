"""Atomic writes: the target holds the old content or the complete new one, never a torn file,
and no temporary file is left behind either way."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clusterloom.atomic import atomic_open, atomic_write
from clusterloom.errors import ClusterloomError, OutputError


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_atomic_write_text_creates_parents_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "out.txt"
    assert atomic_write(target, "héllo\n") == target
    assert target.read_bytes() == "héllo\n".encode()
    assert leftovers(target.parent) == []


def test_atomic_write_bytes(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    atomic_write(target, b"\x00\x01\xff")
    assert target.read_bytes() == b"\x00\x01\xff"


def test_text_mode_writes_lf_line_ends(tmp_path: Path) -> None:
    target = tmp_path / "lines.csv"
    with atomic_open(target) as fh:
        fh.write("a\nb\n")
    assert target.read_bytes() == b"a\nb\n"


def test_replaces_an_existing_file_with_plain_permissions(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    atomic_write(target, "new")
    assert target.read_text() == "new"
    umask = os.umask(0o022)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask


def test_exception_in_the_writer_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old content")
    with pytest.raises(RuntimeError, match="boom"), atomic_open(target) as fh:
        fh.write("half of the new content")
        raise RuntimeError("boom")
    assert target.read_text() == "old content"
    assert leftovers(tmp_path) == []


def test_exception_before_the_first_write_creates_nothing(tmp_path: Path) -> None:
    target = tmp_path / "never.txt"
    with pytest.raises(KeyError), atomic_open(target, "wb"):
        raise KeyError("x")
    assert not target.exists()
    assert leftovers(tmp_path) == []


def test_oserror_in_the_writer_becomes_output_error(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(OutputError, match=r"out\.txt") as info, atomic_open(target) as fh:
        fh.write("partial")
        raise OSError(28, "No space left on device")
    assert isinstance(info.value.__cause__, OSError)
    assert isinstance(info.value, ClusterloomError)
    assert target.read_text() == "old"
    assert leftovers(tmp_path) == []


def test_unwritable_location_is_an_output_error_naming_the_path(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where a directory should be")
    with pytest.raises(OutputError, match=r"file[/\\]out\.txt"):
        atomic_write(blocker / "out.txt", "data")
    assert blocker.read_text() == "a file where a directory should be"


def test_target_that_is_a_directory_is_an_output_error(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    with pytest.raises(OutputError, match="dir"):
        atomic_write(tmp_path / "dir", "data")
    assert (tmp_path / "dir").is_dir()
    assert leftovers(tmp_path) == []


def test_only_whole_file_modes() -> None:
    with pytest.raises(ValueError, match="mode"):
        atomic_open("x", "a")  # type: ignore[call-overload]
