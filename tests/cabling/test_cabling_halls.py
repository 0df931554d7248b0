"""Cabling's routes by hall (``cabling.halls``) on an executor give the serial run's cabling,
byte for byte: moe-2k's four scalable units on two halls of two rows, so each hall's routes
are a task of their own and the backbones between the halls are routed after them::

    h1: rows 1-2 ── door ══ hall segment ══ door ── rows 1-2 :h2
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from clusterloom.cabling import Cabling, cable
from clusterloom.cabling.halls import BETWEEN_HALLS, WHOLE, hall_parts, route_by_hall
from clusterloom.cabling.route import route_pairs, spread
from clusterloom.cli.main import app
from clusterloom.exec import LocalExecutor, Outcome, Task
from clusterloom.pipeline import Design, run_design
from clusterloom.spec import parse_spec
from helpers import two_hall_spec_text

ROUTE_TASK = "clusterloom.cabling.halls:route_task"


class _Counting(LocalExecutor):
    """The local executor, recording the tasks it was given and the outcomes it gave; with
    ``break_first``, the first task of each call runs with a wrong SHA-256 (its shared file
    is refused: the task fails)."""

    def __init__(self, workers: int, break_first: bool = False) -> None:
        super().__init__(workers)
        self.given: list[Task] = []
        self.outcomes: list[Outcome] = []
        self.break_first = break_first
        self._first = False

    def _submit(self, task: Task) -> Any:
        self.given.append(task)
        if self._first:
            self._first = False
            task = Task(task.fn, {**task.inputs, "sha256": "0" * 64})
        return super()._submit(task)

    def run(self, tasks: Iterable[Task], **kw: Any) -> Iterator[Outcome]:
        self._first = self.break_first
        for o in super().run(tasks, **kw):
            self.outcomes.append(o)
            yield o


def _arrays(c: Cabling) -> dict[str, Any]:
    """Every array of a cabling as bytes, and its other fields but the tables it was given."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(c):
        v = getattr(c, f.name)
        if isinstance(v, np.ndarray):
            out[f.name] = (v.dtype.str, v.shape, v.tobytes())
        elif f.name not in ("media", "pathways"):
            out[f.name] = v
    return out


@pytest.fixture(scope="module")
def placed() -> Design:
    return run_design(parse_spec(two_hall_spec_text()), compare=False, cable=False)


@pytest.fixture(scope="module")
def serial(placed: Design) -> Cabling:
    assert placed.placement is not None
    c = cable(placed.spec, placed.fabrics, placed.placement)
    assert set(c.frame_hall[c.trunk_a[c.trunk_kind == 0]].tolist()) == {0, 1}  # trunks in both
    assert (c.trunk_kind == 1).any()  # and backbones join the halls
    return c


def test_each_hall_s_routes_on_a_pool_give_the_serial_cabling(
    placed: Design, serial: Cabling
) -> None:
    assert placed.placement is not None
    with _Counting(2) as ex:
        pooled = cable(placed.spec, placed.fabrics, placed.placement, executor=ex)
    # two routings go through the executor (the channels' estimates and the cables between
    # frames), one task per hall each
    assert [(t.fn, t.inputs["part"]) for t in ex.given] == [(ROUTE_TASK, 0), (ROUTE_TASK, 1)] * 2
    assert all(o.ok for o in ex.outcomes)
    assert _arrays(pooled) == _arrays(serial)


def test_a_failing_hall_task_is_routed_again_in_the_driver(placed: Design, serial: Cabling) -> None:
    assert placed.placement is not None
    with _Counting(1, break_first=True) as ex:
        again = cable(placed.spec, placed.fabrics, placed.placement, executor=ex)
    failed = [o for o in ex.outcomes if not o.ok]
    assert len(failed) == 2 and all("SHA-256 differs" in o.error for o in failed)
    assert _arrays(again) == _arrays(serial)


def test_pairs_fall_in_their_hall_between_halls_or_the_whole_graph(serial: Cabling) -> None:
    pw = serial.pathways
    pos0 = int(np.flatnonzero(pw.seg_hall == 0)[0])
    a0, b0 = int(pw.seg_a[pos0]), int(pw.seg_b[pos0])
    a1 = int(pw.seg_a[np.flatnonzero(pw.seg_hall == 1)[0]])
    door0, door1 = (int(d) for d in pw.hall_door)
    parts = hall_parts(pw, np.array([a0, a1, door0, a1]), np.array([b0, door1, door1, a1]))
    assert [(h, idx.tolist()) for h, idx in parts] == [(0, [0]), (1, [1, 3]), (BETWEEN_HALLS, [2])]
    # a pair from one hall's tray to the other's fits no part: everything on the whole graph
    whole = hall_parts(pw, np.array([a0, door0]), np.array([a1, door1]))
    assert [(h, idx.tolist()) for h, idx in whole] == [(WHOLE, [0, 1])]


def test_routes_by_hall_are_the_whole_graph_s_shortest_and_spread_alike(serial: Cabling) -> None:
    """A hall's route never leaves it (it would pass its door twice): routed on the hall's
    own trays, every cable between frames has the length the whole graph gives it."""
    pw = serial.pathways
    src = serial.frame_node[serial.trunk_a]
    dst = serial.frame_node[serial.trunk_b]
    length, pair, seg, _ = route_by_hall(pw, src, dst)
    whole, _, _ = route_pairs(pw, src, dst)
    assert np.isfinite(length).all() and length.tobytes() == whole.tobytes()
    walked = np.bincount(pair, weights=pw.seg_length_m[seg], minlength=length.shape[0])
    assert np.allclose(walked, length)
    assert (np.diff(pair) >= 0).all()  # grouped by pair
    # cables of two thirds of a tray each (some trays overflow, so spreading is tried): by
    # hall, the same routes as spreading on the whole graph, to the byte
    area = pw.seg_capacity_mm2.min() * 2 / 3 * np.ones(src.shape[0])
    base = np.zeros(pw.n_segments)
    by_hall = route_by_hall(pw, src, dst, area, base)
    at_once = spread(pw, src, dst, area, base)
    load = np.bincount(at_once[2], weights=area[at_once[1]], minlength=pw.n_segments)
    assert (load > pw.seg_capacity_mm2).any()
    assert [a.tobytes() for a in by_hall[:3]] == [a.tobytes() for a in at_once[:3]]
    assert by_hall[3] == at_once[3]


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for sub in ("cabling", "netbox")
        for p in sorted((root / sub).rglob("*"))
        if p.is_file()
    }


def test_cable_writes_the_same_files_serially_and_on_a_pool_of_two(tmp_path: Path) -> None:
    spec = tmp_path / "two-halls.yaml"
    spec.write_text(two_hall_spec_text())
    runner = CliRunner()
    got = {}
    for workers in ("1", "2"):
        out = tmp_path / f"out-{workers}"
        done = runner.invoke(app, ["cable", str(spec), "-o", str(out), "--workers", workers])
        assert done.exit_code in (0, 1), done.output
        got[workers] = _files(out)
    assert "cabling/cut_sheet.csv" in got["1"] and "cabling/trunks.csv" in got["1"]
    assert got["2"] == got["1"]
