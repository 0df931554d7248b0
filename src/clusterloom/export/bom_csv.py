"""``bom.csv`` (the design's one bill of materials, ``Design.bom``) and ``options.csv`` (the
variants each fabric's sizing compared), rounded like ``design.json``.

``bom.csv`` has one row per line and a last row, category ``total``, whose ``item`` says what
the media are (``design_bom.CABLED`` or ``design_bom.ESTIMATE``) and whose power and cost are
the sums of the rows above, to the milliwatt and the cent. ``basis`` says where each line comes
from: ``fabric`` (switches), ``cabling`` (media chosen from real lengths, the shared plant) or
``estimate`` (the fabric stage's assumed media, before cabling)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from clusterloom.atomic import StrPath
from clusterloom.export._csv import write_rows
from clusterloom.export._numbers import dollars, ratio, watts
from clusterloom.pipeline import Design
from clusterloom.units import to_usd, to_watts

BOM_COLUMNS = (
    "fabric",
    "tier",
    "category",
    "item",
    "length_m",
    "quantity",
    "unit_power_w",
    "power_w",
    "unit_cost_usd",
    "cost_usd",
    "basis",
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
    """One row per line of the design's BOM, in its order, then the total."""
    bom = design.bom
    for line in bom.lines:
        yield (
            line.fabric,
            line.tier,
            line.category,
            line.item,
            f"{line.length_m:g}" if line.length_m else "",
            line.quantity,
            to_watts(line.unit_power_mw),
            to_watts(line.power_mw),
            to_usd(line.unit_cost_cents),
            to_usd(line.cost_cents),
            line.basis,
        )
    yield (
        "",
        "",
        "total",
        bom.label,
        "",
        "",
        "",
        to_watts(bom.power_mw),
        "",
        to_usd(bom.cost_cents),
        "cabling" if bom.cabled else "estimate",
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


def write_cabling_bom_csv(design: Design, path: StrPath) -> Path:
    """Write ``cabling/bom.csv`` atomically: the rows of ``bom.csv`` the cabling stage chose
    (media and shared plant), without the switches and the total; return its path."""
    rows = (r for r in bom_rows(design) if r[-1] == "cabling" and r[2] != "total")
    return write_rows(path, BOM_COLUMNS, rows)


def write_options_csv(design: Design, path: StrPath) -> Path:
    """Write ``options.csv`` atomically; return its path."""
    return write_rows(path, OPTION_COLUMNS, option_rows(design))
