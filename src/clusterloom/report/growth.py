"""The Growth section of ``report.html``: the rework of a step from an installed baseline,
each figure next to what the growth forces, and the change plan's steps (``docs/growth.md``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from clusterloom.growth.drained import capacity_note
from clusterloom.report._html import esc, table, td

if TYPE_CHECKING:
    from clusterloom.fabric import FabricDesign
    from clusterloom.growth.rework import Growth

__all__ = ["growth_section"]


def _alternatives(fabrics: tuple[FabricDesign, ...]) -> str:
    """Per fabric that must re-patch: the step as designed, then each shape that avoids it."""
    rows = []
    for fd in fabrics:
        for a in fd.alternatives:
            if a.infeasible:
                cells = td(esc(f"cannot be built: {a.infeasible}")) + td("", True) * 5
            else:
                cells = (
                    td(esc(a.shape))
                    + td(f"{a.switches_added:,}", True)
                    + td(f"{a.links_added:,}", True)
                    + td(f"{a.links_repatched:,}", True)
                    + td(f"${a.first_build_usd:,.0f}", True)
                    + td(f"${a.step_usd:,.0f}", True)
                )
            rows.append(
                f"<tr>{td(esc(fd.name))}{td(esc(a.name))}{td(esc(a.when))}{cells}"
                f"{td(esc(a.traffic))}{td(esc(a.ask))}</tr>"
            )
    if not rows:
        return ""
    head = [
        ("fabric", False),
        ("shape", False),
        ("decided", False),
        ("what", False),
        ("switches added", True),
        ("links added", True),
        ("re-patched", True),
        ("extra at first build", True),
        ("cost of the step", True),
        ("for traffic", False),
        ("ask with", False),
    ]
    return (
        "<h3>Shapes that avoid the forced re-patching</h3>\n<p>Each evaluated like the design "
        "(sized, generated, the grown fabric stabilized against its first build, priced); the "
        "first row is this step as designed.</p>\n"
        + table(head, rows, table_id="growth-alternatives", css_class="data")
    )


def growth_section(g: Growth, fabrics: tuple[FabricDesign, ...] = ()) -> str:
    r = g.rework
    racks_bound = f"at least {r.racks_moved_bound:,}" if r.racks_moved else "0"
    figures = [
        ("racks moved", f"{r.racks_moved:,} of {r.racks_installed:,}", racks_bound),
        (
            "links re-patched",
            f"{r.links_repatched:,} of {r.links_installed:,}",
            f"{r.links_repatched_bound:,}",
        ),
        ("fibres re-pulled", f"{r.fibres_repulled:,}", ""),
        ("links added", f"{r.links_added:,}", ""),
        ("new trunks", f"{r.new_trunks:,}", ""),
        ("cost of the step", f"${r.cost_cents / 100:,.2f}", ""),
    ]
    rework = table(
        [("figure", False), ("this step", True), ("forced by the growth", True)],
        (f"<tr>{td(esc(a))}{td(esc(b), True)}{td(esc(c), True)}</tr>" for a, b, c in figures),
        table_id="growth-rework",
        css_class="data",
    )
    steps = table(
        [
            ("step", True),
            ("wave", True),
            ("action", False),
            ("objects", True),
            ("drain first", True),
            ("why", False),
            ("capacity while drained", False),
        ],
        (
            f"<tr>{td(str(s.order), True)}{td(str(s.wave), True)}{td(esc(s.action))}"
            f"{td(f'{len(s.objects):,}', True)}"
            f"{td(f'{len(s.drain):,}', True)}{td(esc(s.reason))}"
            f"{td(esc(capacity_note(s.checks)))}</tr>"
            for s in g.plan.steps
        ),
        table_id="growth-plan",
        css_class="data",
    )
    moved = ""
    if g.moved_racks:
        items = "".join(f"<li>{esc(f'{lab}: {a} -> {b}')}</li>" for lab, a, b in g.moved_racks)
        moved = f"<h3>Installed racks that move</h3><ul>{items}</ul>"
    return (
        '<section id="growth">\n<h2>Growth</h2>\n'
        f"<p>Grown from the installed design in <code>{esc(g.installed)}</code>; every cable "
        "the change touches, in the order of work, is in <code>cabling/change.csv</code>, the "
        "change plan in <code>changes.jsonl</code>.</p>\n"
        f"{rework}\n{_alternatives(fabrics)}\n<h3>Change plan</h3>\n{steps}\n{moved}\n"
        "</section>"
    )
