"""Files of the cabling stage, each written atomically with deterministic bytes:

- ``cabling/cut_sheet.csv``: every realized link (fabric by fabric, in topology link order):
  label; both ends' device, port, rack and rack unit; medium; length (the cable, or the channel
  of a structured link) and ordered length; for a structured link each end's frame, panel and
  port, the cord at each end (``a_cord``, ``b_cord``: ``LC``, ``MPO``, or ``cage`` for a lane of
  a broken-out cage on the cage's MPO cord and a shuffle), the cable at each end (``trunk``,
  ``b_trunk``), between halls the path through the
  hall distribution frames (``via``: HDF panel/port, backbone, HDF panel/port), the legs and
  fibre positions at each end; the channel loss;
- ``cabling/trunks.csv``: every cable between frames (144-fibre trunks and the backbones
  between hall distribution frames) with its frames, panels, fibres, splices, length and route;
- ``cabling/pull_list.csv``: every pathway segment with its cables, trunks, fibres and fill;
- ``cabling/bom.csv``: the rows of ``bom.csv`` the cabling stage chose (media by fabric, tier
  and ordered length; trunks, splices, panels), in ``bom.csv``'s columns; ``bom.csv`` adds the
  switches and holds the design's one total;
- ``netbox/cables.csv``: NetBox's cable bulk import (DCIM > Cables > Import): a direct link is
  one cable between its two interfaces, a structured link its two patch cords, each from an
  interface to a panel's front port (``export.netbox_plant``). Device and interface names are
  ``export.naming``'s; every end names its device's site. It imports after the plant's
  ``cables_plant.csv`` (``export.netbox_setup.IMPORT_ORDER``).

The cut sheet and NetBox rows are built from the arrays with numpy gathers and written in
chunks, so millions of links never become millions of Python objects at once.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from clusterloom.atomic import StrPath
from clusterloom.cabling import Cabling
from clusterloom.cabling.artifact import order_length
from clusterloom.cabling.change import Change
from clusterloom.cabling.pathways import SEGMENT_KINDS
from clusterloom.cabling.plant import BACKBONE
from clusterloom.cabling.validate import label_prefix
from clusterloom.changes import ChangePlan
from clusterloom.export._csv import csv_text, obj, write_chunks, write_rows
from clusterloom.export.bom_csv import write_cabling_bom_csv
from clusterloom.export.naming import TopologyNames, topology_names
from clusterloom.export.netbox import NETBOX_CABLE_COLUMNS
from clusterloom.export.netbox_plant import PlantNames, cord_ends, write_netbox_plant
from clusterloom.growth.drained import capacity_note
from clusterloom.pipeline import Design

CUT_SHEET_COLUMNS = (
    "label",
    "fabric",
    "tier",
    "link",
    "a_device",
    "a_port",
    "a_rack",
    "a_u",
    "b_device",
    "b_port",
    "b_rack",
    "b_u",
    "medium",
    "kind",
    "length_m",
    "order_m",
    "a_cord",
    "a_frame",
    "a_panel",
    "a_panel_port",
    "a_fibers",
    "trunk",
    "via",
    "b_trunk",
    "b_frame",
    "b_panel",
    "b_panel_port",
    "b_fibers",
    "b_cord",
    "loss_db",
)
#: NetBox cable import fields (``dcim.forms.CableImportForm``).
#: NetBox cable type slugs per medium kind.
NETBOX_CABLE_TYPES: dict[str, str] = {
    "dac": "dac-passive",
    "aec": "dac-active",
    "aoc": "aoc",
    "mmf": "mmf-om4",
    "smf": "smf-os2",
}
TRUNK_COLUMNS = (
    "trunk",
    "kind",
    "fibre",
    "a_frame",
    "a_panel",
    "b_frame",
    "b_panel",
    "fibres",
    "fibres_used",
    "splices",
    "length_m",
    "route",
)
PULL_COLUMNS = (
    "segment",
    "kind",
    "from",
    "to",
    "length_m",
    "pathway",
    "cables",
    "trunks",
    "fibres",
    "area_mm2",
    "fill_pct",
    "limit_pct",
)
CHUNK_ROWS = 1 << 18


def _num(values: NDArray[np.generic], fmt: str) -> NDArray[np.object_]:
    return obj([format(v, fmt) for v in values.tolist()])


def trunk_name(t: int) -> str:
    return f"t{t:05d}"


def _names(design: Design) -> list[TopologyNames]:
    catalog = design.spec.resolved_catalog()
    return [topology_names(fd.topology, catalog) for fd in design.fabrics]


def _ends(
    c: Cabling, names: list[TopologyNames], sel: NDArray[np.int64]
) -> tuple[NDArray[np.object_], ...]:
    """Device and interface names of both ends of rows ``sel``."""
    a_dev = np.empty(sel.shape[0], dtype=object)
    b_dev = np.empty(sel.shape[0], dtype=object)
    a_if = np.empty(sel.shape[0], dtype=object)
    b_if = np.empty(sel.shape[0], dtype=object)
    fab = c.fabric[sel]
    for i, tn in enumerate(names):
        m = fab == i
        rows = sel[m]
        a_dev[m] = tn.device(c.a_node[rows])
        b_dev[m] = tn.device(c.b_node[rows])
        a_if[m] = tn.interface(c.a_node[rows], c.a_port[rows])
        b_if[m] = tn.interface(c.b_node[rows], c.b_port[rows])
    return a_dev, a_if, b_dev, b_if


def _labels(c: Cabling, sel: NDArray[np.int64]) -> NDArray[np.object_]:
    prefix = obj([label_prefix(f) for f in c.fabrics])
    pieces = np.empty((sel.shape[0], 3), dtype=object)
    pieces[:, 0] = prefix[c.fabric[sel]]
    pieces[:, 1] = _num(c.tier[sel], "d")
    pieces[:, 2] = obj([f"-{v:07d}" for v in c.link[sel].tolist()])
    return obj(["".join(r) for r in pieces.tolist()])


PORT_NAMES = np.array([str(p) for p in range(13)], dtype=object)


def _panel_ports(
    c: Cabling,
    t: NDArray[np.int32],
    frame: NDArray[np.int32],
    leg: NDArray[np.int16],
    on: NDArray[np.bool_],
    legs: NDArray[np.int64],
) -> tuple[NDArray[np.int64], NDArray[np.object_]]:
    """Panel number and port(s) where cable ``t``'s leg ``leg`` (and the link's next
    ``legs - 1``) ends at ``frame``."""
    panel = c.panel_of(np.where(on, t, -1), frame, leg)
    p0 = (leg.astype(np.int64) - 1) % 12 + 1
    ports = np.where(on, PORT_NAMES[p0], "").astype(object)
    for i in np.flatnonzero(on & (legs > 1)).tolist():
        ports[i] = f"{p0[i]}-{p0[i] + legs[i] - 1}"
    return panel, ports


def _cords(c: Cabling, sel: NDArray[np.int64], side: str) -> NDArray[np.object_]:
    """The patch cord at one end of a structured link: ``LC`` (duplex, to a cassette),
    ``MPO`` (parallel), or ``cage`` (a lane of a broken-out switch cage: the cage's one MPO
    cord to a shuffle cassette)."""
    parallel = c.media.fibers[c.medium[sel]] >= 8
    kind = np.where(parallel, "MPO", "LC").astype(object)
    kind[getattr(c, f"shuffle_{side}")[sel]] = "cage"
    kind[~c.structured[sel]] = ""
    return kind


def _via(c: Cabling, sel: NDArray[np.int64], legs: NDArray[np.int64]) -> NDArray[np.object_]:
    """For a link between halls: ``HDF panel/port > backbone > HDF panel/port``."""
    via = np.full(sel.shape[0], "", dtype=object)
    three = np.flatnonzero(c.n_hops[sel] == 3)
    if not three.shape[0]:
        return via
    rows = sel[three]
    bb = c.hops[rows, 1]
    leg = c.hop_legs[rows, 1]
    on = np.ones(rows.shape[0], dtype=bool)
    # the HDF on the a side is the far end of the a-end trunk
    t0 = c.hops[rows, 0]
    hdf_a = np.where(c.trunk_a[t0] == c.frame_a[rows], c.trunk_b[t0], c.trunk_a[t0])
    hdf_b = np.where(c.trunk_a[bb] == hdf_a, c.trunk_b[bb], c.trunk_a[bb])
    pa, qa = _panel_ports(c, bb, hdf_a, leg, on, legs[three])
    pb, qb = _panel_ports(c, bb, hdf_b, leg, on, legs[three])
    names = np.array(c.frame_names, dtype=object)
    num = np.array([str(x) for x in range(int(max(pa.max(), pb.max())) + 1)], dtype=object)
    via[three] = (
        names[hdf_a]
        + " "
        + num[pa]
        + "/"
        + qa
        + " > "
        + obj([trunk_name(b) for b in bb.tolist()])
        + " > "
        + names[hdf_b]
        + " "
        + num[pb]
        + "/"
        + qb
    )
    return via


def cut_sheet_chunks(design: Design, chunk_rows: int = CHUNK_ROWS) -> Iterator[str]:
    """The cut sheet's rows (no header) as text chunks."""
    c = design.cabling
    assert c is not None and design.placement is not None
    names = _names(design)
    racks = obj(list(design.placement.rack_names))
    frames = obj([*c.frame_names, ""])
    fabrics = obj(list(c.fabrics))
    media = obj(list(c.media.names))
    kinds = obj([m.kind for m in c.media.models])
    # a cable's name by id; -1 (no cable) reads the empty name at the end
    cable_names = obj([*(trunk_name(t) for t in range(c.n_trunks)), ""])
    rows = np.flatnonzero(c.realized())
    for start in range(0, rows.shape[0], chunk_rows):
        sel = rows[start : start + chunk_rows]
        a_dev, a_if, b_dev, b_if = _ends(c, names, sel)
        st = c.structured[sel]
        legs = np.maximum(-(-c.media.slots[c.medium[sel]] // 12), 1)
        pa, port_a = _panel_ports(c, c.trunk[sel], c.frame_a[sel], c.leg[sel], st, legs)
        pb, port_b = _panel_ports(c, c.b_trunk[sel], c.frame_b[sel], c.b_leg[sel], st, legs)
        fa = c.fiber_a[sel].astype(np.int64)
        fb = c.fiber_b[sel].astype(np.int64)
        sp = c.span[sel].astype(np.int64)
        fib_a = obj(
            [
                f"{x}-{x + n - 1}" if s else ""
                for s, x, n in zip(st.tolist(), fa.tolist(), sp.tolist(), strict=True)
            ]
        )
        fib_b = obj(
            [
                f"{x}-{x + n - 1}" if s else ""
                for s, x, n in zip(st.tolist(), fb.tolist(), sp.tolist(), strict=True)
            ]
        )
        blank = np.full(sel.shape[0], "", dtype=object)
        cols = [
            _labels(c, sel),
            fabrics[c.fabric[sel]],
            _num(c.tier[sel], "d"),
            _num(c.link[sel], "d"),
            a_dev,
            a_if,
            racks[c.a_rack[sel]],
            _num(c.a_u[sel], "d"),
            b_dev,
            b_if,
            racks[c.b_rack[sel]],
            _num(c.b_u[sel], "d"),
            media[c.medium[sel]],
            kinds[c.medium[sel]],
            _num(c.length_m[sel], ".1f"),
            np.where(st, blank, _num(c.order_m[sel], "g")),
            _cords(c, sel, "a"),
            frames[c.frame_a[sel]],
            np.where(st, _num(pa, "d"), blank),
            port_a,
            fib_a,
            cable_names[c.trunk[sel]],
            _via(c, sel, legs),
            cable_names[c.b_trunk[sel]],
            frames[c.frame_b[sel]],
            np.where(st, _num(pb, "d"), blank),
            port_b,
            fib_b,
            _cords(c, sel, "b"),
            _num(c.loss_db[sel], ".2f"),
        ]
        yield csv_text(cols)


def netbox_cable_chunks(design: Design, chunk_rows: int = CHUNK_ROWS) -> Iterator[str]:
    """``netbox/cables.csv`` rows (no header) as text chunks: a direct link is one cable
    between its two interfaces; a structured link is its two patch cords, each from an
    interface to the front port of its frame's panel (``export.netbox_plant``: the panels, their
    ports and the trunk legs between them)."""
    c = design.cabling
    assert c is not None
    names = _names(design)
    plant = PlantNames(c)
    site = design.spec.name
    types = obj([NETBOX_CABLE_TYPES[m.kind] for m in c.media.models])
    rows = np.flatnonzero(c.realized())
    for start in range(0, rows.shape[0], chunk_rows):
        sel = rows[start : start + chunk_rows]
        a_dev, a_if, b_dev, b_if = _ends(c, names, sel)
        labels = _labels(c, sel)
        st = c.structured[sel]
        k = np.flatnonzero(st)
        n_legs = -(-c.media.slots[c.medium[sel]].astype(np.int64) // 12)
        # a structured link's two cords replace its end-to-end cable: rows (i, 0) and (i, 1)
        rep = np.where(st, 2, 1)
        idx = np.repeat(np.arange(sel.shape[0]), rep)
        second = np.zeros(idx.shape[0], dtype=bool)
        second[np.cumsum(rep)[st] - 1] = True
        first_cord = np.zeros(idx.shape[0], dtype=bool)
        first_cord[(np.cumsum(rep) - rep)[st]] = True
        dev_a, port_a = cord_ends(plant, sel[k], "a")
        dev_b, port_b = cord_ends(plant, sel[k], "b")
        side_b_dev = b_dev.copy()
        side_b_if = b_if.copy()
        side_b_type = np.full(sel.shape[0], "dcim.interface", dtype=object)
        a_col = a_dev[idx]
        a_name = a_if[idx]
        b_col = side_b_dev[idx]
        b_name = side_b_if[idx]
        b_type = side_b_type[idx]
        pos = np.cumsum(st) - 1  # structured rank of each link in the chunk
        one = first_cord
        two = second
        b_col[one] = dev_a[pos[idx[one]]]
        b_name[one] = port_a[pos[idx[one]]]
        b_type[one | two] = "dcim.frontport"
        a_col[two] = b_dev[idx[two]]
        a_name[two] = b_if[idx[two]]
        b_col[two] = dev_b[pos[idx[two]]]
        b_name[two] = port_b[pos[idx[two]]]
        length = np.where(
            st,
            0.0,
            c.order_m[sel],
        )[idx]
        length[one] = order_length(c.cord_a_m[sel][idx[one]].astype(np.float64))
        length[two] = order_length(c.cord_b_m[sel][idx[two]].astype(np.float64))
        label = labels[idx].copy()
        label[one] = label[one] + "/A"
        label[two] = label[two] + "/B"
        profile = np.where(n_legs[idx] > 1, "", "single-1c1p").astype(object)
        m = idx.shape[0]
        cols = [
            np.full(m, site, dtype=object),
            a_col,
            np.full(m, "dcim.interface", dtype=object),
            a_name,
            np.full(m, site, dtype=object),
            b_col,
            b_type,
            b_name,
            types[c.medium[sel]][idx],
            np.full(m, "planned", dtype=object),
            profile,
            np.full(m, "", dtype=object),
            label,
            _num(length, ".1f"),
            np.full(m, "m", dtype=object),
        ]
        yield csv_text(cols)


def _panels(first: int, fibres: int) -> str:
    """``3`` or ``3-26`` (one panel per 144 fibres); empty when the end has no panel of its own
    (a trunk's legs plugging into a backbone's panels at an HDF)."""
    if first == 0:
        return ""
    n = -(-fibres // 144)
    return f"{first}" if n == 1 else f"{first}-{first + n - 1}"


def _trunk_rows(c: Cabling) -> Iterator[tuple[object, ...]]:
    pw = c.pathways
    frames = c.frame_names
    for t in range(c.n_trunks):
        segs = c.trunk_route_seg[c.trunk_route_ptr[t] : c.trunk_route_ptr[t + 1]][::-1]
        yield (
            trunk_name(t),
            "backbone" if c.trunk_kind[t] == BACKBONE else "trunk",
            "smf" if c.trunk_smf[t] else "mmf",
            frames[int(c.trunk_a[t])],
            _panels(int(c.trunk_panel_a[t]), int(c.trunk_fibers[t])),
            frames[int(c.trunk_b[t])],
            _panels(int(c.trunk_panel_b[t]), int(c.trunk_fibers[t])),
            int(c.trunk_fibers[t]),
            int(c.trunk_fibers_used[t]),
            int(c.trunk_splices[t]),
            f"{float(c.trunk_length_m[t]):.1f}",
            " > ".join(pw.segment_name(int(s)) for s in segs.tolist()),
        )


def write_trunks(c: Cabling, path: Path) -> Path:
    return write_rows(path, TRUNK_COLUMNS, _trunk_rows(c))


def _pull_rows(c: Cabling) -> Iterator[tuple[object, ...]]:
    pw = c.pathways
    fill = c.seg_fill
    for s in range(pw.n_segments):
        yield (
            s,
            SEGMENT_KINDS[int(pw.seg_kind[s])],
            pw.node_names[int(pw.seg_a[s])],
            pw.node_names[int(pw.seg_b[s])],
            f"{float(pw.seg_length_m[s]):.1f}",
            pw.tray(s).description,
            int(c.seg_cables[s]),
            int(c.seg_trunks[s]),
            int(c.seg_fibers[s]),
            f"{float(c.seg_area_mm2[s]):.0f}",
            f"{100 * float(fill[s]):.1f}",
            f"{100 * pw.tray(s).fill:.0f}",
        )


def write_pull_list(c: Cabling, path: Path) -> Path:
    return write_rows(path, PULL_COLUMNS, _pull_rows(c))


def write_cabling(design: Design, out_dir: StrPath) -> list[Path]:
    """The cabling files of ``design`` (none without a cabling), in this order:
    ``cabling/cut_sheet.csv``, ``cabling/trunks.csv``, ``cabling/pull_list.csv``,
    ``cabling/bom.csv``, ``netbox/cables.csv``."""
    c = design.cabling
    if c is None:
        return []
    out = Path(out_dir)
    return [
        write_chunks(
            out / "cabling" / "cut_sheet.csv", CUT_SHEET_COLUMNS, cut_sheet_chunks(design)
        ),
        write_trunks(c, out / "cabling" / "trunks.csv"),
        write_pull_list(c, out / "cabling" / "pull_list.csv"),
        write_cabling_bom_csv(design, out / "cabling" / "bom.csv"),
        write_chunks(
            out / "netbox" / "cables.csv", NETBOX_CABLE_COLUMNS, netbox_cable_chunks(design)
        ),
        *write_netbox_plant(design, out),
    ]


CHANGE_COLUMNS = (
    "action",
    "label",
    "a_device",
    "a_port",
    "b_device",
    "b_port",
    "medium",
    "length_m",
    "a_frame",
    "b_frame",
    "cables",
    "a_fibers",
    "b_fibers",
    "step",
    "wave",
    "state",
    "step_capacity",
)

#: what a change row's link does while the crew works (``state``)
_STATE = {
    "remove": "drain, then take off",
    "re-pull": "drain, re-pull, restore",
    "add": "new: not live until tested",
    "keep": "stays live",
}


def write_change(
    before: Design,
    after: Design,
    change: Change,
    path: StrPath,
    plan: ChangePlan | None = None,
) -> Path:
    """``cabling/change.csv``: every cable the change touches, in the order an installer works:
    removed (from the existing design, its labels), then re-pulled and added (the grown
    design's labels). A structured link pulled into the existing plant names the old cables
    and legs it takes (``t00012:L5 > ...``, from its a end) and its fibre positions; ``new``
    when it needs a cable the existing plant lacks. With a change ``plan`` (growth from an
    installed baseline) every row names its ``step`` and ``wave`` of the plan (``growth.waves``:
    each wave drained, worked and restored before the next), the rows are in step order,
    and the links that stay as they are follow as ``keep`` rows (what stays live)."""
    c_old, c_new = before.cabling, after.cabling
    assert c_old is not None and c_new is not None
    where: dict[int, int] = {int(r): j for j, r in enumerate(change.pulled.tolist())}

    def rows(
        d: Design, c: Cabling, sel: NDArray[np.int64], action: str
    ) -> Iterator[tuple[object, ...]]:
        if sel.shape[0] == 0:
            return
        a_dev, a_if, b_dev, b_if = _ends(c, _names(d), sel)
        labels = _labels(c, sel)
        media = c.media.names
        for k, i in enumerate(sel.tolist()):
            cables, fa, fb = "", "", ""
            if c.structured[i] and action in ("re-pull", "add"):
                j = where[i]
                n = int(c.span[i])
                if change.reuse_hops[j, 0] < 0:
                    cables = "new"
                else:
                    cables = " > ".join(
                        f"{trunk_name(int(t))}:L{int(g)}"
                        for t, g in zip(change.reuse_hops[j], change.reuse_legs[j], strict=True)
                        if t >= 0
                    )
                    x, y = int(change.reuse_fiber_a[j]), int(change.reuse_fiber_b[j])
                    fa, fb = f"{x}-{x + n - 1}", f"{y}-{y + n - 1}"
            yield (
                action,
                labels[k],
                a_dev[k],
                a_if[k],
                b_dev[k],
                b_if[k],
                media[int(c.medium[i])],
                f"{float(c.length_m[i]):.1f}",
                c.frame_names[int(c.frame_a[i])] if c.structured[i] else "",
                c.frame_names[int(c.frame_b[i])] if c.structured[i] else "",
                cables,
                fa,
                fb,
                (step := step_of.get((action, f"{a_dev[k]}:{a_if[k]}~{b_dev[k]}:{b_if[k]}"), "")),
                wave.get(step, "") if isinstance(step, int) else "",
                _STATE[action],
                capacity.get(step, "") if isinstance(step, int) else "",
            )

    step_of: dict[tuple[str, str], int] = {}
    kind = {"remove": "remove", "pull": "add", "re-pull": "re-pull"}
    capacity = {s.order: capacity_note(s.checks) for s in plan.steps} if plan is not None else {}
    wave = {s.order: s.wave for s in plan.steps} if plan is not None else {}
    for step in plan.steps if plan is not None else ():
        if step.action in kind:
            step_of.update({(kind[step.action], name): step.order for name in step.objects})
    parts = [
        rows(before, c_old, change.removed, "remove"),
        rows(after, c_new, change.changed, "re-pull"),
        rows(after, c_new, change.added, "add"),
    ]
    if plan is None:
        return write_rows(path, CHANGE_COLUMNS, itertools.chain(*parts))
    at = CHANGE_COLUMNS.index("step")
    ordered = sorted(itertools.chain(*parts), key=lambda r: int(str(r[at]) or 0))
    kept = rows(before, c_old, change.kept, "keep")
    return write_rows(path, CHANGE_COLUMNS, itertools.chain(ordered, kept))
