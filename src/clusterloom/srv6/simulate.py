"""Endpoint failover in the packet simulator: the spraying transport (``mrc-spray``) carries
the real SRv6 path programs, and a failure mid-run is survived by the endpoints alone.

:class:`ProgramRoutes` is the packet engine's table of explicit source routes
(:class:`clusterloom.sim.packet.engine.SourceRoutes`) made from :mod:`.programs`: the route of
key (src, dst, port, EV ``i``) is the hop sequence :func:`~.programs.hops_of` gives for
program ``(src, port) -> dst``, EV ``i``, as the engine's directed links (the NIC's link up to
its leaf, the switches' links, the destination leaf's link down to the NIC). A switch forwards
only by that route; no failure changes it (the engine never reroutes a source route).

Assumption (documented in ``docs/srv6.md``): a hop over parallel links between two switches
takes link ``(i // ports) mod count`` of them, the switch's local load sharing fixed per EV;
the programs see such a hop as one, so a failed link among live parallel ones is a loss the
endpoint learns, not one it is told of.

Failover (:func:`notified`): at the failure each endpoint is told, one base RTT later (its
connection's own, the time a notification takes to reach it), which of its EVs cross a dead
hop; the set is :func:`.failover.host_failover`'s, both directions of the connection (its
data's program and its ACKs' program back), and the EVs are withdrawn at once
(:meth:`clusterloom.sim.packet.transports.MrcSpray.withdraw_ev`). Without it (``learned``) the
transport learns as it does on any path: losses seen through later ACKs and timeouts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
from numpy.typing import NDArray

from clusterloom.sim.failures import Failure as SimFailure
from clusterloom.sim.flow.transports import MrcSpray as FlowMrcSpray
from clusterloom.sim.packet.engine import PacketSim
from clusterloom.sim.packet.run import PacketResult
from clusterloom.sim.paths import Router
from clusterloom.sim.traffic import Traffic
from clusterloom.srv6.failover import Failure, HostFailover, host_failover
from clusterloom.srv6.plan import AddressPlan
from clusterloom.srv6.programs import Programs, hops_of, programs_for
from clusterloom.units import PS_PER_S, tx_ps

I64 = NDArray[np.int64]

__all__ = [
    "CASES",
    "COLUMNS",
    "CaseResult",
    "ProgramRoutes",
    "ProgramSprayFlow",
    "base_rtt_ps",
    "compare_flows",
    "compare_packets",
    "duplicates",
    "notified",
    "retired_evs",
    "table_rows",
]


class ProgramRoutes:
    """The SRv6 path programs of ``plan`` as the packet engine's source routes (module
    docstring), ``evs`` EVs per connection."""

    def __init__(self, plan: AddressPlan, evs: int) -> None:
        self.plan = plan
        self.evs = evs
        t = plan.topology
        self.ports = plan.host_ports
        #: (lower, upper) switch pair -> its links (lower end first in the topology)
        self.links: dict[tuple[int, int], list[int]] = {}
        upper = np.flatnonzero(t.link_tier > 1).tolist()
        for i, a, b in zip(
            upper, t.link_src[upper].tolist(), t.link_dst[upper].tolist(), strict=True
        ):
            self.links.setdefault((a, b), []).append(i)
        self.nic_link: list[list[int]] = plan.nic_link.tolist()

    def __call__(self, keys: NDArray[np.int64]) -> list[tuple[int, ...] | None]:
        out: list[tuple[int, ...] | None] = [None] * len(keys)
        arr = np.asarray(keys, dtype=np.int64).reshape(-1, 4)
        valid = (arr[:, 3] >= 0) & (arr[:, 3] < self.evs) & (arr[:, 3] % self.ports == arr[:, 2])
        valid &= arr[:, 0] != arr[:, 1]
        groups: dict[tuple[int, int], list[int]] = {}
        for i in np.flatnonzero(valid).tolist():
            groups.setdefault((int(arr[i, 0]), int(arr[i, 2])), []).append(i)
        for (src, port), rows in groups.items():
            sub = _rows(programs_for(self.plan, src, port, self.evs), arr[rows, 1])
            hops = hops_of(sub).tolist()
            for j, i in enumerate(rows):
                dst, ev = int(arr[i, 1]), int(arr[i, 3])
                out[i] = self.route(src, dst, port, ev, hops[j][ev // self.ports])
        return out

    def route(self, src: int, dst: int, port: int, ev: int, hops: list[int]) -> tuple[int, ...]:
        """The directed links of one program whose switches are ``hops`` (-1 padded)."""
        links = [2 * self.nic_link[src][port]]
        way = [h for h in hops if h >= 0]
        pick = ev // self.ports
        for x, y in pairwise(way):
            up = self.links.get((x, y))
            if up is not None:
                links.append(2 * up[pick % len(up)])
            else:
                down = self.links[(y, x)]
                links.append(2 * down[pick % len(down)] + 1)
        links.append(2 * self.nic_link[dst][port] + 1)
        return tuple(links)


def _rows(pr: Programs, dst: NDArray[np.int64]) -> Programs:
    """The programs of ``pr`` to the destinations ``dst`` only (in that order)."""
    at = np.searchsorted(pr.dst, dst)
    return Programs(
        pr.plan, pr.host, pr.port, pr.dst[at], pr.evs, pr.pair_class[at], pr.n_paths[at],
        pr.path[at], pr.usids[at],
    )  # fmt: skip


def srv6_failures(failure: SimFailure) -> list[Failure]:
    """A simulator failure (its physical links) as the failover's link failures."""
    return [Failure("link", int(x)) for x in np.unique(failure.links).tolist()]


class _Sets:
    """The failover sets of the hosts asked for, computed once per host."""

    def __init__(self, plan: AddressPlan, failures: Sequence[Failure], evs: int) -> None:
        self.plan, self.failures, self.evs = plan, failures, evs
        self.by_host: dict[int, HostFailover] = {}

    def __call__(self, src: int, dst: int) -> set[int]:
        fo = self.by_host.get(src)
        if fo is None:
            fo = self.by_host[src] = host_failover(self.plan, src, self.failures, self.evs)
        return set(fo.retired_evs(dst))


def retired_evs(
    plan: AddressPlan, failures: Sequence[Failure], evs: int, src: int, dst: int
) -> list[int]:
    """The EVs connection ``src -> dst`` withdraws: those whose program crosses a dead hop
    in either direction (its data's, or its ACKs' back)."""
    sets = _Sets(plan, failures, evs)
    return sorted(sets(src, dst) | sets(dst, src))


def notified(
    plan: AddressPlan, failure: SimFailure, evs: int
) -> tuple[int, Callable[[PacketSim], None]]:
    """The action of a notified failover for ``failure`` (``run_packets(actions=...)``): at
    the failure's start, each running ``mrc-spray`` connection withdraws its retired EVs one
    base RTT later (its own), the time the news takes to reach its endpoints."""
    sets = _Sets(plan, srv6_failures(failure), evs)

    def tell(sim: PacketSim) -> None:
        from clusterloom.sim.packet.transports import MrcSpray

        for c in sim.conns:
            if not isinstance(c, MrcSpray) or not c.ev_index:
                continue  # not a sprayer, or done (its EVs released)
            gone = sorted(sets(c.src, c.dst) | sets(c.dst, c.src))
            sim.at(sim.now + c.rtt, _withdraw(c, gone, sim))

    return failure.start_ps, tell


def _withdraw(c: object, evs: list[int], sim: PacketSim) -> Callable[[], None]:
    from clusterloom.sim.packet.transports import MrcSpray

    assert isinstance(c, MrcSpray)

    def go() -> None:
        if c.ev_index:
            for ev in evs:
                c.withdraw_ev(ev, sim.now)

    return go


#: the comparison's cases: (name, transport, routed by the programs, told of the failure,
#: transport options)
CASES: tuple[tuple[str, str, bool, bool, dict[str, float]], ...] = (
    ("srv6 spray, notified", "mrc-spray", True, True, {}),
    ("srv6 spray, learned", "mrc-spray", True, False, {}),
    ("ecmp spray, reconverge", "mrc-spray", False, False, {"ecmp": 1}),
    ("roce-ecmp, reconverge", "roce-ecmp", False, False, {}),
)


@dataclass(frozen=True)
class CaseResult:
    """One case of the comparison: completion of the whole traffic (None unless every flow
    finished), FCTs over the finished flows, and what the network lost and the senders sent
    again (packets; the flow engine has no packets: None) and the payload bytes delivered
    twice (None unless every flow finished)."""

    engine: str
    case: str
    flows: int
    finished: int
    completion_ps: int | None
    fct_mean_ps: float
    fct_p99_ps: float
    drops: int | None
    retransmissions: int | None
    duplicate_bytes: int | None
    #: why flows did not finish, one line per cause (the packet engine's)
    unfinished: tuple[str, ...] = ()


def _fcts(start: NDArray[np.int64], finish: NDArray[np.int64]) -> tuple[int | None, float, float]:
    done = finish >= 0
    fct = (finish - start)[done].astype(np.float64)
    completion = int(finish.max() - start.min()) if done.all() and done.size else None
    if not fct.size:
        return completion, float("nan"), float("nan")
    return completion, float(fct.mean()), float(np.percentile(fct, 99))


def duplicates(r: PacketResult, traffic: Traffic) -> int | None:
    """Payload bytes delivered twice (or more): what was delivered beyond the traffic's bytes,
    known when every flow finished (each byte then arrived at least once); else None."""
    if r.finished < len(traffic):
        return None
    return r.data_bytes_delivered - int(traffic.nbytes.sum())


def compare_packets(
    plan: AddressPlan,
    traffic: Traffic,
    failure: SimFailure,
    *,
    reroute_ps: int,
    evs: int,
    seed: int = 0,
    max_time_ps: int | None = None,
) -> list[CaseResult]:
    """The same traffic and failure in the packet engine under every case of :data:`CASES`:
    SRv6 programs with endpoint failover (told, or learned) and no reconvergence; ECMP
    spraying and RoCE with the routing view reconverging ``reroute_ps`` after the failure."""
    from clusterloom.sim.packet.engine import PacketConfig
    from clusterloom.sim.packet.run import run_packets

    routes = ProgramRoutes(plan, evs)
    out = []
    for name, transport, programs, told, options in CASES:
        opts = {**options, "evs": evs} if transport == "mrc-spray" else options
        r = run_packets(
            plan.topology,
            traffic,
            transport,
            (failure,),
            config=PacketConfig(reroute_ps=reroute_ps),
            options=opts,
            seed=seed,
            max_time_ps=max_time_ps,
            source_routes=routes if programs else None,
            actions=[notified(plan, failure, evs)] if told else (),
        )
        completion, mean, p99 = _fcts(r.start_ps, r.finish_ps)
        out.append(
            CaseResult(
                "packet", name, len(traffic), r.finished, completion, mean, p99, r.drops,
                int(r.retransmissions.sum()),
                duplicates(r, traffic), r.unfinished,
            )
        )  # fmt: skip
    return out


@dataclass(frozen=True)
class ProgramSprayFlow(FlowMrcSpray):
    """The flow model's ``mrc-spray`` pinned to the SRv6 programs: EV ``k`` of a connection
    takes its program's route; on a failure the EVs crossing it retire after ``detect_s``
    (told: one base RTT; learned: the model's default, a few RTTs) and nothing reroutes."""

    routes: ProgramRoutes | None = None

    def ev_paths(self, router: Router, s: I64, d: I64, port: I64, k: I64, f: I64, seed: int) -> I64:
        assert self.routes is not None
        rows = self.routes(np.stack([s, d, port, k], axis=1))
        width = max((len(r) for r in rows if r is not None), default=1)
        out = np.full((len(rows), width), -1, dtype=np.int64)
        for i, r in enumerate(rows):
            if r is not None:
                out[i, : len(r)] = r
        return out


def base_rtt_ps(plan: AddressPlan, mtu: int = 4096, header: int = 64) -> int:
    """The base RTT of the fabric's longest program (``2 * tiers`` links each way, a full
    packet and an ACK serialized on each, the slowest link's rate and the longest delay):
    what a told endpoint waits before it withdraws, in the flow model."""
    t = plan.topology
    hops = 2 * t.plan.tiers
    rate = int(t.link_capacity_bps.min())
    return 2 * hops * int(t.link_latency_ps.max()) + hops * (
        tx_ps(mtu + header, rate) + tx_ps(header, rate)
    )


def compare_flows(
    plan: AddressPlan,
    traffic: Traffic,
    failure: SimFailure,
    *,
    reroute_ps: int,
    evs: int,
    seed: int = 0,
    max_time_ps: int | None = None,
) -> list[CaseResult]:
    """The flow engine's equivalents: the sprayer on the programs, told (retired after one
    base RTT) or learned (the model's ``detect_s``), and RoCE rerouted after ``reroute_ps``.
    The flow model has no hop-by-hop ECMP sprayer that reconverges (its ``mrc-spray`` is
    source-routed), so that case is the packet engine's only."""
    from clusterloom.sim.flow.run import run
    from clusterloom.sim.flow.transports import RoceEcmp as FlowRoce

    routes = ProgramRoutes(plan, evs)
    told = ProgramSprayFlow(evs=evs, detect_s=base_rtt_ps(plan) / PS_PER_S, routes=routes)
    models = (
        (CASES[0][0], told),
        (CASES[1][0], ProgramSprayFlow(evs=evs, routes=routes)),
        (CASES[3][0], FlowRoce(reroute_s=reroute_ps / PS_PER_S)),
    )
    out = []
    for name, model in models:
        r = run(plan.topology, traffic, model, (failure,), seed=seed, max_time_ps=max_time_ps)
        completion, mean, p99 = _fcts(r.start_ps, r.finish_ps)
        done = int((r.finish_ps >= 0).sum())
        out.append(
            CaseResult("flow", name, len(traffic), done, completion, mean, p99, None, None, None)
        )
    return out


#: the comparison table's columns
COLUMNS = (
    "engine",
    "case",
    "done",
    "completion",
    "FCT mean",
    "FCT p99",
    "drops",
    "resent",
    "dup bytes",
)


def table_rows(results: Sequence[CaseResult]) -> list[tuple[str, ...]]:
    """The comparison as text rows (:data:`COLUMNS`): a time only where it was measured, a
    dash for a figure the engine does not have."""
    from clusterloom.sim.flow.run import fmt_time

    def opt(x: int | None) -> str:
        return "-" if x is None else f"{x:,}"

    rows: list[tuple[str, ...]] = []
    for c in results:
        rows.append(
            (
                c.engine,
                c.case,
                f"{c.finished:,}/{c.flows:,}",
                "unfinished" if c.completion_ps is None else fmt_time(c.completion_ps),
                "-" if not c.finished else fmt_time(c.fct_mean_ps),
                "-" if not c.finished else fmt_time(c.fct_p99_ps),
                opt(c.drops),
                opt(c.retransmissions),
                opt(c.duplicate_bytes),
            )
        )
    return rows


def results_dict(results: Sequence[CaseResult], about: dict[str, Any]) -> dict[str, Any]:
    """The comparison as plain data (``failover.json``): ``about`` (the design, failure,
    hosts, reroute, seed) and one record per case; times in picoseconds, a figure the engine
    does not have (or no finished flow to average) as ``null``."""

    def num(x: float) -> float | None:
        return None if x != x else x  # NaN: nothing finished

    return {
        **about,
        "cases": [
            {
                "engine": c.engine,
                "case": c.case,
                "flows": c.flows,
                "finished": c.finished,
                "completion_ps": c.completion_ps,
                "fct_mean_ps": num(c.fct_mean_ps),
                "fct_p99_ps": num(c.fct_p99_ps),
                "drops": c.drops,
                "retransmissions": c.retransmissions,
                "duplicate_bytes": c.duplicate_bytes,
                "unfinished": list(c.unfinished),
            }
            for c in results
        ],
    }
