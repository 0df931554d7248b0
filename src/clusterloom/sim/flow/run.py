"""Running traffic over a generated fabric with a transport, under failures.

Failures are written ``KIND:TARGET@START[-END][*FRACTION]``: ``link:17@1ms`` (physical link 17
down at 1 ms for the rest of the run), ``switch:4200@2ms-5ms`` (every link of node 4200 down from
2 to 5 ms), ``port:12:3@0`` (host 12's NIC port 3), ``plane:1@1ms`` (every link of plane 1), and
``link:17@1ms*0.5`` (a gray failure: the link keeps half its capacity). Times take ``ps``, ``ns``,
``us``, ``ms`` or ``s``. A hard failure is acted on by the transport after its reaction delay
(detection and reconvergence for ``roce-ecmp``, detection only for the sprayers); a gray one is
not detected (routing does not see it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from clusterloom.errors import Problem, SpecError
from clusterloom.fabric.topology import Topology
from clusterloom.sim.flow.engine import (
    RTOL_SATURATED,
    Callback,
    FlowSet,
    Reroute,
    SetCapacity,
    SimResult,
    SimState,
    simulate,
)
from clusterloom.sim.flow.paths import Router, build_router
from clusterloom.sim.flow.traffic import Traffic
from clusterloom.sim.flow.transports import Transport
from clusterloom.units import PS_PER_S

I64 = NDArray[np.int64]

_WATCH_NONE = np.zeros(0, dtype=np.int64)
_WATCH_NONE.setflags(write=False)
#: the longest time a failure or run may name (a day), and the largest flow (1 TiB): beyond
#: them nothing is physical, and picoseconds of a day still fit an int64 100 times over
MAX_TIME_S = 86_400
MAX_TIME_PS = MAX_TIME_S * PS_PER_S
MAX_SIZE_BYTES = 2**40
_UNITS = {"ps": 1, "ns": 1_000, "us": 1_000_000, "ms": 1_000_000_000, "s": PS_PER_S}
FAILURE_SYNTAX = re.compile(
    r"^(?P<kind>link|switch|port|plane):(?P<target>\d+(?::\d+)?)@(?P<start>[\d.]+[a-z]*)"
    r"(?:-(?P<end>[\d.]+[a-z]*))?(?:\*(?P<fraction>[\d.]+))?$"
)


def parse_time(text: str, where: str) -> int:
    """``'1.5ms'`` to picoseconds; a bare number is picoseconds."""
    m = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)([a-z]*)", text)
    if not m or m.group(2) not in {"", *_UNITS}:
        raise SpecError([Problem(where, f"'{text}' is not a time like 10us or 1.5ms")])
    value = float(m.group(1)) * _UNITS[m.group(2) or "ps"]
    if not value <= MAX_TIME_PS:
        raise SpecError([Problem(where, f"'{text}' is beyond the {MAX_TIME_S:,} s a run may last")])
    return round(value)


@dataclass(frozen=True)
class Failure:
    """Physical links down (or cut to ``fraction`` of their capacity) from ``start_ps`` to
    ``end_ps`` (None: to the end of the run)."""

    label: str
    links: I64
    start_ps: int
    end_ps: int | None
    fraction: float = 0.0


def parse_failure(text: str, t: Topology) -> Failure:
    """A failure from its text form (see the module docstring), checked against ``t``."""
    where = f"--fail {text}"
    m = FAILURE_SYNTAX.match(text)
    if not m:
        raise SpecError(
            [
                Problem(
                    where,
                    "expected KIND:TARGET@START[-END][*FRACTION], e.g. "
                    "link:17@1ms or plane:0@2ms-4ms*0.5",
                )
            ]
        )
    kind, target = m.group("kind"), m.group("target")
    start = parse_time(m.group("start"), where)
    end = parse_time(m.group("end"), where) if m.group("end") else None
    try:
        fraction = float(m.group("fraction")) if m.group("fraction") else 0.0
    except ValueError:
        raise SpecError(
            [Problem(where, f"'{m.group('fraction')}' is not a fraction like 0.5")]
        ) from None
    if end is not None and end <= start:
        raise SpecError([Problem(where, "the end of a failure comes after its start")])
    if not 0.0 <= fraction < 1.0:
        raise SpecError(
            [Problem(where, f"a gray failure keeps a fraction in [0, 1), got {fraction}")]
        )
    if kind == "link":
        link = int(target)
        if link >= t.n_links:
            raise SpecError([Problem(where, f"no link {link}; links are 0..{t.n_links - 1}")])
        links = np.array([link], dtype=np.int64)
    elif kind == "switch":
        node = int(target)
        if node >= t.n_nodes or t.node_role[node] == 0:
            raise SpecError(
                [
                    Problem(
                        where,
                        f"no switch {node}; switches are node ids {t.plan.hosts}..{t.n_nodes - 1}",
                    )
                ]
            )
        links = np.flatnonzero((t.link_src == node) | (t.link_dst == node)).astype(np.int64)
    elif kind == "port":
        host_s, _, port_s = target.partition(":")
        host, port = int(host_s), int(port_s or 0)
        sel = (t.link_tier == 1) & (t.link_src == host) & (t.link_src_port == port)
        links = np.flatnonzero(sel).astype(np.int64)
        if links.size == 0:
            raise SpecError([Problem(where, f"host {host} has no port {port}")])
    else:
        plane = int(target)
        if plane >= t.plan.planes:
            raise SpecError(
                [Problem(where, f"no plane {plane}; planes are 0..{t.plan.planes - 1}")]
            )
        links = np.flatnonzero(t.link_plane == plane).astype(np.int64)
    return Failure(text, links, start, end, fraction)


def _alive(capacity: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Physical links usable in both directions."""
    return (capacity[0::2] > 0) & (capacity[1::2] > 0)


def run(
    topology: Topology,
    traffic: Traffic,
    transport: Transport,
    failures: tuple[Failure, ...] = (),
    *,
    seed: int = 0,
    max_time_ps: int | None = None,
    router: Router | None = None,
    rtol: float = RTOL_SATURATED,
    watch_links: ArrayLike | None = _WATCH_NONE,
) -> SimResult:
    """Simulate ``traffic`` (host ids = the topology's hosts) with ``transport``; ``rtol`` is
    the engine's rate tolerance (see ``engine.simulate``). ``watch_links`` are the directed
    links whose loads the result keeps per segment (default none, to bound memory; ``None``
    watches every link)."""
    if traffic.n_hosts > topology.plan.hosts:
        raise SpecError(
            [
                Problem(
                    "traffic",
                    f"traffic has {traffic.n_hosts} hosts, the fabric {topology.plan.hosts}",
                )
            ]
        )
    r = router or build_router(topology)
    directed = r.capacity_bytes()
    n_dir = directed.shape[0]
    trunks = transport.trunks(r)
    capacity = directed if trunks is None else np.concatenate([directed, trunks.capacity(directed)])
    src = traffic.src.astype(np.int64)
    dst = traffic.dst.astype(np.int64)
    units = transport.units(r, src, dst, alive=np.ones(topology.n_links, dtype=bool), seed=seed)
    flows = FlowSet(
        size=traffic.nbytes.astype(np.float64) * transport.wire_factor(),
        start_ps=traffic.start_ps,
        dep_ptr=traffic.dep_ptr,
        dep_idx=traffic.dep_idx,
        coupled=np.full(len(traffic), transport.mode == "coupled"),
        pooled=np.full(len(traffic), transport.mode == "pooled"),
    )

    def react(state: SimState) -> Reroute:
        alive = _alive(state.capacity[:n_dir])
        return Reroute(units=transport.units(r, src, dst, alive=alive, seed=seed))

    delay = round(transport.reroute_delay_s() * PS_PER_S)
    changes: list[tuple[int, I64, NDArray[np.float64]]] = []
    reactions: list[SetCapacity | Callback] = []
    for f in failures:
        links = np.concatenate([2 * f.links, 2 * f.links + 1])
        changes.append((f.start_ps, links, directed[links] * f.fraction))
        if f.fraction == 0.0:
            reactions.append(Callback(f.start_ps + delay, react))
        if f.end_ps is not None:
            changes.append((f.end_ps, links, directed[links]))
            if f.fraction == 0.0:
                reactions.append(Callback(f.end_ps + delay, react))
    # capacity changes in time order (stable), each carrying the trunks it changes
    actions: list[SetCapacity | Callback] = []
    now = directed.copy()
    for time_ps, links, cap in sorted(changes, key=lambda c: c[0]):
        now[links] = cap
        if trunks is None:
            actions.append(SetCapacity(time_ps, links, cap))
            continue
        hit = np.unique(trunks.of_link[links])
        hit = hit[hit >= 0]
        actions.append(
            SetCapacity(
                time_ps,
                np.concatenate([links, n_dir + hit]),
                np.concatenate([cap, trunks.capacity(now)[hit]]),
            )
        )
    actions += reactions
    actions.sort(key=lambda a: a.time_ps)
    if watch_links is None:
        watch_links = np.arange(n_dir)
    return simulate(
        capacity,
        flows,
        units,
        tuple(actions),
        max_time_ps=max_time_ps,
        watch_links=watch_links,
        rtol=rtol,
    )


@dataclass(frozen=True)
class Summary:
    """One transport's outcome on one traffic and failure scenario."""

    transport: str
    flows: int
    finished: int
    makespan_ps: int
    fct_p50_ps: float
    fct_p99_ps: float
    fct_max_ps: float
    events: int


def summarize(name: str, result: SimResult, barrier: NDArray[np.bool_] | None = None) -> Summary:
    """Completion figures of one run; ``barrier`` marks flows to leave out (the zero-byte
    barriers of step traffic)."""
    real = np.ones(result.finish_ps.shape[0], dtype=bool) if barrier is None else ~barrier
    finish = result.finish_ps[real]
    fct = result.fct_ps[real]
    done = finish >= 0
    pct = (
        np.percentile(fct[done].astype(np.float64), [50, 99, 100])
        if done.any()
        else np.full(3, np.nan)
    )
    return Summary(
        transport=name,
        flows=int(real.sum()),
        finished=int(done.sum()),
        makespan_ps=int(finish[done].max(initial=0)),
        fct_p50_ps=float(pct[0]),
        fct_p99_ps=float(pct[1]),
        fct_max_ps=float(pct[2]),
        events=result.events,
    )


def parse_size(text: str, where: str = "--size") -> int:
    """``'2MB'``, ``'512KiB'``, ``'1e6'`` to bytes."""
    m = re.fullmatch(r"([\d.eE+]+)\s*([kKMGT]?i?B)?", text.strip())
    scale = {
        "B": 1,
        "kB": 10**3,
        "KB": 10**3,
        "MB": 10**6,
        "GB": 10**9,
        "TB": 10**12,
        "KiB": 2**10,
        "kiB": 2**10,
        "MiB": 2**20,
        "GiB": 2**30,
        "TiB": 2**40,
    }
    if not m or (m.group(2) or "B") not in scale:
        raise SpecError([Problem(where, f"'{text}' is not a size like 2MB or 512KiB")])
    try:
        value = float(m.group(1)) * scale[m.group(2) or "B"]
    except ValueError:
        raise SpecError([Problem(where, f"'{text}' is not a size like 2MB or 512KiB")]) from None
    if not 1 <= value <= MAX_SIZE_BYTES:
        raise SpecError(
            [Problem(where, f"'{text}': a size is from 1 B to {MAX_SIZE_BYTES:,} B (1 TiB)")]
        )
    return round(value)


def fmt_time(ps: float) -> str:
    """A duration in the unit that reads best: ``1 s``, ``20 µs``, ``0.240 ms``."""
    for scale, unit in ((PS_PER_S, "s"), (PS_PER_S // 1000, "ms"), (PS_PER_S // 10**6, "µs")):
        if ps >= scale:
            return f"{ps / scale:,.6g} {unit}"
    return f"{ps / 1000:,.4g} ns"


#: the option of each transport that sets its reaction to a hard failure
_REACTION_OPTION = {
    "roce-ecmp": "reroute_s",
    "mrc-spray": "detect_s",
    "receiver-driven": "detect_s",
}
_REACTION_WHAT = {
    "reroute_s": "reroutes {t} after a failure (detection and routing reconvergence)",
    "detect_s": "retires dead paths {t} after a failure (endpoint detection)",
}


def reaction(tr: Transport) -> tuple[int, str]:
    """When ``tr`` acts on a hard failure (picoseconds after it) and that assumption in words,
    naming the option that sets it (``roce-ecmp.reroute_s=1``)."""
    delay = round(tr.reroute_delay_s() * PS_PER_S)
    option = _REACTION_OPTION.get(tr.name)
    if option is None or not hasattr(tr, option):
        return delay, "acts on a failure at once" if delay == 0 else (
            f"acts on a failure {fmt_time(delay)} after it"
        )
    what = _REACTION_WHAT[option].format(t=fmt_time(delay))
    return delay, f"{what}; assumed: {tr.name}.{option}={getattr(tr, option):g}"


@dataclass(frozen=True)
class Compared:
    """One transport's row of a comparison, computed once for every renderer (the terminal
    table and ``simulation.html``): ``completion_ps`` is the last finish only when every flow
    finished (else None), ``vs_ideal`` that completion over the ideal transport's (None unless
    both are complete), ``assumption`` the failure reaction that drives the figures when the run
    has hard failures (empty otherwise)."""

    summary: Summary
    completion_ps: int | None
    vs_ideal: float | None
    reaction_ps: int | None = None
    assumption: str = ""

    @property
    def transport(self) -> str:
        return self.summary.transport


def compare(
    summaries: Sequence[Summary],
    transports: Sequence[Transport] | None = None,
    failures: Sequence[Failure] = (),
) -> tuple[Compared, ...]:
    """The comparison of ``summaries`` (one per transport, ``transports`` in the same order
    when known); reactions are stated only when ``failures`` hold a hard one."""
    hard = any(f.fraction == 0.0 for f in failures)

    def done(s: Summary) -> int | None:
        return s.makespan_ps if s.flows and s.finished == s.flows else None

    ideal = next((done(s) for s in summaries if s.transport == "ideal"), None)
    rows = []
    for i, s in enumerate(summaries):
        completion = done(s)
        ratio = completion / ideal if completion is not None and ideal else None
        delay, text = (None, "")
        if hard and transports is not None:
            delay, text = reaction(transports[i])
        rows.append(Compared(s, completion, ratio, delay, text))
    return tuple(rows)
