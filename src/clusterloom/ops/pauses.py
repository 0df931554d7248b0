"""PFC pauses followed downstream to the port whose queue sends them (issue 23, item 3;
``docs/ops.md``, "On the packet engine's telemetry").

On a lossless (PFC) fabric a slow port's queue fills its switch's ingress buffers, and the
switch pauses the ports feeding it: the pauses show *upstream* of the fault, at interfaces
that are themselves healthy (a spine's port toward the slow port's leaf). A counter
``pfc_pauses`` at an interface counts the pauses it *received*, so an interface receiving
pauses points at the device at its link's far end, the one sending them. That device pauses
because one of its egress ports drains too slowly: either that port receives pauses itself
(the chain goes on, one device further down) or its own queue is the slow one (the chain
ends: its ECN marks stand out among the device's egress ports). The port where the chain
ends is the suspect: on a host link the NIC port (``slow-nic-port``), else the link
(``gray-link``, a link slower than its rate).

A step at device ``D``, entered over link ``L`` (``D`` the end sending the pauses):

- ``D``'s candidate egress ports: every port of ``D`` but ``L``'s when the paused traffic
  came up from below (``D`` the upper end of ``L``: it may go up or down from there); only
  ``D``'s ports toward lower tiers when it came down from above (up-down routing: traffic
  going down never turns up again);
- the next hop is the candidate receiving pauses itself: one flagged (``pfc`` anomaly, with
  an onset), else one whose pauses received over the chain's span stand out among the
  candidates' (:data:`STANDOUT` times the next, and at least :data:`PAUSES_MIN` a second);
- else the chain ends at the candidate whose ECN marks per packet stand out (the same test,
  at least :data:`MARKS_MIN`), unless it marked as much in the window's first interval
  (``detect.ONSET_SHARE`` of the span's marks: the collisions' queue, there before the
  pauses' onset): its queue is the slow one;
- else, or at a congested or skewed switch, a link down or flapping, a link of the
  congestion, the chain names nothing (the load explains the pauses, or nothing tells the
  ports apart).

Only pauses with an onset inside the window start a chain (an anomaly flagged in the
window's first interval is the fabric's state: the collisions of the traffic, or a fault
older than the window, which this rule leaves to the others). Assumptions: up-down routing
(a Clos: no valley paths); one slow port behind a chain (two slow ports behind one device
split its pauses and may stand out neither); pauses and marks per interval as exported
(``RATE_SCHEMA``'s ``pfc_ps``, ``ecn_ps``, ``tx_pps``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from clusterloom.ops.detect import ONSET_SHARE, Anomaly, Signal
from clusterloom.ops.model import FaultKind, Suspect, SuspectKind

if TYPE_CHECKING:
    from clusterloom.ops.fabric import OpsFabric

__all__ = ["BASE_CHAIN", "Chain", "pause_chains", "pause_suspects"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]

#: base confidence of the port a chain of pauses ends at (scaled by ``1 - exp(-score)`` of
#: the pauses that started it): as a lone link's load (``localise.BASE_LONE``)
BASE_CHAIN = 0.6
#: a candidate stands out when its measure is at least this many times the next one's
STANDOUT = 4.0
#: the fewest pauses a second received that count as a next hop (``detect.PFC_FLOOR``)
PAUSES_MIN = 1.0
#: the fewest ECN marks per packet that count as a queue (a tenth of ``detect``'s floor: the
#: chain's own pauses already say a queue is there; the marks only say which)
MARKS_MIN = 1e-4
#: the most hops a chain follows (a 3-tier Clos has core, spine, leaf, host)
MAX_HOPS = 6
#: the most chains followed (the strongest pauses first)
MAX_CHAINS = 64


@dataclass(frozen=True)
class Chain:
    """One chain: the interfaces receiving pauses it went through (``device:interface``,
    from the first), the directed interface it ended at (``link``, ``end``: the end whose
    queue is slow) and why."""

    hops: tuple[str, ...]
    link: int
    end: int
    why: str
    #: the devices sending the pauses along the way (node ids, from the first)
    nodes: tuple[int, ...] = ()
    #: the suspect it names (set by :func:`pause_chains`)
    suspect: Suspect | None = None


@dataclass(frozen=True)
class _Measures:
    """Per directed interface (``2 * link + end``) over a span: pauses received a second
    and ECN marks per packet sent (means over the span's rows)."""

    pauses: F64
    marks: F64


@dataclass(frozen=True)
class _Columns:
    """The rates' columns the chains read, once: interface key, time, pauses, marks,
    packets sent."""

    key: I64
    ts: I64
    pfc: F64
    ecn: F64
    pps: F64

    @staticmethod
    def of(rates: pa.Table) -> _Columns:
        def col(name: str) -> F64:
            x = np.asarray(rates[name].to_numpy(zero_copy_only=False), dtype=np.float64)
            return np.nan_to_num(x)

        key = 2 * np.asarray(rates["link"].to_numpy(), dtype=np.int64) + np.asarray(
            rates["end"].to_numpy(), dtype=np.int64
        )
        ts = np.asarray(rates["ts_ms"].to_numpy(), dtype=np.int64)
        return _Columns(key, ts, col("pfc_ps"), col("ecn_ps"), col("tx_pps"))


def _measures(c: _Columns, n_links: int, first_ms: int, last_ms: int) -> _Measures:
    rows = np.flatnonzero((c.ts >= first_ms) & (c.ts <= last_ms))
    key = c.key[rows]
    n = 2 * n_links
    count = np.maximum(np.bincount(key, minlength=n), 1)
    pauses = np.bincount(key, weights=c.pfc[rows], minlength=n) / count
    ecn = np.bincount(key, weights=c.ecn[rows], minlength=n)
    pps = np.bincount(key, weights=c.pps[rows], minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        marks = np.where(pps > 0, ecn / pps, 0.0)
    return _Measures(pauses, marks)


def _standout(values: F64, floor: float) -> int | None:
    """The index of the value that stands out (at least :data:`STANDOUT` times the next and
    at least ``floor``), else None."""
    if values.size == 0:
        return None
    order = np.argsort(-values, kind="stable")
    top = float(values[order[0]])
    nxt = float(values[order[1]]) if values.size > 1 else 0.0
    return int(order[0]) if top >= floor and top >= STANDOUT * nxt else None


def _egress(fabric: OpsFabric, node: int, via: int, down_only: bool) -> I64:
    """Directed interfaces (``2 * link + end``) transmitting from ``node``, but ``via``'s;
    toward lower tiers only with ``down_only``."""
    t = fabric.topology
    up_end = np.flatnonzero(t.link_dst == node)  # node the upper end: it sends down (end 1)
    low_end = np.flatnonzero(t.link_src == node)  # node the lower end: it sends up (end 0)
    keys = [2 * up_end + 1] + ([] if down_only else [2 * low_end])
    out = np.asarray(np.concatenate(keys), dtype=np.int64)
    return np.asarray(out[out // 2 != via], dtype=np.int64)


def _follow(
    fabric: OpsFabric,
    start: Anomaly,
    flagged: dict[int, Anomaly],
    m: _Measures,
    first: _Measures,
    stop_links: set[int],
    stop_nodes: set[int],
) -> Chain | None:
    """Follow the pauses ``start`` received downstream (module docstring)."""
    t = fabric.topology
    dev, ifs = fabric.end_names
    link, end = int(start.link or 0), int(start.end or 0)
    hops = [start.where]
    seen: set[int] = set()
    seen_order: list[int] = []
    for _ in range(MAX_HOPS):
        node = int(t.link_dst[link] if end == 0 else t.link_src[link])  # the pausing device
        if node in stop_nodes or node in seen:
            return None
        seen.add(node)
        seen_order.append(node)
        if int(t.node_role[node]) == 0:  # a host pausing its leaf: its own port is slow
            why = f"{dev[link, 1 - end]} pauses its feed"
            return Chain(tuple(hops), link, 1 - end, why, tuple(seen_order))
        cand = _egress(fabric, node, link, down_only=end == 1)
        if cand.size == 0 or np.isin(cand // 2, list(stop_links)).any():
            return None  # a link of the congestion or a broken one explains the pauses
        nxt = [int(k) for k in cand.tolist() if k in flagged]
        if nxt:
            k = max(nxt, key=lambda c: (flagged[c].score, -c))
        else:
            i = _standout(m.pauses[cand], PAUSES_MIN)
            k = -1 if i is None else int(cand[i])
        if k >= 0:
            link, end = k // 2, k % 2
            hops.append(f"{dev[link, end]}:{ifs[link, end]}")
            continue
        i = _standout(m.marks[cand], MARKS_MIN)
        if i is None:
            return None
        k = int(cand[i])
        if first.marks[k] >= ONSET_SHARE * m.marks[k]:
            return None  # marking as much from the window's start: the collisions' queue
        others = np.delete(m.marks[cand], i)
        why = (
            f"its queue at {dev[k // 2, k % 2]}:{ifs[k // 2, k % 2]} marks "
            f"{m.marks[k]:.2g} ECN per packet, the device's other "
            f"{others.size} egress port(s) at most {others.max(initial=0.0):.2g}"
        )
        return Chain(tuple(hops), k // 2, k % 2, why, tuple(seen_order))
    return None


def pause_chains(
    fabric: OpsFabric,
    anomalies: Sequence[Anomaly],
    rates: pa.Table | None,
    *,
    stop_links: Iterable[int] = (),
    stop_nodes: Iterable[int] = (),
) -> list[Chain]:
    """The chains from the PFC pauses with an onset in the window to the ports they lead to
    (module docstring), each with the suspect it names, its evidence the chain.
    ``stop_links`` (links of the congestion, a skewed switch's favourite uplink, links down
    or flapping) and ``stop_nodes`` (congested or skewed switches) explain the pauses that
    meet them."""
    starts = [
        a
        for a in anomalies
        if a.signal is Signal.PFC and a.link is not None and a.end is not None and not a.persistent
    ]
    if rates is None or rates.num_rows == 0 or not starts:
        return []
    stop_l, stop_n = set(stop_links), set(stop_nodes)
    starts = sorted(starts, key=lambda a: (-a.score, a.where))[:MAX_CHAINS]
    flagged = {
        2 * int(a.link) + int(a.end): a
        for a in starts
        if a.link is not None and a.end is not None and int(a.link) not in stop_l
    }
    t = fabric.topology
    out: list[Chain] = []
    spans: dict[tuple[int, int], _Measures] = {}
    cols = _Columns.of(rates)
    t0 = int(cols.ts.min())
    first = _measures(cols, int(t.n_links), t0, t0)  # the window's first interval
    for a in starts:
        if int(a.link or 0) in stop_l:
            continue
        span = (a.first_ms, a.last_ms)
        if span not in spans:
            spans[span] = _measures(cols, int(t.n_links), *span)
        chain = _follow(fabric, a, flagged, spans[span], first, stop_l, stop_n)
        if chain is None or chain.link in stop_l:
            continue
        out.append(replace(chain, suspect=_suspect(fabric, a, chain)))
    return _merged(out)


def _merged(chains: list[Chain]) -> list[Chain]:
    """One chain per port it ends at: the strongest (the first: starts are sorted by
    score), the others' evidence added to its suspect's (several pauses behind one queue
    are one piece of evidence, not independent ones, so their confidences are not
    combined)."""
    by_end: dict[tuple[int, int], Chain] = {}
    for c in chains:
        key = (c.link, c.end)
        if key not in by_end:
            by_end[key] = c
            continue
        old = by_end[key]
        if old.suspect is not None and c.suspect is not None:
            sus = replace(old.suspect, evidence=old.suspect.evidence + c.suspect.evidence)
            by_end[key] = replace(old, nodes=tuple(dict.fromkeys(old.nodes + c.nodes)), suspect=sus)
    return list(by_end.values())


def pause_suspects(
    fabric: OpsFabric,
    anomalies: Sequence[Anomaly],
    rates: pa.Table | None,
    *,
    stop_links: Iterable[int] = (),
    stop_nodes: Iterable[int] = (),
) -> list[Suspect]:
    """The suspects of :func:`pause_chains`, one per chain."""
    chains = pause_chains(fabric, anomalies, rates, stop_links=stop_links, stop_nodes=stop_nodes)
    return [c.suspect for c in chains if c.suspect is not None]


def _suspect(fabric: OpsFabric, a: Anomaly, chain: Chain) -> Suspect:
    """The port (on a host link, the NIC's) or link a chain ends at, as a suspect."""
    dev, ifs = fabric.end_names
    if int(fabric.topology.link_tier[chain.link]) == 1:
        target = f"{dev[chain.link, 0]}:{ifs[chain.link, 0]}"
        kind, fault = SuspectKind.PORT, FaultKind.SLOW_NIC_PORT
    else:
        target, kind, fault = fabric.link_label(chain.link), SuspectKind.LINK, FaultKind.GRAY_LINK
    evidence = (
        f"counters: PFC pauses followed downstream from {a.where} ({a.value:.3g}/s from "
        f"an onset, peers' median {a.baseline:.3g}) through "
        f"{' > '.join(chain.hops)}: {chain.why}: a port slower than its rate",
    )
    conf = BASE_CHAIN * float(-np.expm1(-max(a.score, 0.0)))
    return Suspect(kind, target, conf, fault, len(chain.hops), 0, a.first_ms, a.last_ms, evidence)
