"""A design's pictures by name, as SVG text, from the report's own drawing functions: what the
design store keeps with a design and the web explorer serves. Names:

- ``tiers/<fabric>``: the fabric's tier diagram (``html.tier_diagram``);
- ``campus``: the campus overview of the placement (``placement.campus_svg``);
- ``hall/<hall>``: a hall's floor plan to scale (``placement.hall_svg``), every hall;
- ``fill/<hall>``: a hall's trays by fill (``cabling.hall_fill_svg``), halls with trays;
- ``fibres``: fibres between buildings (``cabling.campus_svg``), on a campus of two or more.

Each carries the SVG namespace (``_svg.standalone``), so it also renders as a file of its own;
racks carry ``data-rack`` and hall tiles ``data-hall`` (``placement.hall_svg``, ``campus_svg``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clusterloom.report import cabling, placement
from clusterloom.report._svg import standalone
from clusterloom.report.html import tier_diagram

if TYPE_CHECKING:
    from clusterloom.pipeline import Design


def pictures(design: Design) -> dict[str, str]:
    """Every picture of ``design``: name -> SVG text, in the order listed above."""
    out = {f"tiers/{fd.name}": tier_diagram(fd) for fd in design.fabrics}
    p = design.placement
    if p is not None:
        out["campus"] = placement.campus_svg(p)
        for h, hall in enumerate(p.floor.hall_names):
            out[f"hall/{hall}"] = placement.hall_svg(p, h)
    c = design.cabling
    if c is not None:
        for h, hall in enumerate(c.pathways.hall_names):
            svg = cabling.hall_fill_svg(c, h)
            if svg:
                out[f"fill/{hall}"] = svg
        fibres = cabling.campus_svg(c)
        if fibres:
            out["fibres"] = fibres
    return {name: standalone(svg) for name, svg in out.items() if svg}
