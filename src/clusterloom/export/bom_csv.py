"""``bom.csv`` (the bill of materials of every fabric) and ``options.csv`` (the variants each
fabric's sizing compared), rounded like ``design.json``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from clusterloom.export._csv import write_rows
from clusterloom.export._numbers import dollars, ratio, unit_dollars, unit_watts, watts
from clusterloom.export.atomic import StrPath
from clusterloom.pipeline import Design

BOM_COLUMNS = (
    "fabric",
    "tier",
    "category",
    "item",
    "quantity",
    "unit_power_w",
    "power_w",
    "unit_cost_usd",
    "cost_usd",
)
OPTION_COLUMNS = (
    "fabric",
    "label",
    "chosen",
    "feasible",
    "tiers",
    "planes",
    "speed_gbps",
    "host_ports",
    "switches",
    "links",
    "transceivers",
    "power_w",
    "cost_usd",
    "bisection_per_host_gbps",
    "ecmp_paths",
    "infeasible_reason",
)

Row = tuple[str | int | float, ...]


def bom_rows(design: Design) -> Iterator[Row]:
    """One row per BOM line, fabric by fabric, in the BOM's order."""
    for fd in design.fabrics:
        for line in fd.bom.lines:
            yield (
                line.fabric,
                line.tier,
                line.category,
                line.item,
                line.quantity,
                unit_watts(line.unit_power_w),
                watts(line.power_w),
                unit_dollars(line.unit_cost_usd),
                dollars(line.cost_usd),
            )


def option_rows(design: Design) -> Iterator[Row]:
    """One row per option, fabric by fabric, the chosen design first; the priced columns are
    empty for an option that cannot be built, whose reason is in ``infeasible_reason``."""
    for fd in design.fabrics:
        for o in fd.options:
            ok = not o.infeasible
            priced: Row = (
                (
                    o.switches,
                    o.links,
                    o.transceivers,
                    watts(o.power_w),
                    dollars(o.cost_usd),
                    ratio(o.bisection_per_host_gbps),
                    o.ecmp_paths,
                )
                if ok
                else ("",) * 7
            )
            yield (
                fd.name,
                o.label,
                "true" if o.chosen else "false",
                "true" if ok else "false",
                o.tiers or "",
                o.planes,
                o.speed_gbps,
                o.host_ports,
                *priced,
                o.infeasible,
            )


def write_bom_csv(design: Design, path: StrPath) -> Path:
    """Write ``bom.csv`` atomically; return its path."""
    return write_rows(path, BOM_COLUMNS, bom_rows(design))


def write_options_csv(design: Design, path: StrPath) -> Path:
    """Write ``options.csv`` atomically; return its path."""
    return write_rows(path, OPTION_COLUMNS, option_rows(design))
