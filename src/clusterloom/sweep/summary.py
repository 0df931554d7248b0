"""A sweep's figures over seeds: per (variant, failure, transport), completion and FCT with
confidence intervals, computed once here for the terminal and the sweep page.

The interval is Student's t over seeds: the mean of the n seeds' values plus or minus
``t(0.975, n - 1) * s / sqrt(n)``, ``s`` the sample standard deviation (a 95 % interval for the
mean, assuming the seeds' values are independent draws from a roughly normal distribution; with
one seed there is no interval). Completion (the last flow's finish) and the p99 FCT are taken
over the seeds whose runs finished every flow; ``complete`` counts them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["CONFIDENCE", "Interval", "SweepCell", "interval", "summarize_sweep"]

#: the confidence level of every interval
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Interval:
    """A mean over ``n`` values and the half-width of its interval (NaN with n < 2)."""

    mean: float
    half: float
    n: int

    @property
    def low(self) -> float:
        return self.mean - self.half

    @property
    def high(self) -> float:
        return self.mean + self.half


def interval(values: list[float], confidence: float = CONFIDENCE) -> Interval:
    """Student t interval of the mean of ``values`` (module docstring)."""
    from scipy import stats

    n = len(values)
    if n == 0:
        return Interval(math.nan, math.nan, 0)
    mean = math.fsum(values) / n
    if n < 2:
        return Interval(mean, math.nan, 1)
    s = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    t = float(stats.t.ppf(0.5 + confidence / 2, n - 1))
    return Interval(mean, t * s / math.sqrt(n), n)


@dataclass(frozen=True)
class SweepCell:
    """One (variant, failure, transport) over its seeds: runs, those that completed, and the
    intervals of completion (ps), p99 FCT (ps) and completion over the ideal bound."""

    variant: str
    failure: str
    transport: str
    runs: int
    complete: int
    completion_ps: Interval
    fct_p99_ps: Interval
    vs_ideal: Interval


def summarize_sweep(table: Any) -> tuple[SweepCell, ...]:
    """The cells of a sweep's result rows (``sweep.task.COLUMNS``), sorted by variant, failure
    and transport, so the same rows give the same cells in any order."""
    rows = table.to_pylist() if table is not None else []
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["variant"], r["failure"], r["transport"]), []).append(r)
    cells = []
    for (variant, failure, transport), mine in sorted(groups.items()):
        mine.sort(key=lambda r: r["seed"])
        done = [r for r in mine if r["finished"] == r["flows"]]
        cells.append(
            SweepCell(
                variant,
                failure,
                transport,
                len(mine),
                len(done),
                interval([float(r["makespan_ps"]) for r in done]),
                interval([float(r["fct_p99_ps"]) for r in done]),
                interval([r["vs_ideal"] for r in done if not math.isnan(r["vs_ideal"])]),
            )
        )
    return tuple(cells)
