"""A deterministic, vectorized, event-driven FLUID simulator with max-min fair rates.

The engine knows nothing about topologies or transports. A transport hands it

- ``capacity``: bytes per second of every DIRECTED link (float64);
- a :class:`FlowSet`: bytes to move, earliest start (int64 picoseconds), dependencies (CSR) and
  how each flow's units share its bytes (split, coupled or pooled);
- a :class:`UnitSet`: the allocation units, CSR over links. Unit ``u`` belongs to flow
  ``unit_flow[u]``, crosses links ``unit_link[unit_ptr[u]:unit_ptr[u+1]]`` (each once, in path
  order) and carries the fraction ``unit_share[u]`` of its flow (per flow the shares sum to 1).

Max-min entities
    A *split* flow (the default) makes each unit its own entity carrying ``share * size``
    bytes; the flow completes when all its units have (several ECMP queue pairs). A *coupled*
    flow is ONE entity of rate ``r``; its load on link ``l`` is ``r`` times the sum of the
    shares of its units crossing ``l`` (a sprayed flow with a fixed split: its most congested
    path holds all of it back). A *pooled* flow makes each unit its own entity with weight
    ``share`` (rate ``share * level``) drawing on ONE pool of bytes: the flow completes when
    the sum of its units' rates has moved its size, so a congested unit slows only itself (a
    sprayer whose load balancer moves bytes to the paths that deliver them). With ``A[l, e]``
    the load on link ``l`` per unit rate of entity ``e``, rates come from progressive filling
    (water-filling): all unfrozen entities rise together, the first link(s) to saturate freeze
    the entities crossing them, repeat. Each round is a handful of numpy operations over CSR
    arrays (no per-entity Python loop). A link counts as saturated in a round when its
    saturation level is within a relative :data:`RTOL_SATURATED` (1e-9) of the round's level,
    so links that tie up to floating error freeze together. An entity crossing a zero-capacity
    link is stalled (rate 0) and does not hold others back, except a pooled unit whose flow
    still has a delivering unit: it is a black hole (it loads the links before the dead one
    and delivers nothing) until the transport reacts, as packets sprayed onto a dead path
    are. ``UnitSet.cap`` caps a unit's rate (bytes/s, e.g. a receiver-paced share); a coupled
    flow's rate is capped at ``min(cap[u] / share[u])`` over its units, so no unit ever
    exceeds its cap.

Refinements of the fill
    ``FlowSet.avoid`` (coupled flows): a bounded shift of the fixed split off paths that
    cross a congested link, re-filled :data:`AVOID_ROUNDS` times (``_Sim._avoid``).
    ``FlowSet.lossless`` (split flows): a PFC fabric without congestion control, input-port
    sharing and head-of-line blocking, re-filled at most :data:`LOSSLESS_ROUNDS` times
    (``_Sim._lossless``). Both start from the max-min fill at every allocation; docs/sim.md
    ("Path avoidance", "Lossless fabric") states their assumptions.

Events and time
    A flow is posted at ``max(start_ps, finish + notify_ps of every dependency)``; its bytes
    start moving ``head_ps`` later (a handshake, the wait for a first pull) and its reported
    finish is ``tail_ps`` after its fluid completion (the path's latency: the last byte still
    travelling), so its FCT is ``head + transfer + tail``; ``start_ps`` of the result is the
    posting time. (A callback sees a flow as done from its fluid completion.) Events are flow
    starts, completions and the caller's timed actions (:class:`SetCapacity`,
    :class:`Callback`). Rates are recomputed after every event and constant in between.
    Completion times are the exact fluid time rounded UP to the next picosecond (a remainder
    below :data:`ROUND_SLACK_PS` of a picosecond is floating error and is dropped), and at least
    one picosecond after the event that set the rates. Everything that would finish within
    :data:`COMPLETION_WINDOW_PS` (1 ps) after an event completes at that event, together; and
    with a rate tolerance ``rtol``, the next completions are batched at the latest of them such
    that none is more than ``rtol`` of its flow's completion time late (and none early).
    ``SimState.flow_rate`` is what a flow delivers; ``unit_rate`` what a unit puts on the wire
    (a black-holed unit's bytes are lost). Actions at the same time run in the order they were
    given (then scheduled); there is no randomness, and every tie is broken by index.

Link-load time series
    ``SimResult`` holds piecewise-constant segments ``[seg_start_ps, seg_end_ps)``, the largest
    utilisation over all links in each (``seg_max_util``), and per segment the load of the
    watched links, stored sparsely (only non-zero loads, CSR ``seg_ptr``/``seg_link``/
    ``seg_load``). ``watch_links=None`` watches every link, which costs memory in proportion to
    segments times loaded links; pass the few links of interest (or an empty array) to bound it.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray

from clusterloom.errors import ClusterloomError
from clusterloom.sim.flow import _fill
from clusterloom.units import PS_PER_S

__all__ = [
    "COMPLETION_WINDOW_PS",
    "ROUND_SLACK_PS",
    "RTOL_SATURATED",
    "SHARE_TOL",
    "Action",
    "Callback",
    "FlowSet",
    "Reroute",
    "SetCapacity",
    "SimInputError",
    "SimResult",
    "SimState",
    "UnitSet",
    "fct_percentiles",
    "frozen",
    "max_min_fair",
    "simulate",
]

#: Relative tolerance for "saturated": a link whose saturation level is within this fraction of
#: the lowest level of the round freezes in the same round.
RTOL_SATURATED = 1e-9
#: Allowed deviation of a flow's shares from 1.
SHARE_TOL = 1e-9
#: Everything finishing within this many picoseconds after an event completes with it.
COMPLETION_WINDOW_PS = 1
#: Fractions of a picosecond below this are floating error when rounding completion times up.
ROUND_SLACK_PS = 1e-3

#: At most this many refinements of a lossless allocation (``FlowSet.lossless``) per event.
LOSSLESS_ROUNDS = 8

#: Rounds of path avoidance of a coupled flow (``FlowSet.avoid``) per allocation.
AVOID_ROUNDS = 2
#: A link loaded within this fraction of its capacity counts as congested (marking) for
#: path avoidance, whatever the rate tolerance (up to half of it), so that exact and
#: tolerant runs see the same congested links.
AVOID_HOT = 0.02

#: A run reports its progress (``simulate(progress=...)``) every this many events.
PROGRESS_EVERY = 16

_NEVER = int(np.iinfo(np.int64).max)
_F64 = NDArray[np.float64]
_I64 = NDArray[np.int64]
_B = NDArray[np.bool_]


@contextlib.contextmanager
def small_pages() -> Iterator[None]:
    """numpy's large allocations without its transparent-huge-page hint inside the block.

    numpy marks every allocation of 4 MB or more ``MADV_HUGEPAGE``. Where the kernel's THP
    ``defrag`` setting is ``madvise`` (a common default), a fault in such a region that finds
    no free huge page stalls on synchronous reclaim and compaction instead of falling back
    to small pages (numpy issue 31590). The flow engine's build faults in about 0.8 GB of
    fresh arrays once per run; on the shared machine of ``bench/RESULTS.md`` the hint cost
    0.6 s of system time of 1.4 on the k=32 permutation, and dropping it 0.1 s of user time
    (more TLB misses). Results do not depend on it. The previous setting is restored on
    exit; without numpy's private toggle (``_set_madvise_hugepage``) nothing changes."""
    core = getattr(np, "_core", None)
    toggle: Callable[[bool], bool] | None = getattr(
        getattr(core, "multiarray", None), "_set_madvise_hugepage", None
    )
    if toggle is None:
        yield
        return
    before = toggle(False)
    try:
        yield
    finally:
        toggle(before)


class SimInputError(ClusterloomError, ValueError):
    """Inputs the simulator cannot use; the message names the flow, unit, link or action."""


def _owned(a: NDArray[Any]) -> bool:
    """``a`` holds its memory alone: it owns it, or numba's allocator does for it (an array
    a compiled function returned), possibly as a view of read-only arrays (``np.asarray``
    of an array numba made is a view of it), so no other array can write it."""
    base = a.base
    while isinstance(base, np.ndarray):
        if base.flags.writeable:
            return False
        base = base.base
    return base is None or type(base).__name__ == "_MemInfo"


def _ro(a: ArrayLike, dtype: Any) -> NDArray[Any]:
    """A read-only array of ``a``: ``a`` itself when it is already read-only and holds its
    memory alone (another input's, or one its maker froze), else a copy."""
    if (
        isinstance(a, np.ndarray)
        and a.dtype == dtype
        and not a.flags.writeable
        and a.flags.c_contiguous
        and _owned(a)
    ):
        return a
    out = np.array(a, dtype=dtype, copy=True)
    out.setflags(write=False)
    return out


def frozen(a: NDArray[Any]) -> NDArray[Any]:
    """``a`` made read-only, for a maker handing over an array it will not write again (the
    inputs' classes then keep it without a copy)."""
    a.setflags(write=False)
    return a


def _per(a: NDArray[Any], n: int) -> NDArray[Any]:
    """``a`` broadcast to ``n`` entries (itself when it has them)."""
    return a if a.shape == (n,) else np.broadcast_to(a, (n,))


def _ranges(ptr: _I64, rows: _I64) -> tuple[_I64, _I64]:
    """Positions of the CSR rows ``rows`` (concatenated) and each row's length."""
    starts = ptr[rows]
    counts = ptr[rows + 1] - starts
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64), counts
    first = np.repeat(starts - np.cumsum(counts) + counts, counts)
    return first + np.arange(total, dtype=np.int64), counts


def _csr_ptr(counts: ArrayLike) -> _I64:
    return np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]).astype(np.int64)


# --------------------------------------------------------------------------------------------
# inputs


@dataclass(frozen=True, eq=False)
class FlowSet:
    """Flows as arrays. ``dep_ptr``/``dep_idx``: CSR of the flows each flow waits for (empty =
    none); ``coupled``: one max-min entity per flow with a fixed split; ``pooled``: one
    entity per unit, weighted by its share, drawing on the flow's pool of bytes (empty = all
    false; a flow is at most one of the two; neither = split)."""

    size: _F64
    start_ps: _I64
    dep_ptr: _I64 = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    dep_idx: _I64 = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    coupled: _B = field(default_factory=lambda: np.empty(0, dtype=np.bool_))
    pooled: _B = field(default_factory=lambda: np.empty(0, dtype=np.bool_))
    head_ps: _I64 = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    tail_ps: _I64 = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    notify_ps: _I64 = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    lossless: _B = field(default_factory=lambda: np.empty(0, dtype=np.bool_))
    avoid: _F64 = field(default_factory=lambda: np.empty(0, dtype=np.float64))

    def __post_init__(self) -> None:
        size = np.atleast_1d(np.asarray(self.size, dtype=np.float64))
        n = size.shape[0]
        start = np.broadcast_to(np.asarray(self.start_ps, dtype=np.int64), (n,))
        delays = {}
        for name in ("head_ps", "tail_ps", "notify_ps"):
            d = np.asarray(getattr(self, name), dtype=np.int64)
            delays[name] = np.broadcast_to(d if d.size else np.zeros(1, np.int64), (n,))
        dep_ptr = np.asarray(self.dep_ptr, dtype=np.int64)
        if dep_ptr.size == 0:
            dep_ptr = np.zeros(n + 1, dtype=np.int64)
        coupled = np.asarray(self.coupled, dtype=np.bool_)
        if coupled.size == 0:
            coupled = np.zeros(n, dtype=np.bool_)
        coupled = np.broadcast_to(coupled, (n,))
        pooled = np.asarray(self.pooled, dtype=np.bool_)
        if pooled.size == 0:
            pooled = np.zeros(n, dtype=np.bool_)
        pooled = np.broadcast_to(pooled, (n,))
        lossless = np.asarray(self.lossless, dtype=np.bool_)
        if lossless.size == 0:
            lossless = np.zeros(n, dtype=np.bool_)
        lossless = np.broadcast_to(lossless, (n,))
        avoid = np.asarray(self.avoid, dtype=np.float64)
        if avoid.size == 0:
            avoid = np.zeros(n)
        avoid = np.broadcast_to(avoid, (n,))
        if size.ndim != 1 or dep_ptr.shape != (n + 1,):
            raise SimInputError(f"flows: dep_ptr needs {n + 1} entries, got {dep_ptr.shape}")
        both = np.flatnonzero(coupled & pooled)
        if both.size:
            raise SimInputError(f"flow {both[0]}: coupled and pooled at once; pick one")
        both = np.flatnonzero(lossless & (coupled | pooled))
        if both.size:
            raise SimInputError(f"flow {both[0]}: the lossless model takes split flows only")
        bad = np.flatnonzero(~((avoid >= 0) & (avoid < 1)) | ((avoid > 0) & ~coupled))
        if bad.size:
            raise SimInputError(
                f"flow {bad[0]}: avoid {avoid[bad[0]]} (in [0, 1), coupled flows only)"
            )
        for name, value in (
            ("size", size),
            ("start_ps", start),
            ("dep_ptr", dep_ptr),
            ("dep_idx", np.asarray(self.dep_idx, dtype=np.int64)),
            ("coupled", coupled),
            ("pooled", pooled),
            ("lossless", lossless),
            ("avoid", avoid),
            *delays.items(),
        ):
            object.__setattr__(self, name, _ro(value, value.dtype))

    @property
    def n_flows(self) -> int:
        return int(self.size.shape[0])

    @classmethod
    def create(
        cls,
        size: ArrayLike,
        *,
        start_ps: ArrayLike = 0,
        deps: Sequence[Sequence[int]] | None = None,
        coupled: ArrayLike = False,
        pooled: ArrayLike = False,
        head_ps: ArrayLike = 0,
        tail_ps: ArrayLike = 0,
        notify_ps: ArrayLike = 0,
        lossless: ArrayLike = False,
        avoid: ArrayLike = 0.0,
    ) -> FlowSet:
        """Convenience builder: ``deps[f]`` lists the flows ``f`` waits for."""
        n = np.atleast_1d(np.asarray(size)).shape[0]
        deps = deps if deps is not None else [[] for _ in range(n)]
        ptr = _csr_ptr([len(d) for d in deps])
        idx = np.array([i for d in deps for i in d], dtype=np.int64)
        return cls(
            size=np.asarray(size, dtype=np.float64),
            start_ps=np.asarray(start_ps, dtype=np.int64),
            dep_ptr=ptr,
            dep_idx=idx,
            coupled=np.broadcast_to(np.asarray(coupled, dtype=np.bool_), (n,)),
            pooled=np.broadcast_to(np.asarray(pooled, dtype=np.bool_), (n,)),
            head_ps=np.broadcast_to(np.asarray(head_ps, dtype=np.int64), (n,)),
            tail_ps=np.broadcast_to(np.asarray(tail_ps, dtype=np.int64), (n,)),
            notify_ps=np.broadcast_to(np.asarray(notify_ps, dtype=np.int64), (n,)),
            lossless=np.broadcast_to(np.asarray(lossless, dtype=np.bool_), (n,)),
            avoid=np.broadcast_to(np.asarray(avoid, dtype=np.float64), (n,)),
        )


@dataclass(frozen=True, eq=False)
class UnitSet:
    """Allocation units as CSR over links. ``cap``: per-unit rate cap in bytes/s (empty = no
    caps, ``inf`` = uncapped). ``link_weight``: per entry of ``unit_link``, the load the unit
    puts on that link per byte/s of its rate (empty = all 1; e.g. the ACKs and pulls a
    transport sends back on the reverse links, a small fraction of its rate). ``control``:
    per entry, True when it carries only such control packets, not the unit's data (empty =
    all False; the lossless model follows data entries only)."""

    unit_flow: _I64
    unit_ptr: _I64
    unit_link: _I64
    unit_share: _F64
    cap: _F64 = field(default_factory=lambda: np.empty(0, dtype=np.float64))
    link_weight: _F64 = field(default_factory=lambda: np.empty(0, dtype=np.float64))
    control: _B = field(default_factory=lambda: np.empty(0, dtype=np.bool_))

    def __post_init__(self) -> None:
        flow = np.atleast_1d(np.asarray(self.unit_flow, dtype=np.int64))
        n = flow.shape[0]
        ptr = np.asarray(self.unit_ptr, dtype=np.int64)
        link = np.asarray(self.unit_link, dtype=np.int64)
        share = _per(np.asarray(self.unit_share, dtype=np.float64), n)
        cap = np.asarray(self.cap, dtype=np.float64)
        if cap.size == 0:
            cap = frozen(np.full(n, np.inf))
        cap = _per(cap, n)
        weight = np.asarray(self.link_weight, dtype=np.float64)
        if weight.size == 0:  # made here, so kept without a copy
            weight = frozen(np.ones(link.shape[0]))
        if weight.shape != link.shape:
            raise SimInputError(f"units: link_weight needs {link.shape[0]} entries")
        control = np.asarray(self.control, dtype=np.bool_)
        if control.size == 0:
            control = frozen(np.zeros(link.shape[0], dtype=np.bool_))
        if control.shape != link.shape:
            raise SimInputError(f"units: control needs {link.shape[0]} entries")
        if ptr.shape != (n + 1,) or ptr[0] != 0 or ptr[-1] != link.shape[0]:
            raise SimInputError(
                f"units: unit_ptr must have {n + 1} entries from 0 to len(unit_link)"
            )
        for name, value in (
            ("unit_flow", flow),
            ("unit_ptr", ptr),
            ("unit_link", link),
            ("unit_share", share),
            ("cap", cap),
            ("link_weight", weight),
            ("control", control),
        ):
            object.__setattr__(self, name, _ro(value, value.dtype))

    @property
    def n_units(self) -> int:
        return int(self.unit_flow.shape[0])

    def links(self, unit: int | np.integer[Any]) -> _I64:
        """Links of one unit."""
        return self.unit_link[self.unit_ptr[unit] : self.unit_ptr[unit + 1]]

    @classmethod
    def from_paths(
        cls,
        flow: Sequence[int],
        paths: Sequence[Sequence[int]],
        share: ArrayLike | None = None,
        cap: ArrayLike | None = None,
    ) -> UnitSet:
        """Convenience builder from one link list per unit; ``share=None`` splits each flow
        equally over its units."""
        f = np.asarray(flow, dtype=np.int64)
        if share is None:
            _, inverse, counts = np.unique(f, return_inverse=True, return_counts=True)
            share = 1.0 / counts[inverse]
        return cls(
            unit_flow=f,
            unit_ptr=_csr_ptr([len(p) for p in paths]),
            unit_link=np.array([x for p in paths for x in p], dtype=np.int64),
            unit_share=np.asarray(share, dtype=np.float64),
            cap=np.asarray(cap if cap is not None else [], dtype=np.float64),
        )

    @staticmethod
    def concat(parts: Sequence[UnitSet]) -> UnitSet:
        offsets = np.cumsum([0] + [p.unit_link.shape[0] for p in parts[:-1]])
        return UnitSet(
            unit_flow=np.concatenate([p.unit_flow for p in parts]),
            unit_ptr=np.concatenate(
                [[0]] + [p.unit_ptr[1:] + o for p, o in zip(parts, offsets, strict=True)]
            ),
            unit_link=np.concatenate([p.unit_link for p in parts]),
            unit_share=np.concatenate([p.unit_share for p in parts]),
            cap=np.concatenate([p.cap for p in parts]),
            link_weight=np.concatenate([p.link_weight for p in parts]),
            control=np.concatenate([p.control for p in parts]),
        )


@dataclass(frozen=True, eq=False, init=False)
class SetCapacity:
    """At ``time_ps`` set ``links`` to ``capacity`` bytes/s (scalar or one per link): failures
    (0), gray failures (a fraction) and recoveries."""

    time_ps: int
    links: _I64
    capacity: _F64

    def __init__(self, time_ps: int, links: ArrayLike, capacity: ArrayLike) -> None:
        links = np.atleast_1d(np.asarray(links, dtype=np.int64))
        cap = np.broadcast_to(np.asarray(capacity, dtype=np.float64), links.shape)
        object.__setattr__(self, "time_ps", int(time_ps))
        object.__setattr__(self, "links", _ro(links, np.int64))
        object.__setattr__(self, "capacity", _ro(cap, np.float64))


@dataclass(frozen=True, eq=False)
class Callback:
    """At ``time_ps`` call ``fn(state)``; it may return a :class:`Reroute`."""

    time_ps: int
    fn: Callable[[SimState], Reroute | None]


@dataclass(frozen=True, eq=False)
class Reroute:
    """What a callback asks for. ``units`` replace ALL units of every flow they name, from now:
    bytes already sent stay sent, the remaining bytes continue on the new units (finished flows
    are left alone). ``actions`` are scheduled (not before now)."""

    units: UnitSet | None = None
    actions: tuple[SetCapacity | Callback, ...] = ()


Action: TypeAlias = SetCapacity | Callback
#: ``progress(done, total)``: bytes delivered so far of the run's total (see ``simulate``)
Progress: TypeAlias = Callable[[float, float], None]


@dataclass(frozen=True, eq=False)
class SimState:
    """Read-only view given to callbacks. Unit ids cover every unit so far (the caller's, then
    those of each reroute in order); replaced units have rate 0. Rates are those in effect from
    ``now_ps`` given everything applied so far."""

    now_ps: int
    capacity: _F64
    units: UnitSet
    unit_alive: _B
    unit_rate: _F64
    unit_bytes: _F64
    flow_remaining: _F64
    flow_rate: _F64
    flow_active: _B
    flow_done: _B


@dataclass(frozen=True, eq=False)
class SimResult:
    """Outcome of :func:`simulate`. Times in ps; ``-1`` = never (before ``max_time_ps``).

    ``units`` are all units ever used (the caller's first, then each reroute's), with
    ``unit_bytes`` delivered on each and ``unit_replaced_ps`` (-1 if never replaced). The
    link-load series is described in the module docstring.
    """

    start_ps: _I64
    finish_ps: _I64
    units: UnitSet
    unit_bytes: _F64
    unit_replaced_ps: _I64
    end_ps: int
    seg_start_ps: _I64
    seg_end_ps: _I64
    seg_max_util: _F64
    watch_links: _I64
    seg_ptr: _I64
    seg_link: _I64
    seg_load: _F64
    events: int
    allocations: int
    alloc_rounds: int

    @property
    def fct_ps(self) -> _I64:
        """Flow completion times (finish - start), -1 for unfinished flows."""
        done = self.finish_ps >= 0
        return np.where(done, self.finish_ps - self.start_ps, -1)

    @property
    def n_segments(self) -> int:
        return int(self.seg_start_ps.shape[0])

    def link_load(self, link: int) -> _F64:
        """Load (bytes/s) of one watched link in every segment."""
        if not np.isin(link, self.watch_links):
            raise SimInputError(f"link {link} was not watched")
        seg = np.repeat(np.arange(self.n_segments), np.diff(self.seg_ptr))
        out = np.zeros(self.n_segments)
        hit = self.seg_link == link
        out[seg[hit]] = self.seg_load[hit]
        return out


def fct_percentiles(
    result: SimResult, q: Sequence[float] = (50, 90, 99, 99.9, 100)
) -> dict[float, float]:
    """Percentiles (linear interpolation) of the completion times in ps of finished flows; NaN
    when no flow finished."""
    fct = result.fct_ps
    done = fct[fct >= 0].astype(np.float64)
    if done.size == 0:
        return {float(x): math.nan for x in q}
    values = np.percentile(done, np.asarray(q, dtype=np.float64))
    return {float(x): float(v) for x, v in zip(q, values, strict=True)}


# --------------------------------------------------------------------------------------------
# validation


def _check_capacity(capacity: ArrayLike) -> _F64:
    cap = np.asarray(capacity, dtype=np.float64)
    if cap.ndim != 1:
        raise SimInputError("capacity must be a 1-D array (bytes/s per directed link)")
    bad = np.flatnonzero(~np.isfinite(cap) | (cap < 0))
    if bad.size:
        raise SimInputError(f"link {bad[0]}: capacity {cap[bad[0]]} is not finite and >= 0")
    return cap


def _check_units(units: UnitSet, n_flows: int, n_links: int, who: str) -> None:
    bad = np.flatnonzero((units.unit_flow < 0) | (units.unit_flow >= n_flows))
    if bad.size:
        raise SimInputError(f"{who} unit {bad[0]}: flow {units.unit_flow[bad[0]]} out of range")
    counts = np.diff(units.unit_ptr)
    bad = np.flatnonzero(counts <= 0)
    if bad.size:
        raise SimInputError(f"{who} unit {bad[0]}: no links")

    def owner(entry: int) -> int:  # the unit of an entry of ``unit_link`` (every unit has one)
        return int(np.searchsorted(units.unit_ptr, entry, side="right")) - 1

    # compiled, one pass over the entries each (no boolean arrays of 15 million entries)
    out_of_range, twice, link, bad_weight = _fill.check_entries(
        units.unit_ptr, units.unit_link, units.link_weight, n_links
    )
    if out_of_range >= 0:
        raise SimInputError(
            f"{who} unit {owner(out_of_range)}: link {units.unit_link[out_of_range]} out of "
            f"range (0..{n_links - 1})"
        )
    if twice >= 0:
        raise SimInputError(f"{who} unit {twice}: link {link} listed twice")
    bad = np.flatnonzero(~np.isfinite(units.unit_share) | (units.unit_share < 0))
    if bad.size:
        raise SimInputError(f"{who} unit {bad[0]}: share {units.unit_share[bad[0]]} invalid")
    if bad_weight >= 0:
        raise SimInputError(f"{who} unit {owner(bad_weight)}: link weight invalid")
    bad = np.flatnonzero(np.isnan(units.cap) | (units.cap < 0))
    if bad.size:
        raise SimInputError(f"{who} unit {bad[0]}: cap {units.cap[bad[0]]} invalid")
    present = np.flatnonzero(np.bincount(units.unit_flow, minlength=n_flows))
    total = np.bincount(units.unit_flow, units.unit_share, minlength=n_flows)[present]
    bad = np.flatnonzero(np.abs(total - 1.0) > SHARE_TOL)
    if bad.size:
        f = present[bad[0]]
        raise SimInputError(f"{who} flow {f}: unit shares sum to {total[bad[0]]!r}, not 1")


def _check_flows(flows: FlowSet, units: UnitSet, n_links: int) -> None:
    n = flows.n_flows
    bad = np.flatnonzero(~np.isfinite(flows.size) | (flows.size < 0))
    if bad.size:
        raise SimInputError(f"flow {bad[0]}: size {flows.size[bad[0]]} is not finite and >= 0")
    for name in ("start_ps", "head_ps", "tail_ps", "notify_ps"):
        values = getattr(flows, name)
        bad = np.flatnonzero(values < 0)
        if bad.size:
            raise SimInputError(f"flow {bad[0]}: {name} {values[bad[0]]} < 0")
    ptr = flows.dep_ptr
    if ptr[0] != 0 or ptr[-1] != flows.dep_idx.shape[0] or np.any(np.diff(ptr) < 0):
        raise SimInputError("flows: dep_ptr must rise from 0 to len(dep_idx)")
    owner = np.repeat(np.arange(n), np.diff(ptr))
    bad = np.flatnonzero((flows.dep_idx < 0) | (flows.dep_idx >= n))
    if bad.size:
        raise SimInputError(
            f"flow {owner[bad[0]]}: dependency {flows.dep_idx[bad[0]]} out of range"
        )
    _check_units(units, n, n_links, "")
    missing = np.flatnonzero(np.bincount(units.unit_flow, minlength=n) == 0)
    if missing.size:
        raise SimInputError(f"flow {missing[0]}: has no units")
    _check_acyclic(flows)


def _reverse_deps(flows: FlowSet) -> tuple[_I64, _I64]:
    """CSR from each flow to the flows waiting for it."""
    n = flows.n_flows
    child = np.repeat(np.arange(n, dtype=np.int64), np.diff(flows.dep_ptr))
    order = np.argsort(flows.dep_idx, kind="stable")
    ptr = _csr_ptr(np.bincount(flows.dep_idx, minlength=n))
    return ptr, child[order]


def _check_acyclic(flows: FlowSet) -> None:
    n = flows.n_flows
    left = np.diff(flows.dep_ptr).copy()
    rev_ptr, rev_idx = _reverse_deps(flows)
    frontier = np.flatnonzero(left == 0)
    removed = 0
    while frontier.size:
        removed += frontier.size
        children = rev_idx[_ranges(rev_ptr, frontier)[0]]
        np.subtract.at(left, children, 1)
        cand = np.unique(children)
        frontier = cand[left[cand] == 0]
    if removed == n:
        return
    # walk back along unresolved dependencies from the lowest such flow until one repeats
    seen: dict[int, int] = {}
    path: list[int] = []
    f = int(np.flatnonzero(left > 0)[0])
    while f not in seen:
        seen[f] = len(path)
        path.append(f)
        deps = flows.dep_idx[flows.dep_ptr[f] : flows.dep_ptr[f + 1]]
        f = int(deps[left[deps] > 0][0])
    cycle = [*path[seen[f] :], f]
    raise SimInputError("dependency cycle: " + " waits for ".join(f"flow {x}" for x in cycle))


# --------------------------------------------------------------------------------------------
# allocation


@dataclass
class _Fill:
    rate: _F64
    rounds: int
    load: _F64  # bytes/s on every link


def _water_fill(
    ent_ptr: _I64,
    ent_link: NDArray[np.signedinteger[Any]],
    ent_coef: _F64,
    link_ptr: _I64,
    link_entry: NDArray[np.signedinteger[Any]],
    link_ent: NDArray[np.signedinteger[Any]],
    capacity: _F64,
    ent_cap: _F64,
    active: _B,
    rtol: float = RTOL_SATURATED,
    keep_entry: _B | None = None,
    control: _B | None = None,
    packed: bool = False,
) -> _Fill:
    """Progressive filling over the active entities (``A`` as CSR by entity, by link as entry
    indices with their entities), compiled (:mod:`clusterloom.sim.flow._fill`).
    ``keep_entry`` (one flag per entry) drops the entries that load nothing (a black-holed
    path beyond its dead link).

    ``control`` (one flag per entry) marks the entries that carry only ACKs or pulls: a load
    on their link, not a constraint (docs/sim.md, "ACKs in max-min"). An entity whose ACKs
    rose after a link's data froze may leave that link over its capacity (by the ACK
    coefficient times the rise, about 1.6% of it at most for a 64-byte ACK per 4,000-byte
    packet); then the data of that link gets what the ACKs leave (ACKs served first): the
    entities whose data crosses it fill once more, capped at their rates (``_fill.fill``),
    and every link is within capacity with the ACKs counted. ``packed``: ``ent_link`` holds
    each control entry's flag in bit 30 already (the engine's ``fill_link``)."""
    if capacity.shape[0] > _fill.LINK_MASK:  # the fill's links keep bit 30 for a flag
        raise SimInputError(f"{capacity.shape[0]} links: the fill takes at most 2**30")
    keep = np.ones(1, dtype=np.bool_) if keep_entry is None else keep_entry
    has_ctl = control is not None and bool(control.any())
    ctl = np.zeros(1, dtype=np.bool_) if control is None or not has_ctl else control
    if has_ctl and not packed:  # the fill reads a control entry's flag from its link's bit 30
        ent_link = np.asarray(ent_link, dtype=np.int64) | (ctl.astype(np.int64) << _fill.CTL_SHIFT)
    rate, rounds, left, load = _fill.fill(
        ent_ptr,
        ent_link,
        ent_coef,
        link_ptr,
        link_entry,
        link_ent,
        capacity,
        ent_cap,
        active,
        keep,
        keep_entry is not None,
        float(rtol),
        ctl,
        has_ctl,
    )
    if left:
        stuck = np.flatnonzero(active & (rate == 0) & (ent_cap > 0))
        raise SimInputError(f"entity {stuck[0] if stuck.size else '?'}: unbounded rate")
    return _Fill(np.asarray(rate, dtype=np.float64), int(rounds), np.asarray(load, np.float64))


def _pause_bounds(
    ent: _I64,
    hop: _I64,
    link: _I64,
    nxt: _I64,
    share: _F64,
    r: _F64,
    first: _I64,
    n_ent: int,
) -> tuple[_F64, _I64]:
    """Head-of-line bounds (``_Sim._lossless``): per entity the lowest ``r_A * share_B /
    share_A`` over the paused links it crosses (those before another entity A's bottleneck
    hop ``first``) where its next link differs from A's (blocked behind packets bound for
    another port; those bound for the same one share it as its inputs do), and the hop where
    that bound holds it (``_NEVER``: none). An entity's own pauses do not bound it."""
    paused = np.flatnonzero(hop < first[ent])
    bound = np.full(n_ent, np.inf)
    held = np.full(n_ent, _NEVER, dtype=np.int64)
    if not paused.size:
        return bound, held
    value = r[paused] / share[paused]
    order = np.lexsort((value, link[paused]))
    pl, pv, pn = link[paused][order], value[order], nxt[paused][order]
    head = np.ones(pl.size, dtype=np.bool_)
    head[1:] = pl[1:] != pl[:-1]
    starts = np.flatnonzero(head)
    n_links = int(link.max()) + 1
    low = np.full(n_links, np.inf)  # the lowest pause value per link and its next link
    low_next = np.full(n_links, -2, dtype=np.int64)
    low[pl[starts]] = pv[starts]
    low_next[pl[starts]] = pn[starts]
    other = np.full(n_links, np.inf)  # the lowest among pausers bound for another next link
    differ = pn != low_next[pl]
    np.minimum.at(other, pl[differ], pv[differ])
    limit = np.where(nxt == low_next[link], other[link], low[link]) * share
    np.minimum.at(bound, ent, limit)
    hit = np.isfinite(limit) & (limit <= bound[ent] * (1.0 + 1e-12))
    np.minimum.at(held, ent[hit], hop[hit])
    return bound, held


def max_min_fair(coef: Any, capacity: ArrayLike, cap: ArrayLike | None = None) -> _F64:
    """Max-min fair rates of the entities (columns) of ``coef`` (links x entities, dense or
    scipy.sparse; the load on each link per unit rate) under ``capacity`` and optional
    per-entity ``cap``. Entities crossing a zero-capacity link get 0."""
    from scipy import sparse  # only here: the event loop does without scipy.sparse

    a_t = sparse.csr_matrix(coef).T.tocsr()
    a_t.sum_duplicates()
    a_t.eliminate_zeros()
    n_ent, n_links = a_t.shape
    capv = _check_capacity(capacity)
    if capv.shape[0] != n_links:
        raise SimInputError(f"capacity has {capv.shape[0]} links, coef {n_links}")
    ent_cap = np.full(n_ent, np.inf) if cap is None else np.asarray(cap, dtype=np.float64)
    ent_ptr = a_t.indptr.astype(np.int64)
    ent_link = a_t.indices.astype(np.int64)
    link_ptr, link_entry = _fill.by_link(ent_link, n_links)
    fill = _water_fill(
        ent_ptr,
        ent_link,
        a_t.data.astype(np.float64),
        link_ptr,
        link_entry,
        np.repeat(np.arange(n_ent, dtype=np.int64), np.diff(ent_ptr))[link_entry],
        capv,
        ent_cap,
        np.ones(n_ent, dtype=np.bool_),
    )
    return fill.rate


# --------------------------------------------------------------------------------------------
# the event loop

_PENDING, _ACTIVE, _DONE = 0, 1, 2


@dataclass(frozen=True)
class _AvoidMap:
    """The unit entries of avoiding coupled flows (``_Sim._avoid``). ``units``: the units
    with such entries, in the order of their entities (a *map unit* is an index into it);
    per map unit its data entries as CSR ``dptr``, each with its link ``dlink`` and entry
    ``dentry``; per entry, CSR ``eptr``, the map units adding to it in unit order
    (``eunit``); ``weight`` the link weight per entry (``by_entry``: every unit entry of an
    entry has it) or ``eweight`` one per map unit of ``eunit``; ``coef`` the entries'
    coefficients summed unit by unit from the transport's split (what a round of avoidance
    rebuilds for a flow whose shares did not move); per map unit ``ent`` its entity and
    ``factor`` what a step multiplies its share by, ``split`` its share in the transport's
    split; ``units_per_ent``; per link, CSR ``hptr``, the map units whose data cross it
    (``hunit``: a round without black holes finds the hot units from the hot links)."""

    units: _I64
    dptr: NDArray[np.signedinteger[Any]]
    dlink: NDArray[np.signedinteger[Any]]
    dentry: NDArray[np.signedinteger[Any]]
    eptr: NDArray[np.signedinteger[Any]]
    eunit: NDArray[np.signedinteger[Any]]
    weight: _F64
    by_entry: bool
    eweight: _F64
    coef: _F64
    ent: _I64
    units_per_ent: _I64
    factor: _F64
    split: _F64
    hptr: _I64
    hunit: NDArray[np.int32]


class _Sim:
    """State of one run. Arrays are indexed by flow, unit (all units ever), completion group
    or entity.

    A *group* holds remaining bytes and completes as a whole: one per coupled or pooled flow,
    one per unit of a split flow. An *entity* has one max-min rate: one per coupled flow, one
    per unit otherwise. ``ent_bfac`` turns an entity's rate into bytes/s of its group (the
    unit's share for a pooled unit, 1 otherwise); ``unit_factor`` into bytes/s of a unit."""

    def __init__(
        self,
        capacity: _F64,
        flows: FlowSet,
        units: UnitSet,
        actions: Sequence[Action],
        watch: _I64 | None,
        rtol: float = RTOL_SATURATED,
    ) -> None:
        self.rtol = rtol
        self.capacity = capacity.copy()
        self.n_links = int(capacity.shape[0])
        self.flows = flows
        n = flows.n_flows
        self.start = np.full(n, -1, dtype=np.int64)
        self.finish = np.full(n, -1, dtype=np.int64)
        self.flow_done = np.zeros(n, dtype=np.bool_)
        self.dep_left = np.diff(flows.dep_ptr).astype(np.int64)
        self.rev_ptr, self.rev_idx = _reverse_deps(flows)
        # ``ready``: when a flow's bytes start moving (posted, then its head delay);
        # ``dep_ready``: when the dependencies finished so far have notified it
        self.ready = np.where(self.dep_left == 0, flows.start_ps + flows.head_ps, _NEVER).astype(
            np.int64
        )
        self.dep_ready = np.zeros(n, dtype=np.int64)
        self.units = units
        self.unit_alive = np.ones(units.n_units, dtype=np.bool_)
        self.unit_replaced = np.full(units.n_units, -1, dtype=np.int64)
        self.unit_bytes = np.zeros(units.n_units)
        self.unit_rem = units.unit_share * flows.size[units.unit_flow]
        self.unit_done = np.zeros(units.n_units, dtype=np.bool_)
        self.flow_rem = flows.size.copy()
        self.seq = itertools.count()
        self.heap: list[tuple[int, int, Action]] = []
        for act in actions:
            self._schedule(act, 0)
        self.watch = watch
        self.events = self.allocations = self.rounds = 0
        self.dirty = True
        self.segs: list[tuple[int, int, float]] = []
        self.seg_links: list[_I64] = []
        self.seg_loads: list[_F64] = []
        self._build()

    # ---- structure -------------------------------------------------------------------------

    def _build(self) -> None:
        """Groups, entities and both CSR forms of ``A`` from the alive units."""
        u, f = self.units, self.flows
        alive = np.flatnonzero(self.unit_alive)
        by_flow = u.unit_flow[alive]
        if not (np.diff(by_flow) >= 0).all():
            alive = alive[np.argsort(by_flow, kind="stable")]
        order = alive
        uf = u.unit_flow[order]
        coupled, pooled = f.coupled[uf], f.pooled[uf]
        first = np.ones(order.size, dtype=np.bool_)
        first[1:] = uf[1:] != uf[:-1]
        new_ent = ~coupled | first
        new_grp = ~(coupled | pooled) | first
        ent_of_pos = np.cumsum(new_ent) - 1
        grp_of_pos = np.cumsum(new_grp) - 1
        n_ent = int(new_ent.sum())
        share = u.unit_share[order]
        weighted = coupled | pooled
        coef = np.where(weighted, share, 1.0)

        self.ent_of_unit = np.full(u.n_units, -1, dtype=np.int64)
        self.ent_of_unit[order] = ent_of_pos
        self.unit_factor = np.ones(u.n_units)
        self.unit_factor[order] = coef
        self.alive_units = order
        self.ent_group = grp_of_pos[new_ent]
        self.ent_bfac = np.where(pooled, share, 1.0)[new_ent]
        self.ent_pooled = pooled[new_ent]
        self.grp_flow = uf[new_grp]
        self.grp_unit = np.where(weighted, -1, order)[new_grp]
        n_grp = int(self.grp_flow.shape[0])

        # A, entity-major; duplicates (a coupled flow's units sharing a link) summed;
        # ``ent_hop``: the link's position on the unit's path (its first one)
        merged_of_pos: _I64 | None = None
        self.ent_avoid = f.avoid[uf][new_ent]
        avoiding = self.ent_avoid > 0
        starts = np.append(np.flatnonzero(new_ent), order.size).astype(np.int64)
        fused: tuple[Any, ...] | None = None
        if n_ent and avoiding.all():  # every flow coupled and avoiding: the map as it merges
            fused = self._merge_with_map(order, starts, coef)
            if fused is not None:
                rows, cols, vals, hops, ctl = fused[0]
        if fused is None and coupled.any():
            # only a coupled flow's units can share a link within one entity: by entity,
            # then link, in one compiled pass (``_fill.merge_entries``): what a stable sort
            # by (entity, link) and ``np.add.reduceat`` gave, to the bit
            rows, cols, vals, hops, ctl, merged_of_pos = _fill.merge_entries(
                order,
                starts,
                u.unit_ptr,
                u.unit_link,
                u.link_weight,
                u.control,
                coef,
                self.n_links,
            )
        elif fused is None:
            pos, counts = _ranges(u.unit_ptr, order)
            rows = np.repeat(ent_of_pos, counts)
            cols = u.unit_link[pos]
            vals = np.repeat(coef, counts) * u.link_weight[pos]
            hops = pos - np.repeat(u.unit_ptr[order], counts)
            ctl = u.control[pos]
        nz = vals > 0
        if not nz.all():
            rows, cols, vals, hops, ctl = rows[nz], cols[nz], vals[nz], hops[nz], ctl[nz]
        self.ent_ctl = ctl.astype(np.bool_)
        self.ent_lossless = f.lossless[uf][new_ent]
        self.ent_ptr = _csr_ptr(np.bincount(rows, minlength=n_ent))
        self.avoid_map: _AvoidMap | None = None
        if fused is not None:  # every unit of ``order`` a map unit, every entry kept
            _, units, dptr, dlink, dentry, eptr, eunit, weight = fused
            by_entry = True
            eweight = np.empty(0)
        elif avoiding.any():  # unit entries -> entries, to re-split coupled flows
            assert merged_of_pos is not None  # avoiding flows are coupled
            entry_of = np.where(nz, np.cumsum(nz) - 1, -1).astype(np.int64)
            # entries, links and unit entries fit int32 unless there are 2**31 of them
            total = merged_of_pos.size
            idx = np.int32 if max(total, cols.size, self.n_links) < 2**31 else np.int64
            units = np.empty(order.size, dtype=np.int64)
            dptr = np.zeros(order.size + 1, dtype=idx)
            dlink = np.empty(total, dtype=idx)
            dentry = np.empty(total, dtype=idx)
            eptr = np.zeros(cols.size + 1, dtype=idx)
            eunit = np.empty(total, dtype=idx)
            eweight = np.empty(total)
            n_units, n_data, weight, by_entry = _fill.avoid_entries(
                order,
                starts,
                avoiding,
                u.unit_ptr,
                u.link_weight,
                u.control,
                merged_of_pos,
                entry_of,
                cols.astype(np.int64, copy=False),
                units,
                dptr,
                dlink,
                dentry,
                eptr,
                eunit,
                eweight,
            )
            units, dptr = units[:n_units], dptr[: n_units + 1]
            dlink, dentry, eunit = dlink[:n_data], dentry[:n_data], eunit[: eptr[-1]]
            eweight = eweight[: eptr[-1]] if not by_entry else eweight[:0]
        if fused is not None or avoiding.any():
            ue = self.ent_of_unit[units]
            split = frozen(u.unit_share[units])  # the transport's split: each round's start
            base = vals.astype(np.float64)  # sequential sums of the transport's split
            _fill.avoid_coef(
                self.ent_ptr,
                ue,
                eptr,
                eunit,
                weight,
                by_entry,
                eweight,
                split,
                base,
            )
            self.avoid_coef = np.empty_like(base)
            self.avoid_map = _AvoidMap(
                units,
                dptr,
                dlink,
                dentry,
                eptr,
                eunit,
                weight,
                bool(by_entry),
                eweight,
                base,
                ue,
                np.bincount(ue, minlength=n_ent),
                1.0 - self.ent_avoid[ue],
                split,
                *_fill.units_by_link(dptr, dlink, self.n_links),
            )
        self.entry_ent = rows.astype(np.int64, copy=False)
        self.ent_link = cols.astype(np.int64, copy=False)
        self.ent_coef = vals.astype(np.float64, copy=False)
        self.ent_hop = hops.astype(np.int64, copy=False)
        # the fill's index arrays, 32-bit when they fit (a tenth off each fill at k=32): the
        # link of each entry, the entries by link and their entities
        n_entries = self.ent_link.shape[0]
        by = np.int32 if max(n_entries, n_ent, self.n_links) < 2**31 else np.int64
        # with each control entry's flag in bit 30 (``_fill.CTL_SHIFT``): the fill reads one
        # array per entry for both
        self.fill_link = self.ent_link.astype(by) | (self.ent_ctl.astype(by) << _fill.CTL_SHIFT)
        self.link_entry = np.empty(n_entries, dtype=by)
        self.link_ent = np.empty(n_entries, dtype=by)
        self.link_ptr = _fill.by_link_owner(
            self.ent_link, self.entry_ent, self.n_links, self.link_entry, self.link_ent
        )

        with np.errstate(divide="ignore", invalid="ignore"):
            per_unit = np.where(
                weighted, np.where(share > 0, u.cap[order] / share, np.inf), u.cap[order]
            )
        self.ent_cap = (
            np.minimum.reduceat(per_unit, np.flatnonzero(new_ent)) if n_ent else np.empty(0)
        )
        self.grp_ent_ptr = np.searchsorted(self.ent_group, np.arange(n_grp + 1)).astype(np.int64)
        self.flow_grp_ptr = np.searchsorted(self.grp_flow, np.arange(f.n_flows + 1)).astype(
            np.int64
        )
        split = self.grp_unit >= 0
        self.grp_rem = np.where(
            split, self.unit_rem[np.maximum(self.grp_unit, 0)], self.flow_rem[self.grp_flow]
        )
        state = np.where(self.start[self.grp_flow] >= 0, _ACTIVE, _PENDING)
        done = self.flow_done[self.grp_flow] | (split & self.unit_done[self.grp_unit])
        self.grp_state = np.where(done, _DONE, state).astype(np.int8)
        self.flow_open = np.bincount(
            self.grp_flow[self.grp_state != _DONE], minlength=f.n_flows
        ).astype(np.int64)
        self.rate = np.zeros(n_ent)
        self.deliver = np.ones(n_ent, dtype=np.bool_)  # False: a black hole (see _black_holes)
        self.grate = np.zeros(n_grp)  # bytes/s delivered per group, set by _next_time
        self.fill: _Fill | None = None
        self.load: tuple[_I64, _F64, float] | None = None
        self.dirty = True

    def _merge_with_map(self, order: _I64, starts: _I64, coef: _F64) -> tuple[Any, ...] | None:
        """The entries of ``A`` and the map of path avoidance in one compiled pass
        (``_fill.merge_entries_map``) when every entity avoids: ((entity, link, value, hop,
        control) per entry, units, dptr, dlink, dentry, eptr, eunit, weight per entry), or
        None when an entry is dropped (value 0) or the unit entries of an entry differ in
        weight (the general map, ``_fill.avoid_entries``, handles those)."""
        u = self.units
        total = int((u.unit_ptr[order + 1] - u.unit_ptr[order]).sum())
        idx = np.int32 if max(total, self.n_links) < 2**31 else np.int64
        dptr = np.zeros(order.size + 1, dtype=idx)
        dlink = np.empty(total, dtype=idx)
        dentry = np.empty(total, dtype=idx)
        eptr = np.empty(total + 1, dtype=idx)
        eunit = np.empty(total, dtype=idx)
        weight = np.empty(total)
        rows, cols, vals, hops, ctl, n_data, uniform = _fill.merge_entries_map(
            order,
            starts,
            u.unit_ptr,
            u.unit_link,
            u.link_weight,
            u.control,
            coef,
            self.n_links,
            dptr,
            dlink,
            dentry,
            eptr,
            eunit,
            weight,
        )
        if not uniform or not (vals > 0).all():
            return None
        n = cols.size
        return (
            (rows, cols, vals, hops, ctl),
            order,
            dptr,
            dlink[:n_data],
            dentry[:n_data],
            eptr[: n + 1],
            eunit,
            weight[:n],
        )

    def _sync_out(self) -> None:
        """Write group remainders back to units (split flows) and flows (the others)."""
        split = self.grp_unit >= 0
        self.flow_rem[self.grp_flow[~split]] = self.grp_rem[~split]
        self.unit_rem[self.grp_unit[split]] = self.grp_rem[split]
        self.unit_done[self.grp_unit[split & (self.grp_state == _DONE)]] = True

    def _reroute(self, new: UnitSet, now: int) -> None:
        _check_units(new, self.flows.n_flows, self.n_links, "reroute")
        keep = ~self.flow_done[new.unit_flow]
        if not keep.any():
            return
        if not keep.all():
            idx = np.flatnonzero(keep)
            pos = _ranges(new.unit_ptr, idx)[0]
            new = UnitSet(
                unit_flow=new.unit_flow[idx],
                unit_ptr=_csr_ptr(np.diff(new.unit_ptr)[idx]),
                unit_link=new.unit_link[pos],
                unit_share=new.unit_share[idx],
                cap=new.cap[idx],
                link_weight=new.link_weight[pos],
                control=new.control[pos],
            )
        self._sync_out()
        remaining = np.bincount(self.grp_flow, self.grp_rem, minlength=self.flows.n_flows)
        flows = np.unique(new.unit_flow)
        old = self.unit_alive & np.isin(self.units.unit_flow, flows)
        self.unit_alive[old] = False
        self.unit_replaced[old] = now
        m = new.n_units
        self.units = UnitSet.concat([self.units, new])
        self.unit_alive = np.concatenate([self.unit_alive, np.ones(m, dtype=np.bool_)])
        self.unit_replaced = np.concatenate([self.unit_replaced, np.full(m, -1, np.int64)])
        self.unit_bytes = np.concatenate([self.unit_bytes, np.zeros(m)])
        self.unit_done = np.concatenate([self.unit_done, np.zeros(m, dtype=np.bool_)])
        self.unit_rem = np.concatenate([self.unit_rem, new.unit_share * remaining[new.unit_flow]])
        self.flow_rem[flows] = remaining[flows]
        self._build()

    # ---- events ----------------------------------------------------------------------------

    def _schedule(self, action: Action, now: int) -> None:
        if not isinstance(action, SetCapacity | Callback):
            raise SimInputError(f"unknown action {action!r}")
        if action.time_ps < now:
            raise SimInputError(f"action at {action.time_ps} ps scheduled at {now} ps (past)")
        if isinstance(action, SetCapacity):
            bad = (action.links < 0) | (action.links >= self.n_links)
            if bad.any():
                raise SimInputError(
                    f"SetCapacity at {action.time_ps} ps: link "
                    f"{action.links[np.flatnonzero(bad)[0]]} out of range"
                )
            _check_capacity(action.capacity)
        heapq.heappush(self.heap, (action.time_ps, next(self.seq), action))

    def _complete(self, groups: _I64, now: int) -> None:
        if not groups.size:
            return
        self.grp_state[groups] = _DONE
        self.grp_rem[groups] = 0.0
        self.rate[_ranges(self.grp_ent_ptr, groups)[0]] = 0.0
        n = self.flows.n_flows
        self.flow_open -= np.bincount(self.grp_flow[groups], minlength=n)
        fl = np.unique(self.grp_flow[groups])
        done = fl[(self.flow_open[fl] == 0) & ~self.flow_done[fl]]
        self.flow_done[done] = True
        self.finish[done] = now + self.flows.tail_ps[done]
        pos, counts = _ranges(self.rev_ptr, done)
        children = self.rev_idx[pos]
        if children.size:
            told = np.repeat(self.finish[done] + self.flows.notify_ps[done], counts)
            np.maximum.at(self.dep_ready, children, told)
            np.subtract.at(self.dep_left, children, 1)
            cand = np.unique(children)
            ready = cand[self.dep_left[cand] == 0]
            f = self.flows
            self.ready[ready] = (
                np.maximum(f.start_ps[ready], self.dep_ready[ready]) + f.head_ps[ready]
            )
        self.dirty = True

    def _settle(self, now: int) -> None:
        """Start every ready flow and finish every empty group at ``now``, to a fixed point."""
        while True:
            started = np.flatnonzero(self.ready <= now)
            if started.size:
                self.ready[started] = _NEVER
                self.start[started] = now - self.flows.head_ps[started]  # posted
                grps = _ranges(self.flow_grp_ptr, started)[0]
                self.grp_state[grps[self.grp_state[grps] == _PENDING]] = _ACTIVE
                self.dirty = True
            empty = np.flatnonzero((self.grp_state == _ACTIVE) & (self.grp_rem <= 0))
            self._complete(empty, now)
            if not started.size and not empty.size:
                return

    def _black_holes(self, active: _B) -> _B | None:
        """Entries that carry no load because they lie at or beyond a dead link on a pooled
        unit's path (``None`` when no such unit exists).

        A pooled unit (one EV of a sprayer) whose path crosses a zero-capacity link keeps
        sending until the transport reacts (packets are lost at the dead link: they load the
        links before it and deliver nothing), as long as its flow has a unit that delivers; a
        flow with none left, or a unit whose first link is dead, stalls at rate 0 instead.
        Other entities crossing a dead link stall."""
        dead_link = self.capacity <= 0
        self.deliver = np.ones(self.rate.shape[0], dtype=np.bool_)
        if not dead_link.any():
            return None
        act = np.flatnonzero(active)
        pos, counts = _ranges(self.ent_ptr, act)
        owner = np.repeat(act, counts)
        dead = dead_link[self.ent_link[pos]]
        if not dead.any():
            return None
        n_ent = self.rate.shape[0]
        first_dead = np.full(n_ent, _NEVER, dtype=np.int64)
        np.minimum.at(first_dead, owner[dead], self.ent_hop[pos[dead]])
        crossing = first_dead < _NEVER
        self.deliver = ~crossing
        live_grp = np.bincount(self.ent_group[act[~crossing[act]]], minlength=self.grp_flow.size)
        hole = crossing & self.ent_pooled & (first_dead > 0) & (live_grp[self.ent_group] > 0)
        if not hole.any():
            return None
        keep = np.ones(self.ent_link.shape[0], dtype=np.bool_)
        beyond = hole[owner] & (self.ent_hop[pos] >= first_dead[owner])
        keep[pos[beyond]] = False
        return keep

    def _allocate(self) -> None:
        if not self.dirty:
            return
        active = self.grp_state[self.ent_group] == _ACTIVE
        keep = self._black_holes(active)
        self.fill = _water_fill(
            self.ent_ptr,
            self.fill_link,
            self.ent_coef,
            self.link_ptr,
            self.link_entry,
            self.link_ent,
            self.capacity,
            self.ent_cap,
            active,
            self.rtol,
            keep,
            self.ent_ctl,
            packed=True,
        )
        if (self.ent_lossless & active).any():
            self.fill = self._lossless(active, keep)
        if self.avoid_map is not None and (active & (self.ent_avoid > 0)).any():
            self.fill = self._avoid(active, keep)
        self.rate = self.fill.rate
        self.allocations += 1
        self.rounds += self.fill.rounds
        self.load = None
        self.dirty = False

    def _input_shares(self, data: _B) -> tuple[_I64, _I64, _I64, _I64, _F64]:
        """Per data entry of a lossless entity (``data``): its entity, hop, link and next link
        (-1: the receiver), and its share of the link when every input of the link is
        backlogged (see ``_lossless``)."""
        idx = np.flatnonzero(data)
        ent, hop = self.entry_ent[idx], self.ent_hop[idx]
        order = np.lexsort((hop, ent))
        idx, ent, hop = idx[order], ent[order], hop[order]
        link = self.ent_link[idx]
        inp = np.full(idx.size, -1, dtype=np.int64)  # the previous link, -1: the sender's NIC
        same = np.zeros(idx.size, dtype=np.bool_)
        same[1:] = ent[1:] == ent[:-1]
        inp[1:][same[1:]] = link[:-1][same[1:]]
        nxt = np.full(idx.size, -1, dtype=np.int64)  # the next link, -1: the receiver
        nxt[:-1][same[1:]] = link[1:][same[1:]]
        share = np.zeros(idx.size)
        prev = np.ones(idx.size)  # the entry's share of its input link (1 at the NIC)
        nl = np.int64(self.n_links + 1)
        for h in range(int(hop.max(initial=-1)) + 1):
            at = np.flatnonzero(hop == h)
            if not at.size:
                continue
            if h:
                before = at - 1  # the same entity's previous hop (entries are by entity, hop)
                ok = same[at]
                prev[at[ok]] = share[before[ok]]
            pair = link[at] * nl + (inp[at] + 1)
            pairs, pair_of = np.unique(pair, return_inverse=True)
            pair_of = pair_of.reshape(-1)
            total = np.bincount(pair_of, prev[at], minlength=pairs.size)
            links_of_pair = pairs // nl
            _, per_link = np.unique(links_of_pair, return_inverse=True)
            n_inputs = np.bincount(per_link.reshape(-1))[per_link.reshape(-1)]
            share[at] = prev[at] / total[pair_of] / n_inputs[pair_of]
        return ent, hop, link, nxt, share

    def _lossless(self, active: _B, keep: _B | None) -> _Fill:
        """Rates of lossless entities (a PFC fabric without congestion control; docs/sim.md,
        "Lossless fabric"), from the max-min fill already in ``self.fill``, by at most
        :data:`LOSSLESS_ROUNDS` refinements:

        - input-port sharing: a saturated link serves its inputs (the links its entities arrive
          on, or the sender's NIC) equally, each input's part in proportion to its entities'
          shares of that input (FIFO mixing): an entity's weight is that share at its
          bottleneck (the first saturated link on its path where its level in the weighted
          fill is the highest);
        - head-of-line blocking: the links before an entity's bottleneck are paused; a paused
          link carries its entities in proportion to their shares of it, so an entity crossing
          it towards another next link is held to ``r_A * share_B / share_A`` of the entity
          ``A`` that pauses it (the lowest such bound), and the links before that one are
          paused in turn;
        - ACKs do not hold their sender: the control entries of lossless entities (their ACKs
          on the reverse links) are taken out of the fill and their load, at the entities'
          current rates, out of the links' capacity (ACKs served first, as the packet
          engine's priority FIFO does). A sender without congestion control is not clocked by
          its ACKs, so a saturated reverse link must not freeze it at that link's level, as
          it would as one of the link's entities in the max-min fill. A last fill, each
          entity capped at its rate, puts the ACK load of the final rates within capacity.

        Entities that are not lossless keep weight 1 and no bound."""
        fill = self.fill
        assert fill is not None
        lossy = self.ent_lossless & active
        data = ~self.ent_ctl & lossy[self.entry_ent]
        if keep is not None:
            data &= keep
        ent, hop, link, nxt, share = self._input_shares(data)
        n_ent = lossy.shape[0]
        tol = max(AVOID_HOT, 2.0 * self.rtol)  # saturated: as for path avoidance
        weight = np.ones(n_ent)
        bound = np.full(n_ent, np.inf)
        held_at = np.full(n_ent, _NEVER, dtype=np.int64)  # the hop where a bound holds it
        full = self.capacity
        acks = self.ent_ctl & lossy[self.entry_ent]  # ACK entries: a load, not a constraint
        if keep is not None:
            acks &= keep
        fill_keep = keep
        ack_idx = np.flatnonzero(acks)
        if ack_idx.size:
            fill_keep = (np.ones(acks.size, dtype=np.bool_) if keep is None else keep) & ~acks
        ack_link, ack_coef, ack_ent = (
            self.ent_link[ack_idx],
            self.ent_coef[ack_idx],
            self.entry_ent[ack_idx],
        )

        def ack_load(r: _F64) -> _F64:
            return np.bincount(ack_link, ack_coef * r[ack_ent], minlength=self.n_links).astype(
                np.float64
            )

        def refill(cap: _F64, ent_cap: _F64, w: _F64) -> _Fill:
            return _water_fill(
                self.ent_ptr,
                self.fill_link,
                self.ent_coef * w[self.entry_ent],
                self.link_ptr,
                self.link_entry,
                self.link_ent,
                cap,
                ent_cap / w,
                active,
                self.rtol,
                fill_keep,
                self.ent_ctl,
                packed=True,
            )

        rate = fill.rate
        cap = full
        if ack_idx.size:  # the max-min fill froze senders at their reverse links: refill
            cap = np.maximum(full - ack_load(rate), 0.0)
            fill = refill(cap, self.ent_cap, weight)
            rate = fill.rate
        for _ in range(LOSSLESS_ROUNDS):
            r = rate[ent]
            level = (rate / weight)[ent]  # the weighted fill's level of each entity
            sat = (fill.load >= cap * (1.0 - tol)) & (cap > 0)
            top = np.zeros(self.n_links)
            np.maximum.at(top, link, level)
            neck = sat[link] & (r > 0) & (level >= top[link] * (1.0 - tol))
            first = np.full(n_ent, _NEVER, dtype=np.int64)
            np.minimum.at(first, ent[neck], hop[neck])
            held = (first == _NEVER) & np.isfinite(bound) & (rate >= bound * (1.0 - tol))
            first[held] = held_at[held]
            new_weight = np.ones(n_ent)
            at = (hop == first[ent]) & ~held[ent]
            new_weight[ent[at]] = share[at]
            new_bound, new_held = _pause_bounds(ent, hop, link, nxt, share, r, first, n_ent)
            same = np.allclose(new_weight, weight, rtol=tol, atol=0.0) and np.allclose(
                new_bound, bound, rtol=tol, atol=0.0
            )
            if same:
                break
            weight, bound, held_at = new_weight, new_bound, new_held
            if ack_idx.size:
                cap = np.maximum(full - ack_load(rate), 0.0)
            fill = refill(cap, np.minimum(self.ent_cap, bound), weight)
            rate = fill.rate * weight
        if not ack_idx.size:
            return _Fill(rate, fill.rounds, fill.load)
        acked = ack_load(rate)
        if (fill.load + acked > full * (1.0 + 1e-9)).any():
            # rates rose since the capacity was set aside: fill once more under the ACK load of
            # these rates, none above its own, so the ACK load can only fall
            cap = np.maximum(full - acked, 0.0)
            fill = refill(cap, np.minimum(np.minimum(self.ent_cap, bound), rate), weight)
            rate = fill.rate * weight
            acked = ack_load(rate)
        return _Fill(rate, fill.rounds, fill.load + acked)

    def _avoid(self, active: _B, keep: _B | None) -> _Fill:
        """Coupled flows that steer away from congested paths (``FlowSet.avoid`` = a): from
        the transport's split, :data:`AVOID_ROUNDS` times, every unit whose path crosses a
        saturated link (where queues build and packets are marked) has its share multiplied
        by ``1 - a`` and the flow's shares are renormalised, then rates are filled again.
        A flow whose every path is saturated (its own NIC, its receiver) keeps its split, and
        a hot path keeps at least ``(1 - a) ** AVOID_ROUNDS`` of its weight relative to a cool
        one: the bounded relief of a sender that skips marked EVs but keeps probing them.
        The split is recomputed at every allocation from the transport's (no memory)."""
        fill = self.fill
        assert fill is not None and self.avoid_map is not None
        m = self.avoid_map
        share = m.split  # a round's steps make new arrays; the split is never written
        on = active[m.ent]
        tol = max(AVOID_HOT, 2.0 * self.rtol)
        cap = self.capacity
        kept = np.zeros(1, dtype=np.bool_) if keep is None else keep
        coef = self.avoid_coef  # updated in place by each round, from the split's
        np.copyto(coef, m.coef)
        for _ in range(AVOID_ROUNDS):
            # compiled (``_fill.avoid_step``): a flow's entries rebuilt when its shares move;
            # without black holes the hot units are found from the hot links' lists
            if keep is None:
                stepped, share = _fill.avoid_step_by_link(
                    fill.load, cap, tol, m.hptr, m.hunit, m.ent, on, m.units_per_ent,
                    m.factor, share, self.ent_ptr, m.eptr, m.eunit, m.weight, m.by_entry,
                    m.eweight, coef,
                )  # fmt: skip
            else:
                stepped, share = _fill.avoid_step(
                    fill.load,
                    cap,
                    tol,
                    kept,
                    keep is not None,
                    m.dptr,
                    m.dlink,
                    m.dentry,
                    m.ent,
                    on,
                    m.units_per_ent,
                    m.factor,
                    share,
                    self.ent_ptr,
                    m.eptr,
                    m.eunit,
                    m.weight,
                    m.by_entry,
                    m.eweight,
                    coef,
                )
            if not stepped:
                break
            fill = _water_fill(
                self.ent_ptr,
                self.fill_link,
                coef,
                self.link_ptr,
                self.link_entry,
                self.link_ent,
                cap,
                self.ent_cap,
                active,
                self.rtol,
                keep,
                self.ent_ctl,
                packed=True,
            )
        self.unit_factor[m.units] = share
        return fill

    def _group_rate(self) -> _F64:
        """Bytes/s delivered to each group."""
        speed = self.rate * self.ent_bfac * self.deliver
        return np.bincount(self.ent_group, speed, minlength=self.grp_flow.shape[0]).astype(
            np.float64
        )

    def _state(self, now: int) -> SimState:
        u_rate = np.zeros(self.units.n_units)
        alive = self.alive_units
        u_rate[alive] = self.unit_factor[alive] * self.rate[self.ent_of_unit[alive]]
        n = self.flows.n_flows
        started = self.start >= 0
        return SimState(
            now_ps=now,
            capacity=_ro(self.capacity, np.float64),
            units=self.units,
            unit_alive=_ro(self.unit_alive, np.bool_),
            unit_rate=_ro(u_rate, np.float64),
            unit_bytes=_ro(self.unit_bytes, np.float64),
            flow_remaining=_ro(np.bincount(self.grp_flow, self.grp_rem, minlength=n), np.float64),
            flow_rate=_ro(np.bincount(self.grp_flow, self._group_rate(), minlength=n), np.float64),
            flow_active=_ro(started & ~self.flow_done, np.bool_),
            flow_done=_ro(self.flow_done, np.bool_),
        )

    def _instant(self, now: int) -> None:
        """Everything that happens at ``now``: starts, actions (in order), then rates."""
        self.events += 1
        self._settle(now)
        while self.heap and self.heap[0][0] <= now:
            _, _, action = heapq.heappop(self.heap)
            if isinstance(action, SetCapacity):
                self.capacity[action.links] = action.capacity
                self.dirty = True
                continue
            self._allocate()
            out = action.fn(self._state(now))
            if out is None:
                continue
            for later in out.actions:
                self._schedule(later, now)
            if out.units is not None and out.units.n_units:
                self._reroute(out.units, now)
                self._settle(now)
        self._allocate()

    def _next_time(self, now: int) -> int:
        """The next event: a start, an action, or the next batch of completions.

        With a rate tolerance, the groups that would finish next are batched: the batch ends
        at the latest time ``T`` such that every group in it finishes at most ``rtol`` of its
        flow's completion time late (``T <= t + rtol * (t - start)``), never early. So no link
        ever carries more than its capacity, and a run whose completions are spread by
        collisions needs far fewer reallocations."""
        t = min(int(self.ready.min()) if self.ready.size else _NEVER, _NEVER)
        if self.heap:
            t = min(t, self.heap[0][0])
        self.grate = self._group_rate()
        moving = np.flatnonzero((self.grp_state == _ACTIVE) & (self.grate > 0))
        if moving.size:
            x = self.grp_rem[moving] * PS_PER_S / self.grate[moving]
            first = int(np.argmin(x))
            if x[first] < 9e18:
                age = now - self.start[self.grp_flow[moving]]
                deadline = x + self.rtol * (x + age)
                near = np.flatnonzero(x <= deadline[first])
                order = near[np.argsort(x[near], kind="stable")]
                ok = x[order] <= np.minimum.accumulate(deadline[order])
                last = float(x[order[np.flatnonzero(ok)[-1]]])
                t = min(t, now + max(1, math.ceil(last - ROUND_SLACK_PS)))
        return t

    def _advance(self, now: int, until: int) -> None:
        dt = until - now
        self._record(now, until)
        act = np.flatnonzero(self.grp_state == _ACTIVE)
        r = self.grate[act]
        rem = self.grp_rem[act]
        moved = np.minimum(r * dt / PS_PER_S, rem)
        with np.errstate(divide="ignore"):
            fin = (r > 0) & (rem * PS_PER_S / np.where(r > 0, r, 1.0) <= dt + COMPLETION_WINDOW_PS)
        moved[fin] = rem[fin]
        self.grp_rem[act] = rem - moved
        # bytes per unit: its share of its group's progress
        per_rate = np.zeros(self.grp_flow.shape[0])
        with np.errstate(divide="ignore", invalid="ignore"):
            per_rate[act] = np.where(r > 0, moved / r, 0.0)
        ent_moved = self.rate * self.deliver * per_rate[self.ent_group]
        alive = self.alive_units
        if alive.size == self.unit_bytes.size:  # every unit, in order (no reroute yet)
            self.unit_bytes += self.unit_factor * ent_moved[self.ent_of_unit]
        else:
            self.unit_bytes[alive] += self.unit_factor[alive] * ent_moved[self.ent_of_unit[alive]]
        self.dirty = True
        self._complete(act[fin], until)

    def _record(self, now: int, until: int) -> None:
        """One segment: the largest utilisation and the non-zero loads of watched links."""
        if self.load is None:
            fill = self.fill
            if fill is None:
                self.load = (np.empty(0, dtype=np.int64), np.empty(0), 0.0)
            else:
                per_link = fill.load
                nz = np.flatnonzero(per_link)
                cap = self.capacity[nz]
                util = float((per_link[nz] / np.where(cap > 0, cap, np.inf)).max(initial=0.0))
                self.load = (nz, per_link[nz], util)
        links, load, util = self.load
        self.segs.append((now, until, util))
        if self.watch is not None:
            keep = np.isin(links, self.watch, assume_unique=True)
            links, load = links[keep], load[keep]
        self.seg_links.append(links)
        self.seg_loads.append(load)

    def run(self, max_time_ps: int | None, progress: Progress | None = None) -> SimResult:
        limit = _NEVER if max_time_ps is None else max_time_ps
        total = float(self.flows.size.sum())
        now = int(self.ready.min()) if self.ready.size else _NEVER
        if self.heap:
            now = min(now, self.heap[0][0])
        if now == _NEVER:
            now = 0
        now = min(now, limit)
        while True:
            self._instant(now)
            if now >= limit:
                break
            until = min(self._next_time(now), limit)
            if until == _NEVER:
                break
            self._advance(now, until)
            now = until
            if progress is not None and self.events % PROGRESS_EVERY == 0:
                progress(total - float(self.grp_rem.sum()), total)
        return self._result(now)

    def _result(self, end: int) -> SimResult:
        end = max(end, int(self.finish.max(initial=0)))
        segs = np.array(self.segs, dtype=np.float64).reshape(-1, 3)
        starts = np.array([s[0] for s in self.segs], dtype=np.int64)
        ends = np.array([s[1] for s in self.segs], dtype=np.int64)
        watch = np.arange(self.n_links) if self.watch is None else self.watch
        return SimResult(
            start_ps=_ro(self.start, np.int64),
            finish_ps=_ro(self.finish, np.int64),
            units=self.units,
            unit_bytes=_ro(self.unit_bytes, np.float64),
            unit_replaced_ps=_ro(self.unit_replaced, np.int64),
            end_ps=end,
            seg_start_ps=_ro(starts, np.int64),
            seg_end_ps=_ro(ends, np.int64),
            seg_max_util=_ro(segs[:, 2], np.float64),
            watch_links=_ro(watch, np.int64),
            seg_ptr=_ro(_csr_ptr([x.size for x in self.seg_links]), np.int64),
            seg_link=_ro(np.concatenate([np.empty(0, np.int64), *self.seg_links]), np.int64),
            seg_load=_ro(np.concatenate([np.empty(0), *self.seg_loads]), np.float64),
            events=self.events,
            allocations=self.allocations,
            alloc_rounds=self.rounds,
        )


@small_pages()
def simulate(
    capacity: ArrayLike,
    flows: FlowSet,
    units: UnitSet,
    actions: Sequence[Action] = (),
    *,
    max_time_ps: int | None = None,
    watch_links: ArrayLike | None = None,
    rtol: float = RTOL_SATURATED,
    progress: Progress | None = None,
) -> SimResult:
    """Run the fluid simulation until every flow finished, nothing can progress any more, or
    ``max_time_ps``. Raises :class:`SimInputError` (a ``ValueError``) on invalid input.

    ``progress(done, total)`` is called every :data:`PROGRESS_EVERY` events with the bytes
    delivered so far and the bytes of every flow (the work measure of an ETA); it does not
    change the run.

    ``rtol`` trades exactness for speed: links whose saturation levels are within ``rtol`` of a
    round's level saturate together at that (lowest) level, so the entities they freeze get up
    to ``rtol`` less than their exact level, and the capacity left over goes to the others; no
    link is ever over capacity. Completions within ``rtol`` of each other are batched (late,
    never early; see the module docstring). The default is exact up to floating error;
    sprayed flows with many paths have many distinct levels and completion times, and
    ``rtol=1e-2`` cuts the rounds and events by tens of times (the tests bound the effect on
    completion times empirically)."""
    if not 0.0 <= rtol < 1.0:
        raise SimInputError(f"rtol must be in [0, 1), got {rtol}")
    cap = _check_capacity(capacity)
    n_links = int(cap.shape[0])
    _check_flows(flows, units, n_links)
    watch: _I64 | None = None
    if watch_links is not None:
        watch = np.unique(np.asarray(watch_links, dtype=np.int64))
        if watch.size and (watch[0] < 0 or watch[-1] >= n_links):
            raise SimInputError("watch_links: link out of range")
    if max_time_ps is not None and max_time_ps < 0:
        raise SimInputError("max_time_ps must be >= 0")
    return _Sim(cap, flows, units, actions, watch, rtol).run(max_time_ps, progress)
