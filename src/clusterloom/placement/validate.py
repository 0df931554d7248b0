"""Checks of a placement, computed from its arrays (not from the solver's word), as findings.

Codes: ``placed-once`` (every rack on one free position, one rack per position, every device
in a placed rack), ``u-overlap`` (devices of a rack within its height, none overlapping),
``position`` (a rack's power, cooling and weight within its position's ratings), ``budget``
(rows, halls, feeds, cooling loops and network-rack PDUs within budget; info findings give the
tightest headroom left at each level), ``hold-back`` (growth room kept), ``contiguity`` (a
block's racks side by side in one row), ``spread`` (planes per feed, spine layers over feeds)
and ``reach`` (every link's floor distance within its medium's reach).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from clusterloom.fabric import FabricDesign
from clusterloom.fabric.sizing import host_side
from clusterloom.findings import Finding, Severity
from clusterloom.placement.demand import COMPUTE, plane_key
from clusterloom.placement.floor import FREE
from clusterloom.spec import ClusterSpec
from clusterloom.units import kilowatts, to_kilowatts

if TYPE_CHECKING:
    from clusterloom.placement.artifact import Placement

EPS = 1e-6


def _kw(w: float) -> str:
    return f"{to_kilowatts(w):,.1f} kW"


def check_placed_once(p: Placement) -> list[Finding]:
    out: list[Finding] = []
    pos = p.rack_position
    if (pos < 0).any():
        out.append(
            Finding(Severity.ERROR, "placed-once", f"{int((pos < 0).sum())} racks have no position")
        )
        return out
    counts = np.bincount(pos, minlength=p.floor.n_positions)
    if (counts > 1).any():
        worst = int(np.argmax(counts))
        out.append(
            Finding(
                Severity.ERROR,
                "placed-once",
                f"{int((counts > 1).sum())} positions hold more than one rack "
                f"({p.floor.pos_names[worst]} holds {int(counts[worst])})",
                p.floor.pos_names[worst],
            )
        )
    taken = p.floor.pos_state[pos] != FREE
    if taken.any():
        r = int(np.flatnonzero(taken)[0])
        out.append(
            Finding(
                Severity.ERROR,
                "placed-once",
                f"{int(taken.sum())} racks stand on blocked or reserved positions "
                f"(e.g. {p.demand.rack_label[r]} on {p.floor.pos_names[pos[r]]})",
            )
        )
    for dev in p.demand.devices:
        bad = (dev.node_rack < 0) | (dev.node_rack >= p.n_racks)
        if bad.any():
            out.append(
                Finding(
                    Severity.ERROR,
                    "placed-once",
                    f"{dev.fabric}: {int(bad.sum())} devices are in no rack",
                    f"fabrics.{dev.fabric}",
                )
            )
    return out


def check_rack_units(p: Placement, spec: ClusterSpec) -> list[Finding]:
    """Servers once, switches of every fabric: sorted by rack and U, each ends before the next."""
    catalog = spec.resolved_catalog()
    d = p.demand
    racks = [d.server_rack.astype(np.int64)]
    lows = [d.server_u.astype(np.int64)]
    heights = [np.full(d.server_rack.shape[0], d.server_height, dtype=np.int64)]
    for dev in d.devices:
        # hosts (the first nodes) sit in their servers, counted once above: keep the switches,
        # in-rack leaves in compute racks too
        switch = np.arange(dev.node_rack.shape[0]) >= host_side(spec, dev.fabric).hosts
        racks.append(dev.node_rack[switch].astype(np.int64))
        lows.append(dev.node_u[switch].astype(np.int64))
        heights.append(dev.node_height[switch].astype(np.int64))
    rack = np.concatenate(racks)
    low = np.concatenate(lows)
    high = low + np.concatenate(heights)  # one past the top unit
    out: list[Finding] = []
    size = np.array([catalog.racks[m].rack_units for m in d.rack_model], dtype=np.int64)
    over = high - 1 > size[rack]
    if over.any():
        r = int(rack[np.flatnonzero(over)[0]])
        out.append(
            Finding(
                Severity.ERROR,
                "u-overlap",
                f"{int(over.sum())} devices reach above their rack's top (e.g. in "
                f"{p.rack_names[r]}, {size[r]}U)",
                p.rack_names[r],
            )
        )
    order = np.lexsort((low, rack))
    rack, low, high = rack[order], low[order], high[order]
    clash = (rack[1:] == rack[:-1]) & (low[1:] < high[:-1])
    if clash.any():
        r = int(rack[1:][clash][0])
        out.append(
            Finding(
                Severity.ERROR,
                "u-overlap",
                f"{int(clash.sum())} devices overlap the one below them "
                f"(e.g. in {p.rack_names[r]})",
                p.rack_names[r],
            )
        )
    return out


def check_positions(p: Placement) -> list[Finding]:
    f, d = p.floor, p.demand
    pos = p.rack_position
    out: list[Finding] = []
    for what, need, have, unit in (
        ("power", d.rack_power_w, f.pos_power_w[pos], "kW"),
        ("cooling", d.rack_power_w, f.pos_cooling_w[pos], "kW"),
        ("weight", d.rack_weight_kg, f.pos_weight_kg[pos], "kg"),
    ):
        bad = need > have + EPS
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            scale = 1e3 if unit == "kW" else 1.0
            out.append(
                Finding(
                    Severity.ERROR,
                    "position",
                    f"{int(bad.sum())} racks exceed their position's {what} rating (e.g. "
                    f"{p.rack_names[r]}: {need[r] / scale:,.1f} {unit} on a "
                    f"{have[r] / scale:,.1f} {unit} position)",
                    p.rack_names[r],
                )
            )
    return out


def _budget(
    level: str,
    names: tuple[str, ...],
    load: NDArray[np.float64],
    limit: NDArray[np.float64],
    what: str,
) -> list[Finding]:
    out: list[Finding] = []
    finite = ~np.isinf(limit)
    over = finite & (load > limit + EPS)
    for i in np.flatnonzero(over)[:5].tolist():
        out.append(
            Finding(
                Severity.ERROR,
                "budget",
                f"{level} {names[i]}: {_kw(load[i])} of {what} on a {_kw(limit[i])} budget "
                f"({_kw(load[i] - limit[i])} over)",
                names[i],
            )
        )
    used = finite & (load > 0)
    if not over.any() and used.any():
        left = np.where(used, limit - load, np.inf)
        i = int(np.argmin(left))
        out.append(
            Finding(
                Severity.INFO,
                "budget",
                f"{level}s: tightest {what} headroom is {names[i]} at {_kw(load[i])} of "
                f"{_kw(limit[i])} ({_kw(limit[i] - load[i])} left)",
                names[i],
            )
        )
    return out


def check_budgets(p: Placement, spec: ClusterSpec) -> list[Finding]:
    f, d = p.floor, p.demand
    pos = p.rack_position
    w = d.rack_power_w
    row = f.pos_row[pos]
    hall = f.pos_hall[pos]
    row_load = np.bincount(row, weights=w, minlength=len(f.row_names)).astype(np.float64)
    hall_load = np.bincount(hall, weights=w, minlength=f.n_halls).astype(np.float64)
    feed_load = np.bincount(f.row_feed[row], weights=w, minlength=len(f.feed_names)).astype(
        np.float64
    )
    loop_load = np.bincount(f.row_loop[row], weights=w, minlength=len(f.loop_names)).astype(
        np.float64
    )
    out = _budget("row", f.row_names, row_load, f.row_power_w, "power")
    out += _budget("row", f.row_names, row_load, f.row_cooling_w, "cooling")
    out += _budget("hall", f.hall_names, hall_load, f.hall_power_w, "power")
    out += _budget("hall", f.hall_names, hall_load, f.hall_cooling_w, "cooling")
    out += _budget("feed", f.feed_names, feed_load, f.feed_power_w, "power")
    out += _budget("cooling loop", f.loop_names, loop_load, f.loop_cooling_w, "cooling")
    catalog = spec.resolved_catalog()
    network = np.flatnonzero(d.rack_kind != COMPUTE)
    if network.size:
        limit = np.array([kilowatts(catalog.racks[d.rack_model[r]].power_kw) for r in network])
        out += _budget(
            "network rack",
            tuple(p.rack_names[r] for r in network.tolist()),
            w[network],
            limit,
            "PDU power",
        )
    return out


def check_hold_back(p: Placement) -> list[Finding]:
    f = p.floor
    used = np.bincount(f.pos_hall[p.rack_position], minlength=f.n_halls)
    free = np.bincount(f.pos_hall[f.pos_state == FREE], minlength=f.n_halls)
    out = []
    for h in range(f.n_halls):
        left = int(free[h] - used[h])
        if left < f.hall_hold_back[h]:
            out.append(
                Finding(
                    Severity.ERROR,
                    "hold-back",
                    f"hall {f.hall_names[h]} keeps {left} free positions, "
                    f"{int(f.hall_hold_back[h])} were to be held back for growth",
                    f.hall_names[h],
                )
            )
    return out


def check_contiguity(p: Placement) -> list[Finding]:
    f = p.floor
    bad = []
    for u in p.demand.units:
        if u.kind != "block" or len(u.racks) < 2:
            continue
        pos = p.rack_position[list(u.racks)]
        if (np.diff(pos) != 1).any() or len(set(f.pos_row[pos].tolist())) != 1:
            bad.append(u.label)
    if not bad:
        return []
    return [
        Finding(
            Severity.ERROR,
            "contiguity",
            f"{len(bad)} blocks are not side by side in one row (e.g. {bad[0]})",
        )
    ]


def _owner(key: str) -> str:
    """``backend scalable unit 3`` or ``backend spine pod0`` from a plane key."""
    fab, kind, rest = key.split(":")
    return f"{fab} scalable unit {rest}" if kind == "block" else f"{fab} {kind} {rest}"


def check_spread(p: Placement, spec: ClusterSpec) -> list[Finding]:
    assert spec.site is not None
    f, d = p.floor, p.demand
    feed = f.row_feed[f.pos_row[p.rack_position]]
    planes_on: dict[tuple[str, int], set[int]] = defaultdict(set)
    layer_feeds: dict[tuple[str, int], set[int]] = defaultdict(set)
    layer_racks: dict[tuple[str, int], int] = defaultdict(int)
    hall_feeds: dict[int, int] = {
        h: len(set(f.row_feed[f.row_hall == h].tolist())) for h in range(f.n_halls)
    }
    for u in d.units:
        if not u.spread_key:
            continue
        key = plane_key(u)
        for r in u.racks:
            hall = int(f.pos_hall[p.rack_position[r]])
            if key:
                planes_on[(key, int(feed[r]))].add(u.plane)
            if ":block:" not in u.spread_key:
                layer_feeds[(u.spread_key, hall)].add(int(feed[r]))
                layer_racks[(u.spread_key, hall)] += 1
    out: list[Finding] = []
    limit = spec.site.spread.planes_per_feed
    for (key, fd), planes in sorted(planes_on.items()):
        if len(planes) > limit:
            out.append(
                Finding(
                    Severity.ERROR,
                    "spread",
                    f"{len(planes)} planes of {_owner(key)} have racks on feed "
                    f"{f.feed_names[fd]} (at most {limit})",
                    f.feed_names[fd],
                )
            )
    for (key, hall), feeds in sorted(layer_feeds.items()):
        need = min(spec.site.spread.spine_feeds, layer_racks[(key, hall)], hall_feeds[hall])
        if len(feeds) < need:
            out.append(
                Finding(
                    Severity.ERROR,
                    "spread",
                    f"layer {key} in hall {f.hall_names[hall]} stands on {len(feeds)} feed(s), "
                    f"needs {need}",
                    f.hall_names[hall],
                )
            )
    return out


def check_reach(
    p: Placement, spec: ClusterSpec, fabrics: tuple[FabricDesign, ...]
) -> list[Finding]:
    catalog = spec.resolved_catalog()
    out: list[Finding] = []
    for fd in fabrics:
        dist = p.link_distance_m(fd)
        t = fd.topology
        for tier, media in enumerate(fd.plan.media, start=1):
            reach = catalog.media[media].reach_m
            sel = t.link_tier == tier
            if not sel.any():
                continue
            worst = float(dist[sel].max())
            far = int((dist[sel] > reach + EPS).sum())
            if far:
                out.append(
                    Finding(
                        Severity.ERROR,
                        "reach",
                        f"{fd.name}: {far:,} {('host-leaf', 'leaf-spine', 'spine-core')[tier - 1]}"
                        f" links run farther than {media}'s {reach:g} m over the floor "
                        f"(the longest {worst:,.1f} m)",
                        f"fabrics.{fd.name}.media",
                    )
                )
    return out


def validate_placement(
    p: Placement, spec: ClusterSpec, fabrics: tuple[FabricDesign, ...]
) -> list[Finding]:
    """Every placement check, errors first within each check."""
    out = check_placed_once(p)
    if any(x.severity is Severity.ERROR for x in out):
        return out
    out += check_rack_units(p, spec)
    out += check_positions(p)
    out += check_budgets(p, spec)
    out += check_hold_back(p)
    out += check_contiguity(p)
    out += check_spread(p, spec)
    out += check_reach(p, spec, fabrics)
    if not math.isfinite(p.objective):
        out.append(Finding(Severity.WARNING, "solver", "the solver reported no objective"))
    return out
