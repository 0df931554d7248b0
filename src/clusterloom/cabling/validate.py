"""Checks of a :class:`~clusterloom.cabling.stage.Cabling`, recomputed from its arrays.

=================  ===========================================================================
code               what
=================  ===========================================================================
``realized-once``  every link of every fabric appears exactly once and has a medium
``port-reuse``     no (fabric, device, port) is the end of two cables
``reach``          an assembly's ordered length, an optic's channel length, within its reach
``optical-budget`` fibre loss plus panel joints within the optic's channel budget
``tray-fill``      cables in each pathway segment within its fill limit (info: the fullest)
``polarity``       method B: the far end of a leg position ``p`` is ``13 - p`` (an odd
                   number of cables); the cables chain from the a frame to the b frame; no
                   cable fibre position carries two links, no link runs past a cable's legs
``labels``         every cable label unique
=================  ===========================================================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from clusterloom.cabling.media import LEG_FIBERS
from clusterloom.fabric import FabricDesign
from clusterloom.findings import Finding, Severity

if TYPE_CHECKING:
    from clusterloom.cabling.artifact import Cabling

#: Most offending items named in one finding.
SHOW = 5


def label_prefix(fabric: str) -> str:
    """First letter of the fabric, upper case: ``B`` for the backend, ``F`` for the frontend."""
    return fabric[:1].upper()


def cable_label(fabric: str, tier: int, link: int) -> str:
    """``B2-0001234``: backend tier-2 link 1234 (patch cords add ``/A`` and ``/B``)."""
    return f"{label_prefix(fabric)}{tier}-{link:07d}"


def _err(code: str, message: str, where: str = "") -> Finding:
    return Finding(Severity.ERROR, code, message, where)


def validate_cabling(c: Cabling, fabrics: tuple[FabricDesign, ...]) -> list[Finding]:
    out: list[Finding] = []
    ok = c.realized()
    for i, fd in enumerate(fabrics):
        mine = c.link[(c.fabric == i) & ok]
        counts = np.bincount(mine, minlength=fd.topology.n_links)
        missing = np.flatnonzero(counts == 0)
        twice = np.flatnonzero(counts > 1)
        if missing.shape[0] or twice.shape[0]:
            out.append(
                _err(
                    "realized-once",
                    f"{missing.shape[0]:,} of {fd.topology.n_links:,} links not realized, "
                    f"{twice.shape[0]:,} realized more than once (links "
                    f"{', '.join(str(x) for x in np.concatenate([missing, twice])[:SHOW])})",
                    fd.name,
                )
            )

    # ports: (fabric, node, port) of both ends
    node = np.concatenate([c.a_node, c.b_node]).astype(np.int64)
    port = np.concatenate([c.a_port, c.b_port]).astype(np.int64)
    fab = np.concatenate([c.fabric, c.fabric]).astype(np.int64)
    if node.shape[0]:
        key = (fab * (int(node.max()) + 1) + node) * (int(port.max()) + 1) + port
        uniq, cnt = np.unique(key, return_counts=True)
        dup = uniq[cnt > 1]
        if dup.shape[0]:
            out.append(
                _err("port-reuse", f"{dup.shape[0]:,} ports are the end of more than one cable")
            )

    mt = c.media
    mi = np.maximum(c.medium, 0)
    assembly = mt.assembly[mi]
    measured = np.where(assembly, c.order_m, c.length_m).astype(np.float64)
    far = np.flatnonzero(ok & (measured > mt.reach_m[mi] + 1e-6))
    if far.shape[0]:
        w = far[np.argmax(measured[far] - mt.reach_m[mi[far]])]
        out.append(
            _err(
                "reach",
                f"{far.shape[0]:,} cables longer than their medium reaches; link "
                f"{int(c.link[w])} ({mt.names[mi[w]]}) is {measured[w]:.1f} m, reach "
                f"{mt.reach_m[mi[w]]:g} m",
                f"{c.fabrics[int(c.fabric[w])]} link {int(c.link[w])}",
            )
        )
    optical = ok & (mt.budget_db[mi] > 0)
    over = np.flatnonzero(optical & (c.loss_db > mt.budget_db[mi] + 1e-6))
    if over.shape[0]:
        w = over[np.argmax(c.loss_db[over] - mt.budget_db[mi[over]])]
        out.append(
            _err(
                "optical-budget",
                f"{over.shape[0]:,} channels lose more than their optic allows; link "
                f"{int(c.link[w])} ({mt.names[mi[w]]}, {c.length_m[w]:.0f} m) loses "
                f"{c.loss_db[w]:.2f} dB, budget {mt.budget_db[mi[w]]:.2f} dB",
                f"{c.fabrics[int(c.fabric[w])]} link {int(c.link[w])}",
            )
        )

    pw = c.pathways
    cap = pw.seg_capacity_mm2
    full = np.flatnonzero(c.seg_area_mm2 > cap + 1e-6)
    worst_first = full[np.argsort(-(c.seg_area_mm2[full] / cap[full]), kind="stable")]
    for rank, s in enumerate(worst_first[:SHOW].tolist()):
        more = full.shape[0] - SHOW if rank == 0 and full.shape[0] > SHOW else 0
        out.append(
            _err(
                "tray-fill",
                f"{c.seg_area_mm2[s]:,.0f} mm2 of cable ({int(c.seg_cables[s]):,} cables, "
                f"{int(c.seg_trunks[s]):,} trunks) in a {pw.tray(s).description} that may "
                f"carry {cap[s]:,.0f} mm2 ({pw.tray(s).fill:.0%} fill): "
                f"it needs {int(np.ceil(c.seg_area_mm2[s] / cap[s]))} such pathways"
                + (f"; {more:,} more segments overfull" if more else ""),
                pw.segment_name(s),
            )
        )
    if pw.n_segments and not full.shape[0]:
        fill = c.seg_fill
        s = int(np.argmax(fill))
        out.append(
            Finding(
                Severity.INFO,
                "tray-fill",
                f"fullest segment at {fill[s]:.1%} of its cross-section "
                f"(limit {pw.tray(s).fill:.0%})",
                pw.segment_name(s),
            )
        )

    st = np.flatnonzero(c.structured & ok)
    if st.shape[0]:
        out += _polarity(c, st)

    prefixes = [label_prefix(f) for f in c.fabrics]
    if len(set(prefixes)) != len(prefixes):
        out.append(_err("labels", f"fabrics {', '.join(c.fabrics)} share a label prefix"))
    lab = c.fabric[ok].astype(np.int64) * (1 << 32) + c.link[ok]
    if np.unique(lab).shape[0] != lab.shape[0]:
        out.append(_err("labels", "two cables carry the same label"))
    return out


def _polarity(c: Cabling, st: np.ndarray) -> list[Finding]:
    """Method-B positions and fibre occupancy of the structured links ``st``, cable by cable
    along each link's chain from its a frame (see ``plant``)."""
    mt = c.media
    mi = np.maximum(c.medium[st], 0)
    fa = c.fiber_a[st].astype(np.int64)
    fb = c.fiber_b[st].astype(np.int64)
    sp = c.span[st].astype(np.int64)
    slots = mt.slots[mi].astype(np.int64)
    n_hops = c.n_hops[st]
    bad = (fa + fb + sp - 1 != LEG_FIBERS + 1) | (fa < 1) | (fb < 1) | (n_hops % 2 == 0)
    base = np.concatenate([[0], np.cumsum(c.trunk_fibers.astype(np.int64))])
    cur = c.frame_a[st].astype(np.int64)
    starts: list[np.ndarray] = []
    extents: list[np.ndarray] = []
    owners: list[np.ndarray] = []
    for col in range(c.hops.shape[1]):
        on = np.flatnonzero(c.hops[st, col] >= 0)
        t = c.hops[st[on], col].astype(np.int64)
        ta, tb = c.trunk_a[t].astype(np.int64), c.trunk_b[t].astype(np.int64)
        faces = ta == cur[on]
        bad[on[~faces & (tb != cur[on])]] = True  # the chain breaks
        cur[on] = np.where(faces, tb, ta)
        pos = fa[on] if col % 2 == 0 else fb[on]
        pos_at_a = np.where(faces, pos, LEG_FIBERS + 1 - (pos + sp[on] - 1))
        leg = c.hop_legs[st[on], col].astype(np.int64)
        legs = -(-slots[on] // LEG_FIBERS)
        bad[on[(leg < 1) | (leg + legs - 1 > c.trunk_fibers[t] // LEG_FIBERS)]] = True
        starts.append(base[t] + (leg - 1) * LEG_FIBERS + pos_at_a - 1)
        extents.append(slots[on])
        owners.append(on)
    bad |= cur != c.frame_b[st]
    start = np.concatenate(starts)
    extent = np.concatenate(extents)
    owner = np.concatenate(owners)
    o = np.argsort(start, kind="stable")
    overlap = np.flatnonzero(start[o][1:] < (start[o] + extent[o])[:-1])
    bad_i = np.flatnonzero(bad)
    if not bad_i.shape[0] and not overlap.shape[0]:
        return []
    w = st[bad_i[0]] if bad_i.shape[0] else st[owner[o[overlap[0] + 1]]]
    hops = " > ".join(f"t{int(x):05d}" for x in c.hops[w] if x >= 0)
    return [
        _err(
            "polarity",
            f"{bad_i.shape[0]:,} links break method-B polarity or their cable chain, "
            f"{overlap.shape[0]:,} share cable fibres; link {int(c.link[w])}: {hops} leg "
            f"{int(c.leg[w])} fibre {int(c.fiber_a[w])} -> {int(c.fiber_b[w])}",
            f"{c.fabrics[int(c.fabric[w])]} link {int(c.link[w])}",
        )
    ]
