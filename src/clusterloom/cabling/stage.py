"""The cabling stage: fabric designs and their placement in, a :class:`Cabling` out.

Every logical link of every fabric is realized as arrays (no Python object per link):

1. **Ends.** Each end's rack, rack unit and floor position come from the placement; a port
   sits at the middle of its device's height, ``RU_M`` per rack unit above the floor.
2. **Run.** A link inside one rack runs in the rack (the height difference plus ``IN_RACK_M``);
   a link inside one row runs in the row tray (vertical drop from the port to the tray at
   ``TRAY_HEIGHT_M``, along the row, down again); a link leaving its row is structured: each
   end goes by patch cord to its frame, and an MPO trunk joins the two frames along the
   shortest tray route (spread when trays fill, see ``route``); between halls through both
   halls' distribution frames and a backbone cable (``plant``). A network rack is its own
   frame (panels at its top, the cord stays in the rack: TIA-942's distribution areas are the
   switch racks); any other rack's frame is its row's distribution frame (RDF), overhead panels
   at the row end nearer the hall door, ``FRAME_DROP_M`` below the tray.
3. **Slack.** Every cable gets ``SLACK_FRACTION`` of its run plus ``SLACK_M``; a trunk gets
   ``TRUNK_SLACK_M`` (REFERENCES.md: 2-3 m per trunk run). Cables are ordered in the standard
   lengths of :data:`LENGTH_BUCKETS_M`; reach is checked on the ordered length of an assembly
   and on the channel (cords + trunk) of an optic.
4. **Medium** by reach, optical budget and cost (``media``): fibre loss, the two panels, the
   HDF interconnects and splices of a channel between halls; once the plant is packed, the
   splices of its ribbon trunks too (channels they take past their budget move on to another
   optic, of another fibre type if need be, and the plant is packed again).
5. **Cables and fibres** (``plant``): 144-fibre trunks of 12 MPO-12 legs and high-count
   backbones; parallel optics take whole legs, duplex optics pack into legs; positions are
   assigned per frame pair in (fabric, link) order and flipped by every cable (TIA-568 method
   B: position ``p`` arrives at ``13 - p``). A cable ends on one 1U panel per 144 fibres at
   each frame (12 MPO ports, port = leg), except a trunk's end at an HDF (its legs plug into
   the backbone's panels).
6. **Labels**: ``{fabric prefix}-c{link:07d}`` for a link (``/A``, ``/B`` for its two patch
   cords), ``t{trunk:05d}`` for a trunk.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from clusterloom.cabling.artifact import (
    HALL_FRAME,
    RACK_FRAME,
    ROW_FRAME,
    Cabling,
    hdf_name,
    order_length,
    read_only,
)
from clusterloom.cabling.media import (
    DEFAULT_LOSSES,
    TIER_FIELDS,
    TRUNK_FIBERS,
    MediaTable,
    candidates,
    frame_cable_area_mm2,
    media_table,
)
from clusterloom.cabling.pathways import Pathways, build_pathways, site_trays
from clusterloom.cabling.plant import BACKBONE, TRUNK, plan_plant
from clusterloom.cabling.route import loads, route_pairs, spread
from clusterloom.cabling.validate import validate_cabling
from clusterloom.fabric import FabricDesign
from clusterloom.fabric.sizing import fabric_spec
from clusterloom.fabric.topology import Role
from clusterloom.findings import Finding, Severity
from clusterloom.placement import Placement
from clusterloom.placement.demand import NETWORK
from clusterloom.spec import Catalog, ClusterSpec

RU_M = 0.04445  # EIA-310 rack unit
TRAY_HEIGHT_M = 2.7  # tray bottom above the floor: 48U rack (~2.3 m) plus clearance
IN_RACK_M = 0.6  # into the rack's cable manager and out again
FRAME_DROP_M = 0.5  # from the tray down to an overhead patch panel
SLACK_FRACTION = 0.05
SLACK_M = 0.5
TRUNK_SLACK_M = 2.5
PATCH_PANEL_RU = 1
#: rounds of packing and moving channels that packing takes past their budget (see ``cable``)
REPACK_ROUNDS = 4

NONE = -1


@dataclass
class _Links:
    """Working arrays of all fabrics' links, concatenated."""

    fabric: NDArray[np.int8]
    link: NDArray[np.int32]
    a_node: NDArray[np.int32]
    b_node: NDArray[np.int32]
    a_port: NDArray[np.int32]
    b_port: NDArray[np.int32]
    a_rack: NDArray[np.int32]
    b_rack: NDArray[np.int32]
    a_u: NDArray[np.int16]
    b_u: NDArray[np.int16]
    a_h: NDArray[np.int8]
    b_h: NDArray[np.int8]
    tier: NDArray[np.int8]
    speed: NDArray[np.int32]
    a_breakout: NDArray[np.int16]
    b_breakout: NDArray[np.int16]


def _gather(placement: Placement, fabrics: tuple[FabricDesign, ...], catalog: Catalog) -> _Links:
    parts: dict[str, list[NDArray[Any]]] = {k: [] for k in _Links.__dataclass_fields__}
    for i, fd in enumerate(fabrics):
        t = fd.topology
        dev = placement.device(fd.name)
        n = t.n_links
        # logical ports per switch cage (a 51.2T switch's 800G cage as eight 100G ports)
        factor = np.ones(t.n_nodes, dtype=np.int16)
        for tier in fd.plan.switch_tiers:
            f = catalog.switches[tier.model].ports_per_cage(fd.plan.speed_gbps)
            factor[t.node_role == int(Role[tier.role.upper()])] = f
        parts["a_breakout"].append(factor[t.link_src])
        parts["b_breakout"].append(factor[t.link_dst])
        parts["fabric"].append(np.full(n, i, dtype=np.int8))
        parts["link"].append(np.arange(n, dtype=np.int32))
        parts["a_node"].append(t.link_src.astype(np.int32))
        parts["b_node"].append(t.link_dst.astype(np.int32))
        parts["a_port"].append(t.link_src_port.astype(np.int32))
        parts["b_port"].append(t.link_dst_port.astype(np.int32))
        parts["a_rack"].append(dev.node_rack[t.link_src].astype(np.int32))
        parts["b_rack"].append(dev.node_rack[t.link_dst].astype(np.int32))
        parts["a_u"].append(dev.node_u[t.link_src].astype(np.int16))
        parts["b_u"].append(dev.node_u[t.link_dst].astype(np.int16))
        parts["a_h"].append(dev.node_height[t.link_src].astype(np.int8))
        parts["b_h"].append(dev.node_height[t.link_dst].astype(np.int8))
        parts["tier"].append(t.link_tier.astype(np.int8))
        parts["speed"].append(np.full(n, fd.plan.speed_gbps, dtype=np.int32))
    return _Links(**{k: np.concatenate(v) for k, v in parts.items()})


def _row_geometry(pw: Pathways, placement: Placement) -> tuple[NDArray[Any], ...]:
    """Per position: distance along its row from the row head, the row-tray segment after it
    (-1 at a row's end); per row: the segment from the head to the first position and from the
    last position to the tail, the row's length head to tail."""
    floor = placement.floor
    P = floor.n_positions
    n_rows = len(floor.row_names)
    seg_after = np.full(P, -1, dtype=np.int64)
    is_pos_pair = (pw.seg_kind == 0) & (pw.seg_a < P) & (pw.seg_b < P)
    idx = np.flatnonzero(is_pos_pair)
    seg_after[pw.seg_a[idx]] = idx
    head_seg = np.full(n_rows, -1, dtype=np.int64)
    tail_seg = np.full(n_rows, -1, dtype=np.int64)
    heads = np.flatnonzero((pw.seg_a >= P) & (pw.seg_a < P + n_rows) & (pw.seg_b < P))
    head_seg[pw.seg_a[heads] - P] = heads
    tails = np.flatnonzero((pw.seg_b >= P + n_rows) & (pw.seg_b < P + 2 * n_rows) & (pw.seg_a < P))
    tail_seg[pw.seg_b[tails] - P - n_rows] = tails
    coord = np.zeros(P)
    row = floor.pos_row.astype(np.int64)
    step = np.zeros(P)
    has_next = seg_after >= 0
    step[1:][has_next[:-1]] = pw.seg_length_m[seg_after[:-1][has_next[:-1]]]
    first = np.ones(P, dtype=bool)
    first[1:] = row[1:] != row[:-1]
    step[first] = np.where(head_seg[row[first]] >= 0, pw.seg_length_m[head_seg[row[first]]], 0)
    coord = np.cumsum(step)
    # restart the sum at each row's first position
    base = np.maximum.accumulate(np.where(first, np.arange(P), 0))
    coord = coord - coord[base] + step[base]
    row_len = np.zeros(n_rows)
    last = np.ones(P, dtype=bool)
    last[:-1] = row[1:] != row[:-1]
    row_len[row[last]] = coord[last] + np.where(
        tail_seg[row[last]] >= 0, pw.seg_length_m[tail_seg[row[last]]], 0
    )
    return coord, seg_after, head_seg, tail_seg, row_len


def _frames(pw: Pathways, placement: Placement) -> NDArray[np.int32]:
    """Each row's distribution frame: the row end (head or tail node) nearer its hall door."""
    from scipy.sparse.csgraph import dijkstra

    floor = placement.floor
    dist = dijkstra(pw.graph(), directed=False, indices=pw.hall_door)
    hall = floor.row_hall.astype(np.int64)
    h_head = dist[hall, pw.row_head]
    h_tail = dist[hall, pw.row_tail]
    return np.where(h_tail < h_head, pw.row_tail, pw.row_head).astype(np.int32)


def _row_span_loads(
    n_seg: int,
    lo: NDArray[np.int64],
    hi: NDArray[np.int64],
    seg_after: NDArray[np.int64],
    weight: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Add ``weight`` to the row segments between positions ``lo < hi`` of one row (their
    segments have consecutive ids)."""
    diff = np.zeros(n_seg + 1)
    sel = hi > lo
    start = seg_after[lo[sel]]
    np.add.at(diff, start, weight[sel])
    np.add.at(diff, start + (hi[sel] - lo[sel]), -weight[sel])
    return np.cumsum(diff)[:n_seg]


def cable(spec: ClusterSpec, fabrics: tuple[FabricDesign, ...], placement: Placement) -> Cabling:
    """Realize every link of ``fabrics`` on ``placement``'s floor (see the module)."""
    catalog = spec.resolved_catalog()
    floor = placement.floor
    pw = build_pathways(floor, site_trays(spec.site))
    losses = spec.site.losses if spec.site is not None else DEFAULT_LOSSES
    mpo_db, splice_db, shuffle_db = losses.mpo_db, losses.splice_db, 2 * losses.mpo_db
    entrance = 2 if losses.entrance_splices else 0
    mt = media_table(catalog, losses)
    L = _gather(placement, fabrics, catalog)
    n = L.link.shape[0]
    findings: list[Finding] = []

    a_pos = placement.rack_position[L.a_rack].astype(np.int64)
    b_pos = placement.rack_position[L.b_rack].astype(np.int64)
    a_row = floor.pos_row[a_pos].astype(np.int64)
    b_row = floor.pos_row[b_pos].astype(np.int64)
    port_h_a = (L.a_u.astype(np.float64) - 1 + L.a_h / 2.0) * RU_M
    port_h_b = (L.b_u.astype(np.float64) - 1 + L.b_h / 2.0) * RU_M
    drop_a = np.maximum(TRAY_HEIGHT_M - port_h_a, 0.0)
    drop_b = np.maximum(TRAY_HEIGHT_M - port_h_b, 0.0)
    coord, seg_after, head_seg, tail_seg, row_len = _row_geometry(pw, placement)
    same_rack = L.a_rack == L.b_rack
    same_row = (a_row == b_row) & ~same_rack
    leaves = ~(same_rack | same_row)

    def slack(x: NDArray[np.float64]) -> NDArray[np.float64]:
        return x * (1.0 + SLACK_FRACTION) + SLACK_M

    # direct run inside the rack or the row
    direct = np.where(
        same_rack,
        np.abs(port_h_a - port_h_b) + IN_RACK_M,
        drop_a + np.abs(coord[a_pos] - coord[b_pos]) + drop_b,
    )
    direct = slack(direct)

    # structured: cords to each end's frame (its row's, or its network rack's panels), trunk
    # between the frames
    row_frame_node = _frames(pw, placement)
    frame_at_tail = row_frame_node == pw.row_tail
    n_rows = len(floor.row_names)
    net_racks = np.flatnonzero(placement.demand.rack_kind == NETWORK)
    rack_frame = np.full(placement.n_racks, NONE, dtype=np.int64)
    rack_frame[net_racks] = n_rows + np.arange(net_racks.shape[0])
    frame_node = np.concatenate([row_frame_node, placement.rack_position[net_racks]]).astype(
        np.int32
    )
    frame_hall = np.concatenate(
        [floor.row_hall, floor.pos_hall[placement.rack_position[net_racks]]]
    ).astype(np.int32)
    frame_names = tuple(f"{r.replace('/', '-')}-rdf" for r in floor.row_names) + tuple(
        f"{placement.rack_names[r]}-pp" for r in net_racks.tolist()
    )
    # one hall distribution frame per hall, at its door
    n_halls = floor.n_halls
    hdf_of_hall = len(frame_names) + np.arange(n_halls, dtype=np.int64)
    frame_names += tuple(hdf_name(h) for h in floor.hall_names)
    frame_node = np.concatenate([frame_node, pw.hall_door]).astype(np.int32)
    frame_hall = np.concatenate([frame_hall, np.arange(n_halls)]).astype(np.int32)
    frame_kind = np.repeat(
        np.array([ROW_FRAME, RACK_FRAME, HALL_FRAME], dtype=np.int8),
        [n_rows, net_racks.shape[0], n_halls],
    )
    nr = max(len(frame_names), 1)
    in_rack_a = rack_frame[L.a_rack] >= 0
    in_rack_b = rack_frame[L.b_rack] >= 0
    to_frame_a = np.where(frame_at_tail[a_row], row_len[a_row] - coord[a_pos], coord[a_pos])
    to_frame_b = np.where(frame_at_tail[b_row], row_len[b_row] - coord[b_pos], coord[b_pos])
    panel_h = TRAY_HEIGHT_M - FRAME_DROP_M  # panels at the top of a network rack
    cord_a = slack(
        np.where(
            in_rack_a,
            np.abs(panel_h - port_h_a) + IN_RACK_M,
            drop_a + to_frame_a + FRAME_DROP_M,
        )
    )
    cord_b = slack(
        np.where(
            in_rack_b,
            np.abs(panel_h - port_h_b) + IN_RACK_M,
            drop_b + to_frame_b + FRAME_DROP_M,
        )
    )
    end_frame_a = np.where(in_rack_a, rack_frame[L.a_rack], a_row)
    end_frame_b = np.where(in_rack_b, rack_frame[L.b_rack], b_row)
    fa = np.where(leaves, end_frame_a, NONE)
    fb = np.where(leaves, end_frame_b, NONE)
    pair_key = np.minimum(fa, fb) * nr + np.maximum(fa, fb)
    pairs, pair_of = np.unique(pair_key[leaves], return_inverse=True)
    p_lo, p_hi = pairs // nr, pairs % nr
    # a pair in one hall is one trunk; between halls frame -> HDF -> HDF -> frame (``plant``)
    p_inter = frame_hall[p_lo] != frame_hall[p_hi]
    hops_of_pair = np.where(p_inter, 3, 1)
    hop_src = np.where(p_inter, frame_node[hdf_of_hall[frame_hall[p_lo]]], frame_node[p_hi])
    hop_dst = frame_node[hdf_of_hall[frame_hall[p_hi]]]
    x = np.flatnonzero(p_inter)
    est, _, _ = route_pairs(
        pw,
        np.concatenate([frame_node[p_lo], hop_src[x], hop_dst[x]]),
        np.concatenate([hop_src, hop_dst[x], frame_node[p_hi[x]]]),
    )
    n_p = pairs.shape[0]
    route_est = est[:n_p].copy()
    route_est[x] += est[n_p : n_p + x.shape[0]] + est[n_p + x.shape[0] :]
    trunk_est = route_est + hops_of_pair * (2 * FRAME_DROP_M + TRUNK_SLACK_M)
    building = floor.hall_building.astype(np.int64)
    # a backbone is spliced to pigtailed panels at both HDFs, and again at each building
    # entrance it passes (outside-plant cable to indoor cable). A trunk of more than 144 fibres
    # (ribbon) is spliced at both ends too, but which trunks are ribbon is known only once the
    # plant is packed: channels that then exceed their budget move on (below)
    p_splices = (
        np.where(
            p_inter,
            np.where(building[frame_hall[p_lo]] != building[frame_hall[p_hi]], 2 + entrance, 2),
            0,
        )
        * splice_db
    )
    structured_len = np.zeros(n)
    structured_len[leaves] = cord_a[leaves] + trunk_est[pair_of] + cord_b[leaves]
    # a switch end in a broken-out cage (eight 100G lanes of one 800G module): the cage's one
    # MPO cord lands on a shuffle cassette that spreads its lanes over the frame's legs
    broken_ends = (L.a_breakout > 1).astype(np.int64) + (L.b_breakout > 1)
    # joints a channel adds to its two panels: an MPO interconnect at each HDF, the splices
    joint_db = np.zeros(n)
    joint_db[leaves] = np.where(p_inter, 2 * mpo_db, 0.0)[pair_of] + p_splices[pair_of]

    # assemblies named for a tier whose links leave the row run pos to pos through the trays
    medium = np.full(n, NONE, dtype=np.int16)
    structured = np.zeros(n, dtype=bool)
    long_direct = np.zeros(n, dtype=bool)
    # the splices of ribbon trunks a channel was packed into (known after packing, below)
    ribbon_db = np.zeros(n)
    fab_names = tuple(fd.name for fd in fabrics)
    cand_lists: dict[tuple[int, int], tuple[list[int], bool]] = {}

    def assign(sel: NDArray[np.int64], cands: list[int], named: str | None) -> None:
        """The first of ``cands`` (cheapest first) each link of ``sel`` without a medium
        fits: reach, kind of run and, for an optic, the channel's loss within its budget."""
        for c in cands:
            left = sel[medium[sel] == NONE]
            if left.shape[0] == 0:
                break
            assembly = bool(mt.assembly[c])
            reach = float(mt.reach_m[c])
            lv = leaves[left]
            if assembly and named is None:
                ok = ~lv & (order_length(direct[left]) <= reach + 1e-9)
                medium[left[ok]] = c
            elif assembly:
                medium[left] = c
                long_direct[left[lv]] = True
            else:
                length = np.where(lv, structured_len[left], direct[left])
                shuffled = broken_ends[left] if mt.fibers[c] < 8 else 0
                loss = mt.db_per_km[c] * length / 1000.0 + np.where(
                    lv,
                    2 * mt.panel_db[c]
                    + joint_db[left]
                    + ribbon_db[left]
                    + shuffled * (shuffle_db - mt.panel_db[c]),
                    0.0,
                )
                ok = length <= reach + 1e-9
                if mt.budget_db[c] > 0:
                    ok &= loss <= mt.budget_db[c] + 1e-9
                if named is not None:
                    ok[:] = True
                medium[left[ok]] = c
                structured[left[ok & lv]] = True

    for fi, fd in enumerate(fabrics):
        fs = fabric_spec(spec, fd.name)
        for tier in range(1, fd.plan.tiers + 1):
            sel = np.flatnonzero((L.fabric == fi) & (L.tier == tier))
            if sel.shape[0] == 0:
                continue
            named = getattr(fs.media, TIER_FIELDS[tier - 1])
            if named is not None and catalog.media[named].speed_gbps != fd.plan.speed_gbps:
                named = None
            cands = candidates(mt, fd.plan.speed_gbps, named)
            cand_lists[(fi, tier)] = (cands, named is not None)
            where = f"{fd.name} tier {tier}"
            if not cands:
                findings.append(
                    Finding(
                        Severity.ERROR,
                        "port-type",
                        f"{sel.shape[0]:,} links at {fd.plan.speed_gbps}G: the catalog has no "
                        "medium at that speed; add one under catalog.media",
                        where,
                    )
                )
                continue
            assign(sel, cands, named)
            left = sel[medium[sel] == NONE]
            if left.shape[0]:
                worst = left[np.argmax(np.where(leaves[left], structured_len[left], direct[left]))]
                longest = float(max(mt.reach_m[c] for c in cands))
                need_m = float(structured_len[worst] if leaves[worst] else direct[worst])
                findings.append(
                    Finding(
                        Severity.ERROR,
                        "no-medium",
                        f"{left.shape[0]:,} links no {fd.plan.speed_gbps}G medium reaches, the "
                        f"longest link {int(L.link[worst])} needs {need_m:.1f} m, the longest "
                        f"reach is {longest:g} m",
                        f"{where} link {int(L.link[worst])}",
                    )
                )

    # Which trunks are ribbon (spliced at both ends) is known once the plant is packed, and
    # packing depends on the media (fibre type, legs). A channel whose packed trunks take it
    # past its optic's budget is given the first optic that covers them, of any fibre type
    # (multimode between halls may have to become single-mode), and the plant is packed
    # again; a link keeps the splices it was found with, so each round only moves links on
    # and the rounds end. A link no optic covers keeps its own (the optical-budget check
    # reports it).
    for _ in range(REPACK_ROUNDS):
        st = np.flatnonzero(structured)
        if st.shape[0] == 0:
            break
        pre = plan_plant(
            end_frame_a[st].astype(np.int64),
            end_frame_b[st].astype(np.int64),
            mt.smf[medium[st]],
            mt.slots[medium[st]].astype(np.int64),
            L.fabric[st].astype(np.int64) * (1 << 32) + L.link[st],
            frame_hall.astype(np.int64),
            hdf_of_hall,
        )
        spliced = (pre.cable_kind == TRUNK) & (pre.cable_fibers > TRUNK_FIBERS)
        packed_db = (
            np.where(pre.hops >= 0, 2 * spliced[np.maximum(pre.hops, 0)], 0).sum(axis=1) * splice_db
        )
        m_st = medium[st]
        dup = mt.fibers[m_st] < 8
        est = (
            mt.db_per_km[m_st] * structured_len[st] / 1000.0
            + 2 * mt.panel_db[m_st]
            + joint_db[st]
            + packed_db
            + np.where(dup, broken_ends[st], 0) * (shuffle_db - mt.panel_db[m_st])
        )
        over = (mt.budget_db[m_st] > 0) & (est > mt.budget_db[m_st] + 1e-9)
        moved = 0
        for (fi, tier), (cands, named) in cand_lists.items():
            rows = st[over & (L.fabric[st] == fi) & (L.tier[st] == tier)]
            if named or rows.shape[0] == 0:
                continue
            was = medium[rows].copy()
            ribbon_db[rows] = np.maximum(ribbon_db[rows], packed_db[np.searchsorted(st, rows)])
            medium[rows] = NONE
            structured[rows] = False
            assign(rows, cands, None)
            stay = medium[rows] == NONE
            medium[rows[stay]] = was[stay]
            structured[rows[stay]] = True
            moved += int((medium[rows] != was).sum())
        if moved == 0:
            break

    # long assemblies: routed position to position
    ld = np.flatnonzero(long_direct)
    area_link = np.where(medium >= 0, mt.area_mm2[np.maximum(medium, 0)], 0.0)
    nseg = pw.n_segments
    base = np.zeros(nseg)
    cables = np.zeros(nseg)
    # in-row direct cables and the cords of structured links ride the row trays
    in_row = same_row & (medium >= 0) & ~long_direct
    lo = np.minimum(a_pos, b_pos)[in_row]
    hi = np.maximum(a_pos, b_pos)[in_row]
    base += _row_span_loads(nseg, lo, hi, seg_after, area_link[in_row])
    cables += _row_span_loads(nseg, lo, hi, seg_after, np.ones(lo.shape[0]))
    # positions of a row are consecutive: a cord runs from its position to the frame's end
    row_first = np.full(len(floor.row_names), -1, dtype=np.int64)
    row_last = np.full(len(floor.row_names), -1, dtype=np.int64)
    fr = floor.pos_row.astype(np.int64)
    row_first[fr[::-1]] = np.arange(floor.n_positions)[::-1]
    row_last[fr] = np.arange(floor.n_positions)
    for pos, row, own in ((a_pos, a_row, in_rack_a), (b_pos, b_row, in_rack_b)):
        to_row_frame = structured & ~own
        p = pos[to_row_frame]
        r = row[to_row_frame]
        w = area_link[to_row_frame]
        tail = frame_at_tail[r]
        first_pos = row_first[r]
        last_pos = row_last[r]
        lo2 = np.where(tail, p, first_pos)
        hi2 = np.where(tail, last_pos, p)
        base += _row_span_loads(nseg, lo2, hi2, seg_after, w)
        cables += _row_span_loads(nseg, lo2, hi2, seg_after, np.ones(p.shape[0]))
        end_seg = np.where(tail, tail_seg[r], head_seg[r])
        base += np.bincount(end_seg, weights=w, minlength=nseg)
        cables += np.bincount(end_seg, minlength=nseg)

    # the structured plant: cables between frames and each link's legs and fibre positions
    st = np.flatnonzero(structured)
    slots = mt.slots[medium[st]].astype(np.int64)
    plant = plan_plant(
        end_frame_a[st].astype(np.int64),
        end_frame_b[st].astype(np.int64),
        mt.smf[medium[st]],
        slots,
        L.fabric[st].astype(np.int64) * (1 << 32) + L.link[st],
        frame_hall.astype(np.int64),
        hdf_of_hall,
    )
    n_trunks = plant.cable_a.shape[0]
    hops = np.full((n, 3), NONE, dtype=np.int32)
    hop_legs = np.zeros((n, 3), dtype=np.int16)
    hops[st] = plant.hops
    hop_legs[st] = plant.hop_legs
    fiber_a = np.zeros(n, dtype=np.int8)
    fiber_b = np.zeros(n, dtype=np.int8)
    span = np.zeros(n, dtype=np.int8)
    fiber_a[st], fiber_b[st], span[st] = plant.fiber_a, plant.fiber_b, plant.span
    on_hop = plant.hops >= 0
    hop_link = np.repeat(np.arange(st.shape[0]), on_hop.sum(axis=1))
    hop_cable = plant.hops[on_hop]

    # route the cables (spreading off full trays); a cable's route may grow only by what the
    # reach of every link in it leaves over its estimated channel
    link_slack = np.maximum(mt.reach_m[medium[st]] - structured_len[st], 0.0)
    trunk_slack = np.full(n_trunks, np.inf)
    np.minimum.at(trunk_slack, hop_cable, link_slack[hop_link])
    trunk_area = frame_cable_area_mm2(plant.cable_fibers)
    tr_len, tr_pair, tr_seg, rerouted = spread(
        pw,
        frame_node[plant.cable_a],
        frame_node[plant.cable_b],
        trunk_area,
        base,
        slack=trunk_slack,
    )
    trunk_len = tr_len + 2 * FRAME_DROP_M + TRUNK_SLACK_M
    seg_trunks = np.bincount(tr_seg, minlength=nseg).astype(np.int64)
    route_ptr = np.concatenate([[0], np.cumsum(np.bincount(tr_pair, minlength=n_trunks))])
    base_trunk = loads(nseg, tr_pair, tr_seg, trunk_area)
    seg_fibers = np.rint(
        loads(nseg, tr_pair, tr_seg, plant.cable_fibers.astype(np.float64))
    ).astype(np.int64)
    trunk_bld = building[frame_hall[plant.cable_a]] != building[frame_hall[plant.cable_b]]
    trunk_splices = np.where(
        plant.cable_kind == BACKBONE,
        np.where(trunk_bld, 2 + entrance, 2),
        np.where(plant.cable_fibers > TRUNK_FIBERS, 2, 0),
    ).astype(np.int8)

    # long assemblies (reach is checked on the ordered length: keep the route within it)
    ld_room = (mt.reach_m[medium[ld]] - SLACK_M) / (1 + SLACK_FRACTION) - drop_a[ld] - drop_b[ld]
    ld_len, ld_pair, ld_seg, rr = spread(
        pw, a_pos[ld], b_pos[ld], area_link[ld], base + base_trunk, ld_room
    )
    rerouted += rr
    length = np.where(structured, 0.0, direct)
    length[ld] = slack(drop_a[ld] + ld_len + drop_b[ld])
    channel = cord_a[st] + cord_b[st]
    np.add.at(channel, hop_link, trunk_len[hop_cable])
    length[st] = channel
    area = base + base_trunk + loads(nseg, ld_pair, ld_seg, area_link[ld])
    cables += np.bincount(ld_seg, minlength=nseg)

    mi = np.maximum(medium, 0)
    joints = np.zeros(n)
    n_hops = on_hop.sum(axis=1)
    splices = np.zeros(st.shape[0])
    np.add.at(splices, hop_link, trunk_splices[hop_cable].astype(np.float64))
    joints[st] = np.where(n_hops == 3, 2 * mpo_db, 0.0) + splices * splice_db
    duplex = mt.fibers[mi] < 8
    shuffle_a = structured & duplex & (L.a_breakout > 1)
    shuffle_b = structured & duplex & (L.b_breakout > 1)
    shuffled = shuffle_a.astype(np.int64) + shuffle_b
    loss = mt.db_per_km[mi] * length / 1000.0 + np.where(
        structured, 2 * mt.panel_db[mi] + joints + shuffled * (shuffle_db - mt.panel_db[mi]), 0.0
    )
    loss = np.where(medium >= 0, loss, 0.0)
    _past_budget(medium, loss, L, mt, cand_lists, length, joints, shuffled, structured, shuffle_db)
    order_m = np.where(structured, 0.0, order_length(length))

    # panels: a cable takes one 1U panel per 144 fibres at each of its frames, except a
    # trunk's end at an HDF, whose legs plug into the backbone's panels; numbered per frame
    n_frames = len(frame_names)
    ends = np.concatenate([plant.cable_a, plant.cable_b]).astype(np.int64)
    tid = np.concatenate([np.arange(n_trunks), np.arange(n_trunks)])
    size = np.tile(-(-plant.cable_fibers.astype(np.int64) // TRUNK_FIBERS), 2)
    size[(frame_kind[ends] == HALL_FRAME) & (np.tile(plant.cable_kind, 2) == TRUNK)] = 0
    o = np.lexsort((tid, ends))
    first = np.zeros(2 * n_trunks, dtype=np.int64)
    if n_trunks:
        cum = np.cumsum(size[o])
        before = cum - size[o]
        frame_start = before[np.searchsorted(ends[o], ends[o], side="left")]
        first[o] = before - frame_start + 1
    first[size == 0] = 0
    panel_a = first[:n_trunks].astype(np.int32)
    panel_b = first[n_trunks:].astype(np.int32)
    frame_panels = np.bincount(ends, weights=size, minlength=n_frames).astype(np.int32)

    frame_a = np.where(structured, end_frame_a, NONE).astype(np.int32)
    frame_b = np.where(structured, end_frame_b, NONE).astype(np.int32)
    draft = Cabling(
        fabrics=fab_names,
        media=mt,
        pathways=pw,
        fabric=read_only(L.fabric),
        link=read_only(L.link),
        a_node=read_only(L.a_node),
        b_node=read_only(L.b_node),
        a_port=read_only(L.a_port),
        b_port=read_only(L.b_port),
        a_rack=read_only(L.a_rack),
        b_rack=read_only(L.b_rack),
        a_u=read_only(L.a_u),
        b_u=read_only(L.b_u),
        tier=read_only(L.tier),
        medium=read_only(medium),
        structured=read_only(structured),
        length_m=read_only(length.astype(np.float32)),
        order_m=read_only(order_m.astype(np.float32)),
        cord_a_m=read_only(np.where(structured, cord_a, 0.0).astype(np.float32)),
        cord_b_m=read_only(np.where(structured, cord_b, 0.0).astype(np.float32)),
        loss_db=read_only(loss.astype(np.float32)),
        frame_a=read_only(frame_a),
        frame_b=read_only(frame_b),
        hops=read_only(hops),
        hop_legs=read_only(hop_legs),
        a_breakout=read_only(L.a_breakout),
        b_breakout=read_only(L.b_breakout),
        shuffle_a=read_only(shuffle_a),
        shuffle_b=read_only(shuffle_b),
        fiber_a=read_only(fiber_a),
        fiber_b=read_only(fiber_b),
        span=read_only(span),
        frame_names=frame_names,
        frame_hall=read_only(frame_hall),
        frame_kind=read_only(frame_kind),
        n_row_frames=n_rows,
        frame_node=read_only(frame_node),
        frame_panels=read_only(frame_panels),
        trunk_a=read_only(plant.cable_a),
        trunk_b=read_only(plant.cable_b),
        trunk_fibers=read_only(plant.cable_fibers),
        trunk_fibers_used=read_only(plant.cable_used),
        trunk_smf=read_only(plant.cable_smf),
        trunk_kind=read_only(plant.cable_kind),
        trunk_splices=read_only(trunk_splices),
        trunk_route_ptr=read_only(route_ptr.astype(np.int64)),
        trunk_route_seg=read_only(tr_seg.astype(np.int32)),
        trunk_length_m=read_only(trunk_len.astype(np.float32)),
        trunk_panel_a=read_only(panel_a),
        trunk_panel_b=read_only(panel_b),
        seg_cables=read_only(cables.round().astype(np.int64)),
        seg_trunks=read_only(seg_trunks),
        seg_fibers=read_only(seg_fibers),
        seg_area_mm2=read_only(area),
        rerouted=rerouted,
        findings=(),
    )
    findings += validate_cabling(draft, fabrics)
    return _with_findings(draft, tuple(findings))


def _past_budget(
    medium: NDArray[np.int16],
    loss: NDArray[np.float64],
    L: _Links,
    mt: MediaTable,
    cand_lists: dict[tuple[int, int], tuple[list[int], bool]],
    length: NDArray[np.float64],
    joints: NDArray[np.float64],
    shuffled: NDArray[np.int64],
    structured: NDArray[np.bool_],
    shuffle_db: float,
) -> None:
    """Move structured links whose packed channel (spliced ribbon trunks) exceeds their optic's
    budget to the next candidate that takes the same positions (fibre type and legs, so the
    plant stays as packed) and whose reach and budget cover the channel; in place. Cheaper
    candidates failed with fewer joints already. A medium named by the spec stays (the
    optical-budget check reports it)."""
    mi = np.maximum(medium, 0)
    over = np.flatnonzero(
        structured & (medium >= 0) & (mt.budget_db[mi] > 0) & (loss > mt.budget_db[mi] + 1e-9)
    )
    for (fi, tier), (cands, named) in cand_lists.items():
        rows = over[(L.fabric[over] == fi) & (L.tier[over] == tier)]
        if named:
            continue
        for c in cands:
            if rows.shape[0] == 0:
                break
            if mt.assembly[c]:
                continue
            cur = medium[rows]
            lc = (
                mt.db_per_km[c] * length[rows] / 1000.0
                + 2 * mt.panel_db[c]
                + joints[rows]
                + shuffled[rows] * (shuffle_db - mt.panel_db[c])
            )
            ok = (
                (mt.slots[c] == mt.slots[cur])
                & (mt.smf[c] == mt.smf[cur])
                & (length[rows] <= mt.reach_m[c] + 1e-9)
                & (lc <= mt.budget_db[c] + 1e-9)
            )
            medium[rows[ok]] = c
            loss[rows[ok]] = lc[ok]
            rows = rows[~ok]


def _with_findings(c: Cabling, findings: tuple[Finding, ...]) -> Cabling:
    import dataclasses

    return dataclasses.replace(c, findings=findings)
