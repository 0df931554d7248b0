"""Change: what a grown design adds to, changes in and removes from an existing cabling.

Links are matched by what they join, never by array position (ids shift when a topology
grows): each end is (fabric, role, plane, index within its tier and plane, port), the same
identity the device and interface names encode. A link of both designs is

- **unchanged** when both ends stand in the same racks (by rack name: the floor position),
  with the same medium and ordered length, and, when structured, between the same two frames;
- **changed** otherwise (a rack moved, another medium or length, another frame pair): its
  cable is pulled again.

**Rewired** links are the existing links that must be touched: changed plus removed (the
expansion metric of Zhang et al., NSDI'19, REFERENCES.md). **Spare trunk fibres**: trunks of the
existing design keep their free positions (144 less those used); the structured links the change
adds or re-pulls between two frames use those first (single-mode and multimode apart, frames
matched by name) and only the rest needs new trunks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from clusterloom.cabling.media import TRUNK_FIBERS
from clusterloom.cabling.stage import Cabling
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

    # spare trunk positions of the old design, per (frame pair by row names, fibre type)
    spare: dict[tuple[str, str, bool], int] = {}
    for t in range(old.n_trunks):
        a, b = (
            old.frame_names[int(old.trunk_a[t])],
            old.frame_names[int(old.trunk_b[t])],
        )
        key = (min(a, b), max(a, b), bool(old.trunk_smf[t]))
        spare[key] = spare.get(key, 0) + TRUNK_FIBERS - int(old.trunk_fibers_used[t])
    need: dict[tuple[str, str, bool], int] = {}
    pulled = np.concatenate([added, changed])
    pulled = pulled[new.structured[pulled]]
    smf = np.array([m.kind == "smf" for m in new.media.models], dtype=bool)
    for fa, fb, s, slots in zip(
        new.frame_a[pulled].tolist(),
        new.frame_b[pulled].tolist(),
        smf[new.medium[pulled]].tolist(),
        new.media.slots[new.medium[pulled]].tolist(),
        strict=True,
    ):
        a, b = new.frame_names[fa], new.frame_names[fb]
        key = (min(a, b), max(a, b), bool(s))
        need[key] = need.get(key, 0) + int(slots)
    reused = 0
    trunks = 0
    for key, n in sorted(need.items()):
        use = min(n, spare.get(key, 0))
        reused += use
        trunks += -(-(n - use) // TRUNK_FIBERS)
    return Change(
        added=added,
        changed=changed,
        removed=removed,
        unchanged=int(same.sum()),
        spare_fibres=sum(spare.values()),
        reused_fibres=reused,
        new_trunks=trunks,
    )
