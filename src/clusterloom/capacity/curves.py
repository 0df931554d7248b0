"""Cost and part curves (``Curves``) from clusterloom's own stages, never from ratios.

For every site and fabric choice of a plan, the choice's cluster spec template is scaled to
each of a few accelerator counts (``sizes``), given the site's floor (its buildings and halls,
generated as rows of positions with the hall's IT power) and designed by the pipeline: the
fabric stage, and with ``curves.place`` placement and cabling. What a design needs is read
from its one bill of materials (``Design.bom``), mapped to plan parts:

- ``switch:<model>`` switches, ``optic:<item>`` transceivers, ``cable:<item>`` copper and
  active optical cables, ``fibre:<item>`` trunks and backbones (counted as trunks),
  ``patch-panel:<item>`` panels, cassettes and patch racks. Patch cords and splices are left
  out: commodity cords and splicing labour, with no lead time or allocation worth planning.
- power: the IT power of every rack the design places (servers and network), kW;
- positions: the racks it places.

In between the sizes the curves are linear (``Curves.parts_at``); ``docs/capacity.md`` states
the error measured against a design at a middle size. Each design point is cached on disk by
the SHA-256 of the clusterloom version and the designed spec (``cache``), so a second plan, a
second site with the same floor, or another run reuses it.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from clusterloom._version import __version__
from clusterloom.atomic import atomic_write
from clusterloom.capacity.input import FabricChoice, PlanInput, SiteInput
from clusterloom.capacity.model import Curves
from clusterloom.errors import Problem, SpecError
from clusterloom.spec import ClusterSpec
from clusterloom.spec.limits import MAX_ACCELERATORS

__all__ = [
    "DesignPoint",
    "compute_curves",
    "default_cache",
    "default_sizes",
    "design_point",
    "design_points",
    "part_of",
    "scaled_spec",
    "template_data",
]

#: BOM categories that are plan parts, and the prefix of their ids
_CATEGORY_PART = {
    "switch": "switch",
    "transceiver": "optic",
    "cable": "cable",
    "trunk": "fibre",
    "patch-panel": "patch-panel",
}
#: the template sections a scaled design drops (a job's parallelism, a scenario, growth and
#: an interconnect are sized for the template's own count)
_DROPPED = ("job", "scenario", "growth", "interconnect", "site")
#: metres between neighbouring halls of one building, and around a hall's rows
_HALL_GAP_M = 5.0
_HALL_MARGIN_M = 1.5
_PITCH_M, _RACK_DEPTH_M, _AISLE_M = 0.6, 1.2, 1.2

Progress = Callable[[str], None]


def part_of(category: str, item: str) -> str | None:
    """The plan part id of a BOM line, None for a line that is no plan part (cords,
    splices)."""
    prefix = _CATEGORY_PART.get(category)
    return None if prefix is None else f"{prefix}:{item}"


def default_cache() -> Path:
    """``$CLUSTERLOOM_CACHE/curves``, else ``~/.cache/clusterloom/curves``."""
    root = os.environ.get("CLUSTERLOOM_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "clusterloom") / "curves"


def template_data(choice: FabricChoice, where: str, base: Path) -> dict[str, Any]:
    from clusterloom.examples import example_names, example_text

    if choice.template in example_names():
        text = example_text(choice.template)
    else:
        from clusterloom.spec.load import read_document

        path = Path(choice.template)
        path = path if path.is_absolute() else base / path
        if not path.is_file():
            raise SpecError(
                [
                    Problem(
                        f"{where}.template",
                        f"'{choice.template}' is neither a spec file nor a built-in example "
                        f"({', '.join(example_names())})",
                    )
                ]
            )
        text = read_document(path)
    data = yaml.safe_load(text)
    assert isinstance(data, dict)
    return data


def _unit(data: dict[str, Any]) -> int:
    """The step of accelerator counts a template can be scaled by: whole nodes and whole
    scale-up domains."""
    compute = data.get("compute", {})
    per_node = int(compute.get("accelerators_per_node", 8))
    domain = int(compute.get("scale_up", {}).get("domain_size", per_node))
    return math.lcm(per_node, domain)


def _floor(site: SiteInput, racks: dict[str, Any] | None) -> dict[str, Any]:
    """The site's halls as a spec ``site:`` section: each hall its rows of positions, side by
    side in its building, with the hall's IT power as its budget."""
    buildings = []
    for b in site.buildings:
        halls, x = [], 0.0
        for h in b.halls:
            width = 2 * _HALL_MARGIN_M + h.positions_per_row * _PITCH_M
            depth = 2 * _HALL_MARGIN_M + h.rows * (_RACK_DEPTH_M + _AISLE_M)
            halls.append(
                {
                    "name": h.name,
                    "x_m": x,
                    "width_m": round(width, 3),
                    "depth_m": round(depth, 3),
                    "power_kw": round(h.power.it_kw, 3),
                    "template": {
                        "rows": h.rows,
                        "positions_per_row": h.positions_per_row,
                        "position_power_kw": h.position_power_kw,
                    },
                }
            )
            x += width + _HALL_GAP_M
        buildings.append({"name": b.name, "x_m": b.x_m, "y_m": b.y_m, "halls": halls})
    out: dict[str, Any] = {"campus": "site", "buildings": buildings}
    if racks:
        out["racks"] = racks
    return out


def scaled_spec(
    template: dict[str, Any], accelerators: int, tiers: int, site: SiteInput
) -> dict[str, Any]:
    """The template's data with ``accelerators`` and the backend's ``tiers``, on the floor of
    ``site`` (the template's own site kept only for its rack types)."""
    data = {k: v for k, v in template.items() if k not in _DROPPED}
    data["name"] = f"{template.get('name', 'template')}-{accelerators}"
    data["compute"] = dict(template["compute"], accelerators=accelerators)
    fabrics = dict(template["fabrics"])
    fabrics["backend"] = dict(fabrics["backend"], tiers=tiers)
    data["fabrics"] = fabrics
    racks = (template.get("site") or {}).get("racks")
    data["site"] = _floor(site, racks)
    return data


@dataclass(frozen=True)
class DesignPoint:
    """What one design needs: units per plan part, IT power (kW) and rack positions."""

    parts: dict[str, float]
    power_kw: float
    positions: float

    def to_json(self) -> dict[str, Any]:
        return {"parts": self.parts, "power_kw": self.power_kw, "positions": self.positions}


def _designed(spec: ClusterSpec, place: bool) -> DesignPoint:
    from clusterloom.pipeline import run_design
    from clusterloom.placement.demand import build_demand

    design = run_design(spec, compare=False, place=place, cable=place)
    parts: dict[str, float] = {}
    for line in design.bom.lines:
        pid = part_of(line.category, line.item)
        if pid is not None:
            parts[pid] = parts.get(pid, 0.0) + line.quantity
    if design.placement is not None:
        demand = design.placement.demand
    else:
        demand = build_demand(spec, design.fabrics)
    return DesignPoint(
        dict(sorted(parts.items())),
        float(demand.rack_power_w.sum()) / 1000.0,
        float(demand.n_racks),
    )


def design_point(
    data: dict[str, Any], place: bool, cache: Path | None, where: str
) -> tuple[DesignPoint, bool]:
    """The design point of a scaled spec's data, from the cache when it holds it; (point,
    whether it came from the cache)."""
    canonical = json.dumps({"spec": data, "place": place, "version": __version__}, sort_keys=True)
    key = hashlib.sha256(canonical.encode()).hexdigest()
    path = cache / f"{key}.json" if cache is not None else None
    if path is not None and path.is_file():
        try:
            doc = json.loads(path.read_text())
            return DesignPoint(doc["parts"], doc["power_kw"], doc["positions"]), True
        except (OSError, ValueError, KeyError):
            pass  # a damaged entry is designed again and rewritten
    try:
        spec = _spec_of(data, where)
        point = _designed(spec, place)
    except SpecError as exc:
        raise SpecError(
            [
                Problem(
                    where,
                    f"the design at {data['compute']['accelerators']:,} accelerators failed "
                    f"({'; '.join(str(p) for p in exc.problems[:3])}); give curves.sizes the "
                    "site's halls hold, or another template",
                )
            ]
        ) from exc
    if path is not None:
        atomic_write(path, json.dumps(point.to_json(), sort_keys=True))
    return point, False


def _spec_of(data: dict[str, Any], where: str) -> ClusterSpec:
    """A scaled spec's data checked as ``parse_spec`` checks a file."""
    from pydantic import ValidationError

    from clusterloom.spec.load import check_spec, problems_from_validation

    try:
        spec = ClusterSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError([Problem(where, str(p)) for p in problems_from_validation(exc)]) from exc
    problems = check_spec(spec)
    if problems:
        raise SpecError([Problem(where, str(p)) for p in problems])
    return spec


def _max_accelerators(template: dict[str, Any], tiers: int, unit: int, site: SiteInput) -> int:
    """The largest count the choice's backend reaches on ``tiers`` (the fabric stage's own
    sizing refuses one more unit), by bisection over whole units; the floor plays no part."""
    from clusterloom.fabric.sizing import plan_fabric

    def fits(n: int) -> bool:
        data = scaled_spec(template, n * unit, tiers, site)
        data.pop("site")
        try:
            plan_fabric(_spec_of(data, "template"), "backend", tiers=tiers)
        except SpecError:
            return False
        return True

    lo, hi = 1, MAX_ACCELERATORS // unit
    if not fits(lo):
        return 0
    if fits(hi):
        return hi * unit
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo * unit


def default_sizes(plan: PlanInput, unit: int) -> list[int]:
    """Four sizes: 0 and a quarter, half and all of the largest forecast at any site (the sum
    of its programs' top quantiles in the last period), in whole units."""
    total = {s: 0.0 for s in (x.name for x in plan.sites)}
    for program in plan.programs:
        for site, forecast in program.demand.items():
            total[site] += float(forecast.quantile_table()[1][-1, -1])
    top = max(total.values())
    full = max(1, math.ceil(top / unit))
    return sorted({0, *(max(1, math.ceil(full * f)) * unit for f in (0.25, 0.5, 1.0))})


def _sizes(plan: PlanInput, templates: list[dict[str, Any]]) -> tuple[list[int], int]:
    """The sizes to design at (0 first) and the step every template scales by."""
    unit = math.lcm(*{_unit(t) for t in templates})
    sizes = sorted({0, *plan.curves.sizes}) if plan.curves.sizes else default_sizes(plan, unit)
    bad = [s for s in sizes if s % unit]
    if bad:
        raise SpecError(
            [
                Problem(
                    "curves.sizes",
                    f"{bad} are not whole nodes and scale-up domains of the templates; "
                    f"use multiples of {unit}",
                )
            ]
        )
    if len(sizes) < 2:
        raise SpecError([Problem("curves.sizes", "give at least one size above 0")])
    return sizes, unit


def design_points(
    plan: PlanInput,
    *,
    base: Path | None = None,
    cache: Path | None = None,
    progress: Progress | None = None,
) -> tuple[list[int], dict[tuple[int, int, int], DesignPoint]]:
    """The sizes and every design point of ``plan`` by (site, choice, size) index (size 0
    needs nothing and has none); ``compute_curves`` without the parts' check, so a caller can
    first learn which parts the designs need."""
    base = base or Path.cwd()
    templates = [template_data(c, f"fabrics[{i}]", base) for i, c in enumerate(plan.fabrics)]
    sizes, _ = _sizes(plan, templates)
    points: dict[tuple[int, int, int], DesignPoint] = {}
    for n, site in enumerate(plan.sites):
        for c, (choice, template) in enumerate(zip(plan.fabrics, templates, strict=True)):
            for k, size in enumerate(sizes):
                if size == 0:
                    continue
                if progress is not None:
                    progress(f"design {site.name} {choice.name} at {size:,}")
                data = scaled_spec(template, size, choice.tiers, site)
                where = f"sites.{site.name} fabrics.{choice.name}"
                points[n, c, k], _ = design_point(data, plan.curves.place, cache, where)
    return sizes, points


def compute_curves(
    plan: PlanInput,
    *,
    base: Path | None = None,
    cache: Path | None = None,
    progress: Progress | None = None,
) -> Curves:
    """Run the design stages at each size for every site and fabric choice of ``plan`` (see
    the module docstring); ``base`` is where template paths are relative to, ``cache`` the
    directory of cached design points (None: no cache). Raises ``SpecError`` for a template
    that cannot be read or designed, or a part the designs need that no ``parts`` entry
    supplies."""
    base = base or Path.cwd()
    sizes, points = design_points(plan, base=base, cache=cache, progress=progress)
    templates = [template_data(c, f"fabrics[{i}]", base) for i, c in enumerate(plan.fabrics)]
    unit = math.lcm(*{_unit(t) for t in templates})
    part_ids = tuple(p.id for p in plan.parts)
    index = {p: i for i, p in enumerate(part_ids)}
    N, C, K, P = len(plan.sites), len(plan.fabrics), len(sizes), len(part_ids)
    out_units = np.zeros((N, C, K, P))
    power = np.zeros((N, C, K))
    positions = np.zeros((N, C, K))
    max_acc = np.zeros((N, C), dtype=np.int64)
    for c, (choice, template) in enumerate(zip(plan.fabrics, templates, strict=True)):
        max_acc[:, c] = _max_accelerators(template, choice.tiers, unit, plan.sites[0])
    missing: dict[str, str] = {}
    for (n, c, k), point in points.items():
        for pid, q in point.parts.items():
            if pid in index:
                out_units[n, c, k, index[pid]] = q
            else:
                where = f"{plan.sites[n].name} {plan.fabrics[c].name} at {sizes[k]:,}"
                missing.setdefault(pid, where)
        power[n, c, k] = point.power_kw
        positions[n, c, k] = point.positions
    if missing:
        raise SpecError(
            [
                Problem(
                    "parts",
                    f"part '{pid}' has no supplier: the design of {first} needs it; add "
                    f"{{id: {pid!r}, supplier: ...}}",
                )
                for pid, first in sorted(missing.items())
            ]
        )
    return Curves(
        sites=tuple(s.name for s in plan.sites),
        choices=tuple(c.name for c in plan.fabrics),
        parts=part_ids,
        sizes=np.asarray(sizes, dtype=np.int64),
        units=out_units,
        power_kw=power,
        positions=positions,
        max_accelerators=max_acc,
    )
