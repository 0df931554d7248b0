"""Simulator forms of faults that are not a link's capacity (issue 23: mitigations of dead EVs,
mis-hashed switches, congested spines and stragglers are checked before they are proposed).

Each form is built from inputs both engines already take (a ``Router``, the traffic, failure
texts), so neither engine changes:

- **Mis-hashed switch** (:func:`skewed_router`): the switch's ECMP group is a weighted member
  table, as a switch programs WCMP (next hops replicated in the group): its first uplink holds
  ``a`` entries and every other uplink ``c``, so a hash lands on the first with probability
  ``a / (a + (n - 1) c)`` (the realised ``share``, the closest such ratio to the one asked with
  at most :data:`MAX_GROUP` entries). Both engines hash every flow (queue pair, EV) over the
  live entries, so the skew acts on whatever crosses the switch upward, in either engine; a
  dead uplink's entries drop out of the group as ECMP drops a dead next hop.
- **Congested spine** (:func:`congestion_failures`): extra traffic of ``load`` of the switch's
  links' capacity, as the capacity it takes (``switch:N@0*F``, ``F = max(0.05, 1 - load)``,
  as ``ops synth`` runs it). That traffic is not the job's: when the switch is drained it moves
  to the switch's peers (:func:`peers`: the same role and plane, and pod for a 3-tier spine),
  each taking an equal part (:func:`moved_congestion`).
- **Straggler** (:func:`straggling`): the rank's flows that wait for nothing (each step's first
  collective) start ``delay`` late; what waits for them waits longer, so the job's step grows
  by up to ``delay``. The straggler is the host (its GPU, its node): traffic moved to another
  host is on time.
- **Dead EV** (:func:`black_holed`): a switch's ECMP table of ``buckets`` entries (default
  :data:`DEAD_EV_BUCKETS`) with one entry black-holing: every packet the switch hashes where the
  dead EV hashes is lost (a probe with that EV is, and so is ``1 / buckets`` of everything the
  switch hashes: the switch cannot tell EVs apart, only hashes). A unit (a RoCE queue pair, a
  sprayer's EV) crossing the switch where it hashes is dead when its hash at that hop lands in
  the dead EV's bucket under the same hop's hash (``sim.paths``: ``splitmix64(ev ^ seed ^
  switch * golden)``; a 3-tier spine's uplink choice uses the second seed). The pair form
  ``SRC>DST#EV`` black-holes that EV's path between the two hosts only: the units of the pair
  on that port whose path is the EV's. No routing event sees it (the links are up): RoCE
  retransmits on the same 5-tuple, so a dead queue pair never delivers; a sprayer detects the
  losses and retires the EV after its ``detect_s``. The rule is :func:`dead_hops` on any path
  (the dead hop: where the packet is lost, at the switch's output port it would take), so the
  flow-engine check (:func:`black_holed`), ``ops synth`` and the packet engine
  (:class:`DeadBucket`, ``sim.packet.run.run_packets(dead=)``) lose the same units.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from clusterloom.errors import Problem, SpecError
from clusterloom.fabric.topology import Role, Topology
from clusterloom.sim.paths import Router, connection_hash, route, splitmix64
from clusterloom.sim.traffic import Traffic

__all__ = [
    "CONGESTION_FLOOR",
    "DEAD_EV_BUCKETS",
    "MAX_GROUP",
    "DeadBucket",
    "black_holed",
    "congestion_failures",
    "dead_hops",
    "hop_hashes",
    "moved_congestion",
    "peers",
    "skewed_router",
    "straggling",
    "unit_evs",
    "waiting_on",
]

I64 = NDArray[np.int64]
B = NDArray[np.bool_]

#: the most entries a skewed ECMP group is given (route() scans a switch's entries per hop)
MAX_GROUP = 4096
#: the least capacity a congested switch's links keep (as ``ops synth``: load above it leaves
#: this much for the job)
CONGESTION_FLOOR = 0.05
#: entries of a switch's ECMP table that a dead EV's bucket is one of
DEAD_EV_BUCKETS = 64
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MASK64 = 0xFFFFFFFFFFFFFFFF


# --- mis-hashed switch -----------------------------------------------------------------------


def _group(n: int, share: float) -> tuple[int, int]:
    """``(a, c)``: entries of the first uplink and of each other one, the ratio ``a / (a + (n -
    1) c)`` closest to ``share`` with at most :data:`MAX_GROUP` entries (fewest entries on a
    tie): for each ``c``, the best ``a`` is the rounded ``share (n - 1) c / (1 - share)``."""
    best: tuple[float, int, int, int] | None = None
    c = 1
    while 1 + (n - 1) * c <= MAX_GROUP or c == 1:
        exact = share * (n - 1) * c / (1.0 - share)
        room = max(1, MAX_GROUP - (n - 1) * c)  # the first uplink's entries at most
        for a in {min(room, max(1, int(exact))), min(room, max(1, int(exact) + 1))}:
            total = a + (n - 1) * c
            key = (round(abs(a / total - share), 12), total, a, c)
            if best is None or key < best:
                best = key
        c += 1
    assert best is not None
    return best[2], best[3]


def skewed_router(router: Router, switch: int, share: float) -> tuple[Router, float]:
    """``router`` with the ECMP group of ``switch``'s uplinks weighted so that a hash lands on
    its first uplink (by port order) with ``share`` (module docstring), and the share realised.
    ``share`` 1: the group holds the first uplink alone. ``SpecError`` for a switch with fewer
    than two uplinks or a share outside (0, 1]."""
    t = router.topology
    where = f"switch {switch}"
    if not 0.0 < share <= 1.0:
        raise SpecError([Problem(where, f"share={share:g}: a share in (0, 1]")])
    if not t.plan.hosts <= switch < t.n_nodes:
        raise SpecError([Problem(where, "not a switch of the topology")])
    row = router.up[switch]
    members = row[row >= 0]
    n = int(members.size)
    if n < 2:
        raise SpecError([Problem(where, "has fewer than two uplinks to mis-hash over")])
    if share >= 1.0:
        table = members[:1]
        real = 1.0
    else:
        a, c = _group(n, share)
        table = np.concatenate([np.repeat(members[:1], a), np.repeat(members[1:], c)])
        real = a / (a + (n - 1) * c)
    width = max(router.up.shape[1], table.size)
    up = np.full((router.up.shape[0], width), -1, dtype=np.int64)
    up[:, : router.up.shape[1]] = router.up
    up[switch] = -1
    up[switch, : table.size] = table
    up.setflags(write=False)
    return dataclasses.replace(router, up=up), real


# --- congested spine -------------------------------------------------------------------------


def peers(topology: Topology, node: int) -> I64:
    """The switches that share ``node``'s role in its plane (and, for a spine of a 3-tier
    fabric, its pod): where its traffic goes when it is drained. ``node`` excluded."""
    t = topology
    same = (t.node_role == t.node_role[node]) & (t.node_plane == t.node_plane[node])
    if t.plan.tiers == 3 and int(t.node_role[node]) == int(Role.SPINE):
        same &= t.node_pod == t.node_pod[node]
    same[node] = False
    out: I64 = np.flatnonzero(same).astype(np.int64)
    return out


def _fraction(load: float) -> float:
    return max(CONGESTION_FLOOR, round(1.0 - load, 6))


def congestion_failures(node: int, load: float) -> tuple[str, ...]:
    """The failure text of a switch carrying ``load`` (of its links' capacity) of other traffic
    from time 0: its links keep ``max(0.05, 1 - load)``."""
    if not load > 0.0:
        raise SpecError([Problem(f"switch {node}", f"load={load:g}: extra load above 0")])
    return (f"switch:{node}@0*{_fraction(load)!r}",)


def moved_congestion(topology: Topology, node: int, load: float) -> tuple[str, ...]:
    """The failure texts of the other traffic of a drained congested ``node``: its ``load``
    spread evenly over its :func:`peers` (each then keeps ``max(0.05, 1 - load / peers)``);
    none when it has no peer (that traffic has nowhere to go: it stops)."""
    others = peers(topology, node)
    if others.size == 0:
        return ()
    frac = _fraction(load / others.size)
    return tuple(f"switch:{int(p)}@0*{frac!r}" for p in others.tolist())


# --- straggler -------------------------------------------------------------------------------


def straggling(traffic: Traffic, hosts: Sequence[int], delay_ps: int) -> Traffic:
    """``traffic`` with the flows from ``hosts`` that wait for no other flow starting
    ``delay_ps`` late (module docstring)."""
    if delay_ps <= 0:
        raise SpecError([Problem("delay", "a straggler's delay is above 0")])
    late = np.isin(traffic.src, np.asarray(list(hosts), dtype=np.int64))
    late &= np.diff(traffic.dep_ptr) == 0
    start = traffic.start_ps.astype(np.int64) + np.where(late, int(delay_ps), 0)
    return dataclasses.replace(traffic, start_ps=start)


# --- dead EV ---------------------------------------------------------------------------------


def waiting_on(traffic: Traffic, hit: B) -> B:
    """``hit`` and every flow of ``traffic`` that waits for one of them, directly or not (the
    flows a stalled one keeps from ever starting)."""
    out = hit.copy()
    ptr, idx = traffic.dep_ptr, traffic.dep_idx
    owner = np.repeat(np.arange(len(traffic)), np.diff(ptr))
    while True:
        more = np.zeros_like(out)
        more[owner[out[idx]]] = True
        grown = out | more
        if grown.sum() == out.sum():
            return grown
        out = grown


def unit_evs(
    transport: str, router: Router, src: I64, dst: I64, seed: int, *, qps: int | None = None,
    evs: int | None = None,
) -> tuple[I64, I64, I64]:  # fmt: skip
    """``(flow, port, ev)`` of every unit a flow-engine transport routes (``roce-ecmp``: one
    per queue pair; the sprayers: one per EV, before merging), with the EV each hashes, as
    ``sim.flow.transports`` draws them (tested against its routes)."""
    ports = int(router.host_link.shape[1])
    ids = np.arange(src.size, dtype=np.int64)
    if transport == "roce-ecmp":
        q = qps or ports
        f = np.repeat(ids, q)
        k = np.tile(np.arange(q, dtype=np.int64), ids.size)
        ev = connection_hash(src[f], dst[f], k, seed) & 0xFFFFFFFF
        return f, (f + k) % ports, ev
    if transport in ("mrc-spray", "receiver-driven"):
        n = evs or (128 if transport == "mrc-spray" else 64)
        f = np.repeat(ids, n)
        k = np.tile(np.arange(n, dtype=np.int64), ids.size)
        ev = connection_hash(src[f], dst[f], f, seed) ^ splitmix64(k.astype(np.uint64)).astype(
            np.int64
        )
        return f, k % ports, ev & 0xFFFFFFFF
    raise SpecError([Problem("transport", f"{transport} has no units with EVs")])


def hop_hashes(
    topology: Topology, paths: I64, ev: I64, seed: int
) -> tuple[I64, NDArray[np.uint64]]:
    """For every path row and hop: the switch that chose the hop (-1 where no choice is made:
    the host links, the first hop's NIC) and the hash it chose with (``sim.paths``'s)."""
    t = topology
    rows, cols = paths.shape
    node = np.full((rows, cols), -1, dtype=np.int64)
    h = np.zeros((rows, cols), dtype=np.uint64)
    s = np.uint64(seed & _MASK64)
    far = np.uint64((seed ^ 0x5EED) & _MASK64)
    e = (ev.astype(np.int64) & 0xFFFFFFFF).astype(np.uint64)
    for j in range(1, cols):
        d = paths[:, j]
        ok = d >= 0
        link = np.where(ok, d // 2, 0)
        up = d % 2 == 0
        frm = np.where(up, t.link_src[link], t.link_dst[link]).astype(np.int64)
        choice = ok & (t.link_tier[link] >= 2)
        node[:, j] = np.where(choice, frm, -1)
        spine_up = up & (t.node_role[frm] == int(Role.SPINE))
        seed_j = np.where(spine_up, far, s)
        with np.errstate(over="ignore"):
            h[:, j] = splitmix64(e ^ seed_j ^ (frm.astype(np.uint64) * _GOLDEN))
    return node, h


@dataclasses.dataclass(frozen=True)
class DeadBucket:
    """A dead EV as a data plane holds it (module docstring): with ``switch``, the entry of
    that switch's ECMP table of ``buckets`` entries where ``ev`` hashes black-holes every
    packet the switch hashes there (at the switch's output port it would have taken); with
    ``pair=(src, dst, port)``, the path of ``ev`` from host ``src`` to ``dst`` on ``port``
    is black-holed at its first switch (its output port there): the units of that pair and
    port whose path is the EV's. The packet engine takes these (``run_packets(dead=)``); the
    flow-engine check and ``ops synth`` use the same rule (:func:`dead_hops`)."""

    ev: int
    switch: int | None = None
    pair: tuple[int, int, int] | None = None
    buckets: int = DEAD_EV_BUCKETS

    def __post_init__(self) -> None:
        if (self.switch is None) == (self.pair is None) or self.buckets < 1:
            raise SpecError(
                [Problem("dead EV", "name a switch (SWITCH#EV) or a pair (SRC>DST#EV), not both")]
            )


def dead_hops(
    router: Router,
    paths: I64,
    src: I64,
    dst: I64,
    port: I64,
    ev: I64,
    seed: int,
    hole: DeadBucket,
    *,
    alive: B | None = None,
) -> I64:
    """Per path row (``sim.paths.route``'s rows of the units ``(src, dst, port, ev)``, under
    ``alive``): the index of the hop at whose output port ``hole`` loses the unit's packets,
    -1 where it does not. The switch form: the first hop chosen by ``hole.switch`` whose hash
    (``sim.paths``'s, the far seed for a 3-tier spine's uplink) lands in the dead EV's bucket
    under the same hop's seed; the pair form: hop 1 (the first switch's output port) of the
    pair's units on the dead EV's path."""
    t = router.topology
    rows = paths.shape[0]
    out = np.full(rows, -1, dtype=np.int64)
    if rows == 0:
        return out
    if hole.pair is not None:
        a, b, p = hole.pair
        probe = route(
            router,
            np.array([a], dtype=np.int64),
            np.array([b], dtype=np.int64),
            np.array([p], dtype=np.int64),
            np.array([hole.ev], dtype=np.int64),
            seed=seed,
            alive=alive,
        )[0]
        if not (probe >= 0).any():
            return out
        same = (src == a) & (dst == b) & (port == p) & (paths == probe[None, :]).all(axis=1)
        out[same] = 1
        return out
    switch = hole.switch
    assert switch is not None
    node, h = hop_hashes(t, paths, ev, seed)
    at = node == switch
    s = np.uint64(seed & _MASK64)
    far = np.uint64((seed ^ 0x5EED) & _MASK64)
    buckets = np.uint64(hole.buckets)
    with np.errstate(over="ignore"):
        key = np.uint64(hole.ev & 0xFFFFFFFF) ^ (np.uint64(switch) * _GOLDEN)
        b_near = int(splitmix64(np.array([key ^ s], dtype=np.uint64))[0] % buckets)
        b_far = int(splitmix64(np.array([key ^ far], dtype=np.uint64))[0] % buckets)
    bucket = (h % buckets).astype(np.int64)
    # the hop's seed: the far one for a spine's uplink (the bucket of the EV under it)
    d = np.maximum(paths, 0)
    spine_up = (d % 2 == 0) & (t.node_role[t.link_src[d // 2]] == int(Role.SPINE))
    want = np.where(spine_up, b_far, b_near)
    hit = at & (bucket == want)
    any_hit = hit.any(axis=1)
    out[any_hit] = np.argmax(hit[any_hit], axis=1)
    return out


def black_holed(
    router: Router,
    transport: str,
    src: I64,
    dst: I64,
    seed: int,
    *,
    alive: B | None,
    switch: int | None,
    ev: int,
    pair: tuple[int, int, int] | None = None,
    buckets: int = DEAD_EV_BUCKETS,
    qps: int | None = None,
    evs: int | None = None,
) -> tuple[B, I64]:
    """``(dead, units)``: per unit (:func:`unit_evs`, routed over the ``alive`` links), whether
    the dead EV loses it (:func:`dead_hops`), and the flow of each unit (module docstring).
    ``switch#EV``: the units ``switch`` hashes into the dead EV's bucket; ``pair=(src, dst,
    port)``: the units of that pair and port on the dead EV's path."""
    if pair is None and switch is None:
        raise SpecError([Problem("dead EV", "name a switch (SWITCH#EV) or a pair (SRC>DST#EV)")])
    hole = DeadBucket(ev, None if pair is not None else switch, pair, buckets)
    f, port, uev = unit_evs(transport, router, src, dst, seed, qps=qps, evs=evs)
    paths = route(router, src[f], dst[f], port, uev, seed=seed, alive=alive)
    hop = dead_hops(router, paths, src[f], dst[f], port, uev, seed, hole, alive=alive)
    return np.asarray(hop >= 0), f
