"""Hostile htsim files: every number is bounded (module docstring of ``sim.htsim``, "Input
limits") and refused with its line named, never an overflow, a crash or a huge allocation."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterloom.errors import SpecError
from clusterloom.sim import htsim
from clusterloom.sim.htsim import (
    HTSIM_MAX_CONNECTIONS,
    HTSIM_MAX_FILE_BYTES,
    HTSIM_MAX_NODES,
    HTSIM_MAX_PROBLEMS,
    HTSIM_MAX_SIZE,
    HTSIM_MAX_START_PS,
    parse_htsim,
    read_htsim,
)
from clusterloom.units import PS_PER_US

HEAD = "Nodes 4\nConnections 1\n"
TRIGGERED = (
    "Nodes 4\nConnections 2\nTriggers 1\n0->1 id 1 start 0 size 5 recv_done_trigger 1\n"
    "1->2 id 2 trigger 1 size 5\n"
)


def _problem(text: str, line: int) -> str:
    """The message of ``line``; fails unless the file is refused with that line named."""
    with pytest.raises(SpecError) as err:
        parse_htsim(text, source="bad.cm")
    by_line = {p.where: p.message for p in err.value.problems}
    assert f"bad.cm line {line}" in by_line, by_line
    return by_line[f"bad.cm line {line}"]


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        # the reported crashes: OverflowError / float inf / a host count with no bound
        (HEAD + "0->1 id 1 start 0 size 99999999999999999999999\n", 3, "0..2147483647"),
        (HEAD + "0->1 id 1 start 1e30 size 5\n", 3, "'start 1e30'"),
        (HEAD + "0->1 id 1 start 1e400 size 5\n", 3, "'start 1e400'"),
        ("Nodes 99999999999\nConnections 1\n0->1 id 1 start 0 size 5\n", 1, "Nodes 99999999999"),
        # just past each bound
        (HEAD + f"0->1 start 0 size {HTSIM_MAX_SIZE + 1}\n", 3, "out of range"),
        (HEAD + f"0->1 start {HTSIM_MAX_START_PS + 1} size 5\n", 3, "picoseconds"),
        (HEAD + f"0->1 start {HTSIM_MAX_START_PS}.5 size 5\n", 3, "picoseconds"),
        (f"Nodes {HTSIM_MAX_NODES + 1}\nConnections 0\n", 1, "out of range"),
        (f"Nodes 4\nConnections {HTSIM_MAX_CONNECTIONS + 1}\n", 2, "out of range"),
        (f"Nodes 4\nConnections 0\nTriggers {HTSIM_MAX_CONNECTIONS + 1}\n", 3, "out of range"),
        (HEAD + "0->1 id 2147483648 start 0 size 5\n", 3, "'id 2147483648'"),
        (HEAD + "0->1 start 0 size 5 prio 99999999999999999999999\n", 3, "'prio"),
        (HEAD + "99999999999999999999->1 start 0 size 5\n", 3, "host ids are 0.."),
        (HEAD + f"{HTSIM_MAX_NODES}->1 start 0 size 5\n", 3, "host ids are 0.."),
        (HEAD + "0->1 start 0 size " + "9" * 5000 + "\n", 3, "out of range"),
        (HEAD + "0->1 start 0 size " + "0" * 5000 + "1 id " + "7" * 5000 + "\n", 3, "'id 777"),
        (TRIGGERED + "trigger id 1 barrier count 99999999999999999999\n", 6, "'count"),
        (TRIGGERED + "trigger id 99999999999999999999 oneshot\n", 6, "'id 9999"),
        # non-finite, negative, signed and non-ASCII numbers
        (HEAD + "0->1 start nan size 5\n", 3, "'start nan'"),
        (HEAD + "0->1 start inf size 5\n", 3, "'start inf'"),
        (HEAD + "0->1 start -0 size 5\n", 3, "'start -0'"),
        (HEAD + "0->1 start -1 size 5\n", 3, "'start -1'"),
        (HEAD + "0->1 start +1 size 5\n", 3, "'start +1'"),
        (HEAD + "0->1 start 0 size -0\n", 3, "negative"),
        (HEAD + "0->1 start 0 size \u0663\n", 3, "'size \u0663'"),
        (HEAD + "\u0660->1 start 0 size 5\n", 3, "SRC->DST"),
        (HEAD + "0->1 start " + "9" * 400 + " size 5\n", 3, "picoseconds"),
        # the clusterloom comments: deep JSON, numbers past int64
        ("# clusterloom group-names " + "[" * 100_000 + "\n" + HEAD, 1, "nested too deeply"),
        ("# clusterloom flow-groups [[99999999999999999999, 1]]\n" + HEAD, 1, "groups -1.."),
        ("# clusterloom flow-groups [[0, 99999999999999999999]]\n" + HEAD, 1, "counts 0.."),
        ("# clusterloom flow-groups [[0, " + "9" * 5000 + "]]\n" + HEAD, 1, "expected JSON"),
    ],
)
def test_out_of_range_numbers_name_their_line(text: str, line: int, words: str) -> None:
    assert words in _problem(text, line)


def test_a_bad_header_is_reported_once() -> None:
    """``Nodes 99999999999`` is the problem, not also a missing ``Nodes`` header."""
    with pytest.raises(SpecError) as err:
        parse_htsim("Nodes 99999999999\nConnections 1\n0->1 id 1 start 0 size 5\n", source="x")
    [problem] = err.value.problems
    assert problem.where == "x line 1"
    assert problem.message == "'Nodes 99999999999': out of range, expected 0..16777216"


def test_the_bounds_themselves_are_accepted() -> None:
    t = parse_htsim(
        f"Nodes {HTSIM_MAX_NODES}\nConnections 1\n"
        f"{HTSIM_MAX_NODES - 1}->0 id 2147483647 start {HTSIM_MAX_START_PS} "
        f"size {HTSIM_MAX_SIZE} prio 2147483647\n"
    )
    assert t.n_hosts == HTSIM_MAX_NODES
    assert t.src.tolist() == [HTSIM_MAX_NODES - 1]
    assert t.nbytes.tolist() == [HTSIM_MAX_SIZE]
    assert t.start_ps.tolist() == [HTSIM_MAX_START_PS]
    # leading zeros are not digits of the value
    t = parse_htsim(HEAD + "0" * 5000 + "3->01 start 500000.0 size " + "0" * 5000 + "7\n")
    assert t.src.tolist() == [3] and t.dst.tolist() == [1]
    assert t.nbytes.tolist() == [7] and t.start_ps.tolist() == [PS_PER_US // 2]


def test_too_many_bad_lines_stop_the_reader() -> None:
    text = HEAD + "junk\n" * (3 * HTSIM_MAX_PROBLEMS)
    with pytest.raises(SpecError) as err:
        parse_htsim(text, source="x")
    problems = err.value.problems
    assert len(problems) == HTSIM_MAX_PROBLEMS + 1
    assert problems[-1].where == f"x line {HTSIM_MAX_PROBLEMS + 3}"
    assert "stopped reading here" in problems[-1].message


def test_too_many_connections_stop_the_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(htsim, "HTSIM_MAX_CONNECTIONS", 3)
    lines = "".join(f"0->1 start 0 size {k}\n" for k in range(5))
    with pytest.raises(SpecError) as err:
        parse_htsim("Nodes 2\nConnections 5\n" + lines, source="x")
    [problem] = err.value.problems
    assert problem.where == "x line 6"
    assert "more than 3 connections" in problem.message
    assert "several files" in problem.message


def test_an_oversized_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.cm"
    with path.open("wb") as fh:  # sparse: takes no disk
        fh.truncate(HTSIM_MAX_FILE_BYTES + 1)
    with pytest.raises(SpecError) as err:
        read_htsim(path)
    [problem] = err.value.problems
    assert problem.where == str(path)
    assert "256 MiB limit" in problem.message and "several files" in problem.message


def test_an_oversized_text_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(htsim, "HTSIM_MAX_FILE_BYTES", 64)
    text = HEAD + "0->1 start 0 size 5\n" + "# padding\n" * 10
    with pytest.raises(SpecError, match="over the 0 MiB limit"):
        parse_htsim(text)
    path = tmp_path / "f.cm"
    path.write_text(text)
    with pytest.raises(SpecError, match=f"{len(text)} bytes"):
        read_htsim(path)
    # a file under the limit is read
    monkeypatch.setattr(htsim, "HTSIM_MAX_FILE_BYTES", len(text))
    assert read_htsim(path).nbytes.tolist() == [5]


def test_a_device_without_a_size_is_read_up_to_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """/dev/zero reports size 0 and never ends: the reader stops one byte past the limit."""
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    monkeypatch.setattr(htsim, "HTSIM_MAX_FILE_BYTES", 1024)
    with pytest.raises(SpecError, match="1025 bytes"):
        read_htsim("/dev/zero")
