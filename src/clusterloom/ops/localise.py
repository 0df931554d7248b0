"""Localisation: which links, ports, EVs, switches or ranks explain the symptoms (issue 23,
item 3; ``docs/ops.md``, "Detection and localisation").

Two kinds of evidence are combined:

- **Probes over known paths** (tomography). Every probe's path is known (``OpsFabric.paths``:
  the design's routing with the EV hashed at every switch). In the spirit of 007 (Arzani et
  al., NSDI 2018: each failing flow votes for the links of its path) and NetBouncer (Tan et
  al., NSDI 2019: the fewest elements whose failure explains the bad paths, the good paths
  clearing their links), :func:`tomography` fits a loss rate to every element by maximum
  likelihood, ``lost ~ Binomial(sent, 1 - prod(1 - loss_e))`` over the elements of a path,
  with an L1 penalty that prefers fewer, smaller losses (``z_e = -log(1 - loss_e) >= 0``;
  L-BFGS-B over the elements that lie on some lossy path). An element is a suspect when
  dropping it from the fit costs a likelihood ratio above :data:`LR_MIN` (a chi-square test
  at p ~ 1e-6, so that hundreds of thousands of clean links do not produce false alarms), and
  its confidence is the share of the lost probes on its paths the fit attributes to it
  (``lost * z_e / sum z``: 1 for a lone culprit, 1/2 each for two links no probe tells
  apart) times ``1 - exp(-LR / LR_MIN)`` (how clean the alternative without it is). With
  ``rtt_excess_us`` a second, additive fit (non-negative least squares) gives each element a
  queueing delay: slow elements, which carry no fault kind on their own.
  A 007-style vote (each lossy probe's loss split evenly over its path) is kept beside each
  suspect in its evidence.
- **Counters and collectives** (``ops.detect``): drops, FEC errors, flaps, a link down, low
  rates, skewed uplinks, ECN/PFC marks and hot links, an operational speed below the design's
  rate, stragglers.

:func:`localise` turns both into suspects of the right kind (``docs/ops.md`` lists every
rule and the constants below): probes of one EV lost where other probes or the links' own
counters clear every link of their paths are a ``dead-ev``, on the switch all of them cross
(``switch#EV``) or on their pair; lossy links are ``gray-link``, ``flapping-link`` or
``dead-link`` by the time pattern of their loss, settled by the counters' link state; load
(ECN/PFC marks, line rate, RTT growth) on a switch far hotter than its peers is
``congestion`` (``congested-spine``; ``Localisation.congestion``), blaming nothing to repair,
and drops on a loaded link are the queue's; a skewed switch is ``mis-hashed-switch``; load on
one link alone is a link (or NIC port) slower than its rate; a rank late to its collectives
is a ``straggler-rank``, one slower in them points at its ports; a link whose exporters report
a speed below its design rate (trained down to fewer lanes) is a ``gray-link`` on that
reading alone. Anomalies present from the
window's start (no onset) count half. Assumptions: probes follow ``OpsFabric.paths`` out and
back with their EV; counters of a link losing most packets show it (drops, FEC, down); a
reported speed is the link's (the exporter's own reading, not a statistic).

Memory at scale: :func:`localise_store` reads a store's window without names (the probes as
:class:`ProbeRows`: a key per row, times, counts and RTTs in narrow arrays, filled batch by
batch from DuckDB; the rates as the columns the detectors read only), and the dead-EV
clearing expands one interval's probe paths at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, sparse

from clusterloom.errors import Problem, SpecError
from clusterloom.ops.detect import LOAD_SIGNALS, ONSET_SHARE, Anomaly, Signal, detect
from clusterloom.ops.model import PROBE_SCHEMA, FaultKind, Suspect, SuspectKind
from clusterloom.units import to_gbps

if TYPE_CHECKING:
    from clusterloom.ops.fabric import OpsFabric
    from clusterloom.ops.telemetry import Resolution, TelemetryStore

__all__ = [
    "Localisation",
    "ProbeRows",
    "localisation_dict",
    "localise",
    "localise_store",
    "probe_rows",
    "store_probe_rows",
    "suspect_dict",
    "tomography",
]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
Csr: TypeAlias = Any  # scipy.sparse.csr_matrix (scipy is untyped)

#: likelihood ratio (2 * log) an element must add to the fit to be a suspect: chi-square with
#: one degree of freedom at p ~ 1e-6
LR_MIN = 24.0
#: L1 weight on each element's z (nats per unit of -log(1 - loss))
PENALTY = 1.0
#: largest z fitted (loss 1 - e^-20: a black hole)
Z_MAX = 20.0
#: delay an element must add to be slow, microseconds
DELAY_MIN_US = 2.0
#: a slow link's delay with no onset in the window names it alone when beyond its tier's
#: median by this many spreads (``_far_delay``)
DELAY_FAR = 5.0
#: a probe key is dead in an interval when at least this share of its probes was lost
DEAD_SHARE = 0.9
#: the directed links the probes' evidence reports at most, the most likely first (each is
#: given its time pattern; a fabric-wide storm of loss would otherwise name thousands)
MAX_LINK_SUSPECTS = 100
#: and a path link is cleared by other probes when those lost at most this share
CLEAR_SHARE = 0.01
#: probes that must clear a link
CLEAR_MIN = 10


@dataclass(frozen=True)
class Localisation:
    """What localisation found: the ``suspects`` (sorted by confidence, highest first), the
    ``anomalies`` behind them, and whether the symptoms are load (``congestion``: a congested
    switch explains them, nothing to repair)."""

    suspects: tuple[Suspect, ...]
    anomalies: tuple[Anomaly, ...]
    congestion: bool


# -- the generic core ----------------------------------------------------------------------


@dataclass(frozen=True)
class LossFit:
    """The loss fit over ``m`` elements: ``z`` (``-log(1 - loss)``), ``lr`` the likelihood
    ratio of each element, ``share`` the share of the lost probes on its paths attributed to
    it, ``votes`` 007's votes, ``bad_on`` the lossy observations through it, ``bad`` their
    total."""

    z: F64
    lr: F64
    share: F64
    votes: F64
    bad_on: I64
    bad: int

    @property
    def loss(self) -> F64:
        return np.asarray(-np.expm1(-self.z), dtype=np.float64)

    def suspects(self) -> I64:
        """Elements that pass the likelihood-ratio test, by confidence."""
        conf = self.confidence()
        hit = np.flatnonzero((self.lr >= LR_MIN) & (self.z > 0))
        return hit[np.lexsort((hit, -conf[hit]))]

    def confidence(self) -> F64:
        return np.asarray(self.share * -np.expm1(-self.lr / LR_MIN), dtype=np.float64)


def fit_loss(a: Csr, sent: F64, lost: F64) -> LossFit:
    """Fit per-element loss to observations ``a`` (observations x elements, 0/1) with
    ``sent`` probes and ``lost`` of them lost each (see the module's docstring)."""
    m = int(a.shape[1])
    z = np.zeros(m)
    empty = LossFit(z, np.zeros(m), np.zeros(m), np.zeros(m), np.zeros(m, np.int64), 0)
    bad = lost > 0
    if not bad.any():
        return empty
    lengths = np.asarray(a.sum(axis=1)).ravel()
    votes = np.asarray(a.T @ np.where(bad & (lengths > 0), 1.0 / np.maximum(lengths, 1), 0.0))
    bad_on = np.asarray(a.T @ bad.astype(np.float64)).ravel().astype(np.int64)
    cand = np.flatnonzero(bad_on > 0)
    ac = a[:, cand].tocsc().tocsr()
    rows = np.flatnonzero(np.diff(ac.indptr) > 0)
    b = ac[rows]
    s_r, l_r = sent[rows], lost[rows]
    good_r = np.maximum(s_r - l_r, 0.0)
    tsent = np.asarray(b.T @ s_r).ravel()
    tlost = np.asarray(b.T @ l_r).ravel()
    rate = np.clip(tlost / np.maximum(tsent, 1e-12), 0.0, 1.0 - 1e-9)
    z0 = np.minimum(-np.log1p(-rate), Z_MAX)
    bt = b.T.tocsr()

    def nll(zc: F64) -> tuple[float, F64]:
        s = np.maximum(b @ zc, 1e-12)
        f = float(good_r @ s - l_r @ np.log(-np.expm1(-s)) + PENALTY * zc.sum())
        g = bt @ (good_r - l_r / np.expm1(np.minimum(s, 700.0))) + PENALTY
        return f, np.asarray(g, dtype=np.float64)

    res = optimize.minimize(
        nll,
        z0,
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, Z_MAX)] * int(cand.size),
        options={"maxiter": 500, "ftol": 1e-12, "gtol": 1e-9},
    )
    zc = np.asarray(res.x, dtype=np.float64)
    zc[zc < 1e-9] = 0.0
    s = np.maximum(b @ zc, 1e-12)
    # likelihood ratio of each element: the fit's likelihood with its z set to zero, and
    # with it the z of every element on exactly the same observations (no probe tells them
    # apart, so the fit's split between them is arbitrary: they stand or fall together)
    coo = b.tocoo()
    p, e = coo.row, coo.col
    cls = _same_columns(b)
    class_z = np.bincount(cls, weights=zc)
    s_without = np.maximum(s[p] - class_z[cls[e]], 1e-12)

    def f_row(sv: F64, rows_: NDArray[np.int32]) -> F64:
        return np.asarray(
            good_r[rows_] * sv - l_r[rows_] * np.log(-np.expm1(-sv)), dtype=np.float64
        )

    delta = np.bincount(e, weights=f_row(s_without, p) - f_row(s[p], p), minlength=cand.size)
    attributed = np.bincount(e, weights=l_r[p] * zc[e] / s[p], minlength=cand.size)
    lost_on = np.bincount(e, weights=l_r[p], minlength=cand.size)
    full = np.zeros(m)
    full[cand] = zc
    lr = np.zeros(m)
    lr[cand] = np.maximum(2.0 * delta, 0.0)
    share = np.zeros(m)
    share[cand] = attributed / np.maximum(lost_on, 1e-12)
    return LossFit(full, lr, share, np.asarray(votes).ravel(), bad_on, int(bad.sum()))


def _same_columns(b: Csr) -> I64:
    """A class id per column: equal for columns with the same rows (two random hashes of
    each column's rows, deterministic)."""
    rng = np.random.default_rng(0x5EED)
    w = rng.random((b.shape[0], 2))
    h = np.asarray(b.T @ w)
    _, cls = np.unique(np.round(h, 9), axis=0, return_inverse=True)
    return np.asarray(cls, dtype=np.int64).reshape(-1)


def fit_delay(a: Csr, excess_us: F64) -> F64:
    """Per-element queueing delay (microseconds, non-negative least squares) explaining each
    observation's RTT excess as the sum over its path."""
    m = a.shape[1]
    x = np.nan_to_num(np.asarray(excess_us, dtype=np.float64))
    slow = x > DELAY_MIN_US
    if not slow.any():
        return np.zeros(m)
    cand = np.flatnonzero(np.asarray(a[slow].sum(axis=0)).ravel() > 0)
    ac = a[:, cand].tocsr()
    rows = np.flatnonzero(np.diff(ac.indptr) > 0)
    res = optimize.lsq_linear(ac[rows], x[rows], bounds=(0.0, np.inf), lsmr_tol="auto")
    out = np.zeros(m)
    out[cand] = np.maximum(res.x, 0.0)
    return out


def delay_share(a: Csr, excess_us: F64, d: F64) -> F64:
    """Per element: the share of the RTT excess on its paths its fitted delay accounts for."""
    x = np.nan_to_num(np.asarray(excess_us, dtype=np.float64)).clip(0)
    tot = np.asarray(a @ d).ravel()
    coo = a.tocoo()
    p, e = coo.row, coo.col
    part = np.where(tot[p] > 0, x[p] * d[e] / np.maximum(tot[p], 1e-12), 0.0)
    on = np.bincount(e, weights=x[p], minlength=a.shape[1])
    got = np.bincount(e, weights=part, minlength=a.shape[1])
    return np.asarray(np.where(on > 0, got / np.maximum(on, 1e-12), 0.0), dtype=np.float64)


def _incidence(rows: Sequence[Sequence[int]] | I64, m: int) -> Csr:
    """The 0/1 observations x elements matrix of padded (``-1``) or ragged index rows."""
    if isinstance(rows, np.ndarray):
        arr = np.asarray(rows, dtype=np.int64)
        r, c = np.nonzero(arr >= 0)
        cols = arr[r, c]
        n = arr.shape[0]
    else:
        lens = np.array([len(x) for x in rows], dtype=np.int64)
        r = np.repeat(np.arange(lens.size), lens)
        cols = np.fromiter((i for x in rows for i in x), dtype=np.int64, count=int(lens.sum()))
        n = lens.size
    a = sparse.csr_matrix((np.ones(cols.size), (r, cols)), shape=(n, m))
    a.sum_duplicates()
    a.data[:] = 1.0
    return a


def tomography(
    paths: Sequence[Sequence[str]],
    sent: ArrayLike,
    lost: ArrayLike,
    *,
    rtt_excess_us: ArrayLike | None = None,
) -> tuple[Suspect, ...]:
    """The elements (link or device names) that explain lossy (and, with ``rtt_excess_us``,
    slow) probes best: one observation per path with ``sent`` probes, ``lost`` of them lost.
    Lossy elements are ``LINK`` suspects of fault ``gray-link``; slow ones (no loss) ``LINK``
    suspects without a fault kind, their evidence the delay. Sorted by confidence."""
    names = sorted({str(e) for p in paths for e in p})
    index = {n: i for i, n in enumerate(names)}
    s = np.asarray(sent, dtype=np.float64).ravel()
    lo = np.asarray(lost, dtype=np.float64).ravel()
    problems = []
    if s.size != len(paths) or lo.size != len(paths):
        problems.append(Problem("sent/lost", f"need one value per path ({len(paths)})"))
    elif (lo < 0).any() or (lo > s).any():
        i = int(np.flatnonzero((lo < 0) | (lo > s))[0])
        problems.append(Problem(f"path {i}", f"lost {lo[i]:g} not within 0..sent {s[i]:g}"))
    if problems:
        raise SpecError(problems)
    a = _incidence([[index[str(e)] for e in p] for p in paths], len(names))
    fit = fit_loss(a, s, lo)
    out = [
        Suspect(
            SuspectKind.LINK,
            names[e],
            float(fit.confidence()[e]),
            FaultKind.GRAY_LINK,
            int(fit.bad_on[e]),
            int(fit.bad - fit.bad_on[e]),
            evidence=(
                f"loss {fit.loss[e]:.3g} fitted over {int(fit.bad_on[e])} lossy paths "
                f"(likelihood ratio {fit.lr[e]:.0f}, 007 votes {fit.votes[e]:.2f})",
            ),
        )
        for e in fit.suspects().tolist()
    ]
    if rtt_excess_us is not None:
        x = np.asarray(rtt_excess_us, dtype=np.float64).ravel()
        if x.size != len(paths):
            raise SpecError([Problem("rtt_excess_us", f"need one value per path ({len(paths)})")])
        d = fit_delay(a, x)
        share = delay_share(a, x, d)
        lossy = {sp.target for sp in out}
        slow = np.nan_to_num(x) > DELAY_MIN_US
        slow_on = np.asarray(a.T @ slow.astype(np.float64)).ravel().astype(np.int64)
        for e in np.flatnonzero(d > DELAY_MIN_US).tolist():
            if names[e] in lossy:
                continue
            out.append(
                Suspect(
                    SuspectKind.LINK,
                    names[e],
                    float(share[e]),
                    None,
                    int(slow_on[e]),
                    int(slow.sum() - slow_on[e]),
                    evidence=(f"queueing delay {d[e]:.1f} us fitted over its paths",),
                )
            )
    return _ranked(out)


def _ranked(suspects: Sequence[Suspect]) -> tuple[Suspect, ...]:
    return tuple(sorted(suspects, key=lambda s: (-s.confidence, s.kind, s.target)))


# -- probes on a design --------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeRows:
    """Probe rows in a compact form, grouped by key (source host, destination host, port,
    EV): per key its endpoints and path (out and back), per row its key, time and counts in
    narrow dtypes, no names. :func:`probe_rows` makes it from a ``PROBE_SCHEMA`` table,
    :func:`localise_store` from a telemetry store (read in batches, never as a table of
    strings); :func:`localise` takes either."""

    src: I64  # per key
    dst: I64
    port: I64
    ev: I64
    paths: I64  # per key, directed links of the way out and back, -1 padded
    key: NDArray[np.int32]  # per row: its key
    ts: I64  # per row
    sent: NDArray[np.int32]  # per row
    lost: NDArray[np.int32]
    rtt: NDArray[np.float32]  # mean RTT, NaN when every probe was lost

    @property
    def num_rows(self) -> int:
        return int(self.key.size)


_Probes = ProbeRows


def _factorize(values: NDArray[np.int64]) -> tuple[I64, I64]:
    """``(sorted unique values, index of each value among them)``, by hashing (pyarrow), not
    sorting the rows: linear in the rows."""
    enc = pc.dictionary_encode(pa.array(values, pa.int64()))
    uniq = np.asarray(enc.dictionary.to_numpy(), dtype=np.int64)
    order = np.argsort(uniq, kind="stable")
    rank = np.empty(uniq.size, dtype=np.int64)
    rank[order] = np.arange(uniq.size)
    idx = np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    return uniq[order], rank[idx]


def _codes(col: pa.ChunkedArray | pa.Array) -> tuple[list[str], I64]:
    """The distinct strings of a column and each row's index among them."""
    enc = pc.dictionary_encode(col)
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.unify_dictionaries().combine_chunks() if enc.num_chunks else enc.combine_chunks()
    values = [str(v) for v in enc.dictionary.to_pylist()]
    return values, np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)


def _endpoint_ids(
    fabric: OpsFabric, dev: pa.ChunkedArray, ifs: pa.ChunkedArray, what: str
) -> tuple[I64, I64]:
    """Host and port of each row's endpoint (``SpecError`` naming endpoints not in the
    design)."""
    dv, di = _codes(dev)
    fv, fi = _codes(ifs)
    pairs, inv = _factorize(di * max(len(fv), 1) + fi)
    host = np.empty(pairs.size, np.int64)
    port = np.empty(pairs.size, np.int64)
    problems = []
    for i, code in enumerate(pairs.tolist()):
        d, f = dv[code // max(len(fv), 1)], fv[code % max(len(fv), 1)]
        hp = fabric.host_of(d, f)
        if hp is None:
            problems.append(Problem(f"probes {what} {d}:{f}", "not a NIC port of the design"))
            hp = (0, 0)
        host[i], port[i] = hp
    if problems:
        raise SpecError(problems[:20])
    return host[inv], port[inv]


def _keys(fabric: OpsFabric, probes: pa.Table) -> tuple[I64, I64, I64, I64, I64, NDArray[np.int32]]:
    """The keys of a table of probe rows (or of distinct series): per key source host,
    destination host, port, EV and path (out and back), sorted by those; per row its key."""
    sh, sp = _endpoint_ids(fabric, probes["src_device"], probes["src_interface"], "source")
    dh, dp = _endpoint_ids(fabric, probes["dst_device"], probes["dst_interface"], "destination")
    if (sp != dp).any():
        i = int(np.flatnonzero(sp != dp)[0])
        raise SpecError(
            [Problem(f"probes row {i}", "source and destination ports are in different planes")]
        )
    ev = np.asarray(probes["ev"].to_numpy(), dtype=np.int64)
    evs, ev_i = _factorize(ev)
    hosts, ports = int(fabric.topology.plan.hosts), max(fabric.host_ports, 1)
    if hosts * hosts * ports * max(evs.size, 1) < 2**62:
        code = ((sh * hosts + dh) * ports + sp) * max(evs.size, 1) + ev_i
        del sh, dh, sp, dp, ev, ev_i
        uc, key = _factorize(code)
        del code
        ev_k = evs[uc % max(evs.size, 1)]
        rest = uc // max(evs.size, 1)
        uniq = np.stack([rest // ports // hosts, rest // ports % hosts, rest % ports, ev_k], 1)
    else:  # too many to pack in 63 bits: sort the rows
        u, k = np.unique(np.stack([sh, dh, sp, ev], axis=1), axis=0, return_inverse=True)
        uniq, key = np.asarray(u, np.int64), np.asarray(k, np.int64).reshape(-1)
    # a probe's reply comes back on the reverse path with the same EV: both can lose it
    forward = fabric.paths(uniq[:, 0], uniq[:, 1], uniq[:, 2], uniq[:, 3])
    reverse = fabric.paths(uniq[:, 1], uniq[:, 0], uniq[:, 2], uniq[:, 3])
    paths = np.concatenate([forward, reverse], axis=1)
    return uniq[:, 0], uniq[:, 1], uniq[:, 2], uniq[:, 3], paths, key.astype(np.int32)


def _missing_probe_columns(names: Sequence[str]) -> None:
    missing = [f.name for f in PROBE_SCHEMA if f.name not in names and f.name != "rtt_max_us"]
    if missing:
        raise SpecError([Problem("probes", f"missing column(s) {', '.join(missing)}")])


def probe_rows(fabric: OpsFabric, probes: pa.Table) -> ProbeRows:
    """A ``PROBE_SCHEMA`` table's rows as :class:`ProbeRows` (``SpecError`` naming
    endpoints the design lacks)."""
    _missing_probe_columns(probes.column_names)
    src, dst, port, ev, paths, key = _keys(fabric, probes)
    return ProbeRows(
        src,
        dst,
        port,
        ev,
        paths,
        key,
        np.asarray(probes["ts_ms"].to_numpy(), dtype=np.int64),
        np.asarray(probes["sent"].to_numpy(), dtype=np.int32),
        np.asarray(probes["lost"].to_numpy(), dtype=np.int32),
        np.asarray(probes["rtt_us"].to_numpy(zero_copy_only=False), dtype=np.float32),
    )


def _probe_keys(fabric: OpsFabric, probes: pa.Table | ProbeRows) -> ProbeRows:
    return probes if isinstance(probes, ProbeRows) else probe_rows(fabric, probes)


def store_probe_rows(
    fabric: OpsFabric,
    store: TelemetryStore,
    start_ms: int | None = None,
    end_ms: int | None = None,
    *,
    resolution: Resolution = "raw",
) -> ProbeRows:
    """The probe rows of a telemetry store's window as :class:`ProbeRows`, read without
    their names: the distinct series first (their keys and paths), then the rows' times and
    counts in batches into narrow arrays, sorted by time and key (so that every sum over them
    is made in one order: deterministic)."""
    series = store.probe_series(start_ms, end_ms, resolution=resolution)
    src, dst, port, ev, paths, key_of = _keys(fabric, series)
    n, batches = store.probe_values(series, start_ms, end_ms, resolution=resolution)
    key = np.empty(n, dtype=np.int32)
    ts = np.empty(n, dtype=np.int64)
    sent = np.empty(n, dtype=np.int32)
    lost = np.empty(n, dtype=np.int32)
    rtt = np.empty(n, dtype=np.float32)
    at = 0
    for b in batches:
        m = b.num_rows
        key[at : at + m] = key_of[np.asarray(b.column(1).to_numpy(), dtype=np.int64)]
        ts[at : at + m] = np.asarray(b.column(0).to_numpy(), dtype=np.int64)
        sent[at : at + m] = np.asarray(b.column(2).to_numpy(), dtype=np.int32)
        lost[at : at + m] = np.asarray(b.column(3).to_numpy(), dtype=np.int32)
        rtt[at : at + m] = np.asarray(b.column(4).to_numpy(zero_copy_only=False), dtype=np.float32)
        at += m
    if at != n:  # the store changed between the count and the read
        raise SpecError([Problem(str(store.path), "probes changed while being read: retry")])
    order = np.lexsort((key, ts))
    key, ts, sent, lost, rtt = key[order], ts[order], sent[order], lost[order], rtt[order]
    del order
    return ProbeRows(src, dst, port, ev, paths, key, ts, sent, lost, rtt)


def _key_name(fabric: OpsFabric, p: _Probes, k: int) -> str:
    """``src device:interface>dst device:interface#ev`` of key ``k`` (a dead EV's target)."""
    s = fabric.endpoint(int(p.src[k]), int(p.port[k]))
    d = fabric.endpoint(int(p.dst[k]), int(p.port[k]))
    return f"{s[0]}:{s[1]}>{d[0]}:{d[1]}#{int(p.ev[k])}"


@dataclass
class _Board:
    """Suspects gathered by target, their evidence combined (noisy-or of confidences)."""

    items: dict[tuple[SuspectKind, str], Suspect] = field(default_factory=dict)
    #: targets whose fault kind the link state in the counters settled (down, flapping)
    settled: set[tuple[SuspectKind, str]] = field(default_factory=set)

    def add(self, s: Suspect, *, settles: bool = False) -> None:
        k = (s.kind, s.target)
        old = self.items.get(k)
        if old is None or (settles and k not in self.settled):
            if old is not None:
                s = replace(s, confidence=1.0 - (1.0 - old.confidence) * (1.0 - s.confidence))
                s = replace(s, evidence=s.evidence + old.evidence)
            self.items[k] = s
            if settles:
                self.settled.add(k)
            return
        conf = 1.0 - (1.0 - old.confidence) * (1.0 - s.confidence)
        fault = old.fault if old.confidence >= s.confidence or k in self.settled else s.fault
        self.items[k] = replace(
            old,
            confidence=conf,
            fault=fault or old.fault or s.fault,
            explained=max(old.explained, s.explained),
            unexplained=min(old.unexplained, s.unexplained),
            first_ms=_min(old.first_ms, s.first_ms),
            last_ms=_max(old.last_ms, s.last_ms),
            evidence=old.evidence + s.evidence,
        )

    def ranked(self) -> tuple[Suspect, ...]:
        return _ranked(list(self.items.values()))


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _max(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


# -- from probes to suspects ----------------------------------------------------------------

#: base confidence of direct counter evidence: a link reported down, flapping, corrupting
#: frames; the rest scale it by ``1 - exp(-score)`` (``score`` 1 at the detection threshold)
BASE_STATE = 0.95
#: a link whose operational speed is below its design rate (its own exporter says so)
BASE_SPEED = 0.95
BASE_ERRORS = 0.9
BASE_RATE = 0.9
BASE_SKEW = 0.85
BASE_STRAGGLER = 0.8
BASE_CONGESTION = 0.97
#: a probe-loss suspect on a link showing load (and no errors or flaps) keeps this share
LOAD_DISCOUNT = 0.2
#: a switch-level anomaly present from the window's first interval (no onset) keeps this
PERSISTENT_DISCOUNT = 0.5
#: a probe-loss suspect on a link whose counters show no loss keeps this share
COUNTER_CLEAN_DISCOUNT = 0.3
#: drops counted on a link with no FEC errors, flaps, down or load (dropped at an output
#: port, not on the wire: a black hole such as a dead EV's bucket) keep this share as a
#: gray link's evidence
BLACK_HOLE_DISCOUNT = 0.3
#: a rank slower than its peers in its collectives (rather than late to them) keeps this
LONGER_DISCOUNT = 0.3
#: a port of a rank slower than its peers (one or two such ranks)
BASE_SLOW_RANK_PORT = 0.6
#: load on one link alone (a link slower than its rate)
BASE_LONE = 0.6


def _conf(score: float, base: float, persistent: bool = False) -> float:
    scale = PERSISTENT_DISCOUNT if persistent else 1.0
    return float(scale * base * -np.expm1(-max(score, 0.0)))


@dataclass(frozen=True)
class _Tomo:
    """The probe evidence of a window: loss and delay per directed link, dead EVs."""

    loss: list[Suspect]  # per physical link (label), fault from the time pattern
    dead_ev: list[Suspect]
    delay: F64  # per directed link, microseconds
    delay_share: F64
    delay_onset: NDArray[np.bool_]  # per directed link: its delay begins inside the window


def _intervals(p: _Probes) -> tuple[I64, I64]:
    return _factorize(p.ts)


def _cleared_by(
    p: ProbeRows, t_idx: I64, n_t: int, rows: I64, clean: NDArray[np.bool_] | None = None
) -> F64:
    """For each of ``rows``: the fewest probes that other, clean rows (lost at most
    :data:`CLEAR_SHARE`) sent in the same interval over any one link of its path; a link
    whose counters show no loss (``clean``) counts as cleared. Interval by interval (only
    those with ``rows``), so that only one interval's paths are ever expanded."""
    n_dir = int(p.paths.max(initial=-1)) + 1
    out = np.full(rows.size, np.inf)
    if rows.size == 0 or n_dir == 0:
        return out
    good = np.flatnonzero((p.sent > 0) & (p.lost <= CLEAR_SHARE * p.sent))
    good = good[np.argsort(t_idx[good], kind="stable")]
    g_t = t_idx[good]
    r_order = np.argsort(t_idx[rows], kind="stable")
    r_t = t_idx[rows][r_order]
    for t in np.unique(r_t).tolist():
        g = good[np.searchsorted(g_t, t, "left") : np.searchsorted(g_t, t, "right")]
        links_c = p.paths[p.key[g]]
        on = links_c >= 0
        sums = np.bincount(
            links_c[on],
            weights=np.broadcast_to(p.sent[g, None], links_c.shape)[on].astype(np.float64),
            minlength=n_dir,
        )
        mine = r_order[np.searchsorted(r_t, t, "left") : np.searchsorted(r_t, t, "right")]
        links_d = p.paths[p.key[rows[mine]]]
        got = np.where(links_d >= 0, sums[np.maximum(links_d, 0)], np.inf)
        if clean is not None:
            got = np.where(clean[np.maximum(links_d, 0)] & (links_d >= 0), np.inf, got)
        out[mine] = got.min(axis=1)
    return out


def _dead_evs(
    fabric: OpsFabric,
    p: _Probes,
    t_idx: I64,
    n_t: int,
    clean: NDArray[np.bool_] | None = None,
    holes: I64 | None = None,
) -> tuple[NDArray[np.bool_], list[Suspect]]:
    """Keys whose probes were (almost) all lost in intervals where every link of their path
    was cleared by other probes (at least :data:`CLEAR_MIN` of them): their EV's path
    black-holes, not a link. A key is dead when at least half of its dead intervals are so
    cleared; its lossy rows are explained (taken out of the link fit). The dead keys of one EV
    are then placed (:func:`_dead_ev_switches`): on the switches every one of them crosses and
    no live probe of that EV does (``switch#EV``), else on their own pair (``src>dst#EV``).
    Confidence: the share of the dead intervals cleared times ``1 - 2**-n`` for ``n`` such
    intervals, split evenly among switches no probe tells apart."""
    dead = (p.sent > 0) & (p.lost >= DEAD_SHARE * p.sent)
    if not dead.any():
        return np.zeros(p.key.size, dtype=bool), []
    rows_d = np.flatnonzero(dead)
    ev_only = np.zeros(p.key.size, dtype=bool)
    ev_only[rows_d] = _cleared_by(p, t_idx, n_t, rows_d, clean) >= CLEAR_MIN
    n_keys = p.src.size
    dead_k = np.bincount(p.key[dead], minlength=n_keys)
    only_k = np.bincount(p.key[ev_only], minlength=n_keys)
    is_dead = (only_k > 0) & (only_k * 2 >= dead_k)
    explained = is_dead[p.key] & (p.lost > 0)
    lossy_k = np.bincount(p.key[p.lost > 0], minlength=n_keys) > 0
    out: list[Suspect] = []
    for ev in np.unique(p.ev[is_dead]).tolist():
        keys = np.flatnonzero(is_dead & (p.ev == ev))
        n = int(only_k[keys].sum())
        conf = float(only_k[keys].sum() / dead_k[keys].sum() * (1.0 - 0.5 ** min(n, 50)))
        switches = _dead_ev_switches(fabric, p, keys, (p.ev == ev) & ~lossy_k, holes)
        if switches:  # every dead probe of this EV crossing them is theirs, cleared or not
            crossing = _crosses(fabric, p, (p.ev == ev) & (dead_k > 0), switches)
            keys = np.union1d(keys, crossing)
            explained |= np.isin(p.key, crossing) & (p.lost > 0)
        rows = explained & np.isin(p.key, keys)
        first, last = int(p.ts[rows].min()), int(p.ts[rows].max())
        what = (
            f"probes: EV {ev} of {keys.size} probe pair(s) lost in {n} interval(s) while "
            "other probes cleared every link of their paths"
        )
        if switches:
            for sw in switches:
                how = (
                    f"{sw} drops at an output port with a clean wire that every one crosses "
                    f"and no live probe of EV {ev} leaves by"
                    if holes is not None and holes.size and _leaves(fabric, holes, sw)
                    else f"every one crosses {sw}, no live probe of EV {ev} does"
                )
                evidence = (f"{what}; {how}",)
                out.append(
                    Suspect(
                        SuspectKind.EV,
                        f"{sw}#{ev}",
                        conf / len(switches),
                        FaultKind.DEAD_EV,
                        int(keys.size),
                        0,
                        first,
                        last,
                        evidence,
                    )
                )
            continue
        for k in keys.tolist():
            ts = p.ts[explained & (p.key == k)]
            out.append(
                Suspect(
                    SuspectKind.EV,
                    _key_name(fabric, p, k),
                    conf,
                    FaultKind.DEAD_EV,
                    int(only_k[k]),
                    int(dead_k[k] - only_k[k]),
                    int(ts.min()),
                    int(ts.max()),
                    (what,),
                )
            )
    return explained, out


def _leaves(fabric: OpsFabric, holes: I64, switch: str) -> bool:
    """Whether one of the directed links ``holes`` is sent by ``switch``."""
    t = fabric.topology
    ends = np.where(holes % 2 == 0, t.link_src[holes // 2], t.link_dst[holes // 2])
    return switch in set(fabric.names.device(ends).tolist())


def _crosses(fabric: OpsFabric, p: _Probes, keys: NDArray[np.bool_], switches: list[str]) -> I64:
    """The keys among ``keys`` whose way out crosses one of ``switches``."""
    t = fabric.topology
    idx = np.flatnonzero(keys)
    names = set(switches)
    nodes = np.flatnonzero(np.isin(fabric.names.device(np.arange(t.n_nodes)), list(names)))
    out = p.paths[idx, : p.paths.shape[1] // 2]
    links = np.where(out >= 0, out // 2, 0)
    on = np.isin(t.link_src[links], nodes) | np.isin(t.link_dst[links], nodes)
    return np.asarray(idx[(on & (out >= 0)).any(axis=1)], dtype=np.int64)


def _dead_ev_switches(
    fabric: OpsFabric,
    p: _Probes,
    dead_keys: I64,
    live_keys: NDArray[np.bool_],
    holes: I64 | None = None,
) -> list[str]:
    """The switches on the paths (out or back) of every one of ``dead_keys`` (at least two)
    that no key of ``live_keys`` (same EV, nothing lost) crosses on its way out (a switch
    black-holing an EV drops the probes it forwards; whether it also drops the replies with
    that EV is left open, so a live key crossing it on the way back does not clear it).

    First, ``holes`` (directed links whose sending port counts drops with a clean wire: no
    FEC errors, flaps or down): the sending switch of such a port that every dead key's way
    out (or back) crosses and no live key's way out does, for any number of dead keys. A dead
    bucket is one entry of one hop's hash (a spine's uplinks hash under another seed than
    its downlinks), so the same EV may leave that switch alive by another port: the port
    says which switch dropped it."""
    t = fabric.topology
    if holes is not None and holes.size and dead_keys.size:
        half = p.paths.shape[1] // 2
        d_all = p.paths[dead_keys]
        d_out = p.paths[np.flatnonzero(live_keys), :half]
        through = np.array([(d_all == h).any(axis=1).all() for h in holes.tolist()])
        live = np.array([(d_out == h).any() for h in holes.tolist()])
        hit = holes[through & ~live]
        if hit.size:  # the evidence names the port (``_dead_evs``: "drops at ...")
            ends = np.where(hit % 2 == 0, t.link_src[hit // 2], t.link_dst[hit // 2])
            return sorted({str(x) for x in fabric.names.device(ends).tolist()})
    if dead_keys.size < 2:
        return []
    n_nodes = int(t.n_nodes)

    def nodes(keys: I64, forward: bool = False) -> I64:
        d = p.paths[keys, : p.paths.shape[1] // 2] if forward else p.paths[keys]
        k = np.broadcast_to(np.arange(keys.size)[:, None], d.shape)[d >= 0]
        links = d[d >= 0] // 2
        pairs = np.concatenate(
            [k * n_nodes + t.link_src[links], k * n_nodes + t.link_dst[links]]
        ).astype(np.int64)
        return np.asarray(np.unique(pairs) % n_nodes, dtype=np.int64)

    through = np.bincount(nodes(dead_keys), minlength=n_nodes)
    live = np.bincount(nodes(np.flatnonzero(live_keys), forward=True), minlength=n_nodes)
    role = np.asarray(t.node_role)
    hit = np.flatnonzero((through == dead_keys.size) & (live == 0) & (role != 0))
    return [str(x) for x in fabric.names.device(hit).tolist()]


def _time_fault(
    p: _Probes, on_key: NDArray[np.bool_], t_idx: I64, tu: I64, among: I64
) -> tuple[FaultKind, int, int, str]:
    """The loss pattern of the probes through one element over the intervals: everything
    lost from the first loss to the end (dead, at least two intervals), bursts (an interval
    losing at least half, and loss in at most half of the intervals or the median interval
    of the span losing less than half: flapping), or steady (gray). ``among`` are the rows
    that may be on ``on_key`` (every row of a key that lost a probe), so that each suspect
    gathers only those, not every row."""
    rows = among[on_key[p.key[among]]]
    s = np.bincount(t_idx[rows], weights=p.sent[rows], minlength=tu.size)
    lo = np.bincount(t_idx[rows], weights=p.lost[rows], minlength=tu.size)
    seen = s > 0
    frac = np.where(seen, lo / np.maximum(s, 1e-12), 0.0)
    lossy = np.flatnonzero(frac > 0)
    if lossy.size == 0:
        return FaultKind.GRAY_LINK, int(tu[0]), int(tu[-1]), "steady loss"
    a, b = int(lossy[0]), int(lossy[-1])
    first, last = int(tu[a]), int(tu[b])
    tail = frac[a:][seen[a:]]
    if tail.size >= 2 and bool((tail >= DEAD_SHARE).all()):
        return FaultKind.DEAD_LINK, first, last, "every probe lost from the first loss on"
    span = frac[a : b + 1][seen[a : b + 1]]
    intermittent = lossy.size * 2 <= int(seen.sum()) or float(np.median(span)) < 0.5
    if bool((span >= 0.5).any()) and intermittent:
        return FaultKind.FLAPPING_LINK, first, last, "loss in bursts"
    return FaultKind.GRAY_LINK, first, last, "steady loss"


def _probe_evidence(
    fabric: OpsFabric,
    probes: pa.Table | ProbeRows,
    clean: NDArray[np.bool_] | None = None,
    holes: I64 | None = None,
) -> _Tomo:
    """The probes' evidence; ``clean`` marks directed links whose counters show no loss,
    ``holes`` the directed links whose sending port drops with a clean wire."""
    p = _probe_keys(fabric, probes)
    n_dir = 2 * fabric.topology.n_links
    tu, t_idx = _intervals(p)
    explained, dead_ev = _dead_evs(fabric, p, t_idx, int(tu.size), clean, holes)
    n_keys = p.src.size
    use = ~explained
    sent_k = np.asarray(np.bincount(p.key[use], weights=p.sent[use], minlength=n_keys), float)
    lost_k = np.asarray(np.bincount(p.key[use], weights=p.lost[use], minlength=n_keys), float)
    a = _incidence(p.paths, n_dir)
    fit = fit_loss(a, sent_k, lost_k)
    conf = fit.confidence()
    csc = a.tocsc()
    by_link: dict[int, Suspect] = {}
    lossy_key = lost_k > 0
    among = np.flatnonzero(lossy_key[p.key])
    for e in fit.suspects()[:MAX_LINK_SUSPECTS].tolist():
        on_key = np.zeros(n_keys, dtype=bool)
        on_key[csc.indices[csc.indptr[e] : csc.indptr[e + 1]]] = True
        # the time pattern of the probes that carry the evidence: those through it that lost
        kind, first, last, how = _time_fault(p, on_key & lossy_key, t_idx, tu, among)
        link = e // 2
        s = Suspect(
            SuspectKind.LINK,
            fabric.link_label(link),
            float(conf[e]),
            kind,
            int(fit.bad_on[e]),
            int(fit.bad - fit.bad_on[e]),
            first,
            last,
            (
                f"probes: loss {fit.loss[e]:.3g} {'up' if e % 2 == 0 else 'down'} the link "
                f"over {int(fit.bad_on[e])} lossy probe paths, {how} (likelihood ratio "
                f"{fit.lr[e]:.0f}, 007 votes {fit.votes[e]:.1f})",
            ),
        )
        old = by_link.get(link)
        if old is not None:  # both directions: one physical link, their shares add up
            best = old if old.confidence >= s.confidence else s
            s = replace(
                best,
                confidence=min(old.confidence + s.confidence, 1.0),
                explained=max(old.explained, s.explained),
                unexplained=min(old.unexplained, s.unexplained),
                evidence=old.evidence + s.evidence,
            )
        by_link[link] = s
    # RTT excess per key: its mean RTT above the 10th percentile of keys of as many hops
    rtt_ok = ~np.isnan(p.rtt) & use
    rs = np.bincount(p.key[rtt_ok], weights=p.rtt[rtt_ok], minlength=n_keys)
    rc = np.bincount(p.key[rtt_ok], minlength=n_keys)
    mean = np.where(rc > 0, rs / np.maximum(rc, 1), np.nan)
    hops = (p.paths >= 0).sum(axis=1)
    excess = np.full(n_keys, np.nan)
    for h in np.unique(hops).tolist():
        sel = (hops == h) & ~np.isnan(mean)
        if sel.any():
            excess[sel] = mean[sel] - np.percentile(mean[sel], 10)
    delay = fit_delay(a, excess)
    # the RTT excess of each row (against its key's hop count's floor), per interval over
    # the keys through each slow element: has its delay an onset inside the window?
    floor = mean - excess
    row_x = np.where(rtt_ok, p.rtt - floor[p.key], np.nan)
    onset = np.zeros(n_dir, dtype=bool)
    for e in np.flatnonzero(delay > DELAY_MIN_US).tolist():
        on_key = np.zeros(n_keys, dtype=bool)
        on_key[csc.indices[csc.indptr[e] : csc.indptr[e + 1]]] = True
        rows = np.flatnonzero(on_key[p.key] & rtt_ok)
        onset[e] = _delay_onset(t_idx[rows], row_x[rows], int(tu.size))
    return _Tomo(list(by_link.values()), dead_ev, delay, delay_share(a, excess, delay), onset)


def _far_delay(fabric: OpsFabric, delay: F64) -> F64:
    """Per directed link: the delay beyond which it is far beyond what its peers' queues
    give (the links of its tier): their median plus :data:`DELAY_FAR` times their spread
    (1.4826 median absolute deviations, at least :data:`DELAY_MIN_US`, as most links of a
    window fit no delay at all)."""
    tier = np.repeat(np.asarray(fabric.topology.link_tier, dtype=np.int64), 2)
    out = np.full(delay.size, np.inf)
    for k in np.unique(tier).tolist():
        on = tier == k
        d = delay[on]
        med = float(np.median(d))
        spread = max(1.4826 * float(np.median(np.abs(d - med))), DELAY_MIN_US)
        out[on] = med + DELAY_FAR * spread
    return out


def _delay_onset(t: I64, x: F64, n_t: int) -> bool:
    """Whether the RTT excess ``x`` of the probes through an element (interval ``t`` of
    each) begins inside the window: its first interval below :data:`ONSET_SHARE` of the
    median over the intervals (as ``detect`` judges a counter's onset). A delay there from
    the first interval on is the state the window began in: on a healthy fabric, the
    queues of its traffic's ECMP collisions."""
    c = np.bincount(t, minlength=n_t)
    m = np.bincount(t, weights=x, minlength=n_t) / np.maximum(c, 1)
    seen = c > 0
    if not seen[0] or int(seen.sum()) < 2:
        return False
    return bool(m[0] < ONSET_SHARE * float(np.median(m[seen])))


# -- combining the evidence -----------------------------------------------------------------


def _nic_target(fabric: OpsFabric, link: int) -> str:
    dev, ifs = fabric.end_names
    return f"{dev[link, 0]}:{ifs[link, 0]}"


def _device_name(fabric: OpsFabric, node: int) -> str:
    return str(fabric.names.device(np.array([node], dtype=np.int64))[0])


def _counter_suspect(fabric: OpsFabric, an: Anomaly, load: set[int]) -> Suspect | None:
    """The suspect one interface anomaly points to (None for load and skew: judged apart)."""
    if an.link is None or an.signal in LOAD_SIGNALS or an.signal is Signal.SKEW:
        return None
    tier = int(fabric.topology.link_tier[an.link])
    target, kind = fabric.link_label(an.link), SuspectKind.LINK
    if an.signal is Signal.DOWN:
        fault, conf = FaultKind.DEAD_LINK, BASE_STATE
    elif an.signal is Signal.FLAPS:
        fault, conf = FaultKind.FLAPPING_LINK, _conf(an.value, BASE_STATE)
    elif an.signal is Signal.FEC:
        fault, conf = FaultKind.GRAY_LINK, _conf(an.score, BASE_ERRORS)
    elif an.signal is Signal.DROPS:
        if an.link in load:  # the queue's drops: load, judged with the congestion
            return None
        fault, conf = FaultKind.GRAY_LINK, _conf(an.score, BASE_ERRORS)
    elif an.signal is Signal.LOW_RATE and tier == 1:
        target, kind = _nic_target(fabric, an.link), SuspectKind.PORT
        fault, conf = FaultKind.SLOW_NIC_PORT, _conf(an.score, BASE_RATE)
    elif an.signal is Signal.LOW_RATE:
        fault, conf = FaultKind.GRAY_LINK, _conf(an.score, BASE_RATE)
    elif an.signal is Signal.SPEED:  # the exporter's own reading: no statistics to discount
        cap = float(fabric.topology.link_capacity_bps[an.link])
        said = (
            f"counters: operational speed at {an.where} {to_gbps(an.baseline * cap):.4g} Gb/s, "
            f"{an.baseline:.0%} of the design's {to_gbps(cap):.4g} Gb/s, in {an.intervals} "
            "interval(s): a link below its design speed (trained down to fewer lanes)"
        )
        return Suspect(
            kind,
            target,
            BASE_SPEED,
            FaultKind.GRAY_LINK,
            an.intervals,
            0,
            an.first_ms,
            an.last_ms,
            (said,),
        )
    else:
        return None
    evidence = (
        f"counters: {an.signal} at {an.where}: {an.value:.3g} {an.note} "
        f"(peers' median {an.baseline:.3g})"
    )
    return Suspect(kind, target, conf, fault, 1, 0, an.first_ms, an.last_ms, (evidence,))


def localise(
    fabric: OpsFabric,
    *,
    rates: pa.Table | None = None,
    probes: pa.Table | ProbeRows | None = None,
    collectives: pa.Table | None = None,
) -> Localisation:
    """Suspects for the symptoms in the telemetry given (any of the three tables; the probes
    also as :class:`ProbeRows`; the rates need only ``detect.RATE_COLUMNS_READ``), sorted by
    confidence; see the module's docstring for how each kind is told."""
    anomalies = detect(fabric, rates=rates, collectives=collectives)
    board = _Board()
    load: dict[int, list[Anomaly]] = {}
    faulty: set[int] = set()  # links with errors, flaps or down in the counters
    for an in anomalies:
        if an.link is not None and an.signal in LOAD_SIGNALS:
            load.setdefault(an.link, []).append(an)
        elif an.link is not None and an.signal in (Signal.FEC, Signal.FLAPS, Signal.DOWN):
            faulty.add(an.link)
    # a skewed switch's cold uplinks run below their peers because of its hashing
    t = fabric.topology
    skewed_nodes = {
        int(t.link_src[an.link])
        for an in anomalies
        if an.signal is Signal.SKEW and an.link is not None
    }
    # drops on a link with no FEC errors, flaps or down and no load: packets dropped at an
    # output port, not lost on the wire (a wire's loss shows as FEC errors at the receiver):
    # a black hole (a dead EV's bucket at that port), weak evidence of a gray link
    holes = {
        an.link
        for an in anomalies
        if an.signal is Signal.DROPS
        and an.link is not None
        and an.link not in faulty
        and an.link not in load
    }
    for an in anomalies:
        if an.signal is Signal.LOW_RATE and an.link is not None:
            if an.link in faulty:  # down or flapping: it carries less for that
                continue
            if int(t.link_src[an.link]) in skewed_nodes and int(t.link_tier[an.link]) >= 2:
                continue
        sus = _counter_suspect(fabric, an, set(load))
        if sus is not None and an.signal is Signal.DROPS and an.link in holes:
            sus = replace(
                sus,
                confidence=sus.confidence * BLACK_HOLE_DISCOUNT,
                evidence=(
                    *sus.evidence,
                    "no FEC errors and no wire loss on the link: dropped at an output port "
                    "(a black hole), not lost on the wire",
                ),
            )
        if sus is not None:
            board.add(sus, settles=an.signal in (Signal.DOWN, Signal.FLAPS))
    # links whose counters were given and show no loss of their own (no drops, FEC errors,
    # flaps or down): a loss of 90% would show there, so probes lost over them are lost to
    # the forwarding of their EV, not to the link
    clean: NDArray[np.bool_] | None = None
    if rates is not None and rates.num_rows:
        errors = {  # a black hole's drops are the port's, its wire is clean
            an.link
            for an in anomalies
            if an.link is not None
            and an.signal in (Signal.DROPS, Signal.FEC, Signal.FLAPS, Signal.DOWN)
            and an.link not in holes
        }
        clean_links = np.zeros(t.n_links, dtype=bool)
        clean_links[np.unique(np.asarray(rates["link"].to_numpy(), dtype=np.int64))] = True
        clean_links[list(errors)] = False
        clean = np.repeat(clean_links, 2)
    delay_links: dict[int, float] = {}
    delay_new: set[int] = set()  # with an onset in the window, or far beyond its peers'
    if probes is not None and probes.num_rows:
        hole_dirs = np.array(
            sorted(
                {
                    2 * an.link + int(an.end or 0)
                    for an in anomalies
                    if an.signal is Signal.DROPS and an.link in holes
                }
            ),
            dtype=np.int64,
        )
        tomo = _probe_evidence(fabric, probes, clean, hole_dirs)
        for sus in tomo.loss:
            link = fabric.link_of_label(sus.target)
            if link in load and link not in faulty:
                sus = replace(
                    sus,
                    confidence=sus.confidence * LOAD_DISCOUNT,
                    evidence=(*sus.evidence, "the link shows load (ECN, PFC, line rate)"),
                )
            elif clean is not None and clean[2 * link]:
                sus = replace(
                    sus,
                    confidence=sus.confidence * COUNTER_CLEAN_DISCOUNT,
                    evidence=(*sus.evidence, "its counters show no loss"),
                )
            board.add(sus)
        for sus in tomo.dead_ev:
            board.add(sus)
        far = _far_delay(fabric, tomo.delay)
        for e in np.flatnonzero(tomo.delay > DELAY_MIN_US).tolist():
            delay_links[e // 2] = max(delay_links.get(e // 2, 0.0), float(tomo.delay[e]))
            if tomo.delay_onset[e] or tomo.delay[e] > far[e]:
                delay_new.add(e // 2)
    congested = _congestion(fabric, anomalies, load, delay_links)
    congested = _pauses(fabric, anomalies, rates, load, congested, faulty, board)
    for sus in congested:
        board.add(sus)
    _mis_hashed(fabric, anomalies, {s.target for s in congested}, board)
    _lone_load(fabric, anomalies, load, {k: delay_links[k] for k in delay_new}, congested, board)
    _stragglers(fabric, anomalies, board, congested)
    return Localisation(board.ranked(), anomalies, bool(congested))


def _pauses(
    fabric: OpsFabric,
    anomalies: Sequence[Anomaly],
    rates: pa.Table | None,
    load: dict[int, list[Anomaly]],
    congested: list[Suspect],
    faulty: set[int],
    board: _Board,
) -> list[Suspect]:
    """PFC pauses followed downstream to the port whose queue sends them
    (``ops.pauses.pause_chains``), each chain's port a suspect; the congestion kept.

    A congested switch (a ``hot-switch``), a skewed one and its favourite uplink, links down
    or flapping explain the pauses that meet them. A switch called congested only for the
    load signals on its links (no ``hot-switch``) that are all pauses received, and that a
    chain passes through (pausing its feeds because it is paused itself, further down), is
    not congested: the chain explains its pauses. Any congestion left stops the chains
    again."""
    from clusterloom.ops.pauses import pause_chains

    t = fabric.topology
    names = fabric.names.device(np.arange(t.n_nodes))
    hot_names = {an.where for an in anomalies if an.signal is Signal.HOT_SWITCH}
    skews = [an for an in anomalies if an.signal is Signal.SKEW and an.link is not None]
    skewed = {int(t.link_src[an.link or 0]) for an in skews}
    fav = {int(an.link or 0) for an in skews}

    def stops(kept: Sequence[Suspect]) -> tuple[set[int], set[int]]:
        nodes = {int(np.flatnonzero(names == s.target)[0]) for s in kept} | skewed
        at = np.isin(t.link_src, list(nodes)) | np.isin(t.link_dst, list(nodes))
        return set(np.flatnonzero(at).tolist()) | faulty | fav, nodes

    firm = [s for s in congested if s.target in hot_names]
    links, nodes = stops(firm)
    chains = pause_chains(fabric, anomalies, rates, stop_links=links, stop_nodes=nodes)
    through = {int(n) for c in chains for n in c.nodes}
    kept = list(firm)
    for s in congested:
        if s.target in hot_names:
            continue
        node = int(np.flatnonzero(names == s.target)[0])
        mine = np.flatnonzero((t.link_src == node) | (t.link_dst == node)).tolist()
        signals = {an.signal for k in mine for an in load.get(k, [])}
        if node in through and signals <= {Signal.PFC}:
            continue  # paused because paused further down: the chain's port explains it
        kept.append(s)
    if len(kept) > len(firm):  # congestion left: its switches stop the chains too
        links, nodes = stops(kept)
        chains = pause_chains(fabric, anomalies, rates, stop_links=links, stop_nodes=nodes)
    for c in chains:
        if c.suspect is not None:
            board.add(c.suspect)
    return kept


def localise_store(
    fabric: OpsFabric,
    store: TelemetryStore,
    start_ms: int | None = None,
    end_ms: int | None = None,
    *,
    rates_resolution: Resolution = "1m",
    probes_resolution: Resolution = "raw",
    collectives: bool = True,
) -> Localisation:
    """:func:`localise` over a telemetry store's window (``start_ms <= ts_ms < end_ms``,
    default everything), reading only what it needs: the rates at ``rates_resolution`` (the
    1-minute rollup by default: a long window of raw 10-s rates is six times the rows), only
    the columns the detectors read (no names). A rollup resolution is grouped from the raw
    rates in the read (``TelemetryStore.rate_rollup``: by link, end and minute, integers
    only, the stored rollup's values, rows ordered by time, link and end), so the store need
    not be rolled up first (the full rollup is the retention's job); an hour whose raw rates
    have expired is read from its stored rollup. The probes at ``probes_resolution`` (raw by
    default: the time pattern of a flap needs its intervals) as :class:`ProbeRows`, read in
    batches into narrow arrays (``store_probe_rows``); the collectives as they are. The rates
    are read in a thread beside the probes (each read deterministic by itself, so the values
    are those of the two read one after the other), and Arrow allocates from ``malloc``
    meanwhile (``telemetry.system_pool``)."""
    from concurrent.futures import ThreadPoolExecutor

    from clusterloom.ops.detect import RATE_COLUMNS_READ
    from clusterloom.ops.telemetry import system_pool

    # the rates' read (a one-thread DuckDB grouping: its sums in a fixed order) runs beside the
    # probes' read in a thread of its own: both spend their time in DuckDB, Arrow and numpy,
    # which release the GIL, so the two cores work at once; each is what it was alone
    with system_pool():
        with ThreadPoolExecutor(max_workers=1) as pool:
            if rates_resolution == "raw":
                rates_read = pool.submit(
                    store.columns, "rates", RATE_COLUMNS_READ, start_ms, end_ms, resolution="raw"
                )
            else:
                rates_read = pool.submit(
                    store.rate_rollup,
                    RATE_COLUMNS_READ,
                    start_ms,
                    end_ms,
                    resolution=rates_resolution,
                )
            probes = store_probe_rows(fabric, store, start_ms, end_ms, resolution=probes_resolution)
            coll = store.collectives(start_ms, end_ms) if collectives else None
            rates = rates_read.result()
        return localise(
            fabric,
            rates=rates if rates.num_rows else None,
            probes=probes if probes.num_rows else None,
            collectives=coll if coll is not None and coll.num_rows else None,
        )


def _lone_load(
    fabric: OpsFabric,
    anomalies: Sequence[Anomaly],
    load: dict[int, list[Anomaly]],
    delay_links: dict[int, float],
    congested: Sequence[Suspect],
    board: _Board,
) -> None:
    """Links at their line rate (ECN/PFC marks, utilisation, RTT growth) that no congested
    switch or skewed uplink explains: a link running below its rate (``gray-link``), or on a
    host link a slow NIC port (``slow-nic-port``): the queue builds because the link is slow,
    not because the load is high. A switch link needs a symptom of its own beside its marks
    (line rate, a rate far below its peers', drops, queueing delay on its probes): ECMP
    collisions mark links of a healthy fabric from the window's start, so a switch link's ECN
    marks alone count only with an onset in the window (``persistent`` false); a host link's
    ECN marks (the queue toward one port) are enough for a slow NIC port; PFC pauses
    received alone never are (the queue is the pausing device's). ``delay_links`` holds only
    the delays that qualify (``localise``: an onset in the window, ``_delay_onset``, or far
    beyond the tier's peers, ``_far_delay``): a healthy window's collisions queue a few
    microseconds on some links from its start, which named a link at 0.07 before."""
    t = fabric.topology
    hot = set()
    for s in congested:
        node = np.flatnonzero(fabric.names.device(np.arange(t.n_nodes)) == s.target)
        hot |= set(np.flatnonzero(np.isin(t.link_src, node) | np.isin(t.link_dst, node)).tolist())
    fav = {an.link for an in anomalies if an.signal is Signal.SKEW and an.link is not None}
    # a symptom of the link's own beyond its queue's marks: its rate (line rate, or far
    # below its peers'), a loss, a delay on its probes
    own = set(delay_links) | {
        an.link
        for an in anomalies
        if an.link is not None and an.signal in (Signal.HOT, Signal.LOW_RATE, Signal.DROPS)
    }
    for link in sorted((set(load) | set(delay_links)) - hot - fav):
        marks = [an for an in load.get(link, []) if an.signal is not Signal.HOT_SWITCH]
        if link not in own:
            # pauses received are another device's queue, never this link's; marks alone on
            # a switch link are a collision's (ECMP's normal); on a host link, the queue
            # toward one port, a slow NIC port's
            ecn = [an for an in marks if an.signal is Signal.ECN]
            tier1 = int(t.link_tier[link]) == 1
            if not ((tier1 and ecn) or any(not an.persistent for an in ecn)):
                continue
        if marks:
            score = max(an.score for an in marks)
            persistent = all(an.persistent for an in marks)
            what = ", ".join(sorted({f"{an.signal} at {an.where}" for an in marks}))
        else:
            score, persistent, what = delay_links[link] / DELAY_MIN_US / 4, False, ""
        if link in delay_links:
            what += ("; " if what else "") + f"probes: {delay_links[link]:.1f} us of queueing"
        first = min((an.first_ms for an in marks), default=None)
        last = max((an.last_ms for an in marks), default=None)
        evidence = (f"load alone on this link ({what}): a link slower than its rate",)
        if int(t.link_tier[link]) == 1:
            target, kind, fault = (
                _nic_target(fabric, link),
                SuspectKind.PORT,
                FaultKind.SLOW_NIC_PORT,
            )
        else:
            target, kind, fault = fabric.link_label(link), SuspectKind.LINK, FaultKind.GRAY_LINK
        conf = _conf(score, BASE_LONE if marks else BASE_LONE / 2, persistent)
        board.add(Suspect(kind, target, conf, fault, len(marks), 0, first, last, evidence))


def _mis_hashed(
    fabric: OpsFabric, anomalies: Sequence[Anomaly], hot: set[str], board: _Board
) -> None:
    """Skewed switches, unless their busiest uplinks lead to one switch (load converging on
    it, as a congested spine draws it) or to a congested one."""
    skews = [an for an in anomalies if an.signal is Signal.SKEW and an.link is not None]
    t = fabric.topology
    upper = [_device_name(fabric, int(t.link_dst[an.link or 0])) for an in skews]
    for an, up in zip(skews, upper, strict=True):
        if up in hot or upper.count(up) >= 2:
            continue
        board.add(
            Suspect(
                SuspectKind.DEVICE,
                an.where,
                _conf(an.score, BASE_SKEW, an.persistent),
                FaultKind.MIS_HASHED_SWITCH,
                1,
                0,
                an.first_ms,
                an.last_ms,
                (f"counters: {an.note}",),
            )
        )


def _slow_ports_of(fabric: OpsFabric, an: Anomaly, n_longer: int, board: _Board) -> None:
    """The ports of a rank slow to communicate, as slow-NIC-port suspects (split over its
    ports and over the ranks so slow: the counters may show neither a slow port nor its
    queue when the port runs at the rate its flows get anyway)."""
    host = int(an.where.partition(":")[2])
    if not 0 <= host < fabric.topology.plan.hosts:
        return
    ports = fabric.host_ports
    conf = _conf(an.score, BASE_SLOW_RANK_PORT) / (ports * max(n_longer, 1))
    for port in range(ports):
        dev, ifname = fabric.endpoint(host, port)
        board.add(
            Suspect(
                SuspectKind.PORT,
                f"{dev}:{ifname}",
                conf,
                FaultKind.SLOW_NIC_PORT,
                an.intervals,
                0,
                an.first_ms,
                an.last_ms,
                (f"collectives: its rank {an.where} is slower than its peers ({an.note})",),
            )
        )


def _above(fabric: OpsFabric, host: int) -> set[str]:
    """The switches on some path up from ``host`` (links run up the tiers, host to leaf to
    spine to core): every switch its traffic may cross on its way out and back."""
    t = fabric.topology
    src, dst = np.asarray(t.link_src, dtype=np.int64), np.asarray(t.link_dst, dtype=np.int64)
    seen = np.zeros(int(t.n_nodes), dtype=bool)
    front = np.array([host], dtype=np.int64)
    while front.size:
        up = np.unique(dst[np.isin(src, front)])
        front = up[~seen[up]]
        seen[front] = True
    return {str(x) for x in fabric.names.device(np.flatnonzero(seen)).tolist()}


def _stragglers(
    fabric: OpsFabric,
    anomalies: Sequence[Anomaly],
    board: _Board,
    congested: Sequence[Suspect] = (),
) -> None:
    """Straggler ranks: one late to its collectives spends less time in them than its peers,
    who wait for it (full confidence); one that spends longer is slow to communicate (a port
    or a path: discounted), and discounted again when a slow port of its server explains
    it. A rank that spends longer while a congested switch (``congested``) lies on its
    server's paths is the congestion's, not a straggler: left out (a congested spine slowed
    four ranks of a fat-tree-k8 window so, named stragglers at 0.59; the ports of one or
    two such ranks stay suspects); a late rank is kept (congestion slows a rank's
    communication, not its arrival)."""
    port_hosts = {
        s.target.partition(":")[0] for s in board.items.values() if s.kind is SuspectKind.PORT
    }
    hot = {s.target for s in congested}
    # the ranks slower to communicate since an onset in the window, the most slowed: those
    # at least half as slowed as the slowest
    longer = [
        a for a in anomalies if a.signal is Signal.STRAGGLER and a.baseline > 0 and not a.persistent
    ]
    most = max((a.baseline for a in longer), default=0.0)
    longer = [a for a in longer if a.baseline >= 0.5 * most]
    # ranks slower to communicate from the window's first step, more than a slow port slows
    # (its rank and its peer's): the job's own traffic colliding on the fabric (ECMP), not a
    # fault of theirs (a healthy packet window of fat-tree-k8 slowed several ranks so, the
    # same in every step); each is left out, and so is every rank spending less time from
    # the first step: the other side of the same spread (its flows met no collision), which
    # cannot be told from a rank late since before the window
    persistent = [a for a in anomalies if a.signal is Signal.STRAGGLER and a.persistent]
    collided = sum(a.baseline > 0 for a in persistent) > 2
    skip = set(map(id, persistent)) if collided else set()
    for an in anomalies:
        if an.signal is not Signal.STRAGGLER or id(an) in skip:
            continue
        conf = _conf(an.score, BASE_STRAGGLER, an.persistent)
        evidence: tuple[str, ...] = (f"collectives: {an.note}",)
        if an.baseline > 0:  # longer: its communication is slow, a port or path, not it
            conf *= LONGER_DISCOUNT
            evidence += ("it spends longer than its peers: slow communication, not compute",)
            if an in longer and len(longer) <= 2:  # a slow port slows its rank and its peer's
                _slow_ports_of(fabric, an, len(longer), board)
            host = int(an.where.partition(":")[2])
            if hot and 0 <= host < fabric.topology.plan.hosts and hot & _above(fabric, host):
                continue  # its paths cross a congested switch: the congestion slows it
        if an.device in port_hosts:
            conf *= 0.5
            evidence += (f"its server {an.device} has a slow port",)
        board.add(
            Suspect(
                SuspectKind.RANK,
                an.where,
                conf,
                FaultKind.STRAGGLER_RANK,
                an.intervals,
                0,
                an.first_ms,
                an.last_ms,
                evidence,
            )
        )


def _congestion(
    fabric: OpsFabric,
    anomalies: Sequence[Anomaly],
    load: dict[int, list[Anomaly]],
    delay_links: dict[int, float],
) -> list[Suspect]:
    """Congested switches: one running far hotter than its peers (``hot-switch``), its links'
    ECN/PFC marks and RTT growth as support; without one, the switch whose links carry most
    of the load signals, if at least two of them do. A skewed switch (mis-hashing) is not
    congested: its load is its own hashing's."""
    t = fabric.topology
    skewed = {an.where for an in anomalies if an.signal is Signal.SKEW}
    fav = {an.link for an in anomalies if an.signal is Signal.SKEW and an.link is not None}
    links = np.asarray(sorted((set(load) | set(delay_links)) - fav), dtype=np.int64)
    hot = [an for an in anomalies if an.signal is Signal.HOT_SWITCH and an.where not in skewed]
    out: list[Suspect] = []
    for an in hot:
        node = int(np.flatnonzero(fabric.names.device(np.arange(t.n_nodes)) == an.where)[0])
        mine = links[(t.link_src[links] == node) | (t.link_dst[links] == node)].tolist()
        signals = sorted({str(x.signal) for k in mine for x in load.get(k, [])})
        if any(k in delay_links for k in mine):
            signals.append("RTT growth")
        out.append(
            Suspect(
                SuspectKind.CONGESTION,
                an.where,
                _conf(an.score, BASE_CONGESTION, an.persistent),
                FaultKind.CONGESTED_SPINE,
                an.intervals,
                0,
                an.first_ms,
                an.last_ms,
                (
                    f"counters: {an.note}"
                    + (f"; on {len(mine)} of its links: {', '.join(signals)}" if mine else ""),
                ),
            )
        )
    if out or links.size < 2:
        return out
    ends = np.concatenate([t.link_src[links], t.link_dst[links]]).astype(np.int64)
    ends = ends[np.asarray(t.node_role)[ends] != 0]  # switches only
    if ends.size == 0:
        return []
    counts = np.bincount(ends)
    best = int(np.argmax(counts))
    n_best = int(counts[best])
    name = _device_name(fabric, best)
    degree = int(((t.link_src == best) | (t.link_dst == best)).sum())
    if n_best < 2 or name in skewed or 2 * n_best < degree:
        return []
    mine = links[(t.link_src[links] == best) | (t.link_dst[links] == best)].tolist()
    signals = sorted({str(an.signal) for k in mine for an in load.get(k, [])})
    if any(k in delay_links for k in mine):
        signals.append("RTT growth")
    spans = [an for k in mine for an in load.get(k, [])]
    rest = int(links.size) - n_best
    return [
        Suspect(
            SuspectKind.CONGESTION,
            name,
            BASE_CONGESTION * n_best / int(links.size),
            FaultKind.CONGESTED_SPINE,
            n_best,
            rest,
            min((an.first_ms for an in spans), default=None),
            max((an.last_ms for an in spans), default=None),
            (f"load on {n_best} of its links ({', '.join(signals)}), on {rest} elsewhere",),
        )
    ]


def suspect_dict(s: Suspect) -> dict[str, object]:
    """A suspect as JSON-ready data."""
    return {
        "kind": str(s.kind),
        "target": s.target,
        "confidence": round(s.confidence, 6),
        "fault": None if s.fault is None else str(s.fault),
        "explained": s.explained,
        "unexplained": s.unexplained,
        "first_ms": s.first_ms,
        "last_ms": s.last_ms,
        "evidence": list(s.evidence),
    }


def localisation_dict(loc: Localisation) -> dict[str, object]:
    """A localisation as JSON-ready data: suspects, anomalies and the congestion verdict."""
    return {
        "congestion": loc.congestion,
        "suspects": [suspect_dict(s) for s in loc.suspects],
        "anomalies": [
            {
                "signal": str(a.signal),
                "where": a.where,
                "score": round(a.score, 6),
                "value": a.value,
                "baseline": a.baseline,
                "first_ms": a.first_ms,
                "last_ms": a.last_ms,
                "intervals": a.intervals,
                "note": a.note,
            }
            for a in loc.anomalies
        ],
    }
