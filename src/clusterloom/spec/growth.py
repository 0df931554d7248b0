"""The spec's ``growth`` section: parts of an installed design that must not change, and the
accelerator count to plan the spine and core layers for (``plan_for_accelerators``).

``growth.frozen`` names halls (``b1/h1``), rows (``b1/h1/r01``) and fabrics (``backend``,
``frontend``). Designed against an installed baseline (``--installed``), a frozen hall or row
keeps its installed racks where they stand and takes no new rack; a frozen fabric keeps every
installed link and takes no new device. Without a baseline the names are only checked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from clusterloom.errors import Problem
from clusterloom.spec._base import SpecModel
from clusterloom.spec.limits import Accelerators
from clusterloom.spec.site import hall_rows

if TYPE_CHECKING:
    from clusterloom.spec.models import ClusterSpec

_PATH = r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)*$"


class FrozenSpec(SpecModel):
    """Parts of the installed design that must not change."""

    halls: tuple[str, ...] = Field(
        default=(), max_length=10_000, description="BUILDING/HALL, e.g. b1/h1"
    )
    rows: tuple[str, ...] = Field(
        default=(), max_length=100_000, description="BUILDING/HALL/ROW, e.g. b1/h1/r01"
    )
    fabrics: tuple[str, ...] = Field(default=(), max_length=2, description="backend, frontend")


class GrowthSpec(SpecModel):
    """How the design grows (docs/growth.md): what must not change, what to plan room for."""

    frozen: FrozenSpec = FrozenSpec()
    plan_for_accelerators: Accelerators | None = Field(
        default=None,
        description="size the spine and core layers for this many accelerators at first build, "
        "so that growing to it re-patches no installed link (docs/growth.md)",
    )
    min_live_uplinks: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="a change-plan step that leaves an installed leaf less than this fraction "
        "of its installed uplink capacity live is a warning finding (docs/growth.md)",
    )


def frozen_problems(spec: ClusterSpec) -> list[Problem]:
    """Every frozen name that names nothing in the spec, one problem each."""
    if spec.growth is None:
        return []
    frozen = spec.growth.frozen
    base = "growth.frozen"
    halls: set[str] = set()
    rows: set[str] = set()
    for b in spec.site.buildings if spec.site is not None else []:
        for h in b.halls:
            halls.add(f"{b.name}/{h.name}")
            rows.update(f"{b.name}/{h.name}/{r.name}" for r in hall_rows(h))
    fabrics = {"backend"} | ({"frontend"} if spec.fabrics.frontend is not None else set())
    problems: list[Problem] = []
    for field, names, known, form in (
        ("halls", frozen.halls, halls, "BUILDING/HALL"),
        ("rows", frozen.rows, rows, "BUILDING/HALL/ROW"),
        ("fabrics", frozen.fabrics, fabrics, "fabric"),
    ):
        seen: set[str] = set()
        for i, name in enumerate(names):
            if name in seen:
                problems.append(Problem(f"{base}.{field}[{i}]", f"'{name}' is named twice"))
            seen.add(name)
            if name not in known:
                have = ", ".join(sorted(known)[:6]) or "none: the spec has no site"
                problems.append(
                    Problem(
                        f"{base}.{field}[{i}]",
                        f"'{name}' is no {form} of this spec; it has {have}"
                        + (", ..." if len(known) > 6 else ""),
                    )
                )
    return problems
