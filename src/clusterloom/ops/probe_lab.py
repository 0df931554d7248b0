"""A leaf-spine of network namespaces for the probe agent (``ops probe``): real veth links,
IPv6 ECMP with L4 hashing, so the UDP source port (the EV) picks the spine. Built on
:class:`clusterloom.srv6.lab.Lab` (namespaces, veth pairs, rendered ``sysctl`` / ``ip -6``
files applied); needs root.

The topology (:data:`NODES`, :data:`LINKS`; every leaf has one link to each spine)::

        spine1 ----- leaf1, leaf2, leaf3 ----- spine2
                       |      |      |
                     host1  host2  host3

Every link is a /64 of ``fd00:c1::/48`` (link ``i``: ``fd00:c1:0:i::/64``, ``::1`` its lower
end, ``::2`` its upper end). Hosts route everything to their leaf; a leaf routes each other
host's /64 over both spines (one multipath route, ``net.ipv6.fib_multipath_hash_policy=1``:
source and destination address, ports and next header), a spine each host's /64 to its leaf.
Routers forward and send ICMPv6 errors without rate limit (``net.ipv6.icmp.ratelimit=0``), so a
path trace of every EV gets an answer from every hop.

Probes from ``host1`` to ``host2`` and ``host3`` over both spines tell the links apart: a probe
to ``host2`` through ``spine1`` crosses ``leaf1~spine1`` and ``leaf2~spine1``; one to ``host3``
through ``spine1`` shares only the first. :meth:`ProbeLab.fail` sets a link down at its lower
end (the leaf's port of a leaf-spine link): the spine, which has no other way to the
leaf, keeps sending into the dead veth (``ignore_routes_with_linkdown`` is 0, and nothing here
runs a routing protocol), so the probes of the EVs hashed onto it are lost, as on a fabric whose
routing has not converged or whose link fails gray; the leaf itself stops using the link, so the
replies never cross it.
"""

from __future__ import annotations

import ipaddress
import itertools
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from clusterloom.ops.model import Suspect
from clusterloom.ops.probe import (
    EV_BASE,
    ProbeConfig,
    Prober,
    Responder,
    Target,
    Trace,
    discover,
    open_sink,
    rows_table,
    tomography_input,
)
from clusterloom.srv6.lab import Lab, LabError, can_make_namespaces, inside, sweep

__all__ = [
    "HOSTS",
    "LINKS",
    "NODES",
    "LabRun",
    "ProbeLab",
    "link_label",
    "path_links",
    "probe_lab",
    "run_lab",
]

HOSTS = ("host1", "host2", "host3")
LEAVES = ("leaf1", "leaf2", "leaf3")
SPINES = ("spine1", "spine2")
NODES = (*HOSTS, *LEAVES, *SPINES)
PREFIX = "fd00:c1:0"

#: the links, lower end first: (node, interface, node, interface)
LINKS: tuple[tuple[str, str, str, str], ...] = (
    *((h, "eth0", leaf, "swp1") for h, leaf in zip(HOSTS, LEAVES, strict=True)),
    *(
        (leaf, f"swp{2 + s}", spine, f"swp{1 + n}")
        for n, leaf in enumerate(LEAVES)
        for s, spine in enumerate(SPINES)
    ),
)


def link_label(i: int) -> str:
    """``node:interface~node:interface`` of link ``i``, lower end first (``ops.model.Fault``)."""
    a, ia, b, ib = LINKS[i]
    return f"{a}:{ia}~{b}:{ib}"


def address(i: int, upper: bool) -> str:
    """The address of link ``i``'s lower (``::1``) or upper (``::2``) end."""
    return str(ipaddress.ip_address(f"{PREFIX}:{i}::{2 if upper else 1}"))


def _host_link(host: str) -> int:
    return next(i for i, (a, _, _, _) in enumerate(LINKS) if a == host)


def _uplink(leaf: str, spine: str) -> int:
    return next(i for i, (a, _, b, _) in enumerate(LINKS) if (a, b) == (leaf, spine))


def render(node: str) -> str:
    """The ``sysctl`` and ``ip -6`` lines that make ``node`` (``Lab.apply`` runs them)."""
    lines: list[str] = []
    for i, (a, ia, b, ib) in enumerate(LINKS):
        if node in (a, b):
            ifname = ia if node == a else ib
            lines.append(f"ip -6 addr add {address(i, node == b)}/64 dev {ifname}")
    if node in HOSTS:
        i = _host_link(node)
        lines.append(f"ip -6 route add default via {address(i, True)} dev eth0")
        return "\n".join(lines) + "\n"
    lines[:0] = [
        "sysctl -q -w net.ipv6.conf.all.forwarding=1",
        "sysctl -q -w net.ipv6.fib_multipath_hash_policy=1",
        "sysctl -q -w net.ipv6.icmp.ratelimit=0",
    ]
    for h, leaf in zip(HOSTS, LEAVES, strict=True):
        net = f"{PREFIX}:{_host_link(h)}::/64"
        if node in SPINES:
            i = _uplink(leaf, node)
            lines.append(f"ip -6 route add {net} via {address(i, False)} dev {LINKS[i][3]}")
        elif node != leaf:
            hops = " ".join(
                f"nexthop via {address(_uplink(node, s), True)} dev {LINKS[_uplink(node, s)][1]}"
                for s in SPINES
            )
            lines.append(f"ip -6 route add {net} {hops}")
    return "\n".join(lines) + "\n"


@dataclass
class ProbeLab:
    """The lab, built: :attr:`lab` its namespaces; :meth:`inside` runs socket calls in a node."""

    lab: Lab
    failed: list[int] = field(default_factory=list)

    def host_address(self, host: str) -> str:
        return address(_host_link(host), False)

    @property
    def addresses(self) -> dict[str, str]:
        """Every address of the lab and the node that holds it (to name a trace's hops)."""
        out: dict[str, str] = {}
        for i, (a, _, b, _) in enumerate(LINKS):
            out[address(i, False)] = a
            out[address(i, True)] = b
        return out

    def inside(self, node: str) -> AbstractContextManager[None]:
        return inside(self.lab.namespace(node))

    def link_between(self, a: str, b: str) -> int:
        """The link joining nodes ``a`` and ``b`` (either order)."""
        for i, (x, _, y, _) in enumerate(LINKS):
            if {x, y} == {a, b}:
                return i
        raise LabError(f"no link joins {a} and {b}")

    def fail(self, i: int) -> None:
        """Set link ``i`` down at its lower end (the host's or the leaf's port)."""
        a, ia, _, _ = LINKS[i]
        self.lab.ip(a, "link", "set", ia, "down")
        self.failed.append(i)

    def repair(self, i: int) -> None:
        a, ia, _, _ = LINKS[i]
        self.lab.ip(a, "link", "set", ia, "up")
        self.failed.remove(i)


@contextmanager
def probe_lab() -> Iterator[ProbeLab]:
    """Build the lab (sweeping namespaces of dead runs first) and delete every namespace when
    the block ends, also on an error. LabError when namespaces cannot be made here."""
    why = can_make_namespaces()
    if why is not None:
        raise LabError(why)
    sweep()
    with Lab() as lab:
        lab.add_nodes(NODES)
        lab.add_links(LINKS)
        for node in NODES:
            lab.apply(node, render(node))
        time.sleep(0.05)
        yield ProbeLab(lab)


def path_links(trace: Trace, source: str, target: str, names: Mapping[str, str]) -> tuple[str, ...]:
    """The labels of the links a traced EV crosses, from ``source`` to ``target``; empty when
    a hop did not answer or two hops are not neighbours (the path is not known)."""
    nodes = [source, *(names.get(h) if h is not None else None for h in trace.hops)]
    if not trace.reached or any(n is None for n in nodes) or nodes[-1] != target:
        return ()
    out = []
    for a, b in itertools.pairwise(nodes):
        i = next((i for i, (x, _, y, _) in enumerate(LINKS) if {x, y} == {a, b}), None)
        if i is None:
            return ()
        out.append(link_label(i))
    return tuple(out)


@dataclass(frozen=True)
class LabRun:
    """One run of the lab demo: the traced path of every (target, EV), the probe rows (in
    ``PROBE_SCHEMA``), the link set down and when (ms since the epoch, on the rows' clock), and
    the suspects of the tomography over the rows after the failure, best first."""

    paths: dict[tuple[str, str, int], tuple[str, ...]]
    probes: pa.Table
    failed: str | None
    failed_ms: int | None
    suspects: tuple[Suspect, ...]
    spines: dict[str, frozenset[str]]  #: per target, the spines its EVs' paths cross


Localiser = Callable[[Sequence[Sequence[str]], Sequence[int], Sequence[int]], tuple[Suspect, ...]]


def _tomography(
    paths: Sequence[Sequence[str]], sent: Sequence[int], lost: Sequence[int]
) -> tuple[Suspect, ...]:
    from clusterloom.ops.localise import tomography

    return tomography(paths, sent, lost)


def run_lab(
    *,
    evs: int = 16,
    interval_ms: int = 250,
    duration_ms: int = 3000,
    fail_after_ms: int | None = 1500,
    fail: tuple[str, str] = ("leaf2", "spine1"),
    per_interval: int = 2,
    timeout_ms: int = 500,
    out: Path | None = None,
    localiser: Localiser | None = None,
    say: Callable[[str], None] = lambda _: None,
) -> LabRun:
    """The demo: build the lab, answer on ``host2`` and ``host3``, trace ``evs`` EVs from
    ``host1`` to each, probe them for ``duration_ms`` with the link ``fail`` set down after
    ``fail_after_ms`` (None: no failure), write the rows to ``out`` (by its suffix) if given,
    and rank suspects by tomography (``localiser``; by default ``ops.localise.tomography``)
    over the rows of the intervals after the failure. Every namespace is deleted at the end."""
    targets = [t for t in HOSTS if t != "host1"]
    with probe_lab() as pl:
        say(f"built {len(pl.lab.names)} namespaces, {len(LINKS)} veth pairs")
        with _responders(pl, targets) as responders:
            config = ProbeConfig(
                "host1",
                "eth0",
                tuple(
                    Target(
                        pl.host_address(h), port, h, "eth0", tuple(range(EV_BASE, EV_BASE + evs))
                    )
                    for h, port in zip(targets, responders, strict=True)
                ),
                interval_ms=interval_ms,
                timeout_ms=timeout_ms,
                per_interval=per_interval,
                rate_pps=10_000,
            )
            paths = _traced_paths(pl, config)
            spines = {
                h: frozenset(n for (d, _, _), p in paths.items() if d == h for n in _spines(p))
                for h in targets
            }
            for h in targets:
                over = ", ".join(sorted(spines[h])) or "no spine"
                say(f"host1 -> {h}: {evs} EVs traced over {over}")
            link = pl.link_between(*fail) if fail_after_ms is not None else None
            table, failed_ms = _probe(pl, config, duration_ms, link, fail_after_ms, out, say)
    failed = link_label(link) if link is not None else None
    suspects: tuple[Suspect, ...] = ()
    if failed_ms is not None:
        say(f"link {failed} set down {fail_after_ms} ms into the run")
        after = table.filter(pc.greater_equal(table["ts_ms"], failed_ms + interval_ms))
        suspects = (localiser or _tomography)(*tomography_input(after, paths))
    return LabRun(paths, table, failed, failed_ms, suspects, spines)


def _spines(path: Sequence[str]) -> set[str]:
    return {n for link in path for n in SPINES if f"~{n}:" in link}


@contextmanager
def _responders(pl: ProbeLab, hosts: Sequence[str]) -> Iterator[list[int]]:
    """A responder on each of ``hosts``, each served by a thread; their ports. All stopped and
    closed when the block ends."""
    stop = threading.Event()
    responders: list[Responder] = []
    threads: list[threading.Thread] = []
    try:
        for host in hosts:
            with pl.inside(host):
                responders.append(Responder(pl.host_address(host)))
        for r in responders:
            threads.append(threading.Thread(target=r.serve, args=(stop,), daemon=True))
            threads[-1].start()
        yield [r.port for r in responders]
    finally:
        stop.set()
        for th in threads:
            th.join()
        for r in responders:
            r.close()


def _traced_paths(pl: ProbeLab, config: ProbeConfig) -> dict[tuple[str, str, int], tuple[str, ...]]:
    """The links of every (target, EV)'s path, traced from ``host1``."""
    with pl.inside("host1"):
        traces = discover(config, max_hops=6)
    names = pl.addresses
    out = {}
    for tr in traces:
        t = config.targets[tr.target]
        out[t.device, t.interface, tr.ev] = path_links(tr, "host1", t.device, names)
    return out


def _probe(
    pl: ProbeLab,
    config: ProbeConfig,
    duration_ms: int,
    link: int | None,
    fail_after_ms: int | None,
    out: Path | None,
    say: Callable[[str], None],
) -> tuple[pa.Table, int | None]:
    """Probe from ``host1`` for ``duration_ms``, link ``link`` set down ``fail_after_ms``
    into the run; the rows, and when the link went down (ms since the epoch, the rows' clock:
    when the command that set it down returned)."""
    downed: list[int] = []
    timer = None
    if link is not None and fail_after_ms is not None:

        def down() -> None:
            pl.fail(link)
            downed.append(time.monotonic_ns())

        timer = threading.Timer(fail_after_ms / 1000, down)
    rows: list[dict[str, Any]] = []
    sink = open_sink(out) if out is not None else None
    try:
        with pl.inside("host1"):
            prober = Prober(config)
        with prober:
            if timer is not None:
                timer.start()
            summary = prober.run(duration_ms, sink, on_rows=rows.extend)
            start_ns, start_ms = prober.ledger.start_ns, prober.ledger.start_ms
    except BaseException:
        if sink is not None:
            sink.abort()
        raise
    finally:
        if timer is not None:
            timer.cancel()
            if timer.is_alive():
                timer.join()
    if sink is not None:
        sink.close()
    lost = summary.sent - summary.answered
    say(f"{summary.sent} probes sent, {lost} lost, {summary.rows} rows")
    failed_ms = start_ms + (downed[0] - start_ns) // 1_000_000 if downed else None
    return rows_table(rows), failed_ms
