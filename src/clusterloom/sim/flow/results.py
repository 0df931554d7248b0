"""Results of flow-level runs as tables: per-flow completion times, per-group (collective, op)
completion next to the ideal bound, and link utilisation over time; written as Parquet.

A run is one transport's :class:`~clusterloom.sim.flow.engine.SimResult` on one traffic, with the
nominal capacity (bytes/s) of every directed link (:class:`Run`). Times in the tables are
microseconds (float64, converted from the engine's integer picoseconds); a time that never
happened (a flow that did not finish before the run ended) is null.

Utilisation is load over *nominal* capacity, so a gray-failed link at half capacity shows at most
0.5 and a failed link 0. The engine's segments are piecewise constant; :func:`utilisation`
keeps them as a time series (max over all links, max and mean over the watched links) and
averages the watched links' utilisation, weighted by time, into fixed bins for a heat map.

Files (:func:`write_results`), one row per flow / group / segment / (bin, link), every run's rows
in the order the runs were given:

- ``flows.parquet``: transport, flow, src, dst, bytes, group, start_us, finish_us, fct_us;
- ``groups.parquet``: transport, group, name, flows, finished, bytes, start_us, finish_us,
  completion_us, ideal_us, vs_ideal (the row with a null group is the whole traffic);
- ``utilisation.parquet``: transport, start_us, end_us, max_util, watched_max_util,
  watched_mean_util;
- ``link_utilisation.parquet``: transport, bin, start_us, end_us, link, util (non-zero cells of
  the heat-map matrix; ``link`` is the directed link id, ``2i`` up and ``2i+1`` down).

The files are deterministic: the same runs give the same bytes (no timestamps are written; the
writer's version is, so bytes may differ between pyarrow releases).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from numpy.typing import NDArray
from scipy import sparse

from clusterloom.atomic import StrPath, atomic_open
from clusterloom.sim.flow.engine import SimResult
from clusterloom.sim.flow.run import Run
from clusterloom.sim.traffic import Traffic
from clusterloom.units import PS_PER_US

__all__ = [
    "FILES",
    "IDEAL",
    "Run",
    "Utilisation",
    "Window",
    "busy_end_ps",
    "flow_table",
    "grid",
    "group_table",
    "link_utilisation_table",
    "time_window",
    "utilisation",
    "utilisation_table",
    "utilisations",
    "write_results",
]

#: The transport whose completion is the bound the others are compared with.
IDEAL = "ideal"
#: Default number of time bins of the heat-map matrix.
BINS = 100
#: The files :func:`write_results` writes, in order.
FILES = ("flows.parquet", "groups.parquet", "utilisation.parquet", "link_utilisation.parquet")

_F64 = NDArray[np.float64]
_I64 = NDArray[np.int64]


def _us(ps: _I64) -> pa.Array:
    """Picoseconds to microseconds; negative (never) becomes null."""
    return pa.array(ps / PS_PER_US, type=pa.float64(), mask=ps < 0)


def _nullable(x: _F64) -> pa.Array:
    return pa.array(x, type=pa.float64(), mask=np.isnan(x))


def _names(n: int, name: str) -> pa.Array:
    return pa.array([name] * n, type=pa.string())


# --------------------------------------------------------------------------------------------
# flows and groups


def flow_table(traffic: Traffic, result: SimResult, transport_name: str) -> pa.Table:
    """One row per flow: who, how many (application) bytes, when it started and finished."""
    n = len(traffic)
    if result.finish_ps.shape[0] != n:
        raise ValueError(f"the result has {result.finish_ps.shape[0]} flows, the traffic {n}")
    done = result.finish_ps >= 0
    return pa.table(
        {
            "transport": _names(n, transport_name),
            "flow": pa.array(np.arange(n, dtype=np.int64)),
            "src": pa.array(traffic.src, type=pa.int32()),
            "dst": pa.array(traffic.dst, type=pa.int32()),
            "bytes": pa.array(traffic.nbytes, type=pa.int64()),
            "group": pa.array(traffic.group, type=pa.int32(), mask=traffic.group < 0),
            "start_us": _us(result.start_ps),
            "finish_us": _us(result.finish_ps),
            "fct_us": _us(np.where(done, result.finish_ps - result.start_ps, -1)),
        }
    )


@dataclass(frozen=True)
class _Groups:
    """Per group (the last row: all flows) of one run."""

    flows: _I64
    finished: _I64
    nbytes: _I64
    start_ps: _I64  # -1: nothing started
    finish_ps: _I64  # -1: not every flow finished


def _groups(traffic: Traffic, result: SimResult, width: int) -> _Groups:
    g = np.where(traffic.group >= 0, traffic.group.astype(np.int64), width)
    every = np.concatenate([g, np.full(len(traffic), width + 1, dtype=np.int64)])
    start = np.concatenate([result.start_ps, result.start_ps])
    finish = np.concatenate([result.finish_ps, result.finish_ps])
    nbytes = np.concatenate([traffic.nbytes, traffic.nbytes])
    rows = width + 2  # the groups, untagged flows, all flows
    flows = np.bincount(every, minlength=rows).astype(np.int64)
    finished = np.bincount(every, weights=finish >= 0, minlength=rows).astype(np.int64)
    first = np.full(rows, np.iinfo(np.int64).max, dtype=np.int64)
    started = start >= 0
    np.minimum.at(first, every[started], start[started])
    last = np.full(rows, -1, dtype=np.int64)
    np.maximum.at(last, every, finish)
    keep = np.r_[np.arange(width), width + 1]  # drop the untagged row
    total = np.zeros(rows, dtype=np.int64)
    np.add.at(total, every, nbytes)
    first, complete = first[keep], (finished == flows)[keep]
    return _Groups(
        flows=flows[keep],
        finished=finished[keep],
        nbytes=total[keep],
        start_ps=np.where(first == np.iinfo(np.int64).max, -1, first),
        finish_ps=np.where(complete & (flows[keep] > 0), last[keep], -1),
    )


def _width(t: Traffic) -> int:
    return max(len(t.group_names), int(t.group.max(initial=-1)) + 1)


def group_table(runs: Sequence[Run], *, ideal_run: Run | None = None) -> pa.Table:
    """Per run and traffic group (``traffic.group``) the completion time, last finish minus
    first start, next to the ``ideal`` run's completion of the same group when there is one
    (``vs_ideal`` = completion / ideal); ``ideal_run`` is that run when it is not one of ``runs``
    (a packet prediction's flow-level bound; it gets no rows). Each run ends with a row of null
    group and name ``all flows``: the whole traffic (a step). Completion is null unless every
    flow of the group finished; groups without flows are left out."""
    per: list[tuple[Run, _Groups, int]] = []
    for run in runs:
        width = _width(run.traffic)
        per.append((run, _groups(run.traffic, run.result, width), width))
    ideal = next((x for x in per if x[0].transport == IDEAL), None)
    if ideal_run is not None:
        width = _width(ideal_run.traffic)
        ideal = (ideal_run, _groups(ideal_run.traffic, ideal_run.result, width), width)
    columns: dict[str, list[pa.Array]] = {}
    for run, gr, width in per:
        rows = np.flatnonzero(gr.flows > 0)
        completion = np.where(gr.finish_ps >= 0, gr.finish_ps - gr.start_ps, -1)[rows]
        bound = np.full(rows.shape[0], -1, dtype=np.int64)
        if ideal is not None and ideal[2] == width:
            ig = ideal[1]
            bound = np.where(ig.finish_ps >= 0, ig.finish_ps - ig.start_ps, -1)[rows]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(
                (completion >= 0) & (bound > 0), completion / np.maximum(bound, 1), np.nan
            )
        names = list(run.traffic.group_names) + [""] * (width - len(run.traffic.group_names))
        names.append("all flows")
        group_ids = np.append(np.arange(width, dtype=np.int64), -1)[rows]
        part = {
            "transport": _names(rows.shape[0], run.transport),
            "group": pa.array(group_ids, type=pa.int32(), mask=group_ids < 0),
            "name": pa.array([names[i] for i in rows], type=pa.string()),
            "flows": pa.array(gr.flows[rows], type=pa.int64()),
            "finished": pa.array(gr.finished[rows], type=pa.int64()),
            "bytes": pa.array(gr.nbytes[rows], type=pa.int64()),
            "start_us": _us(gr.start_ps[rows]),
            "finish_us": _us(gr.finish_ps[rows]),
            "completion_us": _us(completion),
            "ideal_us": _us(bound),
            "vs_ideal": _nullable(ratio),
        }
        for key, value in part.items():
            columns.setdefault(key, []).append(value)
    if not columns:
        raise ValueError("group_table needs at least one run")
    return pa.table({k: pa.concat_arrays(v) for k, v in columns.items()})


# --------------------------------------------------------------------------------------------
# utilisation


@dataclass(frozen=True, eq=False)
class Utilisation:
    """Link utilisation of one run (module docstring). Per segment: ``max_util`` over all
    links, ``watched_max``/``watched_mean`` over the watched links (NaN when none is watched).
    ``matrix[b, j]``: time-averaged utilisation of ``watch_links[j]`` in bin ``b``, the bins
    being ``[bin_edges_ps[b], bin_edges_ps[b + 1])``."""

    seg_start_ps: _I64
    seg_end_ps: _I64
    max_util: _F64
    watched_max: _F64
    watched_mean: _F64
    watch_links: _I64
    bin_edges_ps: _I64
    matrix: _F64

    @property
    def bins(self) -> int:
        return int(self.bin_edges_ps.shape[0]) - 1

    def binned_max(self, edges_ps: _I64) -> _F64:
        """The largest ``max_util`` of the segments overlapping each bin of ``edges_ps`` (0 for
        a bin no segment overlaps): a time series thinned without hiding peaks."""
        out = np.zeros(max(edges_ps.shape[0] - 1, 0))
        if out.size == 0 or self.seg_start_ps.size == 0:
            return out
        segs, bins, _ = _overlaps(self.seg_start_ps, self.seg_end_ps, edges_ps)
        np.maximum.at(out, bins, self.max_util[segs])
        return out


def _overlaps(start: _I64, end: _I64, edges: _I64) -> tuple[_I64, _I64, _I64]:
    """Every (segment, bin) pair that overlaps, with the overlap in ps."""
    n_bins = edges.shape[0] - 1
    first = np.clip(np.searchsorted(edges, start, side="right") - 1, 0, n_bins - 1)
    last = np.clip(np.searchsorted(edges, end, side="left") - 1, 0, n_bins - 1)
    counts = np.maximum(last - first + 1, 0)
    seg = np.repeat(np.arange(start.shape[0], dtype=np.int64), counts)
    offset = np.arange(seg.shape[0], dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    b = first[seg] + offset
    overlap = np.minimum(end[seg], edges[b + 1]) - np.maximum(start[seg], edges[b])
    keep = overlap > 0
    return seg[keep], b[keep], overlap[keep]


def grid(end_ps: int, bins: int = BINS) -> _I64:
    """``bins`` equal time bins from 0 to ``end_ps`` (at least 1 ps each), integer edges."""
    end = max(int(end_ps), bins)
    return np.rint(np.linspace(0, end, bins + 1)).astype(np.int64)


def utilisation(
    result: SimResult, capacity: _F64, *, bins: int = BINS, edges_ps: _I64 | None = None
) -> Utilisation:
    """The link-utilisation series and heat-map matrix of ``result`` (class docstring), on
    ``edges_ps`` or else ``bins`` equal bins over the run."""
    cap = np.asarray(capacity, dtype=np.float64)
    edges = grid(result.end_ps, bins) if edges_ps is None else np.asarray(edges_ps, np.int64)
    n_seg = result.n_segments
    watch = result.watch_links
    seg_of = np.repeat(np.arange(n_seg, dtype=np.int64), np.diff(result.seg_ptr))
    column = np.searchsorted(watch, result.seg_link)
    link_cap = cap[result.seg_link]
    util = np.divide(
        result.seg_load, link_cap, out=np.zeros_like(result.seg_load), where=link_cap > 0
    )
    loads = sparse.csr_matrix((util, (seg_of, column)), shape=(n_seg, watch.shape[0]))
    if watch.size:
        w_max = np.asarray(loads.max(axis=1).toarray(), dtype=np.float64).reshape(-1)
        w_mean = np.asarray(loads.sum(axis=1), dtype=np.float64).reshape(-1) / watch.shape[0]
    else:
        w_max = np.full(n_seg, np.nan)
        w_mean = np.full(n_seg, np.nan)
    n_bins = edges.shape[0] - 1
    matrix = np.zeros((n_bins, watch.shape[0]))
    if n_seg and n_bins and watch.size:
        segs, b, overlap = _overlaps(result.seg_start_ps, result.seg_end_ps, edges)
        width = np.diff(edges).astype(np.float64)
        weights = sparse.csr_matrix((overlap / width[b], (b, segs)), shape=(n_bins, n_seg))
        matrix = np.asarray((weights @ loads).toarray(), dtype=np.float64)
    return Utilisation(
        seg_start_ps=result.seg_start_ps,
        seg_end_ps=result.seg_end_ps,
        max_util=result.seg_max_util,
        watched_max=w_max,
        watched_mean=w_mean,
        watch_links=watch,
        bin_edges_ps=edges,
        matrix=matrix,
    )


def busy_end_ps(result: SimResult) -> int:
    """When the run stopped moving bytes: the last finish or the end of the last segment with
    any load, whichever is later (a run may go on to a reroute long after its last byte)."""
    busy = result.seg_end_ps[result.seg_max_util > 0]
    end = max(int(result.finish_ps.max(initial=-1)), int(busy.max(initial=-1)))
    return end if end > 0 else result.end_ps


#: A run counts towards the time window of the pictures when it stops moving bytes within this
#: factor of the run that stops first (a run held up by an assumed 1 s reroute does not).
WINDOW_FACTOR = 10


@dataclass(frozen=True)
class Window:
    """The time window worth drawing, from 0 to ``end_ps``: the latest :func:`busy_end_ps` of
    the runs that ended within :data:`WINDOW_FACTOR` times the earliest (and the marks, e.g.
    failures, inside that horizon). ``beyond`` names each run that went on past it, with its
    end: a long tail the pictures state in words instead of flattening every other run."""

    end_ps: int
    beyond: tuple[tuple[str, int], ...]


def time_window(runs: Sequence[Run], marks_ps: Sequence[int] = ()) -> Window:
    """The :class:`Window` of ``runs`` (``marks_ps``: times to keep in view when they fall
    within the horizon, such as failures)."""
    ends = [busy_end_ps(r.result) for r in runs]
    positive = [e for e in ends if e > 0]
    if not positive:
        return Window(max(ends, default=0), ())
    horizon = WINDOW_FACTOR * min(positive)
    inside = [e for e in ends if e <= horizon]
    inside += [int(t) for t in marks_ps if 0 <= t <= horizon]
    beyond = tuple((r.transport, e) for r, e in zip(runs, ends, strict=True) if e > horizon)
    return Window(max(inside), beyond)


def utilisations(runs: Sequence[Run], bins: int = BINS) -> list[Utilisation]:
    """:func:`utilisation` of every run on one grid: ``bins`` equal bins over the runs'
    :func:`time_window` and, when a run stays busy past it (a transport whose finish an
    assumed reaction dominates, such as ``roce-ecmp``'s 1 s reroute), one more bin from the
    window's end to the latest :func:`busy_end_ps`, so that run's tail does not stretch the
    bins of the others (with 100 bins to 1 s, every other transport fell in one 10 ms bin)."""
    latest = max((busy_end_ps(r.result) for r in runs), default=0)
    edges = grid(time_window(runs).end_ps if runs else 0, bins)
    if latest > edges[-1]:
        edges = np.append(edges, np.int64(latest))
    return [utilisation(r.result, r.capacity, edges_ps=edges) for r in runs]


def utilisation_table(transport: str, u: Utilisation) -> pa.Table:
    """One row per segment of the run."""
    n = u.seg_start_ps.shape[0]
    return pa.table(
        {
            "transport": _names(n, transport),
            "start_us": _us(u.seg_start_ps),
            "end_us": _us(u.seg_end_ps),
            "max_util": pa.array(u.max_util, type=pa.float64()),
            "watched_max_util": _nullable(u.watched_max),
            "watched_mean_util": _nullable(u.watched_mean),
        }
    )


def link_utilisation_table(transport: str, u: Utilisation) -> pa.Table:
    """The non-zero cells of the heat-map matrix, one row per (bin, link), bins first."""
    b, j = np.nonzero(u.matrix)
    return pa.table(
        {
            "transport": _names(b.shape[0], transport),
            "bin": pa.array(b.astype(np.int32), type=pa.int32()),
            "start_us": _us(u.bin_edges_ps[b]),
            "end_us": _us(u.bin_edges_ps[b + 1]),
            "link": pa.array(u.watch_links[j], type=pa.int64()),
            "util": pa.array(u.matrix[b, j], type=pa.float64()),
        }
    )


# --------------------------------------------------------------------------------------------
# files


def _concat(tables: list[pa.Table]) -> pa.Table:
    return pa.concat_tables(tables).combine_chunks()


def _write(table: pa.Table, path: Path) -> None:
    with atomic_open(path, "wb") as fh:
        pq.write_table(
            table,
            fh,
            compression="zstd",
            write_statistics=True,
            use_dictionary=True,
            store_schema=True,
        )


def write_results(
    out_dir: StrPath,
    runs: Sequence[Run],
    *,
    util: Sequence[Utilisation] | None = None,
    ideal_run: Run | None = None,
) -> list[Path]:
    """Write :data:`FILES` into ``out_dir`` (created if needed), each atomically; ``util`` are
    the runs' :func:`utilisations` when already computed, ``ideal_run`` the ideal run when it is
    not one of ``runs`` (:func:`group_table`). Returns the paths written.

    Raises ``ValueError`` without runs and ``OutputError`` when a file cannot be written."""
    runs = [Run(*r) for r in runs]
    if not runs:
        raise ValueError("write_results needs at least one run")
    util = utilisations(runs) if util is None else util
    pairs = list(zip(runs, util, strict=True))
    tables = [
        _concat([flow_table(r.traffic, r.result, r.transport) for r in runs]),
        group_table(runs, ideal_run=ideal_run),
        _concat([utilisation_table(r.transport, u) for r, u in pairs]),
        _concat([link_utilisation_table(r.transport, u) for r, u in pairs]),
    ]
    paths = [Path(out_dir) / name for name in FILES]
    for table, path in zip(tables, paths, strict=True):
        _write(table, path)
    return paths
