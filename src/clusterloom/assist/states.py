"""What an intermediate state of a change plan still carries, held to the floors
(``docs/assist.md``, "Change plans").

A state is a boolean mask of *live* links over the rows of a ``growth.drained.LinkTable`` (every
link of the baseline and the target once). Per fabric of the baseline, over its *installed*
hosts (the hosts the baseline serves; a new host is not in service until the change is done):

- **bisection left**: per installed plane, the max-flow between two halves of the installed
  hosts on the live links of that plane, the least of two halvings: the hosts ordered by host
  id (the first half against the second: whole nodes and scalable units) and ordered by their
  leaf in that plane (whole leaves: on a rail-optimized fabric, traffic between rails, which
  only the spines carry). On the Clos fabrics clusterloom generates one of the two is the
  cut the sizing's bisection counts; for an arbitrary state the least over all halvings is
  not searched (NP-hard), so the figure is an upper bound of it. Each link carries its Gb/s
  in each direction; summed over planes and divided by the same max-flow on the target's
  links (``Floors``: the sum over planes, a fraction of the target's); hosts never forward
  (a host link only joins a host to the network; the super source and sink attach to the
  halves' hosts);
- **least plane left**: the same per plane, the least over installed planes, and the plane;
- **components**: the connected components of the live links that hold an installed host in
  service (one with a live link); one when the fabric is connected;
- **hosts out**: installed hosts without a live link; *forced* when the host has a single
  installed link in the fabric (draining it takes the host out whatever the order);
- **job pairs cut** (backend, a spec with a ``job:``): pairs of ranks the baseline's job
  exchanges scale-out traffic between (rank ``r`` on host ``r``) whose hosts are both in
  service but in different components; pairs with a host out are counted apart (``...-out``).

A state *passes* when the in-service hosts are connected, no job pair between them is cut, no
host with more than one installed link is out, and bisection and the least plane are at least
``min(floor, the baseline's own figure)``: a change is never asked to keep more than the
fabric had before it started (adding a plane starts from the baseline's planes alone).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from clusterloom.assist.floors import Floors
from clusterloom.fabric.topology import Role
from clusterloom.growth.drained import LinkTable

__all__ = ["FabricState", "StateModel", "state_model"]

_EPS = 1e-9

Checks = dict[str, int | float | str]


@dataclass(frozen=True, eq=False)
class FabricState:
    """One fabric of the baseline, as the checks of a state see it."""

    name: str
    index: int
    hosts: NDArray[np.int64]  #: installed hosts' node ids, by host id
    #: per installed plane, the halvings: per installed host, in the second half
    halves: dict[int, tuple[NDArray[np.bool_], ...]]
    single: NDArray[np.bool_]  #: per installed host: one installed link in the fabric
    planes: tuple[int, ...]  #: installed planes
    rows: NDArray[np.bool_]  #: the fabric's rows of the table
    target_cut: dict[int, float]  #: per installed plane, the target's max-flow (Gb/s)
    start_cut: dict[int, float]  #: per installed plane, the baseline's
    pairs: NDArray[np.int64]  #: job pairs as node ids, shape (n, 2)


@dataclass(frozen=True, eq=False)
class StateModel:
    table: LinkTable
    target: NDArray[np.bool_]  #: rows of links in the target design
    fabrics: tuple[FabricState, ...]
    floors: Floors

    def checks(self, live: NDArray[np.bool_]) -> Checks:
        """The figures of one state (module docstring), keys ``FABRIC:...``."""
        out: Checks = {}
        for fs in self.fabrics:
            out.update(_fabric_checks(self, fs, live))
        return out

    def broken(self, checks: Checks) -> list[str]:
        """The rules ``checks`` break, in words naming the floor (empty: it passes)."""
        out: list[str] = []
        for fs in self.fabrics:
            n = fs.name
            if int(checks[f"{n}:components"]) > 1:
                out.append(
                    f"{n}: connectivity (in-service hosts in {checks[f'{n}:components']} parts)"
                )
            if int(checks[f"{n}:hosts-out"]) > int(checks[f"{n}:hosts-out-forced"]):
                extra = int(checks[f"{n}:hosts-out"]) - int(checks[f"{n}:hosts-out-forced"])
                out.append(f"{n}: hosts ({extra} with more than one link have none live)")
            cut = checks.get(f"{n}:job-pairs-cut")
            if cut is not None and int(cut) > 0:
                out.append(f"{n}: job placement ({cut} rank pairs without a path)")
            need = self.bisection_floor(fs)
            if float(checks[f"{n}:bisection-left"]) < need - _EPS:
                left = float(checks[f"{n}:bisection-left"])
                out.append(f"{n}: bisection floor {need:.0%} (left {left:.0%})")
            for p in fs.planes:
                need_p = self.plane_floor(fs, p)
                left = float(checks[f"{n}:p{p}:plane-left"])
                if left < need_p - _EPS:
                    out.append(f"{n}: plane floor {need_p:.0%} (plane {p} left {left:.0%})")
        return out

    def bisection_floor(self, fs: FabricState) -> float:
        total = sum(fs.target_cut.values())
        start = sum(fs.start_cut.values()) / total if total > 0 else 1.0
        return min(self.floors.bisection, start)

    def plane_floor(self, fs: FabricState, plane: int) -> float:
        target = fs.target_cut[plane]
        start = fs.start_cut[plane] / target if target > 0 else 1.0
        return min(self.floors.plane, start)


def _host_id(key: str) -> int:
    return int(key.rsplit("/host", 1)[1])


def state_model(
    table: LinkTable,
    target: NDArray[np.bool_],
    floors: Floors,
    job_pairs: NDArray[np.int64] | None = None,
) -> StateModel:
    """The checks' view of every fabric of the baseline; ``job_pairs`` (backend) are rank
    pairs, rank ``r`` on the backend's host ``r``."""
    fabrics: list[FabricState] = []
    is_host_link = table.role[table.lo] == int(Role.HOST)
    for f, name in enumerate(table.fabrics):
        rows = table.fabric == f
        base_hosts = rows & table.base & is_host_link
        if not base_hosts.any():
            continue
        hosts = np.unique(table.lo[base_hosts])
        hosts = hosts[np.argsort([_host_id(table.nodes[h]) for h in hosts.tolist()], kind="stable")]
        count = np.bincount(table.lo[base_hosts], minlength=len(table.nodes))
        planes = tuple(int(p) for p in np.unique(table.plane[rows & table.base]).tolist())
        pairs = np.zeros((0, 2), dtype=np.int64)
        if job_pairs is not None and name == "backend" and len(job_pairs):
            node_of = {_host_id(table.nodes[h]): h for h in hosts.tolist()}
            known = [
                (node_of[a], node_of[b])
                for a, b in job_pairs.tolist()
                if a in node_of and b in node_of
            ]
            pairs = np.array(known, dtype=np.int64).reshape(-1, 2)
        halves = {p: _halvings(table, rows & table.base & is_host_link, hosts, p) for p in planes}
        fs = FabricState(name, f, hosts, halves, count[hosts] == 1, planes, rows, {}, {}, pairs)
        fs = replace(
            fs,
            target_cut={p: plane_cut(table, fs, p, target) for p in planes},
            start_cut={p: plane_cut(table, fs, p, table.base) for p in planes},
        )
        fabrics.append(fs)
    return StateModel(table, target, tuple(fabrics), floors)


def _halvings(
    table: LinkTable, host_links: NDArray[np.bool_], hosts: NDArray[np.int64], plane: int
) -> tuple[NDArray[np.bool_], ...]:
    """The two halvings of ``hosts`` (in host id order): by host id, and by leaf in ``plane``
    (a host's lowest leaf there, then host id)."""
    n = len(hosts)
    by_id = np.arange(n) >= n // 2
    sel = host_links & (table.plane == plane)
    leaf = np.full(len(table.nodes), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(leaf, table.lo[sel], table.hi[sel])
    order = np.lexsort((np.arange(n), leaf[hosts]))
    by_leaf = np.zeros(n, dtype=bool)
    by_leaf[order[n // 2 :]] = True
    return (by_id, by_leaf)


def plane_cut(table: LinkTable, fs: FabricState, plane: int, live: NDArray[np.bool_]) -> float:
    """The least over ``fs``'s halvings of ``plane`` of the max-flow in Gb/s from one half of
    its installed hosts to the other over the ``live`` links of ``plane``."""
    return min(_cut(table, fs, plane, live, half) for half in fs.halves[plane])


def _cut(
    table: LinkTable,
    fs: FabricState,
    plane: int,
    live: NDArray[np.bool_],
    half: NDArray[np.bool_],
) -> float:
    """The max-flow from the hosts outside ``half`` to those in it (each direction a link's
    Gb/s; scipy's push-relabel)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    sel = live & fs.rows & (table.plane == plane)
    if not sel.any() or len(fs.hosts) < 2:
        return 0.0
    n = len(table.nodes)
    is_host = table.role == int(Role.HOST)
    installed = np.zeros(n, dtype=bool)
    installed[fs.hosts] = True
    lo, hi = table.lo[sel], table.hi[sel]
    keep = ~is_host[lo] | installed[lo]  # a new host's links join nothing in service
    lo, hi = lo[keep], hi[keep]
    cap = np.rint(table.gbps[sel][keep]).astype(np.int64)
    big = int(cap.sum()) + 1
    src, dst = n, n + 1
    a, b = fs.hosts[~half], fs.hosts[half]
    rows = np.concatenate([lo, hi, np.full(len(a), src), b])
    cols = np.concatenate([hi, lo, a, np.full(len(b), dst)])
    caps = np.concatenate([cap, cap, np.full(len(a) + len(b), big)])
    if big >= 2**31:
        raise ValueError(f"plane {plane}: {big:,} Gb/s do not fit the max-flow's int32")
    graph = csr_matrix((caps.astype(np.int32), (rows, cols)), shape=(n + 2, n + 2))
    return float(maximum_flow(graph, src, dst).flow_value)


def _components(
    table: LinkTable, fs: FabricState, live: NDArray[np.bool_]
) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """Per installed host its component over the fabric's live links, and whether it is in
    service (has a live link)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = len(table.nodes)
    sel = live & fs.rows
    graph = coo_matrix((np.ones(int(sel.sum())), (table.lo[sel], table.hi[sel])), shape=(n, n))
    _, label = connected_components(graph, directed=False)
    degree = np.bincount(table.lo[sel], minlength=n) + np.bincount(table.hi[sel], minlength=n)
    return label[fs.hosts].astype(np.int64), degree[fs.hosts] > 0


def _fabric_checks(model: StateModel, fs: FabricState, live: NDArray[np.bool_]) -> Checks:
    t, n = model.table, fs.name
    label, serving = _components(t, fs, live)
    out: Checks = {}
    cuts = {p: plane_cut(t, fs, p, live) for p in fs.planes}
    total = sum(fs.target_cut.values())
    out[f"{n}:bisection-left"] = round(sum(cuts.values()) / total, 4) if total > 0 else 1.0
    fracs = {p: (cuts[p] / fs.target_cut[p] if fs.target_cut[p] > 0 else 1.0) for p in fs.planes}
    for p in fs.planes:
        out[f"{n}:p{p}:plane-left"] = round(fracs[p], 4)
    least = min(fs.planes, key=lambda p: (fracs[p], p))
    out[f"{n}:plane-least-left"] = round(fracs[least], 4)
    out[f"{n}:plane-least"] = f"p{least}"
    out[f"{n}:components"] = len(np.unique(label[serving]))
    out[f"{n}:hosts-out"] = int((~serving).sum())
    out[f"{n}:hosts-out-forced"] = int((~serving & fs.single).sum())
    if len(fs.pairs):
        where = np.full(len(t.nodes), -1, dtype=np.int64)
        where[fs.hosts] = np.where(serving, label, -1)
        a, b = where[fs.pairs[:, 0]], where[fs.pairs[:, 1]]
        out_pair = (a < 0) | (b < 0)
        out[f"{n}:job-pairs-cut"] = int((~out_pair & (a != b)).sum())
        out[f"{n}:job-pairs-out"] = int(out_pair.sum())
    return out
