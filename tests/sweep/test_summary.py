"""A sweep's cells over seeds: the Student t interval against its closed form, and the
grouping of rows into cells; the expansion of a sweep file into runs."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest

from clusterloom.sweep.file import expand, parse_sweep
from clusterloom.sweep.summary import interval, summarize_sweep


def test_the_interval_is_students_t_over_the_seeds() -> None:
    iv = interval([1.0, 2.0, 3.0])  # mean 2, sample sd 1
    # Student t with 2 degrees of freedom has a closed-form quantile: a * sqrt(2 / (1 - a^2))
    # with a = 2p - 1, here p = 0.975
    t = 0.95 * math.sqrt(2 / (1 - 0.95**2))
    assert iv.mean == 2.0 and iv.n == 3
    assert iv.half == pytest.approx(t / math.sqrt(3), rel=1e-9)
    assert (iv.low, iv.high) == pytest.approx((2 - iv.half, 2 + iv.half))
    assert interval([5.0, 5.0, 5.0, 5.0]).half == 0.0  # no spread, no width
    one = interval([7.0])
    assert one.mean == 7.0 and math.isnan(one.half)  # one seed: no interval
    assert interval([]).n == 0
    wide, narrow = interval([1.0, 3.0]), interval([1.0, 3.0] * 8)
    assert narrow.half < wide.half  # more seeds of the same spread: a narrower interval


def _row(transport: str, seed: int, makespan: int, finished: int = 4) -> dict[str, object]:
    return {
        "key": f"{transport}{seed}",
        "variant": "base",
        "transport": transport,
        "failure": "none",
        "seed": seed,
        "flows": 4,
        "finished": finished,
        "makespan_ps": makespan,
        "fct_p99_ps": float(makespan),
        "vs_ideal": makespan / 100,
    }


def test_cells_group_by_transport_and_leave_out_incomplete_runs() -> None:
    rows = [_row("b", 0, 200), _row("a", 1, 300), _row("a", 0, 100), _row("b", 1, 900, 3)]
    cells = summarize_sweep(pa.Table.from_pylist(rows))
    assert [(c.transport, c.runs, c.complete) for c in cells] == [("a", 2, 2), ("b", 2, 1)]
    a, b = cells
    assert a.completion_ps.mean == 200.0 and a.completion_ps.n == 2
    assert b.completion_ps.mean == 200.0 and b.completion_ps.n == 1  # the stuck seed left out
    assert summarize_sweep(pa.Table.from_pylist(rows[::-1])) == cells  # order does not matter


def test_a_grid_expands_variant_by_point_by_seed_over_the_base() -> None:
    sf = parse_sweep(
        "version: 1\nexample: x\nbase: {size: 1MB, transport: ideal}\n"
        "grid: {transport: [a, b], size: [2MB]}\nvariants: {v1: {}, v2: {}}\nseeds: [3, 5]\n"
    )
    runs = expand(sf)
    assert len(runs) == 2 * 2 * 2
    assert runs[0] == {"variant": "v1", "transport": "a", "size": "2MB", "seed": 3}
    assert [(r["variant"], r["transport"], r["seed"]) for r in runs[:4]] == [
        ("v1", "a", 3),
        ("v1", "a", 5),
        ("v1", "b", 3),
        ("v1", "b", 5),
    ]
