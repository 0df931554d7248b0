"""Change: what a grown design adds to, changes in and removes from an existing cabling.

Links are matched by what they join, never by array position (ids shift when a topology
grows): each end is (fabric, role, plane, index within its tier and plane, port), the same
identity the device and interface names encode. A link of both designs is

- **unchanged** when both ends stand in the same racks (by rack name: the floor position),
  with the same medium and ordered length, and, when structured, between the same two frames;
- **changed** otherwise (a rack moved, another medium or length, another frame pair): its
  cable is pulled again.

**Rewired** links are the existing links that must be touched: changed plus removed (the
expansion metric of Zhang et al., NSDI'19, REFERENCES.md). **Spare fibres**: the cables
between frames of the existing design keep their free positions (those no link that stays
uses: a removed or re-pulled link frees its fibres); the structured links the
change adds or re-pulls take those first, with real positions (:class:`_Reuse`: free
positions in a leg of the same frame pair, then legs free along the whole chain of cables,
single-mode and multimode apart, frames matched by name), and only the rest needs new cables.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from clusterloom.cabling.artifact import Cabling, hdf_name
from clusterloom.cabling.media import BACKBONE_SIZES, LEG_FIBERS, TRUNK_SIZES
from clusterloom.cabling.plant import _ranks, pack_cables
from clusterloom.fabric import FabricDesign
from clusterloom.placement import Placement


@dataclass(frozen=True, eq=False)
class Change:
    """Rows of the new cabling that are added or changed, rows of the old one removed."""

    added: NDArray[np.int64]
    changed: NDArray[np.int64]
    removed: NDArray[np.int64]
    unchanged: int
    spare_fibres: int
    reused_fibres: int
    new_trunks: int
    #: the structured rows of the new cabling that are pulled (added or changed), and where
    #: each goes in the old plant: cables and legs from its a end (-1: a new cable), first
    #: fibre position at each end
    pulled: NDArray[np.int64]
    #: rows of the old cabling that stay as they are
    kept: NDArray[np.int64]
    reuse_hops: NDArray[np.int32]
    reuse_legs: NDArray[np.int16]
    reuse_fiber_a: NDArray[np.int8]
    reuse_fiber_b: NDArray[np.int8]

    @property
    def rewired(self) -> int:
        return int(self.changed.shape[0] + self.removed.shape[0])


def _end_keys(c: Cabling, fabrics: tuple[FabricDesign, ...], side: str) -> NDArray[np.int64]:
    """A 63-bit identity of each link's ``side`` end: fabric (3 bits), role (3), plane (8),
    index (32 bits less the rest) and port (13)."""
    node = getattr(c, f"{side}_node")
    port = getattr(c, f"{side}_port").astype(np.int64)
    out = np.zeros(c.n_links, dtype=np.int64)
    for i, fd in enumerate(fabrics):
        t = fd.topology
        name = ("backend", "frontend").index(fd.name) if fd.name in ("backend", "frontend") else 7
        m = c.fabric == i
        v = node[m]
        key = np.int64(name)
        key = (key << 3) | t.node_role[v].astype(np.int64)
        key = (key << 8) | (t.node_plane[v].astype(np.int64) + 1)
        key = (key << 36) | t.node_index[v].astype(np.int64)
        out[m] = (key << 13) | port[m]
    return out


def _link_keys(c: Cabling, fabrics: tuple[FabricDesign, ...]) -> NDArray[np.int64]:
    """Two columns (lower end key, higher end key)."""
    a, b = _end_keys(c, fabrics, "a"), _end_keys(c, fabrics, "b")
    return np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1)


def _match(
    old: NDArray[np.int64], new: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Rows ``(i_old, i_new)`` with equal keys (each key appears once per side)."""
    both = np.concatenate([old, new])
    side = np.concatenate([np.zeros(old.shape[0], np.int64), np.ones(new.shape[0], np.int64)])
    row = np.concatenate([np.arange(old.shape[0]), np.arange(new.shape[0])])
    o = np.lexsort((side, both[:, 1], both[:, 0]))
    k, s, r = both[o], side[o], row[o]
    same = (k[1:] == k[:-1]).all(axis=1) & (s[:-1] == 0) & (s[1:] == 1)
    i = np.flatnonzero(same)
    return r[i], r[i + 1]


def plan_change(
    old: Cabling,
    old_fabrics: tuple[FabricDesign, ...],
    old_placement: Placement,
    new: Cabling,
    new_fabrics: tuple[FabricDesign, ...],
    new_placement: Placement,
) -> Change:
    """The change from ``old`` to ``new`` (see the module)."""
    ko, kn = _link_keys(old, old_fabrics), _link_keys(new, new_fabrics)
    ok_old, ok_new = old.realized(), new.realized()
    io, inew = _match(ko, kn)
    keep = ok_old[io] & ok_new[inew]
    io, inew = io[keep], inew[keep]

    def names(p: Placement, racks: NDArray[np.int32]) -> NDArray[np.object_]:
        table = np.empty(len(p.rack_names), dtype=object)
        table[:] = p.rack_names
        return table[racks]

    rows_old = np.array((*old.frame_names, ""), dtype=object)
    rows_new = np.array((*new.frame_names, ""), dtype=object)
    same = (
        (names(old_placement, old.a_rack[io]) == names(new_placement, new.a_rack[inew]))
        & (names(old_placement, old.b_rack[io]) == names(new_placement, new.b_rack[inew]))
        & (
            np.array(old.media.names, dtype=object)[old.medium[io]]
            == np.array(new.media.names, dtype=object)[new.medium[inew]]
        )
        & (old.structured[io] == new.structured[inew])
        & (old.order_m[io] == new.order_m[inew])
        & (rows_old[old.frame_a[io]] == rows_new[new.frame_a[inew]])
        & (rows_old[old.frame_b[io]] == rows_new[new.frame_b[inew]])
    )
    matched_new = np.zeros(new.n_links, dtype=bool)
    matched_new[inew] = True
    matched_old = np.zeros(old.n_links, dtype=bool)
    matched_old[io] = True
    added = np.flatnonzero(ok_new & ~matched_new)
    removed = np.flatnonzero(ok_old & ~matched_old)
    changed = np.sort(inew[~same])

    pulled = np.concatenate([added, changed])
    pulled = np.sort(pulled[new.structured[pulled]])
    kept = np.zeros(old.n_links, dtype=bool)
    kept[io[same]] = True
    reuse = _Reuse(old, kept)
    spare = reuse.spare_fibres()
    hops, legs, fa, fb = reuse.place(new, pulled)
    reused = hops[:, 0] >= 0
    slots = new.media.slots[new.medium[pulled]].astype(np.int64)
    return Change(
        added=added,
        changed=changed,
        removed=removed,
        unchanged=int(same.sum()),
        spare_fibres=spare,
        reused_fibres=int(slots[reused].sum()),
        new_trunks=reuse.new_cables(),
        pulled=pulled,
        kept=np.flatnonzero(kept),
        reuse_hops=hops,
        reuse_legs=legs,
        reuse_fiber_a=fa,
        reuse_fiber_b=fb,
    )


class _Reuse:
    """Free positions of the old design's cables between frames, handed to pulled links.

    Frames are matched by name (the names encode hall, row and rack position, not array
    ids). A leg of an old cable belongs to one frame pair end to end (``plant``: legs pass
    whole through the HDFs), so a pulled duplex link first takes free positions in a leg its
    frame pair already uses, then a leg free in every cable of its chain (a trunk between the
    two frames in one hall; trunk to the HDF, backbone, trunk from the far HDF between halls),
    whole legs for parallel optics; what finds no room is counted as new cables per chain
    group (``new_cables``)."""

    def __init__(self, old: Cabling, kept: NDArray[np.bool_]) -> None:
        self.old = old
        names = old.frame_names
        legs = old.trunk_fibers.astype(np.int64) // LEG_FIBERS
        self.leg_base = np.concatenate([[0], np.cumsum(legs)])
        self.used = np.zeros(int(self.leg_base[-1]), dtype=bool)
        # the cables between each two named frames (either way round), per fibre type
        self.between: dict[tuple[str, str, bool], list[int]] = {}
        for t in range(old.n_trunks):
            a, b = names[int(old.trunk_a[t])], names[int(old.trunk_b[t])]
            key = (min(a, b), max(a, b), bool(old.trunk_smf[t]))
            self.between.setdefault(key, []).append(t)
        # occupied legs, and per leg used by a frame pair the positions taken at the pair's
        # lower-named frame (a bit mask) and the chain of (cable, leg) from that frame
        self.mask: dict[int, int] = {}
        self.chain: dict[int, tuple[tuple[int, int], ...]] = {}
        self.pair_legs: dict[tuple[str, str, bool], list[int]] = {}
        self._hold(old, kept)
        self.need: dict[tuple[str, str, bool], int] = {}
        # where the searches for room resume (``_free_legs``, ``_take``)
        self.free_from: dict[tuple[tuple[str, str, bool], int], tuple[int, int]] = {}
        self.pair_from: dict[tuple[tuple[str, str, bool], int], int] = {}

    def _hold(self, old: Cabling, kept: NDArray[np.bool_]) -> None:
        """The legs, chains, pair legs and positions the structured links that stay hold
        (those of removed and re-pulled links are free), for all links at once; a leg's chain
        and its place in its pair's list come from the first link on it."""
        st = np.flatnonzero(old.structured & old.realized() & kept)
        names = np.array(old.frame_names, dtype=object)
        a, b = names[old.frame_a[st]], names[old.frame_b[st]]
        flip = (b < a).astype(bool)  # the chain is read from the lower-named frame
        lo, hi = np.where(flip, b, a), np.where(flip, a, b)
        smf = old.media.smf[old.medium[st]]
        pos = np.where(flip, old.fiber_b[st], old.fiber_a[st]).astype(np.int64)
        hops, hop_legs = old.hops[st].astype(np.int64), old.hop_legs[st].astype(np.int64)
        n_hops = (hops >= 0).sum(axis=1)[:, None]
        col = np.arange(hops.shape[1])[None, :]
        valid = col < n_hops  # cables are -1 padded after the link's last
        at = np.where(valid, np.where(flip[:, None], n_hops - 1 - col, col), 0)
        cable = np.where(valid, np.take_along_axis(hops, at, axis=1), -1)
        leg = np.take_along_axis(hop_legs, at, axis=1)
        # one row per leg a link takes (parallel optics take several in a row)
        n_legs = -(-old.media.slots[old.medium[st]].astype(np.int64) // LEG_FIBERS)
        row = np.repeat(np.arange(st.shape[0]), n_legs)
        k = _ranks(n_legs)  # the leg within the link
        for h in range(cable.shape[1]):
            on = cable[row, h] >= 0
            self.used[self.leg_base[cable[row[on], h]] + leg[row[on], h] - 1 + k[on]] = True
        head = self.leg_base[cable[row, 0]] + leg[row, 0] - 1 + k
        span = np.minimum(old.span[st].astype(np.int64), LEG_FIBERS)[row]
        bits = np.zeros(self.used.shape[0], dtype=np.int64)
        np.bitwise_or.at(bits, head, ((1 << span) - 1) << (pos[row] - 1))
        heads, first = np.unique(head, return_index=True)
        by_first = np.argsort(first)
        for h, r in zip(heads[by_first].tolist(), first[by_first].tolist(), strict=True):
            j, kk = int(row[r]), int(k[r])
            self.chain[h] = tuple(
                (t, g + kk)
                for t, g in zip(cable[j].tolist(), leg[j].tolist(), strict=True)
                if t >= 0
            )
            self.pair_legs.setdefault((lo[j], hi[j], bool(smf[j])), []).append(h)
            self.mask[h] = int(bits[h])

    def spare_fibres(self) -> int:
        """Fibres of the old cables that no kept link uses."""
        used = sum(bin(m).count("1") * int(self.chain_len(h)) for h, m in self.mask.items())
        return int(self.old.trunk_fibers.astype(np.int64).sum()) - used

    def chain_len(self, head: int) -> int:
        return len(self.chain[head])

    def _free_legs(self, key: tuple[str, str, bool], n: int) -> tuple[int, int] | None:
        """A cable between ``key``'s frames with ``n`` free legs in a row (starting at an odd
        leg when ``n`` is 2): (cable, first leg), the first in cable order. Legs only ever
        get taken, so the search for ``(key, n)`` resumes where the last one found room."""
        cables = self.between.get(key, [])
        first, start = self.free_from.get((key, n), (0, 0))
        for c in range(first, len(cables)):
            t = cables[c]
            base = int(self.leg_base[t])
            n_legs = int(self.leg_base[t + 1]) - base
            free = ~self.used[base : base + n_legs]
            for g in range(start, n_legs - n + 1, n):
                if free[g : g + n].all():
                    self.free_from[(key, n)] = (c, g)
                    return t, g + 1
            start = 0
        self.free_from[(key, n)] = (len(cables), 0)
        return None

    def place(
        self, new: Cabling, rows: NDArray[np.int64]
    ) -> tuple[NDArray[np.int32], NDArray[np.int16], NDArray[np.int8], NDArray[np.int8]]:
        """Old cables, legs and fibre positions (from each link's a end) for the structured
        links ``rows`` of ``new``; cable -1 where a new cable is needed."""
        names = new.frame_names
        smf = new.media.smf
        hall_names = new.pathways.hall_names
        hops = np.full((rows.shape[0], 3), -1, dtype=np.int32)
        legs = np.zeros((rows.shape[0], 3), dtype=np.int16)
        fa = np.zeros(rows.shape[0], dtype=np.int8)
        fb = np.zeros(rows.shape[0], dtype=np.int8)
        for j, i in enumerate(rows.tolist()):
            a, b = names[int(new.frame_a[i])], names[int(new.frame_b[i])]
            ha = hall_names[int(new.frame_hall[new.frame_a[i]])]
            hb = hall_names[int(new.frame_hall[new.frame_b[i]])]
            flip = b < a
            if flip:
                a, b, ha, hb = b, a, hb, ha
            s = bool(smf[new.medium[i]])
            slots = int(new.media.slots[new.medium[i]])
            span = min(int(new.span[i]), LEG_FIBERS)
            n_legs = -(-slots // LEG_FIBERS)
            groups = [(a, b)]
            if ha != hb:
                da, db = hdf_name(ha), hdf_name(hb)
                groups = [(a, da), (da, db), (db, b)]
            keys = [(min(x, y), max(x, y), s) for x, y in groups]
            found = self._take(keys, (a, b, s), n_legs, span)
            if found is None:
                for key in keys:
                    self.need[key] = self.need.get(key, 0) + n_legs
                continue
            chain, pos = found
            far = LEG_FIBERS + 1 - (pos + span - 1)
            if flip:
                chain, pos, far = chain[::-1], far, pos
            for k, (t, g) in enumerate(chain):
                hops[j, k], legs[j, k] = t, g
            fa[j], fb[j] = pos, far
        return hops, legs, fa, fb

    def _take(
        self,
        keys: list[tuple[str, str, bool]],
        pair: tuple[str, str, bool],
        n_legs: int,
        span: int,
    ) -> tuple[tuple[tuple[int, int], ...], int] | None:
        """Room for a link of ``n_legs`` legs (``span`` positions in a leg) of frame pair
        ``pair`` along cables ``keys``: its chain of (cable, leg) from the lower-named frame
        and its first position there."""
        want = (1 << span) - 1
        if n_legs == 1 and span < LEG_FIBERS:
            # positions only ever get taken: a leg without room for ``span`` stays without,
            # so the search of the pair's legs resumes at the first that had room
            heads = self.pair_legs.get(pair, [])
            c = self.pair_from.get((pair, span), 0)
            while c < len(heads):
                head = heads[c]
                m = self.mask[head]
                for p in range(0, LEG_FIBERS - span + 1, span):
                    if not m & (want << p):
                        self.mask[head] = m | (want << p)
                        self.pair_from[(pair, span)] = c
                        return self.chain[head], p + 1
                c += 1
            self.pair_from[(pair, span)] = c
        picks = [self._free_legs(k, n_legs) for k in keys]
        if any(x is None for x in picks):
            return None
        chain = tuple(x for x in picks if x is not None)
        for t, g in chain:
            self.used[self.leg_base[t] + g - 1 : self.leg_base[t] + g - 1 + n_legs] = True
        for k in range(n_legs):
            head = int(self.leg_base[chain[0][0]] + chain[0][1] - 1 + k)
            self.chain[head] = tuple((t, g + k) for t, g in chain)
            self.mask[head] = want
            if n_legs == 1 and span < LEG_FIBERS:
                self.pair_legs.setdefault(pair, []).append(head)
        return chain, 1

    def new_cables(self) -> int:
        """Cables the links without room need: per group of frames, the legs in cables of the
        sizes ``plant`` packs (trunks of 12 legs; backbones between two HDFs)."""
        total = 0
        for (a, b, _), n in sorted(self.need.items()):
            table = BACKBONE_SIZES if a.endswith("-hdf") and b.endswith("-hdf") else TRUNK_SIZES
            _, _, _, cables = pack_cables(np.zeros(n, dtype=np.int64), table)
            total += int(cables.shape[0])
        return total
