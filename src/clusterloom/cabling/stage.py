"""The cabling stage: fabric designs and their placement in, a :class:`Cabling` out.

Every logical link of every fabric is realized as arrays (no Python object per link):

1. **Ends.** Each end's rack, rack unit and floor position come from the placement; a port
   sits at the middle of its device's height, ``RU_M`` per rack unit above the floor.
2. **Run.** A link inside one rack runs in the rack (the height difference plus ``IN_RACK_M``);
   a link inside one row runs in the row tray (vertical drop from the port to the tray at
   ``TRAY_HEIGHT_M``, along the row, down again); a link leaving its row is structured: each
   end goes by patch cord to its frame, and an MPO trunk joins the two frames along the
   shortest tray route (spread when trays fill, see ``route``; each hall on its own trays,
   one executor task per hall, see ``halls``); between halls through both
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
from typing import TYPE_CHECKING, Any

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
from clusterloom.cabling.halls import route_by_hall
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
from clusterloom.cabling.plant import BACKBONE, TRUNK, Plant, plan_plant
from clusterloom.cabling.route import loads
from clusterloom.cabling.validate import validate_cabling
from clusterloom.fabric import FabricDesign
from clusterloom.fabric.sizing import fabric_spec
from clusterloom.fabric.topology import Role
from clusterloom.findings import Finding, Severity
from clusterloom.placement import Placement
from clusterloom.placement.demand import NETWORK
from clusterloom.placement.floor import FloorPlan
from clusterloom.spec import Catalog, ClusterSpec
from clusterloom.spec.site import PlantLosses

if TYPE_CHECKING:
    from clusterloom.exec import Executor

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


def _slack(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """A cable's length with its slack: ``SLACK_FRACTION`` of its run plus ``SLACK_M``."""
    return x * (1.0 + SLACK_FRACTION) + SLACK_M


def channel_loss_db(
    mt: MediaTable,
    m: NDArray[np.integer] | int,
    length: NDArray[np.float64],
    joints: tuple[NDArray[np.float64], ...],
    shuffled: NDArray[np.int64] | int,
    shuffle_db: float,
    structured: NDArray[np.bool_] | bool = True,
) -> NDArray[np.float64]:
    """The optical loss (dB) of each link's channel on medium ``m`` (indices into ``mt``), the
    one formula of the optical budget: the fibre over ``length`` metres and, for a
    ``structured`` link, its two panels, its ``joints`` (HDF interconnects, splices, added in
    order) and, at each of its ``shuffled`` ends, a shuffle cassette in place of a panel."""
    panel = mt.panel_db[m]
    extra = 2 * panel
    for joint in joints:
        extra = extra + joint
    out: NDArray[np.float64] = mt.db_per_km[m] * length / 1000.0 + np.where(
        structured, extra + shuffled * (shuffle_db - panel), 0.0
    )
    return out


@dataclass(frozen=True)
class _Runs:
    """Per link: both ends' positions and rows, port heights and drops to the tray, whether it
    stays in its rack or row (else it ``leaves``: structured), its direct run with slack; the
    rows' geometry (:func:`_row_geometry`)."""

    a_pos: NDArray[np.int64]
    b_pos: NDArray[np.int64]
    a_row: NDArray[np.int64]
    b_row: NDArray[np.int64]
    port_h_a: NDArray[np.float64]
    port_h_b: NDArray[np.float64]
    drop_a: NDArray[np.float64]
    drop_b: NDArray[np.float64]
    coord: NDArray[np.float64]
    seg_after: NDArray[np.int64]
    head_seg: NDArray[np.int64]
    tail_seg: NDArray[np.int64]
    row_len: NDArray[np.float64]
    same_row: NDArray[np.bool_]
    leaves: NDArray[np.bool_]
    direct: NDArray[np.float64]


def _runs(L: _Links, placement: Placement, pw: Pathways) -> _Runs:
    """Step 1 and 2 of the module: the ends and the direct run inside the rack or the row."""
    floor = placement.floor
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
    direct = np.where(
        same_rack,
        np.abs(port_h_a - port_h_b) + IN_RACK_M,
        drop_a + np.abs(coord[a_pos] - coord[b_pos]) + drop_b,
    )
    return _Runs(
        a_pos=a_pos,
        b_pos=b_pos,
        a_row=a_row,
        b_row=b_row,
        port_h_a=port_h_a,
        port_h_b=port_h_b,
        drop_a=drop_a,
        drop_b=drop_b,
        coord=coord,
        seg_after=seg_after,
        head_seg=head_seg,
        tail_seg=tail_seg,
        row_len=row_len,
        same_row=same_row,
        leaves=~(same_rack | same_row),
        direct=_slack(direct),
    )


@dataclass(frozen=True)
class _Frames:
    """The frames: one per row (its RDF), one per network rack (its own panels), one HDF per
    hall; each one's name, tray node, hall and kind. Per rack its own frame (-1), per hall its
    HDF, per row whether its frame is at the tail."""

    names: tuple[str, ...]
    node: NDArray[np.int32]
    hall: NDArray[np.int32]
    kind: NDArray[np.int8]
    n_rows: int
    rack_frame: NDArray[np.int64]
    hdf_of_hall: NDArray[np.int64]
    at_tail: NDArray[np.bool_]


def _frame_table(pw: Pathways, placement: Placement) -> _Frames:
    floor = placement.floor
    row_frame_node = _frames(pw, placement)
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
    frame_kind = np.repeat(
        np.array([ROW_FRAME, RACK_FRAME, HALL_FRAME], dtype=np.int8),
        [n_rows, net_racks.shape[0], n_halls],
    )
    return _Frames(
        names=frame_names,
        node=np.concatenate([frame_node, pw.hall_door]).astype(np.int32),
        hall=np.concatenate([frame_hall, np.arange(n_halls)]).astype(np.int32),
        kind=frame_kind,
        n_rows=n_rows,
        rack_frame=rack_frame,
        hdf_of_hall=hdf_of_hall,
        at_tail=row_frame_node == pw.row_tail,
    )


@dataclass(frozen=True)
class _Ends:
    """Per link, at each end: whether its frame is its own network rack's panels, the patch
    cord to its frame (with slack) and the frame."""

    in_rack_a: NDArray[np.bool_]
    in_rack_b: NDArray[np.bool_]
    cord_a: NDArray[np.float64]
    cord_b: NDArray[np.float64]
    frame_a: NDArray[np.int64]
    frame_b: NDArray[np.int64]


def _cords(L: _Links, r: _Runs, fr: _Frames) -> _Ends:
    """Structured: each end's cord to its frame (its row's, or its network rack's panels)."""
    panel_h = TRAY_HEIGHT_M - FRAME_DROP_M  # panels at the top of a network rack
    out = []
    for rack, pos, row, port_h, drop in (
        (L.a_rack, r.a_pos, r.a_row, r.port_h_a, r.drop_a),
        (L.b_rack, r.b_pos, r.b_row, r.port_h_b, r.drop_b),
    ):
        in_rack = fr.rack_frame[rack] >= 0
        to_frame = np.where(fr.at_tail[row], r.row_len[row] - r.coord[pos], r.coord[pos])
        cord = _slack(
            np.where(in_rack, np.abs(panel_h - port_h) + IN_RACK_M, drop + to_frame + FRAME_DROP_M)
        )
        out.append((in_rack, cord, np.where(in_rack, fr.rack_frame[rack], row)))
    (in_rack_a, cord_a, frame_a), (in_rack_b, cord_b, frame_b) = out
    return _Ends(in_rack_a, in_rack_b, cord_a, cord_b, frame_a, frame_b)


def _backbone_splices(cross_building: NDArray[np.bool_], losses: PlantLosses) -> NDArray[np.int64]:
    """Splices of a backbone: to the pigtailed panels at both HDFs, and, when it leaves its
    building, at both building entrances too (outside-plant cable to indoor cable) if the
    site splices there."""
    entrance = 2 if losses.entrance_splices else 0
    out: NDArray[np.int64] = np.where(cross_building, 2 + entrance, 2)
    return out


@dataclass(frozen=True)
class _Channels:
    """Per link, before the plant is packed: the structured channel's estimated length (cords
    and the routed trunks between its frames), the loss of its joints (HDF interconnects,
    backbone splices) and its ends in a broken-out cage (0, 1 or 2)."""

    length: NDArray[np.float64]
    joint_db: NDArray[np.float64]
    broken_ends: NDArray[np.int64]


def _channel_estimates(
    L: _Links,
    r: _Runs,
    fr: _Frames,
    e: _Ends,
    pw: Pathways,
    floor: FloorPlan,
    losses: PlantLosses,
    executor: Executor | None,
) -> _Channels:
    n = L.link.shape[0]
    nr = max(len(fr.names), 1)
    leaves = r.leaves
    fa = np.where(leaves, e.frame_a, NONE)
    fb = np.where(leaves, e.frame_b, NONE)
    pair_key = np.minimum(fa, fb) * nr + np.maximum(fa, fb)
    pairs, pair_of = np.unique(pair_key[leaves], return_inverse=True)
    p_lo, p_hi = pairs // nr, pairs % nr
    # a pair in one hall is one trunk; between halls frame -> HDF -> HDF -> frame (``plant``)
    p_inter = fr.hall[p_lo] != fr.hall[p_hi]
    hops_of_pair = np.where(p_inter, 3, 1)
    hop_src = np.where(p_inter, fr.node[fr.hdf_of_hall[fr.hall[p_lo]]], fr.node[p_hi])
    hop_dst = fr.node[fr.hdf_of_hall[fr.hall[p_hi]]]
    x = np.flatnonzero(p_inter)
    est, _, _, _ = route_by_hall(
        pw,
        np.concatenate([fr.node[p_lo], hop_src[x], hop_dst[x]]),
        np.concatenate([hop_src, hop_dst[x], fr.node[p_hi[x]]]),
        executor=executor,
    )
    n_p = pairs.shape[0]
    route_est = est[:n_p].copy()
    route_est[x] += est[n_p : n_p + x.shape[0]] + est[n_p + x.shape[0] :]
    trunk_est = route_est + hops_of_pair * (2 * FRAME_DROP_M + TRUNK_SLACK_M)
    building = floor.hall_building.astype(np.int64)
    # a backbone is spliced to pigtailed panels at both HDFs, and again at each building
    # entrance it passes (outside-plant cable to indoor cable). A trunk of more than 144 fibres
    # (ribbon) is spliced at both ends too, but which trunks are ribbon is known only once the
    # plant is packed: channels that then exceed their budget move on (``_repack``)
    cross = building[fr.hall[p_lo]] != building[fr.hall[p_hi]]
    p_splices = np.where(p_inter, _backbone_splices(cross, losses), 0) * losses.splice_db
    structured_len = np.zeros(n)
    structured_len[leaves] = e.cord_a[leaves] + trunk_est[pair_of] + e.cord_b[leaves]
    # a switch end in a broken-out cage (eight 100G lanes of one 800G module): the cage's one
    # MPO cord lands on a shuffle cassette that spreads its lanes over the frame's legs
    broken_ends = (L.a_breakout > 1).astype(np.int64) + (L.b_breakout > 1)
    # joints a channel adds to its two panels: an MPO interconnect at each HDF, the splices
    joint_db = np.zeros(n)
    joint_db[leaves] = np.where(p_inter, 2 * losses.mpo_db, 0.0)[pair_of] + p_splices[pair_of]
    return _Channels(structured_len, joint_db, broken_ends)


@dataclass
class _Choice:
    """The media chosen so far, filled in place: per link its ``medium`` (-1 none yet), whether
    it is ``structured`` or a ``long_direct`` assembly routed position to position, the
    ``ribbon_db`` of the ribbon trunks it was packed into (known after packing); per (fabric,
    tier) its candidates (cheapest first) and whether the spec named the medium."""

    medium: NDArray[np.int16]
    structured: NDArray[np.bool_]
    long_direct: NDArray[np.bool_]
    ribbon_db: NDArray[np.float64]
    cand_lists: dict[tuple[int, int], tuple[list[int], bool]]


def _assign(
    ch: _Choice,
    sel: NDArray[np.int64],
    cands: list[int],
    named: str | None,
    mt: MediaTable,
    r: _Runs,
    chan: _Channels,
    shuffle_db: float,
) -> None:
    """The first of ``cands`` (cheapest first) each link of ``sel`` without a medium fits:
    reach, kind of run and, for an optic, the channel's loss within its budget. Assemblies
    named for a tier whose links leave the row run position to position through the trays."""
    medium = ch.medium
    for c in cands:
        left = sel[medium[sel] == NONE]
        if left.shape[0] == 0:
            break
        assembly = bool(mt.assembly[c])
        reach = float(mt.reach_m[c])
        lv = r.leaves[left]
        if assembly and named is None:
            ok = ~lv & (order_length(r.direct[left]) <= reach + 1e-9)
            medium[left[ok]] = c
        elif assembly:
            medium[left] = c
            ch.long_direct[left[lv]] = True
        else:
            length = np.where(lv, chan.length[left], r.direct[left])
            shuffled = chan.broken_ends[left] if mt.fibers[c] < 8 else 0
            joints = (chan.joint_db[left], ch.ribbon_db[left])
            loss = channel_loss_db(mt, c, length, joints, shuffled, shuffle_db, lv)
            ok = length <= reach + 1e-9
            if mt.budget_db[c] > 0:
                ok &= loss <= mt.budget_db[c] + 1e-9
            if named is not None:
                ok[:] = True
            medium[left[ok]] = c
            ch.structured[left[ok & lv]] = True


def _choose_media(
    spec: ClusterSpec,
    catalog: Catalog,
    fabrics: tuple[FabricDesign, ...],
    mt: MediaTable,
    L: _Links,
    r: _Runs,
    chan: _Channels,
    shuffle_db: float,
) -> tuple[_Choice, list[Finding]]:
    """Step 4: each (fabric, tier)'s links get the cheapest medium that covers them; a tier
    with no medium at its speed, or links no medium reaches, is a finding."""
    n = L.link.shape[0]
    ch = _Choice(
        medium=np.full(n, NONE, dtype=np.int16),
        structured=np.zeros(n, dtype=bool),
        long_direct=np.zeros(n, dtype=bool),
        ribbon_db=np.zeros(n),
        cand_lists={},
    )
    findings: list[Finding] = []
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
            ch.cand_lists[(fi, tier)] = (cands, named is not None)
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
            _assign(ch, sel, cands, named, mt, r, chan, shuffle_db)
            left = sel[ch.medium[sel] == NONE]
            if left.shape[0]:
                length = np.where(r.leaves[left], chan.length[left], r.direct[left])
                worst = left[np.argmax(length)]
                longest = float(max(mt.reach_m[c] for c in cands))
                need_m = float(chan.length[worst] if r.leaves[worst] else r.direct[worst])
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
    return ch, findings


def _pack(
    st: NDArray[np.int64],
    medium: NDArray[np.int16],
    L: _Links,
    mt: MediaTable,
    e: _Ends,
    fr: _Frames,
) -> Plant:
    """Step 5: the structured links ``st`` packed into the plant (``plant.plan_plant``)."""
    return plan_plant(
        e.frame_a[st].astype(np.int64),
        e.frame_b[st].astype(np.int64),
        mt.smf[medium[st]],
        mt.slots[medium[st]].astype(np.int64),
        L.fabric[st].astype(np.int64) * (1 << 32) + L.link[st],
        fr.hall.astype(np.int64),
        fr.hdf_of_hall,
    )


def _repack(
    ch: _Choice,
    mt: MediaTable,
    L: _Links,
    e: _Ends,
    fr: _Frames,
    r: _Runs,
    chan: _Channels,
    losses: PlantLosses,
) -> None:
    """Which trunks are ribbon (spliced at both ends) is known once the plant is packed, and
    packing depends on the media (fibre type, legs). A channel whose packed trunks take it
    past its optic's budget is given the first optic that covers them, of any fibre type
    (multimode between halls may have to become single-mode), and the plant is packed
    again; a link keeps the splices it was found with, so each round only moves links on
    and the rounds end. A link no optic covers keeps its own (the optical-budget check
    reports it). In place."""
    medium, structured = ch.medium, ch.structured
    shuffle_db = 2 * losses.mpo_db
    for _ in range(REPACK_ROUNDS):
        st = np.flatnonzero(structured)
        if st.shape[0] == 0:
            break
        pre = _pack(st, medium, L, mt, e, fr)
        spliced = (pre.cable_kind == TRUNK) & (pre.cable_fibers > TRUNK_FIBERS)
        packed_db = (
            np.where(pre.hops >= 0, 2 * spliced[np.maximum(pre.hops, 0)], 0).sum(axis=1)
            * losses.splice_db
        )
        m_st = medium[st]
        shuffled = np.where(mt.fibers[m_st] < 8, chan.broken_ends[st], 0)
        joints = (chan.joint_db[st], packed_db)
        est = channel_loss_db(mt, m_st, chan.length[st], joints, shuffled, shuffle_db)
        over = (mt.budget_db[m_st] > 0) & (est > mt.budget_db[m_st] + 1e-9)
        moved = 0
        for (fi, tier), (cands, named) in ch.cand_lists.items():
            rows = st[over & (L.fabric[st] == fi) & (L.tier[st] == tier)]
            if named or rows.shape[0] == 0:
                continue
            was = medium[rows].copy()
            ch.ribbon_db[rows] = np.maximum(
                ch.ribbon_db[rows], packed_db[np.searchsorted(st, rows)]
            )
            medium[rows] = NONE
            structured[rows] = False
            _assign(ch, rows, cands, None, mt, r, chan, shuffle_db)
            stay = medium[rows] == NONE
            medium[rows[stay]] = was[stay]
            structured[rows[stay]] = True
            moved += int((medium[rows] != was).sum())
        if moved == 0:
            break


def _row_tray_loads(
    floor: FloorPlan,
    nseg: int,
    r: _Runs,
    e: _Ends,
    fr: _Frames,
    ch: _Choice,
    area_link: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The cross-section and the cables on each segment from what rides the row trays:
    in-row direct cables and the cords of structured links to their row's frame."""
    base = np.zeros(nseg)
    cables = np.zeros(nseg)
    in_row = r.same_row & (ch.medium >= 0) & ~ch.long_direct
    lo = np.minimum(r.a_pos, r.b_pos)[in_row]
    hi = np.maximum(r.a_pos, r.b_pos)[in_row]
    base += _row_span_loads(nseg, lo, hi, r.seg_after, area_link[in_row])
    cables += _row_span_loads(nseg, lo, hi, r.seg_after, np.ones(lo.shape[0]))
    # positions of a row are consecutive: a cord runs from its position to the frame's end
    row_first = np.full(len(floor.row_names), -1, dtype=np.int64)
    row_last = np.full(len(floor.row_names), -1, dtype=np.int64)
    fr_row = floor.pos_row.astype(np.int64)
    row_first[fr_row[::-1]] = np.arange(floor.n_positions)[::-1]
    row_last[fr_row] = np.arange(floor.n_positions)
    for pos, row, own in ((r.a_pos, r.a_row, e.in_rack_a), (r.b_pos, r.b_row, e.in_rack_b)):
        to_row_frame = ch.structured & ~own
        p = pos[to_row_frame]
        rw = row[to_row_frame]
        w = area_link[to_row_frame]
        tail = fr.at_tail[rw]
        lo2 = np.where(tail, p, row_first[rw])
        hi2 = np.where(tail, row_last[rw], p)
        base += _row_span_loads(nseg, lo2, hi2, r.seg_after, w)
        cables += _row_span_loads(nseg, lo2, hi2, r.seg_after, np.ones(p.shape[0]))
        end_seg = np.where(tail, r.tail_seg[rw], r.head_seg[rw])
        base += np.bincount(end_seg, weights=w, minlength=nseg)
        cables += np.bincount(end_seg, minlength=nseg)
    return base, cables


@dataclass(frozen=True)
class _LinkPlant:
    """Each link's cables between its frames (``hops``, -1 padded), its first leg in each,
    its fibre positions and span; per hop of a structured link its row in ``st`` and cable."""

    hops: NDArray[np.int32]
    hop_legs: NDArray[np.int16]
    fiber_a: NDArray[np.int8]
    fiber_b: NDArray[np.int8]
    span: NDArray[np.int8]
    n_hops: NDArray[np.int64]
    hop_link: NDArray[np.int64]
    hop_cable: NDArray[np.int32]


def _link_plant(plant: Plant, st: NDArray[np.int64], n: int) -> _LinkPlant:
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
    return _LinkPlant(
        hops, hop_legs, fiber_a, fiber_b, span, on_hop.sum(axis=1), hop_link, plant.hops[on_hop]
    )


@dataclass(frozen=True)
class _Trunks:
    """The routed cables between frames: length, splices, routes; per segment the trunks,
    their fibres and cross-section."""

    length: NDArray[np.float64]
    splices: NDArray[np.int8]
    route_ptr: NDArray[np.int64]
    route_seg: NDArray[np.int32]
    seg_trunks: NDArray[np.int64]
    seg_fibers: NDArray[np.int64]
    seg_area: NDArray[np.float64]
    rerouted: int


def _route_trunks(
    pw: Pathways,
    plant: Plant,
    lp: _LinkPlant,
    reach_left: NDArray[np.float64],
    base: NDArray[np.float64],
    fr: _Frames,
    floor: FloorPlan,
    losses: PlantLosses,
    executor: Executor | None,
) -> _Trunks:
    """Route the cables (spreading off full trays); a cable's route may grow only by what the
    reach of every link in it leaves over its estimated channel (``reach_left``, per link of
    the plant)."""
    nseg = pw.n_segments
    n_trunks = plant.cable_a.shape[0]
    trunk_slack = np.full(n_trunks, np.inf)
    np.minimum.at(trunk_slack, lp.hop_cable, reach_left[lp.hop_link])
    trunk_area = frame_cable_area_mm2(plant.cable_fibers)
    tr_len, tr_pair, tr_seg, rerouted = route_by_hall(
        pw,
        fr.node[plant.cable_a],
        fr.node[plant.cable_b],
        trunk_area,
        base,
        slack=trunk_slack,
        executor=executor,
    )
    seg_fibers = np.rint(
        loads(nseg, tr_pair, tr_seg, plant.cable_fibers.astype(np.float64))
    ).astype(np.int64)
    building = floor.hall_building.astype(np.int64)
    trunk_bld = building[fr.hall[plant.cable_a]] != building[fr.hall[plant.cable_b]]
    splices = np.where(
        plant.cable_kind == BACKBONE,
        _backbone_splices(trunk_bld, losses),
        np.where(plant.cable_fibers > TRUNK_FIBERS, 2, 0),
    ).astype(np.int8)
    return _Trunks(
        length=tr_len + 2 * FRAME_DROP_M + TRUNK_SLACK_M,
        splices=splices,
        route_ptr=np.concatenate([[0], np.cumsum(np.bincount(tr_pair, minlength=n_trunks))]),
        route_seg=tr_seg,
        seg_trunks=np.bincount(tr_seg, minlength=nseg).astype(np.int64),
        seg_fibers=seg_fibers,
        seg_area=loads(nseg, tr_pair, tr_seg, trunk_area),
        rerouted=rerouted,
    )


def _panels(
    plant: Plant, fr: _Frames
) -> tuple[NDArray[np.int32], NDArray[np.int32], NDArray[np.int32]]:
    """Panels: a cable takes one 1U panel per 144 fibres at each of its frames, except a
    trunk's end at an HDF, whose legs plug into the backbone's panels; numbered per frame.
    The first panel of each cable at its a and b frame (0 for none), the panels per frame."""
    n_trunks = plant.cable_a.shape[0]
    ends = np.concatenate([plant.cable_a, plant.cable_b]).astype(np.int64)
    tid = np.concatenate([np.arange(n_trunks), np.arange(n_trunks)])
    size = np.tile(-(-plant.cable_fibers.astype(np.int64) // TRUNK_FIBERS), 2)
    size[(fr.kind[ends] == HALL_FRAME) & (np.tile(plant.cable_kind, 2) == TRUNK)] = 0
    o = np.lexsort((tid, ends))
    first = np.zeros(2 * n_trunks, dtype=np.int64)
    if n_trunks:
        cum = np.cumsum(size[o])
        before = cum - size[o]
        frame_start = before[np.searchsorted(ends[o], ends[o], side="left")]
        first[o] = before - frame_start + 1
    first[size == 0] = 0
    frame_panels = np.bincount(ends, weights=size, minlength=len(fr.names)).astype(np.int32)
    return first[:n_trunks].astype(np.int32), first[n_trunks:].astype(np.int32), frame_panels


def _built_loss(
    ch: _Choice,
    mt: MediaTable,
    L: _Links,
    st: NDArray[np.int64],
    lp: _LinkPlant,
    tr: _Trunks,
    length: NDArray[np.float64],
    losses: PlantLosses,
) -> tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.bool_]]:
    """The loss of every channel as built (its joints: HDF interconnects and the splices of
    the cables it takes) and which ends go through a shuffle cassette; links packing took past
    their budget move on (:func:`_past_budget`, in place)."""
    medium, structured = ch.medium, ch.structured
    shuffle_db = 2 * losses.mpo_db
    n = medium.shape[0]
    mi = np.maximum(medium, 0)
    joints = np.zeros(n)
    splices = np.zeros(st.shape[0])
    np.add.at(splices, lp.hop_link, tr.splices[lp.hop_cable].astype(np.float64))
    joints[st] = np.where(lp.n_hops == 3, 2 * losses.mpo_db, 0.0) + splices * losses.splice_db
    duplex = mt.fibers[mi] < 8
    shuffle_a = structured & duplex & (L.a_breakout > 1)
    shuffle_b = structured & duplex & (L.b_breakout > 1)
    shuffled = shuffle_a.astype(np.int64) + shuffle_b
    loss = channel_loss_db(mt, mi, length, (joints,), shuffled, shuffle_db, structured)
    loss = np.where(medium >= 0, loss, 0.0)
    _past_budget(
        medium, loss, L, mt, ch.cand_lists, length, joints, shuffled, structured, shuffle_db
    )
    return loss, shuffle_a, shuffle_b


def _route_assemblies(
    pw: Pathways,
    ld: NDArray[np.int64],
    medium: NDArray[np.int16],
    mt: MediaTable,
    r: _Runs,
    area_link: NDArray[np.float64],
    load: NDArray[np.float64],
    executor: Executor | None,
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int32], int]:
    """The long assemblies ``ld``, routed position to position on top of ``load`` (reach is
    checked on the ordered length: each route is kept within it)."""
    room = (mt.reach_m[medium[ld]] - SLACK_M) / (1 + SLACK_FRACTION) - r.drop_a[ld] - r.drop_b[ld]
    return route_by_hall(
        pw, r.a_pos[ld], r.b_pos[ld], area_link[ld], load, max_length=room, executor=executor
    )


def cable(
    spec: ClusterSpec,
    fabrics: tuple[FabricDesign, ...],
    placement: Placement,
    executor: Executor | None = None,
) -> Cabling:
    """Realize every link of ``fabrics`` on ``placement``'s floor (see the module); with an
    ``executor``, each hall's routes are a task on it (``cabling.halls``), the same result."""
    catalog = spec.resolved_catalog()
    floor = placement.floor
    pw = build_pathways(floor, site_trays(spec.site))
    losses = spec.site.losses if spec.site is not None else DEFAULT_LOSSES
    shuffle_db = 2 * losses.mpo_db
    mt = media_table(catalog, losses)
    L = _gather(placement, fabrics, catalog)
    n = L.link.shape[0]
    r = _runs(L, placement, pw)
    fr = _frame_table(pw, placement)
    e = _cords(L, r, fr)
    chan = _channel_estimates(L, r, fr, e, pw, floor, losses, executor)
    ch, findings = _choose_media(spec, catalog, fabrics, mt, L, r, chan, shuffle_db)
    _repack(ch, mt, L, e, fr, r, chan, losses)
    medium, structured = ch.medium, ch.structured

    nseg = pw.n_segments
    area_link = np.where(medium >= 0, mt.area_mm2[np.maximum(medium, 0)], 0.0)
    base, cables = _row_tray_loads(floor, nseg, r, e, fr, ch, area_link)
    # the structured plant: cables between frames and each link's legs and fibre positions
    st = np.flatnonzero(structured)
    plant = _pack(st, medium, L, mt, e, fr)
    lp = _link_plant(plant, st, n)
    reach_left = np.maximum(mt.reach_m[medium[st]] - chan.length[st], 0.0)
    tr = _route_trunks(pw, plant, lp, reach_left, base, fr, floor, losses, executor)

    ld = np.flatnonzero(ch.long_direct)
    ld_len, ld_pair, ld_seg, rr = _route_assemblies(
        pw, ld, medium, mt, r, area_link, base + tr.seg_area, executor
    )
    length = np.where(structured, 0.0, r.direct)
    length[ld] = _slack(r.drop_a[ld] + ld_len + r.drop_b[ld])
    channel = e.cord_a[st] + e.cord_b[st]
    np.add.at(channel, lp.hop_link, tr.length[lp.hop_cable])
    length[st] = channel
    area = base + tr.seg_area + loads(nseg, ld_pair, ld_seg, area_link[ld])
    cables += np.bincount(ld_seg, minlength=nseg)

    loss, shuffle_a, shuffle_b = _built_loss(ch, mt, L, st, lp, tr, length, losses)
    panel_a, panel_b, frame_panels = _panels(plant, fr)

    draft = Cabling(
        fabrics=tuple(fd.name for fd in fabrics),
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
        order_m=read_only(np.where(structured, 0.0, order_length(length)).astype(np.float32)),
        cord_a_m=read_only(np.where(structured, e.cord_a, 0.0).astype(np.float32)),
        cord_b_m=read_only(np.where(structured, e.cord_b, 0.0).astype(np.float32)),
        loss_db=read_only(loss.astype(np.float32)),
        frame_a=read_only(np.where(structured, e.frame_a, NONE).astype(np.int32)),
        frame_b=read_only(np.where(structured, e.frame_b, NONE).astype(np.int32)),
        hops=read_only(lp.hops),
        hop_legs=read_only(lp.hop_legs),
        a_breakout=read_only(L.a_breakout),
        b_breakout=read_only(L.b_breakout),
        shuffle_a=read_only(shuffle_a),
        shuffle_b=read_only(shuffle_b),
        fiber_a=read_only(lp.fiber_a),
        fiber_b=read_only(lp.fiber_b),
        span=read_only(lp.span),
        frame_names=fr.names,
        frame_hall=read_only(fr.hall),
        frame_kind=read_only(fr.kind),
        n_row_frames=fr.n_rows,
        frame_node=read_only(fr.node),
        frame_panels=read_only(frame_panels),
        trunk_a=read_only(plant.cable_a),
        trunk_b=read_only(plant.cable_b),
        trunk_fibers=read_only(plant.cable_fibers),
        trunk_fibers_used=read_only(plant.cable_used),
        trunk_smf=read_only(plant.cable_smf),
        trunk_kind=read_only(plant.cable_kind),
        trunk_splices=read_only(tr.splices),
        trunk_route_ptr=read_only(tr.route_ptr.astype(np.int64)),
        trunk_route_seg=read_only(tr.route_seg.astype(np.int32)),
        trunk_length_m=read_only(tr.length.astype(np.float32)),
        trunk_panel_a=read_only(panel_a),
        trunk_panel_b=read_only(panel_b),
        seg_cables=read_only(cables.round().astype(np.int64)),
        seg_trunks=read_only(tr.seg_trunks),
        seg_fibers=read_only(tr.seg_fibers),
        seg_area_mm2=read_only(area),
        rerouted=tr.rerouted + rr,
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
            lc = channel_loss_db(mt, c, length[rows], (joints[rows],), shuffled[rows], shuffle_db)
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
