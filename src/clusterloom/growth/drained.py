"""What the fabric still carries at each step of a change plan, while the step's links are
drained or taken off (docs/growth.md, "Capacity while links are drained").

A link is *live* after a step when it is cabled, not drained and not new: the installed links
start live; a ``drain`` step takes its links out of service until the ``restore`` step, a
``remove`` takes them off; a ``pull`` cables a link that carries nothing until the ``restore``
(the state ``new: not live until tested`` of ``cabling/change.csv``), after which every cabled
link is live. On the live links of each fabric of the baseline, per step:

- **leaf uplinks left**: per installed leaf, live uplink Gb/s over its installed uplink Gb/s;
  the least over the leaves and the leaf that has it, and how many leaves are below the
  spec's ``growth.min_live_uplinks`` (default 50%): a warning finding names the step;
- **leaf pair cut left**, per plane: the least over pairs of installed leaves of the maximum
  flow between them on up-then-down paths (the paths ECMP routing uses: up to a switch, then
  down) over the same in the baseline: by the closed form of a Clos (:func:`pair_cut_clos`,
  two or three tiers, each leaf reaching one spine per class of spines joined by cores; on
  two tiers ``sum over spines s of min(C[a, s], C[b, s])``), else a max-flow (networkx) when
  the plane has at most :data:`MAXFLOW_LEAVES` leaves, else not computed (the key absent);
- **cut between pods left**, per plane of more than one pod (leaves under the same spines):
  the least over pairs of pods of the max-flow from every leaf of one to every leaf of the
  other, by the same closed form with each pod's Gb/s per class summed (:func:`pod_cut_clos`);
  absent where the plane is no Clos;
- **hosts cut**: installed hosts with no live link to a leaf that still has a live uplink
  (or, on one tier, no live link at all): they lose their last path; an error finding.

In the wave of a rack move (``growth.waves``: every link of the rack drained at once) both are
forced by the move: one warning ``drain-forced`` names its steps, leaves and hosts instead.

The figures go to each step's ``checks`` (``FABRIC:leaf-uplinks-left``, ``...-least``,
``FABRIC:leaves-below``, ``FABRIC:pP:leaf-pair-cut-left``, ``FABRIC:pP:pod-cut-left``,
``FABRIC:hosts-cut``), so they are
in ``changes.jsonl``, ``cabling/change.csv`` (column ``step_capacity``) and the report.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from clusterloom.changes import ChangePlan, Step
from clusterloom.export.naming import topology_names
from clusterloom.fabric.topology import Role
from clusterloom.findings import Finding, Severity
from clusterloom.spec.growth import GrowthSpec
from clusterloom.units import BPS_PER_GBPS

if TYPE_CHECKING:
    from clusterloom.fabric import FabricDesign
    from clusterloom.pipeline import Design
    from clusterloom.spec import Catalog, ClusterSpec

__all__ = [
    "MAXFLOW_LEAVES",
    "LinkTable",
    "capacity_note",
    "fabric_rows",
    "link_table",
    "live_after_steps",
    "pair_cut_clos",
    "pair_cut_maxflow",
    "pod_cut_clos",
    "with_drain_checks",
    "with_drain_findings",
]

#: where the closed form does not apply, the leaf pair cut is a max-flow per pair up to this many
#: leaves a plane
MAXFLOW_LEAVES = 48
#: leaves named in one finding
SHOWN = 8


@dataclass(frozen=True, eq=False)
class LinkTable:
    """Every link of the baseline and the grown design, once, by name (``index``: name ->
    row); its ends as node ids into ``nodes`` (switches by device name, hosts by fabric and
    host id), lower end first."""

    index: dict[str, int]
    fabrics: tuple[str, ...]
    fabric: NDArray[np.int16]
    plane: NDArray[np.int16]
    lo: NDArray[np.int64]
    hi: NDArray[np.int64]
    gbps: NDArray[np.float64]
    base: NDArray[np.bool_]  #: the link is installed (in the baseline)
    nodes: tuple[str, ...]
    role: NDArray[np.int8]  #: per node
    tiers: tuple[int, ...]  #: per fabric, the baseline's switch tiers

    @property
    def n_links(self) -> int:
        return int(self.lo.shape[0])


def fabric_rows(fd: FabricDesign, catalog: Catalog) -> tuple[NDArray[Any], ...]:
    """Names, lower-end keys and upper-end keys of ``fd``'s links (the names of
    ``growth.rework.fabric_link_names``; a switch by its device name, a host by fabric and id)."""
    t = fd.topology
    names = topology_names(t, catalog)
    a = names.device(t.link_src) + ":" + names.interface(t.link_src, t.link_src_port)
    b = names.device(t.link_dst) + ":" + names.interface(t.link_dst, t.link_dst_port)
    dev = names.devices.astype(object).copy()
    hosts = np.flatnonzero(t.node_role == int(Role.HOST))
    dev[hosts] = [f"{fd.name}/host{h}" for h in hosts.tolist()]
    return a + "~" + b, dev[t.link_src], dev[t.link_dst]


def link_table(
    baseline: tuple[FabricDesign, ...], grown: tuple[FabricDesign, ...], catalog: Catalog
) -> LinkTable:
    """The links of both designs (a link in both is one row, the baseline's)."""
    fabrics = tuple(dict.fromkeys(fd.name for fd in (*baseline, *grown)))
    parts: dict[str, list[NDArray[Any]]] = {
        k: [] for k in ("name", "lo", "hi", "fabric", "plane", "gbps", "base", "lo_role", "hi_role")
    }
    for installed, designs in ((True, baseline), (False, grown)):
        for fd in designs:
            t = fd.topology
            for key, arr in zip(("name", "lo", "hi"), fabric_rows(fd, catalog), strict=True):
                parts[key].append(arr)
            parts["fabric"].append(np.full(t.n_links, fabrics.index(fd.name), dtype=np.int16))
            parts["plane"].append(t.link_plane.astype(np.int16))
            parts["gbps"].append(t.link_capacity_bps / BPS_PER_GBPS)
            parts["base"].append(np.full(t.n_links, installed))
            parts["lo_role"].append(t.node_role[t.link_src])
            parts["hi_role"].append(t.node_role[t.link_dst])
    col = {
        k: np.concatenate(v)
        if v
        else np.empty(0, dtype=object if k in ("name", "lo", "hi") else np.int64)
        for k, v in parts.items()
    }
    names = col["name"].tolist()
    first = dict(zip(reversed(names), range(len(names) - 1, -1, -1), strict=True))  # the first wins
    keep = np.sort(np.fromiter(first.values(), dtype=np.int64, count=len(first)))
    index = dict(zip(col["name"][keep].tolist(), range(len(keep)), strict=True))
    ends = np.concatenate([col["lo"][keep], col["hi"][keep]]).tolist()
    node_id = {key: i for i, key in enumerate(dict.fromkeys(ends))}
    ids = np.fromiter(map(node_id.__getitem__, ends), dtype=np.int64, count=len(ends))
    lo, hi = ids[: len(keep)], ids[len(keep) :]
    role = np.zeros(len(node_id), dtype=np.int8)
    role[lo], role[hi] = col["lo_role"][keep], col["hi_role"][keep]
    tiers = {fd.name: fd.plan.tiers for fd in (*grown, *baseline)}  # the baseline's wins
    return LinkTable(
        index,
        fabrics,
        col["fabric"][keep].astype(np.int16),
        col["plane"][keep].astype(np.int16),
        lo,
        hi,
        col["gbps"][keep].astype(np.float64),
        col["base"][keep].astype(bool),
        tuple(node_id),
        role,
        tuple(tiers[f] for f in fabrics),
    )


def _rows(table: LinkTable, step: Step) -> NDArray[np.int64]:
    """Rows of a step's links; a link neither design has is a bug (ValueError naming it)."""
    unknown = [n for n in step.objects if n not in table.index]
    if unknown:
        raise ValueError(f"step {step.order}: {unknown[0]} is a link of neither design")
    return np.array([table.index[n] for n in step.objects], dtype=np.int64)


def live_after_steps(table: LinkTable, steps: Iterable[Step]) -> Iterator[NDArray[np.bool_]]:
    """The live links after each step (module docstring)."""
    cabled = table.base.copy()
    drained = np.zeros(table.n_links, dtype=bool)
    new = np.zeros(table.n_links, dtype=bool)
    for step in steps:
        if step.action in ("install", "move-rack", "re-pull"):
            yield cabled & ~drained & ~new  # racks, or links drained already
            continue
        rows = _rows(table, step)
        if step.action == "remove":
            cabled[rows] = False
        elif step.action == "pull":
            cabled[rows] = True
            new[rows] = True
        elif step.action == "drain":
            drained[rows] = True
        elif step.action == "restore":
            drained[:] = False
            new[:] = False
        yield cabled & ~drained & ~new


def _leaf_uplinks(
    table: LinkTable, live: NDArray[np.bool_], f: int
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Installed leaves of fabric ``f`` and the fraction of their installed uplink Gb/s live."""
    up = (table.fabric == f) & (table.role[table.lo] == int(Role.LEAF))
    base = up & table.base
    leaves = np.unique(table.lo[base])
    n = len(table.nodes)
    have = np.bincount(table.lo[base], weights=table.gbps[base], minlength=n)[leaves]
    sel = up & live
    left = np.bincount(table.lo[sel], weights=table.gbps[sel], minlength=n)[leaves]
    return leaves, left / have


def _hosts_cut(table: LinkTable, live: NDArray[np.bool_], f: int) -> list[str]:
    """Installed hosts of fabric ``f`` without a live path (module docstring)."""
    n = len(table.nodes)
    mine = table.fabric == f
    host_link = mine & (table.role[table.lo] == int(Role.HOST))
    hosts = np.unique(table.lo[host_link & table.base])
    if table.tiers[f] > 1:
        up = mine & (table.role[table.lo] == int(Role.LEAF)) & live
        serving = np.bincount(table.lo[up], minlength=n) > 0
    else:
        serving = np.ones(n, dtype=bool)
    ok = host_link & live
    ok[ok] = serving[table.hi[ok]]
    reached = np.bincount(table.lo[ok], minlength=n) > 0
    return [table.nodes[h] for h in hosts[~reached[hosts]].tolist()]


def _gbps(
    table: LinkTable,
    on: NDArray[np.bool_],
    rows: NDArray[np.int64],
    cols: NDArray[np.int64],
    shape: tuple[int, int],
) -> NDArray[np.float64]:
    """Gb/s of the links ``on`` summed into a ``shape`` matrix at (``rows``, ``cols``) of
    their ends (-1: left out)."""
    m = np.zeros(shape, dtype=np.float64)
    r, c = rows[on], cols[on]
    keep = (r >= 0) & (c >= 0)
    np.add.at(m, (r[keep], c[keep]), table.gbps[on][keep])
    return m


@dataclass(frozen=True)
class _Clos:
    """A plane split into classes of spines joined through cores: per installed leaf its spine
    in each class (-1: none) and its live and installed Gb/s into it; per state (live,
    installed) each spine's place in its class and the Gb/s between two spines of a class
    through the cores (:func:`_turns`)."""

    spine_of: NDArray[np.int64]
    c_now: NDArray[np.float64]
    c_then: NDArray[np.float64]
    turns: tuple[tuple[NDArray[np.int64], NDArray[np.float64]], ...]


def _clos(
    table: LinkTable, live: NDArray[np.bool_], sel: NDArray[np.bool_], leaves: NDArray[np.int64]
) -> _Clos | None:
    """The plane ``sel`` as a :class:`_Clos`, None when a leaf reaches two spines of a class."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = len(table.nodes)
    leafish = sel & (table.role[table.lo] == int(Role.LEAF)) & np.isin(table.lo, leaves)
    upper = sel & (table.role[table.lo] == int(Role.SPINE))
    spines = np.unique(np.concatenate([table.hi[leafish], table.lo[upper]]))
    cores = np.unique(table.hi[upper])
    sp, co, lf = (np.full(n, -1, dtype=np.int64) for _ in range(3))
    sp[spines], co[cores], lf[leaves] = (np.arange(len(x)) for x in (spines, cores, leaves))
    k = len(spines)
    graph = coo_matrix(
        (np.ones(int(upper.sum())), (sp[table.lo[upper]], k + co[table.hi[upper]])),
        shape=(k + len(cores), k + len(cores)),
    )
    _, label = connected_components(graph, directed=False)
    _, cls = np.unique(label, return_inverse=True)  # class of each spine, then each core
    n_cls = int(cls.max()) + 1 if k else 0
    spine_of = np.full((len(leaves), n_cls), -1, dtype=np.int64)
    a, s = lf[table.lo[leafish]], sp[table.hi[leafish]]
    held = np.unique((a * n_cls + cls[s]) * max(k, 1) + s)  # (leaf, class, spine), sorted
    where = held // max(k, 1)
    if np.any(where[1:] == where[:-1]):  # a leaf with two spines in one class
        return None
    spine_of[where // max(n_cls, 1), where % max(n_cls, 1)] = held % max(k, 1)
    leaf_cls = np.where(sp[table.hi] >= 0, cls[np.maximum(sp[table.hi], 0)], -1)
    shape = (len(leaves), n_cls)
    turns = tuple(
        _turns(_gbps(table, upper & on, sp[table.lo], co[table.hi], (k, len(cores))), cls, k, n_cls)
        for on in (live, table.base)
    )
    return _Clos(
        spine_of,
        _gbps(table, leafish & live, lf[table.lo], leaf_cls, shape),
        _gbps(table, leafish & table.base, lf[table.lo], leaf_cls, shape),
        turns,
    )


def _flows(
    su: NDArray[np.int64],
    sv: NDArray[np.int64],
    cu: NDArray[np.float64],
    cv: NDArray[np.float64],
    turn: tuple[NDArray[np.int64], NDArray[np.float64]],
) -> NDArray[np.float64]:
    """Max-flow between ends of spines ``su``, ``sv`` and Gb/s ``cu``, ``cv`` per class (one
    row per pair): per class ``min(cu, cv)`` through a shared spine, else ``min(cu, D, cv)``."""
    loc, d = turn
    both = (su >= 0) & (sv >= 0)
    j = np.broadcast_to(np.arange(su.shape[1]), su.shape)
    via = np.where(both & (su != sv), d[j, loc[np.maximum(su, 0)], loc[np.maximum(sv, 0)]], np.inf)
    return np.where(both, np.minimum(np.minimum(cu, cv), via), 0.0).sum(axis=1)  # type: ignore[no-any-return]


def _least(now: NDArray[np.float64], then: NDArray[np.float64]) -> float:
    ok = then > 0
    return min(1.0, float((now[ok] / then[ok]).min())) if ok.any() else 1.0


def pair_cut_clos(
    table: LinkTable, live: NDArray[np.bool_], sel: NDArray[np.bool_], leaves: NDArray[np.int64]
) -> float | None:
    """The leaf pair cut left by the closed form of a Clos of two or three tiers, None when
    the plane is not one (or too large to take every distinct pair).

    Spines joined through cores form classes (connected components of the spine-core links:
    on two tiers each spine is its own class). When each leaf reaches at most one spine per
    class, the up-down network between leaves a and b splits by class into series-parallel
    parts, and its max-flow is ``sum over classes j of`` ``min(C[a, j], C[b, j])`` when a and b
    share that class's spine (a path turns there), else ``min(C[a, j], D[j], C[b, j])`` with
    ``D[j] = sum over cores c of min(E[s_a, c], E[c, s_b])`` (a path turns at a core). Leaves
    of the same spines and Gb/s are one signature, taken once."""
    c = _clos(table, live, sel, leaves)
    return None if c is None else _pair_cut(c)


def _pair_cut(c: _Clos) -> float | None:
    n_cls = c.spine_of.shape[1]
    sig, count = np.unique(np.hstack([c.spine_of, c.c_now, c.c_then]), axis=0, return_counts=True)
    if len(sig) ** 2 * max(n_cls, 1) > 2e7:
        return None
    u, v = np.triu_indices(len(sig))
    keep = (u != v) | (count[u] > 1)  # a leaf with itself is no pair
    u, v = u[keep], v[keep]
    su, sv = sig[u, :n_cls].astype(np.int64), sig[v, :n_cls].astype(np.int64)
    now, then = (slice(n_cls * i, n_cls * (i + 1)) for i in (1, 2))
    return _least(
        _flows(su, sv, sig[u][:, now], sig[v][:, now], c.turns[0]),
        _flows(su, sv, sig[u][:, then], sig[v][:, then], c.turns[1]),
    )


def pod_cut_clos(
    table: LinkTable, live: NDArray[np.bool_], sel: NDArray[np.bool_], leaves: NDArray[np.int64]
) -> float | None:
    """The cut between pods left: the least over pairs of pods (leaves under the same spines)
    of the max-flow from every leaf of one to every leaf of the other, live over installed;
    the closed form of :func:`pair_cut_clos` with each pod's Gb/s per class summed. None when
    the plane is no Clos or has one pod."""
    c = _clos(table, live, sel, leaves)
    return None if c is None else _pod_cut(c)


def _pod_cut(c: _Clos) -> float | None:
    pods, which = np.unique(c.spine_of, axis=0, return_inverse=True)
    if len(pods) < 2 or len(pods) ** 2 * pods.shape[1] > 2e7:
        return None
    sums = []
    for m in (c.c_now, c.c_then):
        total = np.zeros((len(pods), m.shape[1]), dtype=np.float64)
        np.add.at(total, which.ravel(), m)
        sums.append(total)
    u, v = np.triu_indices(len(pods), 1)
    return _least(
        _flows(pods[u], pods[v], sums[0][u], sums[0][v], c.turns[0]),
        _flows(pods[u], pods[v], sums[1][u], sums[1][v], c.turns[1]),
    )


def _turns(
    e: NDArray[np.float64], cls: NDArray[np.int64], k: int, n_cls: int
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Per class, the Gb/s between two of its spines through its cores, ``sum over cores c of
    min(E[s, c], E[s', c])`` (``e``: spines x cores; ``cls``: the class of each spine, then
    each core): each spine's place in its class and a class x place x place array."""
    spine_cls, core_cls = cls[:k], cls[k:]
    loc = np.zeros(k, dtype=np.int64)
    size = int(np.bincount(spine_cls, minlength=n_cls).max(initial=1))
    out = np.zeros((n_cls, size, size), dtype=np.float64)
    for c in range(n_cls):
        mine = np.flatnonzero(spine_cls == c)
        loc[mine] = np.arange(len(mine))
        sub = e[np.ix_(mine, np.flatnonzero(core_cls == c))]
        if sub.size:
            out[c, : len(mine), : len(mine)] = np.minimum(sub[:, None, :], sub[None, :, :]).sum(-1)
    return loc, out


def _up_down(table: LinkTable, sel: NDArray[np.bool_]) -> Any:
    """The up-then-down graph of the switch links ``sel``: each switch as ``(v, 0)`` going up
    and ``(v, 1)`` going down, a link up from the lower end and down from the upper, and a
    turn from up to down at every switch."""
    import networkx as nx

    g = nx.DiGraph()
    for lo, hi, c in zip(
        table.lo[sel].tolist(), table.hi[sel].tolist(), table.gbps[sel].tolist(), strict=True
    ):
        for u, v in (((lo, 0), (hi, 0)), ((hi, 1), (lo, 1))):
            if g.has_edge(u, v):
                g[u][v]["capacity"] += c
            else:
                g.add_edge(u, v, capacity=c)
    for v in {*table.lo[sel].tolist(), *table.hi[sel].tolist()}:
        g.add_edge((v, 0), (v, 1))  # no capacity attribute: unbounded
    return g


def pair_cut_maxflow(
    table: LinkTable, live: NDArray[np.bool_], sel: NDArray[np.bool_], leaves: NDArray[np.int64]
) -> float:
    """Least over pairs of ``leaves`` of the up-down max-flow on the live links of ``sel``
    over the same on the installed ones (networkx preflow-push)."""
    import networkx as nx

    now, then = _up_down(table, sel & live), _up_down(table, sel & table.base)
    worst = 1.0
    for i, a in enumerate(leaves.tolist()):
        for b in leaves[i + 1 :].tolist():
            den = nx.maximum_flow_value(then, (a, 0), (b, 1))
            if den <= 0:
                continue
            num = (
                nx.maximum_flow_value(now, (a, 0), (b, 1))
                if (a, 0) in now and (b, 1) in now
                else 0.0
            )
            worst = min(worst, num / den)
    return worst


def _plane_cuts(table: LinkTable, live: NDArray[np.bool_], f: int) -> dict[str, float]:
    """Per plane ``P`` of fabric ``f``, the leaf pair cut left (``pP:leaf-pair-cut-left``)
    and the cut between pods left (``pP:pod-cut-left``); absent when not computed."""
    out: dict[str, float] = {}
    switch = (table.fabric == f) & (table.role[table.lo] != int(Role.HOST))
    for p in np.unique(table.plane[switch & table.base]).tolist():
        sel = switch & (table.plane == p)
        leaves = np.unique(table.lo[sel & table.base & (table.role[table.lo] == int(Role.LEAF))])
        if table.tiers[f] < 2:
            continue
        c = _clos(table, live, sel, leaves)
        cut = None if c is None else _pair_cut(c)
        if cut is None and len(leaves) <= MAXFLOW_LEAVES:
            cut = pair_cut_maxflow(table, live, sel, leaves)
        if cut is not None:
            out[f"p{p}:leaf-pair-cut-left"] = cut
        pods = None if c is None else _pod_cut(c)
        if pods is not None:
            out[f"p{p}:pod-cut-left"] = pods
    return out


def _step_checks(
    table: LinkTable, live: NDArray[np.bool_], floor: float
) -> tuple[dict[str, int | float | str], dict[str, tuple[list[str], list[str]]]]:
    """One step's capacity checks, and per fabric the leaves below ``floor`` and hosts cut."""
    checks: dict[str, int | float | str] = {}
    named: dict[str, tuple[list[str], list[str]]] = {}
    for f, name in enumerate(table.fabrics):
        if not (table.base & (table.fabric == f)).any():
            continue
        leaves, frac = _leaf_uplinks(table, live, f)
        below: list[str] = []
        if leaves.size and table.tiers[f] > 1:
            k = int(np.lexsort((np.array([table.nodes[v] for v in leaves.tolist()]), frac))[0])
            checks[f"{name}:leaf-uplinks-left"] = round(float(frac[k]), 4)
            checks[f"{name}:leaf-uplinks-least"] = table.nodes[int(leaves[k])]
            below = sorted(table.nodes[v] for v in leaves[frac < floor - 1e-9].tolist())
            checks[f"{name}:leaves-below"] = len(below)
        for key, cut in _plane_cuts(table, live, f).items():
            checks[f"{name}:{key}"] = round(cut, 4)
        cut_hosts = _hosts_cut(table, live, f)
        checks[f"{name}:hosts-cut"] = len(cut_hosts)
        named[name] = (below, cut_hosts)
    return checks, named


def _listed(names: list[str]) -> str:
    more = f" and {len(names) - SHOWN:,} more" if len(names) > SHOWN else ""
    return ", ".join(names[:SHOWN]) + more


def capacity_note(checks: Mapping[str, int | float | str]) -> str:
    """A step's capacity checks in words, per fabric (``cabling/change.csv``, the report):
    ``backend: leaf uplinks 50% left (be-p0-leaf0003), pair cut 50%, 0 hosts cut``."""
    parts = []
    for key, left in checks.items():
        fabric, _, what = key.partition(":")
        if what != "leaf-uplinks-left" or not isinstance(left, float):
            continue
        pair = ""
        for what, kind in (("pair", "leaf-pair"), ("pod", "pod")):
            cuts = [
                float(v)
                for k, v in checks.items()
                if k.startswith(f"{fabric}:p") and k.endswith(f":{kind}-cut-left")
            ]
            pair += f", {what} cut {min(cuts):.0%}" if cuts else ""
        parts.append(
            f"{fabric}: leaf uplinks {left:.0%} left ({checks[f'{fabric}:leaf-uplinks-least']})"
            f"{pair}, {checks.get(f'{fabric}:hosts-cut', 0)} hosts cut"
        )
    return "; ".join(parts)


def _forced_finding(
    fabric: str, where: list[tuple[Step, list[str], list[str]]], floor: float
) -> Finding:
    """The capacity a rack move takes down: every link of a moved rack is drained at once, so
    its leaves and the hosts they alone serve are out for the move (a warning: forced)."""
    worst, below, hosts = max(where, key=lambda x: (len(x[2]), len(x[1]), -x[0].order))
    orders = ", ".join(f"{s.order} ({s.action})" for s, _, _ in where)
    return Finding(
        Severity.WARNING,
        "drain-forced",
        f"steps {orders} (the wave of a rack move) are forced to take down every link of the "
        f"moved racks at once: step {worst.order}: {len(below):,} {fabric} leaves below "
        f"{floor:.0%} of their uplinks ({_listed(below)}), {len(hosts):,} hosts without a "
        f"live path ({_listed(hosts)}); take those hosts out of service for the move",
        f"growth.change_plan.steps[{worst.order - 1}]",
    )


def with_drain_findings(design: Design, findings: dict[str, list[Finding]]) -> Design:
    """``design`` with each fabric's drain findings among that fabric's findings."""
    fabrics = tuple(
        replace(fd, findings=(*fd.findings, *findings.get(fd.name, ()))) for fd in design.fabrics
    )
    return replace(design, fabrics=fabrics)


def with_drain_checks(
    plan: ChangePlan,
    baseline: tuple[FabricDesign, ...],
    grown: tuple[FabricDesign, ...],
    spec: ClusterSpec,
    table: LinkTable | None = None,
) -> tuple[ChangePlan, dict[str, list[Finding]]]:
    """``plan`` with each step's capacity checks added to its ``checks`` (steps, their order
    and objects unchanged), and per fabric the findings: a warning naming the steps that leave
    a leaf below ``growth.min_live_uplinks``, an error naming those that cut a host off (each
    with the leaves or hosts of the worst such step)."""
    floor = (spec.growth or GrowthSpec()).min_live_uplinks
    if table is None:
        table = link_table(baseline, grown, spec.resolved_catalog())
    steps: list[Step] = []
    hit: dict[tuple[str, str], list[tuple[Step, list[str]]]] = {}
    forced: dict[str, list[tuple[Step, list[str], list[str]]]] = {}
    moves = {s.wave for s in plan.steps if s.action == "move-rack"}
    last: tuple[NDArray[np.bool_], Any] | None = None
    for step, live in zip(plan.steps, live_after_steps(table, plan.steps), strict=True):
        if last is None or not np.array_equal(last[0], live):  # most steps change no live link
            last = (live, _step_checks(table, live, floor))
        checks, named = last[1]
        step = replace(step, checks={**step.checks, **checks})
        steps.append(step)
        for fabric, (below, hosts) in named.items():
            if step.wave in moves and (below or hosts):
                forced.setdefault(fabric, []).append((step, below, hosts))
                continue
            for code, names in (("drain-capacity", below), ("drain-host-cut", hosts)):
                if names:
                    hit.setdefault((fabric, code), []).append((step, names))
    findings: dict[str, list[Finding]] = {
        fabric: [_forced_finding(fabric, where, floor)] for fabric, where in forced.items()
    }
    for (fabric, code), where in hit.items():
        worst, names = max(where, key=lambda x: (len(x[1]), -x[0].order))
        orders = ", ".join(f"{s.order} ({s.action})" for s, _ in where)
        at = f"steps {orders} leave" if len(where) > 1 else f"step {orders} leaves"
        if code == "drain-capacity":
            least = worst.checks[f"{fabric}:leaf-uplinks-left"]
            finding = Finding(
                Severity.WARNING,
                code,
                f"{at} {fabric} leaves below {floor:.0%} of their installed uplinks; "
                f"step {worst.order}: {len(names):,} (least {float(least):.0%}: "
                f"{worst.checks[f'{fabric}:leaf-uplinks-least']}): {_listed(names)}; drain "
                "fewer links at once or move traffic first (growth.min_live_uplinks)",
                f"growth.change_plan.steps[{worst.order - 1}]",
            )
        else:
            finding = Finding(
                Severity.ERROR,
                code,
                f"{at} {fabric} hosts without a live path; step {worst.order}: "
                f"{len(names):,}: {_listed(names)}; take them out of service first or "
                "re-patch their links in smaller steps",
                f"growth.change_plan.steps[{worst.order - 1}]",
            )
        findings.setdefault(fabric, []).append(finding)
    return replace(plan, steps=tuple(steps)), findings
