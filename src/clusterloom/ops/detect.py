"""Anomalies in telemetry: per interface counter (rates, ``RATE_SCHEMA``) and per collective
(``COLLECTIVE_SCHEMA``), each an :class:`Anomaly` saying what, where, when and how far beyond
its threshold (issue 23, item 3; ``docs/ops.md``, "Detection and localisation").

Robust statistics throughout: a value is compared with the **median** of its peers and their
**MAD** (median absolute deviation, scaled by 1.4826 so that it estimates a normal standard
deviation), never with a mean and standard deviation that the anomaly itself would drag. The
peers of an interface are the interfaces of the same tier (host-leaf, leaf-spine,
spine-core), plane and end (the lower end transmits upward): in a Clos they carry the same
kind of traffic, so one far from their median is far from what the fabric does. An interface
is flagged when its value is beyond ``median + Z * scale`` (``Z`` = :data:`Z_PEER`) **and**
beyond an absolute floor that says what is physically meaningful (a zero-MAD peer group would
otherwise flag any nonzero count). The thresholds and their reasons:

- ``drops``: loss ratio (drops over the packets the interface carried) above
  :data:`LOSS_RATIO_FLOOR` (1e-6: healthy optics after FEC lose well under 1e-12 of
  packets, and a lossless RoCE fabric drops nothing while PFC works, so one in a million is a
  fault or an overflowing queue, not noise);
- ``fec``: uncorrectable FEC codewords above :data:`FEC_FLOOR` per second (any sustained rate
  is a link that corrupts frames);
- ``ecn`` / ``pfc``: ECN marks over packets above :data:`ECN_RATIO_FLOOR` (1e-3), PFC pauses
  above :data:`PFC_FLOOR` per second: queues building, the signature of load; in a peer
  group where marking is the normal (ECMP collisions spread over the fabric: at least
  :data:`MARKING_SHARE` of its interfaces marking, spread over its devices), only beyond the
  markers' own spread (``_marking_normal``);
- ``hot``: utilisation (transmit rate over capacity) above :data:`HOT_UTIL` (0.9) and above
  its peers: a link near its line rate where its peers are not;
- ``low-rate``: a transmit rate below :data:`LOW_RATE_RATIO` (0.7) of its peers' median
  while those peers carry traffic (median utilisation above :data:`BUSY_UTIL`): a slow port or
  a link running below its rate;
- ``flaps`` / ``down``: any up/down change in the window (``flaps``) or a link down at the end
  of the window after one change (``down``, a dead link);
- ``speed``: an operational speed (the exporters' speed gauge, ``speed_bps``) below
  :data:`SPEED_SHARE` of the design's rate in an interval while the link is up: a link
  trained down to fewer lanes (no peers needed: the design says what it should be; value the
  lowest share of the rate seen, score its inverse);
- ``skew``: interval by interval, a switch whose busiest uplink carries at least
  :data:`SKEW_MIN_REL` (4) and :data:`SKEW_SHARE` times an even share of its uplink traffic,
  beyond its peer switches' (same tier and plane) median by :data:`Z_SKEW` scales, in at
  least :data:`MIN_INTERVALS` intervals: a switch hashing most flows to one uplink; only a
  switch with more than :data:`SKEW_MIN_REL` uplinks (with fewer, that multiple is reached
  only with all traffic on one uplink: a few flows hashed together, as on a 128-host fat
  tree's 4-uplink spines, not a mis-hash short of 100%);
- ``hot-switch``: interval by interval, a switch whose links' median utilisation exceeds its
  peers' (same role and plane) by :data:`HOT_SWITCH_REL` times, :data:`Z_SWITCH` scales and
  :data:`HOT_SWITCH_EXCESS` of capacity, in at least :data:`MIN_INTERVALS` intervals: a
  switch carrying extra load (a natural hot spot of a workload is well under that).

An anomaly already there at the window's first interval (or a job's first step) with its
strength is ``persistent``: no onset inside the window.

Per collective (one row per rank, step and collective): within each (job, collective, step)
a rank's duration is compared with the ranks' median and MAD; a rank beyond :data:`Z_RANK`
scales (and :data:`RANK_REL_FLOOR` of the median) in at least :data:`STRAGGLER_SHARE` of its
steps (and at least :data:`MIN_STEPS`) is a ``straggler`` (late to start, it spends *less*
time in a collective its peers wait for; slow to communicate, more: either direction counts,
the note and the sign of ``baseline`` say which); a step whose ranks' median exceeds the
job's median step by :data:`SLOW_STEP_REL` and ``Z`` scales is a ``slow-step`` (every rank
slow: the fabric or the job, not one rank). Assumptions: an interface's signals are averaged
over the window for the decision (a fault present for part of it shows in
``first_ms``..``last_ms``), the switch-level ones judged interval by interval; peer groups
have at least :data:`MIN_PEERS` members, smaller ones are judged by the floors alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from clusterloom.errors import Problem, SpecError
from clusterloom.ops.model import COLLECTIVE_SCHEMA, OPTIONAL_RATE_COLUMNS, RATE_SCHEMA

if TYPE_CHECKING:
    from clusterloom.ops.fabric import OpsFabric

__all__ = [
    "RATE_COLUMNS_READ",
    "Anomaly",
    "Signal",
    "collective_anomalies",
    "counter_anomalies",
    "detect",
]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
B = NDArray[np.bool_]

#: peers' robust scales beyond their median that flag an interface
Z_PEER = 6.0
#: MAD to standard deviation of a normal distribution
MAD_SCALE = 1.4826
#: smallest peer group whose median and MAD are trusted
MIN_PEERS = 4
LOSS_RATIO_FLOOR = 1e-6
FEC_FLOOR = 1e-3
ECN_RATIO_FLOOR = 1e-3
PFC_FLOOR = 1.0
HOT_UTIL = 0.9
LOW_RATE_RATIO = 0.7
BUSY_UTIL = 0.05
SKEW_SHARE = 1.8
SKEW_MIN_REL = 4.0
Z_SKEW = 4.0
Z_SWITCH = 4.0
HOT_SWITCH_REL = 0.8
HOT_SWITCH_EXCESS = 0.2
MIN_INTERVALS = 2
ONSET_SHARE = 0.75
Z_RANK = 5.0
RANK_REL_FLOOR = 0.03
STRAGGLER_SHARE = 0.5
MIN_STEPS = 3
SLOW_STEP_REL = 0.2
#: a peer group marks (ECN, PFC) as its normal when this share of its interfaces do ...
MARKING_SHARE = 0.05
#: ... spread over this share of the devices they could be on (collisions, not one hot device)
MARKING_DEVICES = 0.5
#: the smallest robust scale of the markers, as a share of their median
MARKING_SPREAD = 0.5
#: an interface whose operational speed is below this share of its design rate is flagged
SPEED_SHARE = 0.99


class Signal(StrEnum):
    """What an anomaly is."""

    DROPS = "drops"
    FEC = "fec"
    ECN = "ecn"
    PFC = "pfc"
    HOT = "hot"
    HOT_SWITCH = "hot-switch"
    LOW_RATE = "low-rate"
    FLAPS = "flaps"
    DOWN = "down"
    SKEW = "skew"
    STRAGGLER = "straggler"
    SLOW_STEP = "slow-step"
    SPEED = "speed"


#: emit(signal, flagged interfaces, value, threshold, baseline, flagged rows, unit[, the
#: rows' strength: the measure per row, larger is stronger, for the onset test])
Emit = Callable[..., None]

#: the columns of a rates table (``RATE_SCHEMA``) the detectors read; a table may hold only
#: these (``speed_bps`` may be left out too: no speed exported)
RATE_COLUMNS_READ: tuple[str, ...] = (
    "ts_ms",
    "link",
    "end",
    "tx_bps",
    "tx_pps",
    "rx_pps",
    "drops_ps",
    "ecn_ps",
    "pfc_ps",
    "fec_uncorrected_ps",
    "up",
    "flaps",
    "speed_bps",
)

#: signals of load (queues, line rate), as opposed to faults
LOAD_SIGNALS = frozenset({Signal.ECN, Signal.PFC, Signal.HOT, Signal.HOT_SWITCH})


@dataclass(frozen=True)
class Anomaly:
    """One thing far from its peers.

    ``where`` names it as :class:`~clusterloom.ops.model.Fault` targets do: an interface
    ``device:interface`` (``link`` and ``end`` its physical link and end), a switch ``device``
    (``skew``), a rank ``rank:N`` (``straggler``, ``device`` its server), a job's step
    ``job:step`` (``slow-step``). ``value`` is the measure (its unit in ``note``), ``baseline``
    the peers' median, ``score`` how many times the threshold the value is (above 1 by
    construction), ``intervals`` the intervals (or steps) flagged, ``first_ms``..``last_ms``
    their span. ``persistent``: as strong in the window's first interval as later (no onset
    inside the window: the state the window began in, a workload's own imbalance or an older
    fault): for an interface, flagged in the window's first interval; for a rank, in its
    job's first step; for a straggler,
    ``value`` is the share of its collectives flagged and ``baseline`` its mean signed
    deviation from its peers' median there (microseconds; negative: it spent less time, it
    came late and did not wait); for the switch-level
    signals (``skew``, ``hot-switch``), as strong there as over the intervals flagged.
    """

    signal: Signal
    where: str
    score: float
    value: float
    baseline: float
    first_ms: int
    last_ms: int
    intervals: int = 1
    link: int | None = None
    end: int | None = None
    device: str = ""
    note: str = ""
    persistent: bool = False


# -- grouped robust statistics --------------------------------------------------------------


def group_median(group: I64, x: F64, n: int) -> F64:
    """Median of ``x`` per group ``0..n-1`` (NaN for an empty group)."""
    counts = np.bincount(group, minlength=n)
    order = np.lexsort((x, group))
    xs = x[order]
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    out = np.full(n, np.nan)
    ok = counts > 0
    lo = starts[ok] + (counts[ok] - 1) // 2
    hi = starts[ok] + counts[ok] // 2
    out[ok] = 0.5 * (xs[lo] + xs[hi])
    return out


def robust(group: I64, x: F64, n: int) -> tuple[F64, F64, I64]:
    """``(median, scale, count)`` per group: the median, 1.4826 MAD and the group's size."""
    med = group_median(group, x, n)
    mad = group_median(group, np.abs(x - med[group]), n)
    return med, MAD_SCALE * mad, np.bincount(group, minlength=n)


def _col(table: pa.Table, name: str) -> F64:
    """A float column with nulls as NaN."""
    return np.asarray(table[name].to_numpy(zero_copy_only=False), dtype=np.float64)


def _check_columns(
    table: pa.Table, schema: pa.Schema, what: str, read: tuple[str, ...] | None = None
) -> None:
    """``SpecError`` naming the columns of ``schema`` (those in ``read`` only, when given;
    optional ones aside) that ``table`` lacks."""
    missing = [
        f.name
        for f in schema
        if f.name not in table.column_names
        and (read is None or f.name in read)
        and f.name not in OPTIONAL_RATE_COLUMNS
    ]
    if missing:
        raise SpecError(
            [Problem(what, f"missing column(s) {', '.join(missing)} (see ops.model {what})")]
        )


# -- counters -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Iface:
    """Per-interface aggregates over the window: index ``k`` of ``key`` (``2*link+end``)."""

    key: I64  # interface ids present
    inv: I64  # row -> interface index
    ts: I64  # row times
    n: int


def _mean_per(iface: _Iface, x: F64) -> F64:
    """Mean of ``x`` per interface over its non-null intervals (NaN if none)."""
    ok = ~np.isnan(x)
    s = np.bincount(iface.inv[ok], weights=x[ok], minlength=iface.n)
    c = np.bincount(iface.inv[ok], minlength=iface.n)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(c > 0, s / np.maximum(c, 1), np.nan)


def _span(iface: _Iface, rows: NDArray[np.bool_]) -> tuple[I64, I64, I64]:
    """First and last time and count of flagged rows per interface."""
    big = np.iinfo(np.int64).max
    first = np.full(iface.n, big, dtype=np.int64)
    last = np.full(iface.n, -1, dtype=np.int64)
    np.minimum.at(first, iface.inv[rows], iface.ts[rows])
    np.maximum.at(last, iface.inv[rows], iface.ts[rows])
    count = np.bincount(iface.inv[rows], minlength=iface.n)
    return first, last, count


def _flag_high(peer: I64, n_peer: int, x: F64, floor: float) -> tuple[NDArray[np.bool_], F64, F64]:
    """Interfaces whose ``x`` is beyond both ``floor`` and their peers' median + Z scales:
    ``(flag, threshold, median)``."""
    good = ~np.isnan(x)
    med = np.full(n_peer, np.nan)
    scale = np.zeros(n_peer)
    size = np.zeros(n_peer, dtype=np.int64)
    if good.any():
        m, s, c = robust(peer[good], x[good], n_peer)
        med, scale, size = m, s, c
    trusted = size[peer] >= MIN_PEERS
    peer_line = np.where(trusted, np.nan_to_num(med[peer]) + Z_PEER * scale[peer], 0.0)
    threshold = np.maximum(floor, peer_line)
    flag = good & (np.nan_to_num(x) > threshold)
    return flag, threshold, med[peer]


def _marking_normal(
    peer: I64, n_peer: int, node: I64, x: F64, floor: float
) -> tuple[NDArray[np.bool_], F64, F64]:
    """Per interface: whether marking (ECN, PFC) is its peer group's normal, the line beyond
    which it is not (``inf`` where it is not the normal) and the markers' median.

    A group's marking is its normal when at least :data:`MARKING_SHARE` of its interfaces
    are above ``floor`` (and at least :data:`MIN_PEERS`) and those markers sit on at least
    :data:`MARKING_DEVICES` of the devices they could be spread over (the group's devices, or
    as many as the markers when fewer; at least :data:`MIN_PEERS`): spread across the fabric,
    as ECMP collisions are (every switch meets some), not gathered on one device, as a
    congested switch's links are, nor a few ports, as a slow port's queue is. The line is
    the markers' own median plus :data:`Z_PEER` of their robust scales, a scale being at
    least :data:`MARKING_SPREAD` of the median (collisions of two, three or four flows mark
    in steps, so many markers can share one value and a zero MAD): an interface within the
    spread of the fabric's collisions is a collision.
    """
    n = x.size
    over = np.nan_to_num(x) > floor
    size = np.bincount(peer, minlength=n_peer)
    markers = np.bincount(peer[over], minlength=n_peer)
    pd = np.unique(peer * (int(node.max(initial=0)) + 1) + node)
    devs = np.bincount(pd // (int(node.max(initial=0)) + 1), minlength=n_peer)
    pm = np.unique(peer[over] * (int(node.max(initial=0)) + 1) + node[over])
    mdevs = np.bincount(pm // (int(node.max(initial=0)) + 1), minlength=n_peer)
    normal_g = (
        (size >= MIN_PEERS)
        & (markers >= MIN_PEERS)
        & (markers >= MARKING_SHARE * size)
        & (mdevs >= np.maximum(MIN_PEERS, MARKING_DEVICES * np.minimum(devs, markers)))
    )
    line, m_med = np.full(n, np.inf), np.full(n, np.nan)
    if over.any():
        med, scale, _ = robust(peer[over], x[over], n_peer)
        spread = np.maximum(scale, MARKING_SPREAD * med)
        line = np.where(normal_g[peer], (med + Z_PEER * spread)[peer], np.inf)
        m_med = med[peer]
    return normal_g[peer], line, m_med


def counter_anomalies(rates: pa.Table, fabric: OpsFabric) -> tuple[Anomaly, ...]:
    """The anomalies of interface counters given as rates (``RATE_SCHEMA``), sorted by score
    (highest first). Vectorised over rows: no per-row Python."""
    _check_columns(rates, RATE_SCHEMA, "rates", RATE_COLUMNS_READ)
    if rates.num_rows == 0:
        return ()
    t = fabric.topology
    link = np.asarray(rates["link"].to_numpy(), dtype=np.int64)
    end = np.asarray(rates["end"].to_numpy(), dtype=np.int64)
    bad = (link < 0) | (link >= t.n_links) | (end < 0) | (end > 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise SpecError([Problem(f"rates row {i}", f"link {link[i]} end {end[i]} not in design")])
    key = 2 * link + end
    uniq, inv = np.unique(key, return_inverse=True)
    iface = _Iface(uniq, inv.astype(np.int64), np.asarray(rates["ts_ms"].to_numpy(), np.int64), 0)
    iface = _Iface(iface.key, iface.inv, iface.ts, int(uniq.size))
    ulink, uend = uniq // 2, uniq % 2
    tier = np.asarray(t.link_tier, dtype=np.int64)[ulink]
    plane = np.asarray(t.link_plane, dtype=np.int64)[ulink]
    cap = np.asarray(t.link_capacity_bps, dtype=np.float64)[ulink]
    # peer group: (tier, plane, end)
    pkey = (tier * 4096 + plane) * 2 + uend
    pu, peer = np.unique(pkey, return_inverse=True)
    peer = peer.astype(np.int64)
    n_peer = int(pu.size)
    dev, ifs = fabric.end_names
    names = (dev[ulink, uend] + ":" + ifs[ulink, uend]).tolist()

    tx_bps = _col(rates, "tx_bps")
    pps = np.nan_to_num(_col(rates, "tx_pps")) + np.nan_to_num(_col(rates, "rx_pps"))
    drops, ecn = _col(rates, "drops_ps"), _col(rates, "ecn_ps")
    pfc, fec = _col(rates, "pfc_ps"), _col(rates, "fec_uncorrected_ps")
    up = _col(rates, "up")
    flaps = np.nan_to_num(_col(rates, "flaps"))
    tx_pps = _col(rates, "tx_pps")

    out: list[Anomaly] = []

    def emit(
        signal: Signal,
        flag: NDArray[np.bool_],
        value: F64,
        threshold: F64,
        baseline: F64,
        rows: NDArray[np.bool_],
        unit: str,
        strength: F64 | None = None,
    ) -> None:
        first, last, count = _span(iface, rows)
        window_start = int(iface.ts.min())
        onset = _onset(iface, rows, strength, window_start) if strength is not None else None
        for k in np.flatnonzero(flag).tolist():
            f, la = int(first[k]), int(last[k])
            if la < 0:  # flagged on the mean but no single row beyond: the window's span
                f = int(iface.ts[iface.inv == k].min())
                la = int(iface.ts[iface.inv == k].max())
            out.append(
                Anomaly(
                    signal,
                    names[k],
                    float(value[k] / threshold[k]) if threshold[k] > 0 else float("inf"),
                    float(value[k]),
                    float(np.nan_to_num(baseline[k])),
                    f,
                    la,
                    max(int(count[k]), 1),
                    int(ulink[k]),
                    int(uend[k]),
                    str(dev[ulink[k], uend[k]]),
                    unit,
                    f == window_start and (onset is None or not onset[k]),
                )
            )

    # loss ratio, FEC, ECN ratio, PFC
    with np.errstate(invalid="ignore", divide="ignore"):
        row_loss = np.where(pps > 0, drops / pps, np.where(np.nan_to_num(drops) > 0, 1.0, 0.0))
        row_ecn = np.where(np.nan_to_num(tx_pps) > 0, ecn / tx_pps, 0.0)
    row_loss = np.where(np.isnan(drops), np.nan, row_loss)
    row_ecn = np.where(np.isnan(ecn), np.nan, row_ecn)
    node = np.where(uend == 0, t.link_src[ulink], t.link_dst[ulink]).astype(np.int64)
    for signal, row, floor, unit in (
        (Signal.DROPS, row_loss, LOSS_RATIO_FLOOR, "drops per packet carried"),
        (Signal.FEC, fec, FEC_FLOOR, "uncorrectable FEC codewords per second"),
        (Signal.ECN, row_ecn, ECN_RATIO_FLOOR, "ECN marks per packet sent"),
        (Signal.PFC, pfc, PFC_FLOOR, "PFC pauses received per second"),
    ):
        mean = _mean_per(iface, row)
        flag, thr, med = _flag_high(peer, n_peer, mean, floor)
        if signal in (Signal.ECN, Signal.PFC):
            # ECMP collisions mark across the fabric: judged against the markers' spread
            normal, line, m_med = _marking_normal(peer, n_peer, node, mean, floor)
            thr = np.where(normal, np.maximum(thr, line), thr)
            med = np.where(normal, m_med, med)
            flag &= np.nan_to_num(mean) > thr
        emit(signal, flag, mean, thr, med, np.nan_to_num(row) > floor, unit, np.nan_to_num(row))

    # utilisation: hot and low-rate
    util_row = tx_bps / cap[iface.inv]
    util = _mean_per(iface, util_row)
    flag, thr, med = _flag_high(peer, n_peer, util, HOT_UTIL)
    hot_rows = np.nan_to_num(util_row) > HOT_UTIL
    emit(Signal.HOT, flag, util, thr, med, hot_rows, "utilisation", np.nan_to_num(util_row))
    _low_rate(iface, peer, n_peer, util, util_row, emit)

    # link state
    up_mean = _mean_per(iface, up)
    n_flaps = np.asarray(np.bincount(iface.inv, weights=flaps, minlength=iface.n), np.float64)
    last_row = np.full(iface.n, -1, dtype=np.int64)
    np.maximum.at(last_row, iface.inv, iface.ts)
    is_last = iface.ts == last_row[iface.inv]
    up_last = np.bincount(iface.inv[is_last], weights=np.nan_to_num(up[is_last], nan=1.0))
    up_last = np.concatenate([up_last, np.ones(iface.n - up_last.size)])
    down_rows = np.nan_to_num(up, nan=1.0) < 1.0
    dead = (up_last == 0.0) & (n_flaps <= 1)
    flapping = ~dead & ((n_flaps >= 2) | ((np.nan_to_num(up_mean, nan=1.0) < 1.0) & (n_flaps >= 1)))
    ones = np.ones(iface.n)
    emit(Signal.DOWN, dead, 1.0 - np.nan_to_num(up_mean), ones * 1e-9, ones * 0, down_rows, "share")
    emit(
        Signal.FLAPS,
        flapping,
        n_flaps,
        ones,
        ones * 0,
        down_rows | (flaps > 0),
        "up/down changes in the window",
    )
    if "speed_bps" in rates.column_names:
        _speed(iface, cap, _col(rates, "speed_bps"), up, emit)
    out.extend(_skew(fabric, iface, ulink, uend, tier, plane, tx_bps))
    out.extend(_hot_switches(fabric, iface, ulink, uend, plane, util_row))
    return tuple(sorted(out, key=lambda a: (-a.score, a.signal, a.where)))


def _onset(iface: _Iface, rows: B, strength: F64, window_start: int) -> B:
    """Per interface: whether its flagged rows have an onset inside the window although the
    first is in the window's first interval: that interval's ``strength`` below
    :data:`ONSET_SHARE` of the median over its flagged rows (a fault starting part-way
    through the first interval shows there at part of its strength), as the switch-level
    signals judge it (``_persistent``)."""
    out = np.zeros(iface.n, dtype=bool)
    if not rows.any():
        return out
    x = np.where(rows, strength, np.nan)
    k = np.flatnonzero(rows)
    med = group_median(iface.inv[k], x[k], iface.n)
    at0 = np.flatnonzero(rows & (iface.ts == window_start))
    out[iface.inv[at0]] = x[at0] < ONSET_SHARE * med[iface.inv[at0]]
    return out


def _low_rate(iface: _Iface, peer: I64, n_peer: int, util: F64, util_row: F64, emit: Emit) -> None:
    """Interfaces transmitting below :data:`LOW_RATE_RATIO` of their busy peers' median."""
    good = ~np.isnan(util)
    if not good.any():
        return
    med, scale, size = robust(peer[good], util[good], n_peer)
    m = med[peer]
    busy = (size[peer] >= MIN_PEERS) & (np.nan_to_num(m) > BUSY_UTIL)
    line = np.minimum(LOW_RATE_RATIO * m, m - Z_PEER * scale[peer])
    flag = busy & good & (util < line)
    with np.errstate(invalid="ignore", divide="ignore"):
        # score: how far below the line, as a ratio (above 1 when flagged)
        value = np.where(util > 0, 1.0 / np.maximum(util, 1e-12), np.inf)
        thr = np.where(line > 0, 1.0 / np.maximum(line, 1e-12), np.inf)
    rows = np.nan_to_num(util_row, nan=1.0) < LOW_RATE_RATIO * np.nan_to_num(m[iface.inv])
    emit(
        Signal.LOW_RATE,
        flag,
        value,
        thr,
        1.0 / np.maximum(np.nan_to_num(m), 1e-12),
        rows,
        "1/utilisation",
        1.0 / np.maximum(np.nan_to_num(util_row, nan=1.0), 1e-12),
    )


def _speed(iface: _Iface, cap: F64, speed: F64, up: F64, emit: Emit) -> None:
    """Interfaces whose operational speed fell below :data:`SPEED_SHARE` of the design's
    rate in some interval while up (a down link's speed says nothing): value the lowest share
    seen, threshold the share, so the score is how far below; the rows flagged give the
    span."""
    share = speed / cap[iface.inv]
    rows = ~np.isnan(share) & (np.nan_to_num(up, nan=1.0) > 0) & (share < SPEED_SHARE)
    if not rows.any():
        return
    low = np.full(iface.n, np.inf)
    np.minimum.at(low, iface.inv[rows], share[rows])
    flag = np.isfinite(low)
    with np.errstate(divide="ignore"):
        value = np.where(flag, 1.0 / np.maximum(low, 1e-12), 0.0)
    ones = np.ones(iface.n)
    emit(
        Signal.SPEED,
        flag,
        value,
        ones / SPEED_SHARE,
        np.where(flag, low, 1.0),
        rows,
        "design rate / operational speed",
    )


def _peer_line(group: I64, n: int, x: F64, z: float) -> tuple[F64, F64]:
    """Per row: its peer group's median and ``median + z * scale`` (``inf`` for a group too
    small to trust)."""
    med, scale, size = robust(group, x, n)
    line = np.where(size[group] >= MIN_PEERS, med[group] + z * scale[group], np.inf)
    return med[group], line


def _flagged_switches(
    node: I64, t: I64, flag: NDArray[np.bool_], ratio: F64
) -> tuple[I64, I64, F64]:
    """Switches flagged in at least :data:`MIN_INTERVALS` intervals (or every interval they
    have, when fewer): ``(nodes, intervals flagged, median ratio over them)``."""
    if not flag.any():
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    nu, ni = np.unique(node, return_inverse=True)
    ni = ni.astype(np.int64)
    seen = np.bincount(ni, minlength=nu.size)
    hits = np.bincount(ni[flag], minlength=nu.size)
    keep = (hits >= np.minimum(MIN_INTERVALS, seen)) & (hits > 0)
    score = group_median(ni[flag], ratio[flag], int(nu.size))
    return nu[keep], hits[keep], score[keep]


def _persistent(k: I64, g_t: I64, excess: F64) -> bool:
    """Whether flagged rows ``k`` (of one element) are as strong in the window's first
    interval as over the flagged ones (at least :data:`ONSET_SHARE` of their median excess):
    no onset inside the window, the state the window began in."""
    k0 = k[g_t[k] == 0]
    return bool(k0.size > 0 and excess[k0[0]] >= ONSET_SHARE * float(np.median(excess[k])))


def _skew(
    fabric: OpsFabric, iface: _Iface, ulink: I64, uend: I64, tier: I64, plane: I64, tx_bps: F64
) -> list[Anomaly]:
    """Switches whose busiest uplink carries far more than an even share of their uplink
    traffic, interval by interval, beyond their peer switches (same tier and plane) in the
    same interval, in at least :data:`MIN_INTERVALS` intervals."""
    t = fabric.topology
    rows = np.flatnonzero((uend[iface.inv] == 0) & (tier[iface.inv] >= 2) & ~np.isnan(tx_bps))
    if rows.size == 0:
        return []
    link = ulink[iface.inv[rows]]
    sw = np.asarray(t.link_src, dtype=np.int64)[link]
    tu, ti = np.unique(iface.ts[rows], return_inverse=True)
    n_t = int(tu.size)
    code = sw * n_t + ti
    gu, g = np.unique(code, return_inverse=True)
    g = g.astype(np.int64)
    n = int(gu.size)
    load = np.maximum(tx_bps[rows], 0.0)
    total = np.bincount(g, weights=load, minlength=n)
    count = np.bincount(g, minlength=n)
    order = np.lexsort((load, g))
    last = np.zeros(n, dtype=np.int64)
    last[g[order]] = order  # the last (largest) row of each group
    top = load[last]
    fav = link[last]
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(total > 0, top / total, 0.0)
    rel = np.asarray(share * count, dtype=np.float64)  # 1 when even
    g_sw, g_t = gu // n_t, gu % n_t
    pk = (tier[iface.inv[rows]][last] * 4096 + plane[iface.inv[rows]][last]) * n_t + g_t
    pu, pg = np.unique(pk, return_inverse=True)
    med, line = _peer_line(pg.astype(np.int64), int(pu.size), rel, Z_SKEW)
    thr = np.maximum(SKEW_SHARE, np.where(np.isinf(line), SKEW_SHARE, line))
    # with SKEW_MIN_REL uplinks or fewer, rel reaches it only with everything on one uplink,
    # which a mis-hash short of 100% never does and a few flows hashed together often do
    flag = (count > SKEW_MIN_REL) & (total > 0) & (rel > thr) & (rel >= SKEW_MIN_REL)
    nodes, hits, score = _flagged_switches(g_sw, g_t, flag, rel / thr)
    out = []
    for node, h, sc in zip(nodes.tolist(), hits.tolist(), score.tolist(), strict=True):
        mine = flag & (g_sw == node)
        favs, counts = np.unique(fav[mine], return_counts=True)
        f = int(favs[np.argmax(counts)])
        k = np.flatnonzero(mine)
        name = str(fabric.names.device(np.array([node]))[0])
        out.append(
            Anomaly(
                Signal.SKEW,
                name,
                float(sc),
                float(np.median(rel[k])),
                float(np.median(med[k])),
                int(tu[g_t[k].min()]),
                int(tu[g_t[k].max()]),
                int(h),
                f,
                0,
                name,
                f"busiest uplink {fabric.link_label(f)} carries {np.median(share[k]):.0%} of "
                f"the uplink traffic ({np.median(rel[k]):.1f}x an even share over "
                f"{int(np.median(count[k]))} uplinks) in {int(h)} interval(s)",
                _persistent(k, g_t, rel - 1.0),
            )
        )
    return out


def _hot_switches(
    fabric: OpsFabric, iface: _Iface, ulink: I64, uend: I64, plane: I64, util_row: F64
) -> list[Anomaly]:
    """Switches whose links run far hotter than their peers' (same role and plane) in the same
    interval: the median utilisation of the switch's transmitting interfaces above both
    :data:`HOT_SWITCH_REL` times and ``Z`` scales beyond the peers' median, in at least
    :data:`MIN_INTERVALS` intervals. A switch carrying extra load (a congested spine) heats
    all its links; a mis-hashing one heats one uplink and cools the others (``skew``)."""
    t = fabric.topology
    link, end = ulink[iface.inv], uend[iface.inv]
    node = np.where(end == 0, t.link_src[link], t.link_dst[link]).astype(np.int64)
    role = np.asarray(t.node_role, dtype=np.int64)[node]
    rows = np.flatnonzero((role != 0) & ~np.isnan(util_row))
    if rows.size == 0:
        return []
    tu, ti = np.unique(iface.ts[rows], return_inverse=True)
    n_t = int(tu.size)
    gu, g = np.unique(node[rows] * n_t + ti, return_inverse=True)
    g = g.astype(np.int64)
    value = group_median(g, util_row[rows], int(gu.size))
    g_node, g_t = gu // n_t, gu % n_t
    first = np.zeros(gu.size, dtype=np.int64)
    first[g[::-1]] = rows[::-1]
    pk = (role[first] * 4096 + plane[iface.inv[first]]) * n_t + g_t
    pu, pg = np.unique(pk, return_inverse=True)
    med, line = _peer_line(pg.astype(np.int64), int(pu.size), value, Z_SWITCH)
    thr = np.maximum(line, (1 + HOT_SWITCH_REL) * med)
    flag = (value > thr) & (value > med + HOT_SWITCH_EXCESS)
    nodes, hits, score = _flagged_switches(g_node, g_t, flag, value / thr)
    out = []
    for nd, h, sc in zip(nodes.tolist(), hits.tolist(), score.tolist(), strict=True):
        k = np.flatnonzero(flag & (g_node == nd))
        name = str(fabric.names.device(np.array([nd]))[0])
        out.append(
            Anomaly(
                Signal.HOT_SWITCH,
                name,
                float(sc),
                float(np.median(value[k])),
                float(np.median(med[k])),
                int(tu[g_t[k].min()]),
                int(tu[g_t[k].max()]),
                int(h),
                device=name,
                note=f"median utilisation of its links {np.median(value[k]):.2f} against its "
                f"peers' {np.median(med[k]):.2f} in {int(h)} interval(s)",
                persistent=_persistent(k, g_t, value - med),
            )
        )
    return out


# -- collectives ---------------------------------------------------------------------------


def collective_anomalies(collectives: pa.Table) -> tuple[Anomaly, ...]:
    """Stragglers and slow steps in collective timings (``COLLECTIVE_SCHEMA``)."""
    _check_columns(collectives, COLLECTIVE_SCHEMA, "collectives")
    if collectives.num_rows == 0:
        return ()
    jobs = collectives["job"].to_pylist()
    colls = collectives["collective"].to_pylist()
    ju, jinv = np.unique(np.asarray(jobs, dtype=object), return_inverse=True)
    cu, cinv = np.unique(np.asarray(colls, dtype=object), return_inverse=True)
    step = np.asarray(collectives["step"].to_numpy(), dtype=np.int64)
    rank = np.asarray(collectives["rank"].to_numpy(), dtype=np.int64)
    dur = np.asarray(collectives["duration_us"].to_numpy(), dtype=np.float64)
    ts = np.asarray(collectives["ts_ms"].to_numpy(), dtype=np.int64)
    devices = np.asarray(collectives["device"].to_pylist(), dtype=object)
    # (job, collective, step) groups
    gkey = np.stack([jinv, cinv, step], axis=1)
    gu, g = np.unique(gkey, axis=0, return_inverse=True)
    g = g.reshape(-1).astype(np.int64)
    n = int(gu.shape[0])
    med, scale, size = robust(g, dur, n)
    tol = np.maximum(Z_RANK * scale[g], RANK_REL_FLOOR * med[g])
    dev = dur - med[g]
    late = (size[g] >= MIN_PEERS) & (np.abs(dev) > tol)
    out: list[Anomaly] = []
    # per (job, rank): share of its (collective, step) groups flagged
    rkey = np.stack([jinv, rank], axis=1)
    ru, r = np.unique(rkey, axis=0, return_inverse=True)
    r = r.reshape(-1).astype(np.int64)
    nr = int(ru.shape[0])
    steps = np.bincount(r, minlength=nr)
    flagged = np.bincount(r, weights=late.astype(np.float64), minlength=nr)
    signed = np.bincount(r, weights=np.where(late, dev, 0.0), minlength=nr)
    excess = np.bincount(r, weights=np.where(late, np.abs(dev), 0.0), minlength=nr)
    share = flagged / np.maximum(steps, 1)
    big = np.iinfo(np.int64).max
    first = np.full(nr, big, dtype=np.int64)
    last = np.full(nr, -1, dtype=np.int64)
    np.minimum.at(first, r[late], ts[late])
    np.maximum.at(last, r[late], ts[late])
    rank_dev = np.empty(nr, dtype=object)
    rank_dev[r] = devices
    # flagged in its job's first step: no onset in the window (a rank whose work is simply
    # longer or shorter than its peers', or an older fault)
    job_first = np.full(int(ju.size), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(job_first, jinv, step)
    at_first = np.bincount(r[late & (step == job_first[jinv])], minlength=nr) > 0
    for k in np.flatnonzero((share >= STRAGGLER_SHARE) & (flagged >= MIN_STEPS)).tolist():
        direction = "shorter" if signed[k] < 0 else "longer"
        out.append(
            Anomaly(
                Signal.STRAGGLER,
                f"rank:{int(ru[k, 1])}",
                float(share[k] / STRAGGLER_SHARE),
                float(share[k]),
                float(signed[k] / max(flagged[k], 1)),
                int(first[k]),
                int(last[k]),
                int(flagged[k]),
                device=str(rank_dev[k]),
                persistent=bool(at_first[k]),
                note=f"job {ju[ru[k, 0]]}: {direction} than its peers in {int(flagged[k])} of "
                f"{int(steps[k])} collectives, by {excess[k] / max(flagged[k], 1):.0f} us on "
                "average",
            )
        )
    # slow steps: a step's median across ranks against the (job, collective)'s steps
    jc = gu[:, 0] * (int(cu.size) + 1) + gu[:, 1]
    jcu, jg = np.unique(jc, return_inverse=True)
    jg = jg.astype(np.int64)
    smed, sscale, ssize = robust(jg, med, int(jcu.size))
    line = np.maximum(
        (1 + SLOW_STEP_REL) * smed[jg], smed[jg] + Z_PEER * np.maximum(sscale[jg], 0.0)
    )
    slow = (ssize[jg] >= MIN_STEPS) & (med > line)
    gts = np.zeros(n, dtype=np.int64)
    np.maximum.at(gts, g, ts)
    for k in np.flatnonzero(slow).tolist():
        out.append(
            Anomaly(
                Signal.SLOW_STEP,
                f"{ju[gu[k, 0]]}:{int(gu[k, 2])}",
                float(med[k] / line[k]),
                float(med[k]),
                float(smed[jg[k]]),
                int(gts[k]),
                int(gts[k]),
                1,
                note=f"{cu[gu[k, 1]]}: every rank slow (median us, against the job's median step)",
            )
        )
    return tuple(sorted(out, key=lambda a: (-a.score, a.signal, a.where)))


def detect(
    fabric: OpsFabric, *, rates: pa.Table | None = None, collectives: pa.Table | None = None
) -> tuple[Anomaly, ...]:
    """Every anomaly of the counters and collectives given, highest score first."""
    found: list[Anomaly] = []
    if rates is not None:
        found.extend(counter_anomalies(rates, fabric))
    if collectives is not None:
        found.extend(collective_anomalies(collectives))
    return tuple(sorted(found, key=lambda a: (-a.score, a.signal, a.where)))
