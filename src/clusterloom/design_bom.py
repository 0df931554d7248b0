"""The design's one bill of materials: what ``bom.csv``, ``design.json``, ``report.html`` and the
terminal summary all read (``Design.bom``).

- **Switches** come from each fabric's BOM (``fabric.bom``): counts per tier and model, typical
  power without optics. Only the fabric stage knows them.
- **Link media** come from the cabling stage when it ran (``cabling.bom``): the cables,
  transceivers and patch cords it chose from real lengths, by ordered length, and the plant
  between frames (trunks, backbones, splices, panels, patch racks), which belongs to no one
  fabric (``fabric == ""``). Links cabling could not realize are in no line (their finding
  says why).
- **Before cabling** (no site, ``clusterloom fabric`` or ``place``) the link media are the
  fabric stage's assumption per tier, each such line marked ``basis == "estimate"`` and the
  whole BOM labelled ``ESTIMATE``.

Sums are exact: every line holds its unit power in milliwatts and its unit cost in cents
(``units``), a total is the sum of its lines' integers, and each writer only formats it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from clusterloom.fabric import FabricDesign
from clusterloom.fabric.bom import Bom
from clusterloom.units import cents, milliwatts

if TYPE_CHECKING:
    from clusterloom.cabling import Cabling
    from clusterloom.cabling.bom import BomLine as CablingBomLine

Basis = Literal["fabric", "cabling", "estimate"]

#: How every renderer names media the fabric stage assumed (no cabling ran).
ESTIMATE = "estimate (assumed media, before cabling)"
#: How every renderer names media the cabling stage chose.
CABLED = "as cabled (media chosen from real lengths)"


@dataclass(frozen=True)
class DesignBomLine:
    """A quantity of one item with its unit power (mW) and unit cost (cents)."""

    fabric: str  # "" for the plant shared by the fabrics (trunks, splices, panels, racks)
    tier: str  # switch role, link tier, or "" for the shared plant
    category: str  # switch | cable | transceiver | patch-cord | trunk | splice | patch-panel
    item: str
    length_m: float  # ordered length of a cable; 0 when not a cable or before cabling
    quantity: int
    unit_power_mw: int
    unit_cost_cents: int
    basis: Basis  # fabric: switches; cabling: chosen by cabling; estimate: assumed media

    @property
    def power_mw(self) -> int:
        return self.quantity * self.unit_power_mw

    @property
    def cost_cents(self) -> int:
        return self.quantity * self.unit_cost_cents


@dataclass(frozen=True)
class FabricBomShare:
    """One fabric's part of the BOM: its switches and its links' media (not the shared
    plant)."""

    fabric: str
    switches: int
    transceivers: int
    links: int  # links of the topology
    fibers: int  # fibres of its optical links, at the media of the BOM
    power_mw: int
    cost_cents: int


@dataclass(frozen=True)
class DesignBom:
    lines: tuple[DesignBomLine, ...]
    cabled: bool  # link media from the cabling stage (else the fabric stage's estimate)
    fabric_fibers: tuple[tuple[str, int], ...]
    fabric_links: tuple[tuple[str, int], ...]

    @property
    def label(self) -> str:
        """``CABLED`` or ``ESTIMATE``: what every renderer prints beside the total."""
        return CABLED if self.cabled else ESTIMATE

    @property
    def power_mw(self) -> int:
        return sum(line.power_mw for line in self.lines)

    @property
    def cost_cents(self) -> int:
        return sum(line.cost_cents for line in self.lines)

    def quantity(self, category: str, fabric: str | None = None) -> int:
        return sum(
            line.quantity
            for line in self.lines
            if line.category == category and (fabric is None or line.fabric == fabric)
        )

    @property
    def switches(self) -> int:
        return self.quantity("switch")

    @property
    def transceivers(self) -> int:
        return self.quantity("transceiver")

    def of_fabric(self, fabric: str) -> tuple[DesignBomLine, ...]:
        """The lines of ``fabric``; ``""`` gives the shared plant."""
        return tuple(line for line in self.lines if line.fabric == fabric)

    def share(self, fabric: str) -> FabricBomShare:
        mine = self.of_fabric(fabric)
        return FabricBomShare(
            fabric=fabric,
            switches=self.quantity("switch", fabric),
            transceivers=self.quantity("transceiver", fabric),
            links=dict(self.fabric_links)[fabric],
            fibers=dict(self.fabric_fibers)[fabric],
            power_mw=sum(line.power_mw for line in mine),
            cost_cents=sum(line.cost_cents for line in mine),
        )


def _fabric_lines(bom: Bom, cabled: bool) -> list[DesignBomLine]:
    """The switches of a fabric's ``bom``, and before cabling its assumed link media as
    estimates."""
    return [
        DesignBomLine(
            fabric=line.fabric,
            tier=line.tier,
            category=line.category,
            item=line.item,
            length_m=0.0,
            quantity=line.quantity,
            unit_power_mw=milliwatts(line.unit_power_w),
            unit_cost_cents=cents(line.unit_cost_usd),
            basis="fabric" if line.category == "switch" else "estimate",
        )
        for line in bom.lines
        if line.category == "switch" or not cabled
    ]


def _cabled_fibers(c: Cabling, f: int) -> int:
    ok = c.realized() & (c.fabric == f) & ~c.media.assembly[c.medium]
    return int(c.media.fibers[c.medium[ok]].sum())


def design_bom(fabrics: Sequence[FabricDesign], cabling: Cabling | None) -> DesignBom:
    """The one BOM of a design: per fabric its switches then its link media (chosen by
    ``cabling`` when given, else assumed), then the shared plant."""
    if cabling is None:
        return estimate_bom([(fd.name, fd.bom) for fd in fabrics])
    from clusterloom.cabling.bom import cabling_bom

    lines: list[DesignBomLine] = []
    chosen = cabling_bom(cabling)
    for fd in fabrics:
        lines += _fabric_lines(fd.bom, cabled=True)
        lines += [_cabled(x) for x in chosen if x.fabric == fd.name]
    lines += [_cabled(x) for x in chosen if x.fabric == ""]
    index = {name: f for f, name in enumerate(cabling.fabrics)}
    fibers = tuple((fd.name, _cabled_fibers(cabling, index[fd.name])) for fd in fabrics)
    links = tuple((fd.name, fd.bom.links) for fd in fabrics)
    return DesignBom(tuple(lines), True, fibers, links)


def estimate_bom(boms: Sequence[tuple[str, Bom]]) -> DesignBom:
    """The BOM before cabling of fabrics given by name and their fabric BOMs (``fabric.bom``):
    switches, and the assumed link media as estimates. What ``design_bom`` gives a design that
    was not cabled, for a fabric that is only sized (``assist.propose`` prices candidates so)."""
    lines: list[DesignBomLine] = []
    for _name, bom in boms:
        lines += _fabric_lines(bom, cabled=False)
    fibers = tuple((name, bom.fibers) for name, bom in boms)
    links = tuple((name, bom.links) for name, bom in boms)
    return DesignBom(tuple(lines), False, fibers, links)


def _cabled(x: CablingBomLine) -> DesignBomLine:
    return DesignBomLine(
        fabric=x.fabric,
        tier=x.tier,
        category=x.category,
        item=x.item,
        length_m=x.length_m,
        quantity=x.count,
        unit_power_mw=milliwatts(x.unit_power_w),
        unit_cost_cents=cents(x.unit_usd),
        basis="cabling",
    )
