"""Bill of materials and power of a sized fabric.

Counting rules (documented approximations):

- Switches: the plan's count per tier times planes, at the catalog's typical power without optics.
- A link on optical media (mmf/smf) needs two transceiver *ends* and one patch cord; a multi-link
  module (an 800G cage split into 2 x 400G) is counted per link end, with the catalog's per-end
  power and cost, so a module carrying two links counts as two ends. Switch-side cages occupied
  are reported separately (ends / breakout factor, rounded up per switch).
- A link on a cable assembly (dac, aec, aoc) is one assembly; active ends draw the per-end power.
- Fibres: fibres per link times optical links (the input of the cabling stage).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from clusterloom.fabric.sizing import FabricPlan
from clusterloom.spec import SWITCH_ROLES, Catalog

LINK_TIER_NAMES = ("host_leaf", "leaf_spine", "spine_core")


@dataclass(frozen=True)
class BomLine:
    """A quantity of one item in one tier, with its unit power and cost."""

    fabric: str
    tier: str
    category: str  # switch | transceiver | cable | patch-cord
    item: str
    quantity: int
    unit_power_w: float
    unit_cost_usd: float

    @property
    def power_w(self) -> float:
        return self.quantity * self.unit_power_w

    @property
    def cost_usd(self) -> float:
        return self.quantity * self.unit_cost_usd


@dataclass(frozen=True)
class Bom:
    lines: tuple[BomLine, ...]
    links_per_tier: tuple[tuple[str, int], ...]
    fibers: int
    cages_per_tier: tuple[tuple[str, int], ...]

    @property
    def power_w(self) -> float:
        return sum(line.power_w for line in self.lines)

    @property
    def cost_usd(self) -> float:
        return sum(line.cost_usd for line in self.lines)

    def quantity(self, category: str) -> int:
        return sum(line.quantity for line in self.lines if line.category == category)

    @property
    def switches(self) -> int:
        return self.quantity("switch")

    @property
    def transceivers(self) -> int:
        return self.quantity("transceiver")

    @property
    def links(self) -> int:
        return sum(n for _, n in self.links_per_tier)

    def power_by_tier(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for line in self.lines:
            out[line.tier] = out.get(line.tier, 0.0) + line.power_w
        return out

    @staticmethod
    def combine(boms: Iterable[Bom]) -> Bom:
        boms = list(boms)
        return Bom(
            lines=tuple(line for b in boms for line in b.lines),
            links_per_tier=tuple(t for b in boms for t in b.links_per_tier),
            fibers=sum(b.fibers for b in boms),
            cages_per_tier=tuple(t for b in boms for t in b.cages_per_tier),
        )


def bill_of_materials(plan: FabricPlan, catalog: Catalog) -> Bom:
    """Switches, transceivers, cables, fibres and power of ``plan`` (all planes)."""
    lines: list[BomLine] = []
    f, planes = plan.fabric, plan.planes
    for t in plan.switch_tiers:
        model = catalog.switches[t.model]
        lines.append(
            BomLine(f, t.role, "switch", t.model, t.count * planes, model.power_w, model.cost_usd)
        )
    links_per_tier: list[tuple[str, int]] = []
    cages: list[tuple[str, int]] = []
    fibers = 0
    roles = SWITCH_ROLES
    for i, (tier_name, per_plane, media_name) in enumerate(
        zip(LINK_TIER_NAMES, plan.links_per_tier, plan.media, strict=False)
    ):
        links = per_plane * planes
        links_per_tier.append((f"{f}.{tier_name}", links))
        media = catalog.media[media_name]
        if media.optical:
            lines.append(
                BomLine(
                    f,
                    tier_name,
                    "transceiver",
                    media_name,
                    2 * links,
                    media.power_w_per_end,
                    media.cost_usd_per_end,
                )
            )
            lines.append(
                BomLine(
                    f,
                    tier_name,
                    "patch-cord",
                    f"{media_name} fibre ({media.fibers}f)",
                    links,
                    0.0,
                    media.cable_cost_usd,
                )
            )
            fibers += links * media.fibers
        else:
            lines.append(
                BomLine(
                    f,
                    tier_name,
                    "cable",
                    media_name,
                    links,
                    2 * media.power_w_per_end,
                    media.cable_cost_usd,
                )
            )
        # cages occupied: downlinks of the upper switch tier, uplinks of the lower one
        ends = [(plan.tier(roles[i]), plan.tier(roles[i]).down)]
        if i > 0:
            ends.append((plan.tier(roles[i - 1]), plan.tier(roles[i - 1]).up))
        for sw, ports in ends:
            factor = catalog.switches[sw.model].ports_per_cage(plan.speed_gbps)
            cages.append(
                (f"{f}.{tier_name}.{sw.role}", math.ceil(ports / factor) * sw.count * planes)
            )
    return Bom(tuple(lines), tuple(links_per_tier), fibers, tuple(cages))
