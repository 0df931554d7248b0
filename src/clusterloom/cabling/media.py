"""Media for cabling: cable diameters, optical budgets and the choice of medium per link.

**Choice.** A link runs at its fabric's speed. When the spec names a medium for the link's
tier (``fabrics.<f>.media``), that medium is used and checked. Otherwise every catalog medium
at the speed is a candidate, cheapest first (two ends plus the cable; ties: less power, then
name), and a link takes the first candidate whose reach covers its length and whose kind fits
its run: copper and active assemblies (DAC, AEC, AOC) run only inside a row (an assembly is
not pulled through patch panels); transceivers with fibre (MMF, SMF) run anywhere, directly in
the row tray inside a row, through the structured plant when they leave it.

**Diameters** (mm, for tray fill), per kind, vendor-typical figures:

======  ======  =======================================================================
kind    d (mm)  source
======  ======  =======================================================================
dac     9.4     REFERENCES.md: copper ~0.045 kg/m at 9.4 mm (400G/800G twinax assembly)
aec     7.0     active copper is thinner gauge than passive DAC (vendor datasheets, ~6-7 mm)
aoc     3.0     REFERENCES.md: AOC ~0.009 kg/m at 3 mm
mmf     3.0     MPO-12/16 or duplex LC patch cord, 3.0 mm jacket (vendor typical)
smf     3.0     same
trunk   12.0    144-fibre MPO trunk (12 x MPO-12 legs), 11-13 mm jacket (vendor typical)
======  ======  =======================================================================

**Backbones** between hall distribution frames (``plant``) are high-fibre-count rollable-ribbon
cables, spliced onto panels; :data:`BACKBONE_SIZES` (fibres, outer diameter in mm). The
diameters are approximate figures for rollable-ribbon designs, not one vendor's datasheet: the
FOA's guide to high-fibre-count cables puts 1,728 fibres in about twice the diameter of a
conventional 144-fibre cable (so ~24 mm), and FEC reported a 6,912-fibre cable pulled through
a 1.25-inch (32 mm) conduit (Cabling Installation & Maintenance), so under 32 mm; 864 and 3,456
are interpolated. They set tray and duct fill, so a site with a datasheet should check them.

**Optical budget.** Channel insertion loss = fibre attenuation x length + the loss of every
mated connector pair along the channel (the transceivers' own connectors are part of the
optic's budget, as IEEE 802.3 counts them). Figures:

==========================  ============  ====================================================
figure                      value         source
==========================  ============  ====================================================
multimode (850 nm, OM4)     3.0 dB/km     TIA-568.3-D OM4 at 850 nm (3.0 dB/km cabled fibre)
single-mode (1310 nm)       0.5 dB/km     TIA-568.3-D outside plant / ITU-T G.652 at 1310 nm
MPO joint                   0.35 dB       REFERENCES.md (low-loss MPO <= 0.35 dB)
LC joint                    0.25 dB       REFERENCES.md (LC <= 0.25 dB)
fusion splice               0.1 dB        typical fusion splice (FOA); TIA-568.3-D allows 0.3
SR (<= 100 m) budget        1.9 dB        IEEE 802.3cm 400GBASE-SR4.2 / 802.3bs SR8 channel IL
DR (<= 500 m) budget        3.0 dB        IEEE 802.3bs 400GBASE-DR4 channel insertion loss
FR (<= 2 km) budget         4.0 dB        IEEE 802.3cu 400GBASE-FR4
LR (<= 10 km) budget        6.3 dB        IEEE 802.3cu 400GBASE-LR4-6
==========================  ============  ====================================================

A site sets its own connector and splice losses, and whether backbones are spliced at building
entrances (``site.losses``).

A patch panel is one mated pair for parallel optics (MPO through an MPO adapter) and two for
duplex optics (LC front, MPO rear of a cassette: 0.25 + 0.35 dB). A duplex lane of a
broken-out switch cage (one 800G DR8 module as eight 100G links) reaches its frame on the
cage's MPO cord and a shuffle cassette (MPO front, MPO rear: 0.7 dB) instead. A structured
channel passes two panels (one per frame), the arrangement reach is quoted for; a channel
between halls adds one MPO interconnect at each hall distribution frame, the backbone's two
pigtail splices and, between buildings, a splice at each building entrance (``plant``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from clusterloom.spec import Catalog, MediaModel
from clusterloom.spec.site import PlantLosses

DIAMETER_MM: dict[str, float] = {
    "dac": 9.4,
    "aec": 7.0,
    "aoc": 3.0,
    "mmf": 3.0,
    "smf": 3.0,
}
TRUNK_DIAMETER_MM = 12.0
TRUNK_FIBERS = 144
LEG_FIBERS = 12
#: backbone cables between hall distribution frames: (fibres, outer diameter mm), ascending
BACKBONE_SIZES: tuple[tuple[int, float], ...] = (
    (864, 18.0),
    (1728, 24.0),
    (3456, 28.0),
    (6912, 31.0),
)
#: trunks from a frame to another frame or to its HDF: the 144-fibre MPO trunk, and spliced
#: ribbon cables up to 3,456 fibres for frames with many legs (a spine rack's)
TRUNK_SIZES: tuple[tuple[int, float], ...] = (
    (TRUNK_FIBERS, TRUNK_DIAMETER_MM),
    *BACKBONE_SIZES[:3],
)

MMF_DB_PER_KM = 3.0
SMF_DB_PER_KM = 0.5
#: the default losses of the plant's parts (a site sets its own: ``site.losses``)
DEFAULT_LOSSES = PlantLosses()
MPO_JOINT_DB = DEFAULT_LOSSES.mpo_db
LC_JOINT_DB = DEFAULT_LOSSES.lc_db
SPLICE_DB = DEFAULT_LOSSES.splice_db
#: a shuffle cassette at a frame: the cage's MPO cord in front, the legs' MPO at the rear
SHUFFLE_DB = 2 * MPO_JOINT_DB
#: (reach up to metres, channel budget dB) for single-mode optics; multimode uses SR_BUDGET_DB
SMF_BUDGETS_DB: tuple[tuple[float, float], ...] = ((500.0, 3.0), (2000.0, 4.0), (10000.0, 6.3))
SR_BUDGET_DB = 1.9

ASSEMBLY_KINDS = frozenset({"dac", "aec", "aoc"})
TIER_FIELDS = ("host_leaf", "leaf_spine", "spine_core")


def cable_area_mm2(kind: str) -> float:
    d = DIAMETER_MM[kind]
    return float(np.pi * d * d / 4.0)


TRUNK_AREA_MM2 = float(np.pi * TRUNK_DIAMETER_MM**2 / 4.0)


def frame_cable_area_mm2(fibers: NDArray[np.integer]) -> NDArray[np.float64]:
    """Cross-section of a cable between frames of ``fibers`` fibres: a 144-fibre trunk, or the
    ribbon size that holds them."""
    sizes = np.array([TRUNK_FIBERS] + [f for f, _ in BACKBONE_SIZES])
    diam = np.array([TRUNK_DIAMETER_MM] + [d for _, d in BACKBONE_SIZES])
    k = np.minimum(np.searchsorted(sizes, fibers), sizes.shape[0] - 1)
    return np.asarray(np.pi * diam[k] ** 2 / 4.0, dtype=np.float64)


def budget_db(m: MediaModel) -> float:
    """The channel insertion loss ``m`` tolerates (0 for copper and assemblies)."""
    if m.kind == "mmf":
        return SR_BUDGET_DB
    if m.kind == "smf":
        for reach, db in SMF_BUDGETS_DB:
            if m.reach_m <= reach:
                return db
        return SMF_BUDGETS_DB[-1][1]
    return 0.0


def panel_loss_db(m: MediaModel, losses: PlantLosses = DEFAULT_LOSSES) -> float:
    """Loss of one patch panel on a channel of ``m`` (parallel: MPO; duplex: LC + MPO)."""
    return losses.mpo_db if m.fibers >= 8 else losses.lc_db + losses.mpo_db


def attenuation_db_per_km(m: MediaModel) -> float:
    return MMF_DB_PER_KM if m.kind == "mmf" else SMF_DB_PER_KM if m.kind == "smf" else 0.0


def link_cost(m: MediaModel) -> float:
    """Cost of one link of ``m``: two ends plus the cable."""
    return 2.0 * m.cost_usd_per_end + m.cable_cost_usd


def legs(m: MediaModel) -> int:
    """Fibre positions a link of ``m`` takes in a trunk: whole MPO-12 legs for parallel optics
    (8 or 16 fibres: 1 or 2 legs, method-B positions 1-4 and 9-12), else its fibres."""
    return -(-m.fibers // LEG_FIBERS) * LEG_FIBERS if m.fibers >= 8 else m.fibers


@dataclass(frozen=True)
class MediaTable:
    """The media a run may use, indexed by position (``names[i]``), with arrays for gathers."""

    names: tuple[str, ...]
    models: tuple[MediaModel, ...]
    reach_m: NDArray[np.float64]
    assembly: NDArray[np.bool_]
    area_mm2: NDArray[np.float64]
    fibers: NDArray[np.int16]
    slots: NDArray[np.int16]
    budget_db: NDArray[np.float64]
    db_per_km: NDArray[np.float64]
    panel_db: NDArray[np.float64]
    smf: NDArray[np.bool_]  # single-mode (never shares a cable with multimode)

    def index(self, name: str) -> int:
        return self.names.index(name)


def media_table(catalog: Catalog, losses: PlantLosses = DEFAULT_LOSSES) -> MediaTable:
    names = tuple(sorted(catalog.media))
    models = tuple(catalog.media[n] for n in names)
    return MediaTable(
        names=names,
        models=models,
        reach_m=np.array([m.reach_m for m in models], dtype=np.float64),
        assembly=np.array([m.kind in ASSEMBLY_KINDS for m in models], dtype=bool),
        area_mm2=np.array([cable_area_mm2(m.kind) for m in models], dtype=np.float64),
        fibers=np.array([m.fibers for m in models], dtype=np.int16),
        slots=np.array([legs(m) for m in models], dtype=np.int16),
        budget_db=np.array([budget_db(m) for m in models], dtype=np.float64),
        db_per_km=np.array([attenuation_db_per_km(m) for m in models], dtype=np.float64),
        panel_db=np.array([panel_loss_db(m, losses) for m in models], dtype=np.float64),
        smf=np.array([m.kind == "smf" for m in models], dtype=bool),
    )


def candidates(table: MediaTable, speed_gbps: int, named: str | None) -> list[int]:
    """Media a link at ``speed_gbps`` may use, in order of preference (see the module)."""
    if named is not None and named in table.names:
        return [table.index(named)]
    found = [i for i, m in enumerate(table.models) if m.speed_gbps == speed_gbps]
    return sorted(
        found, key=lambda i: (link_cost(table.models[i]), table.models[i].power_w_per_end, i)
    )
