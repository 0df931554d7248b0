"""Aggregates of a cabling: the bill of materials, fibres between halls and buildings.

BOM lines (costs indicative, for comparing designs; categories as the fabric BOM names them).
Media lines belong to the fabric and link tier of their links; the plant between frames
(trunks, splices, panels, patch racks) is shared and has no fabric. ``Design.bom``
(``design_bom``) adds the fabrics' switches to these lines: the design's one BOM.

- **cables** (DAC, AEC, AOC assemblies) by medium and ordered length: the catalog's cable cost
  plus both ends, the ends' power;
- **transceivers**: two per optical link, the catalog's cost and power per end;
- **patch cords** by fibre type, connector and ordered length: one per optical link inside a
  row, two per structured link; the catalog's ``cable_cost_usd`` of the medium;
- **trunks**: 144-fibre MPO trunks by fibre type and ordered length, ``TRUNK_USD`` plus
  ``TRUNK_USD_PER_M`` (indicative street prices of pre-terminated trunks);
- **ribbon cables** (backbones between hall distribution frames, and trunks of more than 144
  fibres) by size, fibre type and ordered length, priced per fibre-metre as a trunk's length
  (``TRUNK_USD_PER_M / 144``; high-count cable is cheaper per fibre, so this is an upper
  figure), and the **fusion splices** they need (each fibre at both ends' pigtailed panels,
  and at each building entrance a backbone passes), counted, not priced;
- **patch panels**: one 1U 144-fibre MPO panel per 144 fibres of a cable end (``PANEL_USD``
  with cassettes; a trunk's end at an HDF plugs into the backbone's panels), and the 48U patch
  racks (36 panels each) the row and hall distribution frames need.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from clusterloom.cabling.artifact import Cabling, order_length, panel_racks
from clusterloom.cabling.media import TRUNK_FIBERS
from clusterloom.cabling.plant import BACKBONE, TRUNK

TRUNK_USD = 300.0
TRUNK_USD_PER_M = 3.0
PANEL_USD = 350.0
PATCH_RACK_USD = 1500.0


#: Link tier names by ``Cabling.tier`` (1, 2, 3), as the fabric BOM spells them.
TIER_NAMES = ("host_leaf", "leaf_spine", "spine_core")


@dataclass(frozen=True)
class BomLine:
    """A quantity of one item. Media (cables, transceivers, patch cords) belong to the fabric
    and link tier of their links; the shared plant (trunks, splices, panels, patch racks) has
    ``fabric == tier == ""``."""

    fabric: str
    tier: str
    category: str  # cable | transceiver | patch-cord | trunk | splice | patch-panel
    item: str
    length_m: float  # ordered length, 0 when not a cable
    count: int
    unit_usd: float
    unit_power_w: float

    @property
    def cost_usd(self) -> float:
        return self.count * self.unit_usd

    @property
    def power_w(self) -> float:
        return self.count * self.unit_power_w


def _cage_cords(
    c: Cabling, rows: NDArray[np.bool_]
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Ordered length of the one MPO cord of each broken-out switch cage whose lanes among
    ``rows`` reach their frames through a shuffle (the longest of its lanes' cords), and the
    cage's link tier (the lowest of its lanes')."""
    keys: list[NDArray[np.int64]] = []
    lengths: list[NDArray[np.float64]] = []
    tiers: list[NDArray[np.int64]] = []
    for side in ("a", "b"):
        sel = np.flatnonzero(rows & getattr(c, f"shuffle_{side}"))
        if not sel.shape[0]:
            continue
        node = getattr(c, f"{side}_node")[sel].astype(np.int64)
        cage = getattr(c, f"{side}_port")[sel] // getattr(c, f"{side}_breakout")[sel]
        keys.append((c.fabric[sel].astype(np.int64) << 56) | (node << 20) | cage)
        lengths.append(getattr(c, f"cord_{side}_m")[sel].astype(np.float64))
        tiers.append(c.tier[sel].astype(np.int64))
    if not keys:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    key, length = np.concatenate(keys), np.concatenate(lengths)
    uniq, inv = np.unique(key, return_inverse=True)
    longest = np.zeros(uniq.shape[0])
    np.maximum.at(longest, inv, length)
    tier = np.full(uniq.shape[0], len(TIER_NAMES), dtype=np.int64)
    np.minimum.at(tier, inv, np.concatenate(tiers))
    return order_length(longest), tier


def _by_length(
    fabric: str,
    tier: str,
    category: str,
    item: str,
    lengths: NDArray[np.floating[Any]],
    unit_usd: float,
    unit_power_w: float,
) -> list[BomLine]:
    """One line per distinct ordered length among ``lengths``."""
    ls, counts = np.unique(lengths, return_counts=True)
    return [
        BomLine(fabric, tier, category, item, float(length), int(k), unit_usd, unit_power_w)
        for length, k in zip(ls.tolist(), counts.tolist(), strict=True)
    ]


def _media_lines(c: Cabling, f: int, t: int, i: int, mine: NDArray[np.bool_]) -> list[BomLine]:
    """The lines of medium ``i`` on the links ``mine`` of fabric ``f``, tier ``t``: an
    assembly by ordered length, or two transceivers per link and the patch cords."""
    m, name = c.media.models[i], c.media.names[i]
    fabric, tier = c.fabrics[f], TIER_NAMES[t - 1]
    if c.media.assembly[i]:
        return _by_length(
            fabric,
            tier,
            "cable",
            name,
            c.order_m[mine],
            m.cable_cost_usd + 2 * m.cost_usd_per_end,
            2 * m.power_w_per_end,
        )
    n = int(mine.sum())
    out = [
        BomLine(
            fabric, tier, "transceiver", name, 0.0, 2 * n, m.cost_usd_per_end, m.power_w_per_end
        )
    ]
    connector = "MPO" if m.fibers >= 8 else "LC duplex"
    st = mine & c.structured
    lengths = np.concatenate(
        [
            c.order_m[mine & ~c.structured],
            order_length(c.cord_a_m[st & ~c.shuffle_a].astype(np.float64)),
            order_length(c.cord_b_m[st & ~c.shuffle_b].astype(np.float64)),
        ]
    )
    cord = f"patch cord {m.kind.upper()} {connector}"
    out += _by_length(fabric, tier, "patch-cord", cord, lengths, m.cable_cost_usd, 0.0)
    return out


def _cage_lines(c: Cabling, f: int, i: int, mine: NDArray[np.bool_]) -> list[BomLine]:
    """The lanes of a broken-out cage share one MPO cord to one shuffle cassette: per tier,
    the cords by ordered length and the cassettes."""
    cage_len, cage_tier = _cage_cords(c, mine)
    if not cage_len.shape[0]:
        return []
    m = c.media.models[i]
    k = int(max(c.a_breakout.max(), c.b_breakout.max()))
    item = f"patch cord {m.kind.upper()} MPO-{2 * k if 2 * k > 12 else 12} (cage)"
    out: list[BomLine] = []
    for t in np.unique(cage_tier).tolist():
        here = cage_tier == t
        fabric, tier = c.fabrics[f], TIER_NAMES[t - 1]
        out += _by_length(
            fabric, tier, "patch-cord", item, cage_len[here], m.cable_cost_usd * k, 0.0
        )
        out.append(
            BomLine(
                fabric,
                tier,
                "patch-panel",
                f"shuffle cassette MPO to {k} duplex lanes (in the panels' price)",
                0.0,
                int(here.sum()),
                0.0,
                0.0,
            )
        )
    return out


def _plant_lines(c: Cabling) -> list[BomLine]:
    """Trunks and backbones by size, fibre and ordered length; splices; panels; patch racks."""
    if not c.n_trunks:
        return []
    out: list[BomLine] = []
    tl = order_length(c.trunk_length_m.astype(np.float64))
    for kind, size, smf in sorted(
        set(
            zip(
                c.trunk_kind.tolist(),
                c.trunk_fibers.tolist(),
                c.trunk_smf.tolist(),
                strict=True,
            )
        )
    ):
        sel = (c.trunk_kind == kind) & (c.trunk_fibers == size) & (c.trunk_smf == smf)
        fibre = "SMF" if smf else "MMF"
        ls, counts = np.unique(tl[sel], return_counts=True)
        for length, k in zip(ls.tolist(), counts.tolist(), strict=True):
            if kind == TRUNK and size == TRUNK_FIBERS:
                item, unit = (
                    f"{size}-fibre MPO trunk {fibre}",
                    TRUNK_USD + TRUNK_USD_PER_M * length,
                )
            else:
                what = "backbone" if kind == BACKBONE else "trunk"
                item = f"{size}-fibre ribbon {what} {fibre} (spliced)"
                unit = TRUNK_USD_PER_M / TRUNK_FIBERS * size * length
            out.append(BomLine("", "", "trunk", item, float(length), int(k), unit, 0.0))
    splices = int((c.trunk_splices.astype(np.int64) * c.trunk_fibers).sum())
    if splices:
        out.append(
            BomLine("", "", "splice", "fusion splice (labour, not priced)", 0.0, splices, 0.0, 0.0)
        )
    panels = int(c.frame_panels.sum())
    out.append(
        BomLine("", "", "patch-panel", "1U 144-fibre MPO panel", 0.0, panels, PANEL_USD, 0.0)
    )
    out.append(
        BomLine(
            "",
            "",
            "patch-panel",
            "patch rack 48U (36 panels)",
            0.0,
            panel_racks(c),
            PATCH_RACK_USD,
            0.0,
        )
    )
    return out


def cabling_bom(c: Cabling) -> list[BomLine]:
    """The bill of materials of ``c`` in a stable order: per fabric and link tier the media
    lines (media in catalog order), then the shared plant."""
    ok = c.realized()
    out: list[BomLine] = []
    for f in range(len(c.fabrics)):
        of_fabric = ok & (c.fabric == f)
        used = np.unique(c.medium[of_fabric]).tolist()
        mine: list[BomLine] = []
        for i in used:
            for t in range(1, len(TIER_NAMES) + 1):
                sel = of_fabric & (c.medium == i) & (c.tier == t)
                if sel.any():
                    mine += _media_lines(c, f, t, int(i), sel)
            mine += _cage_lines(c, f, int(i), of_fabric & (c.medium == i))
        out += sorted(mine, key=lambda x: TIER_NAMES.index(x.tier))  # stable: by tier
    out += _plant_lines(c)
    return out


def fibres_between(c: Cabling, level: str) -> dict[tuple[str, str], tuple[int, int]]:
    """Cables and installed fibres between each pair of halls (``level="hall"``) or buildings
    (``"building"``) as ``{(a, b): (cables, fibres)}``, a < b (``Cabling.between_halls`` and
    ``between_buildings``, computed once)."""
    return dict(c.between_buildings if level == "building" else c.between_halls)
