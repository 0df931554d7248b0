"""The sweep file (``clusterloom sweep SWEEP.yaml``): what to run, checked before anything runs.

::

    version: 1
    example: fat-tree-k16          # or spec: PATH (relative to this file)
    engine: flow                   # flow (default) | packet
    base: {traffic: permutation, size: 2MB}     # scenario fields every run shares
    grid:                          # every combination of these (or runs: a list of points)
      transport: [roce-ecmp, mrc-spray, ideal]
      failure: [none, "switch:1200@50us"]
    variants:                      # spec variants: name -> dotted spec fields to set
      base: {}
      oversub-2: {fabrics.backend.oversubscription: 2}
    seeds: 3                       # 0, 1, 2 (or a list: [0, 7])

A point's fields are the scenario's: ``transport`` (one name), ``failure`` (``none``, one
failure text, or a list of them), ``traffic``, ``size``, ``hosts``, ``rtol``, ``options`` (a
list of ``TRANSPORT.KEY=VALUE``). Each run is one (variant, point, seed). Refused, one line per
problem naming the field (``SpecError``): a field the scenario does not have, an empty grid or
list, a spec field a variant sets that the spec does not have (or a value it refuses), and more
than :data:`MAX_RUNS` runs unless confirmed (``--yes``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from clusterloom.errors import Problem, SpecError

__all__ = ["MAX_RUNS", "POINT_FIELDS", "Run", "SweepFile", "expand", "load_sweep", "parse_sweep"]

#: runs a sweep may have without ``--yes``
MAX_RUNS = 2_000
#: the scenario fields a point may set
POINT_FIELDS = ("transport", "failure", "traffic", "size", "hosts", "rtol", "options")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _one_variant() -> dict[str, dict[str, Any]]:
    return {"base": {}}


class SweepFile(_Model):
    """The sweep file as read (module docstring)."""

    version: Literal[1]
    spec: str | None = None
    example: str | None = None
    engine: Literal["flow", "packet"] = "flow"
    base: dict[str, Any] = Field(default_factory=dict)
    grid: dict[str, list[Any]] | None = None
    runs: list[dict[str, Any]] | None = None
    variants: dict[str, dict[str, Any]] = Field(default_factory=_one_variant)
    seeds: int | list[int] = 1


Run = dict[str, Any]


def _check_fields(where: str, point: Mapping[str, Any]) -> list[Problem]:
    return [
        Problem(
            f"{where}.{k}",
            f"not a field of the scenario; a run sets {', '.join(POINT_FIELDS)}",
        )
        for k in point
        if k not in POINT_FIELDS
    ]


def _points(sf: SweepFile) -> tuple[list[dict[str, Any]], list[Problem]]:
    if (sf.grid is None) == (sf.runs is None):
        return [], [Problem("grid", "give a grid or a list of runs (one of the two)")]
    if sf.grid is not None:
        problems = _check_fields("grid", sf.grid)
        problems += [
            Problem(f"grid.{k}", "is empty; give at least one value")
            for k, v in sf.grid.items()
            if not v
        ]
        if not sf.grid:
            problems.append(Problem("grid", "is empty; give at least one field with values"))
        names = list(sf.grid)
        combos = itertools.product(*(sf.grid[k] for k in names))
        return [dict(zip(names, c, strict=True)) for c in combos] if not problems else [], problems
    assert sf.runs is not None
    problems = [p for i, r in enumerate(sf.runs) for p in _check_fields(f"runs[{i}]", r)]
    if not sf.runs:
        problems.append(Problem("runs", "is empty; give at least one run"))
    return list(sf.runs), problems


def _seeds(sf: SweepFile) -> tuple[list[int], list[Problem]]:
    seeds = list(range(sf.seeds)) if isinstance(sf.seeds, int) else list(sf.seeds)
    if not seeds or any(s < 0 or s >= 2**32 for s in seeds):
        return [], [Problem("seeds", "give a count >= 1 or a list of seeds in 0..2**32-1")]
    if len(set(seeds)) != len(seeds):
        return [], [Problem("seeds", "a seed is listed twice")]
    return seeds, []


def expand(sf: SweepFile, *, yes: bool = False) -> list[Run]:
    """Every run of the sweep: dicts of ``variant``, ``seed`` and the point's fields over the
    ``base`` (a point wins), in file order (variant, point, seed). Refuses what the module
    docstring lists."""
    problems = _check_fields("base", sf.base)
    points, more = _points(sf)
    seeds, bad_seeds = _seeds(sf)
    problems += more + bad_seeds
    if not sf.variants:
        problems.append(Problem("variants", "is empty; leave it out for the spec as it is"))
    problems += [
        Problem(f"variants.{v}", "a name of letters, digits, '.', '_' or '-' (64 at most)")
        for v in sf.variants
        if not _NAME.match(v)
    ]
    if problems:
        raise SpecError(problems)
    runs = [
        {"variant": v, **sf.base, **p, "seed": s}
        for v in sf.variants
        for p in points
        for s in seeds
    ]
    if len(runs) > MAX_RUNS and not yes:
        raise SpecError(
            [
                Problem(
                    "grid" if sf.grid is not None else "runs",
                    f"{len(runs):,} runs are more than {MAX_RUNS:,}; confirm with --yes",
                )
            ]
        )
    return runs


def parse_sweep(text: str, source: str = "<sweep>") -> SweepFile:
    """The sweep file in ``text``; ``SpecError`` with one problem per bad field."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SpecError([Problem(source, f"not valid YAML: {' '.join(str(exc).split())}")]) from exc
    if not isinstance(data, dict):
        raise SpecError([Problem(source, "a sweep file is a YAML mapping with version, grid...")])
    try:
        return SweepFile.model_validate(data)
    except ValidationError as exc:
        raise SpecError(
            [
                Problem(".".join(str(p) for p in e["loc"]) or source, e["msg"])
                for e in exc.errors(include_url=False)
            ]
        ) from exc


def load_sweep(path: str | Path) -> SweepFile:
    """Read and check the sweep file at ``path`` (its ``spec:`` made relative to the file)."""
    p = Path(path)
    try:
        text = p.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError([Problem(str(p), f"cannot read: {exc}")]) from exc
    sf = parse_sweep(text, str(p))
    if sf.spec is not None and not Path(sf.spec).is_absolute():
        sf = sf.model_copy(update={"spec": str(p.parent / sf.spec)})
    return sf
