"""``resolve_scenario``: the one place where a simulation's defaults, the spec's ``scenario:``
section and command-line overrides meet.

Precedence, field by field: an override (a keyword argument, e.g. from a command-line flag)
wins over the spec's ``scenario:`` section, which wins over the defaults here and in
:mod:`clusterloom.sim.registry` (the one list of default transports per engine). Transport
options merge key by key (the spec's, then the overrides'). The result, :class:`Scenario`, is
frozen and printable and is written next to every result as ``scenario.json``, so a run can be
reproduced from its output alone.

Packet-engine options (``mtu``, ``queue``, ``KEY=VALUE`` engine-wide or ``TRANSPORT.KEY=VALUE``,
:mod:`clusterloom.sim.packet.options`) come from the spec's ``scenario.packet`` section, then
the overrides, key by key; they are resolved to numbers (sizes in bytes) and recorded.

Refused, with a field path and what would be valid (``SpecError``): a transport the engine does
not implement, an option a chosen transport does not take (or a value out of its range), a
failure naming a link or switch the topology does not have, traffic that does not fit the fabric.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from clusterloom.errors import Problem, SpecError
from clusterloom.sim.registry import DEFAULTS, REGISTRY, Engine, implemented_by
from clusterloom.units import to_us

if TYPE_CHECKING:
    from clusterloom.fabric.topology import Topology
    from clusterloom.sim.failures import Failure
    from clusterloom.sim.traffic import Traffic
    from clusterloom.spec import ClusterSpec

__all__ = [
    "DEFAULT_RTOL",
    "DEFAULT_SIZE",
    "DEFAULT_TRAFFIC",
    "Scenario",
    "build_traffic",
    "late_failures",
    "merge_options",
    "resolve_scenario",
]

DEFAULT_TRAFFIC = "permutation"
DEFAULT_SIZE = "2MB"
#: the flow engine's rate tolerance (``simulate --rtol``)
DEFAULT_RTOL = 0.01

Options = tuple[tuple[str, tuple[tuple[str, float], ...]], ...]


@dataclass(frozen=True)
class Scenario:
    """Everything a prediction runs, resolved: traffic, transports with their options,
    failures, seed, engine. ``failures`` (parsed against the topology) and ``traffic`` (the
    flows) are derived from the other fields and left out of comparisons and the record."""

    engine: Engine
    transports: tuple[str, ...]
    traffic_kind: str
    size: str
    nbytes: int
    hosts: int | None
    seed: int
    failure_texts: tuple[str, ...]
    options: Options = ()
    rtol: float = DEFAULT_RTOL
    #: the packet engine's engine-wide options (``mtu``, ``queue``... resolved, sizes in bytes);
    #: a transport's own engine-wide keys (``receiver-driven.queue``) are in ``options``
    packet: tuple[tuple[str, float], ...] = ()
    failures: tuple[Failure, ...] = field(default=(), compare=False, repr=False)
    traffic: Traffic | None = field(default=None, compare=False, repr=False)

    def options_of(self, name: str) -> dict[str, float]:
        """The options given to transport ``name`` (empty if none)."""
        return dict(dict(self.options).get(name, ()))

    def to_dict(self) -> dict[str, Any]:
        """The record written as ``scenario.json``: plain JSON values, keys in a fixed order."""
        return {
            "kind": "clusterloom-scenario",
            "engine": self.engine,
            "traffic": self.traffic_kind,
            "size": self.size,
            "bytes": self.nbytes,
            "hosts": self.hosts,
            "seed": self.seed,
            "transports": list(self.transports),
            "transport_options": {n: dict(o) for n, o in self.options},
            "failures": list(self.failure_texts),
            "rtol": self.rtol,
            "packet_options": dict(self.packet),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1) + "\n"

    def __str__(self) -> str:
        opts = "; ".join(f"{n}: " + ", ".join(f"{k}={v:g}" for k, v in o) for n, o in self.options)
        return (
            f"{self.engine} engine, {self.traffic_kind} traffic of {self.size}"
            f"{'' if self.hosts is None else f' on {self.hosts} hosts'}, seed {self.seed}, "
            f"transports {', '.join(self.transports)}"
            + (f" ({opts})" if opts else "")
            + (", packet " + ", ".join(f"{k}={v:g}" for k, v in self.packet) if self.packet else "")
            + (f", failures {', '.join(self.failure_texts)}" if self.failure_texts else "")
        )


def resolve_scenario(
    spec: ClusterSpec,
    topology: Topology,
    *,
    engine: Engine = "flow",
    traffic: str | None = None,
    size: str | None = None,
    transports: Sequence[str] | None = None,
    options: Sequence[str] = (),
    failures: Sequence[str] | None = None,
    hosts: int | None = None,
    seed: int | None = None,
    rtol: float = DEFAULT_RTOL,
    mtu: int | None = None,
    queue: str | None = None,
) -> Scenario:
    """The scenario to run on ``topology`` (generated from ``spec``'s backend fabric).

    Every keyword is an override; ``None`` (or ``()`` for ``options``) takes the spec's
    ``scenario:`` value, then the default. ``options`` are ``TRANSPORT.KEY=VALUE`` texts
    (``mrc-spray.evs=16``), for the packet engine also engine-wide ``KEY=VALUE`` (``ecn=off``);
    ``mtu`` (payload bytes) and ``queue`` (packets, or bytes with a unit) are the packet
    engine's; ``failures`` are ``KIND:TARGET@START[-END][*FRACTION]`` texts, or ``["none"]``
    to run without the spec's.
    """
    from clusterloom.sim.failures import parse_failure, parse_size

    if engine not in DEFAULTS:
        raise SpecError([Problem("--engine", f"unknown engine '{engine}'; use flow or packet")])
    sc = spec.scenario
    kind = (
        traffic
        or ((f"htsim:{sc.htsim_file}" if sc.traffic == "htsim" else sc.traffic) if sc else None)
        or DEFAULT_TRAFFIC
    )
    names = _transports(transports, sc.transports if sc else None, engine)
    packet: dict[str, float] = {}
    if engine == "packet":
        from clusterloom.sim.packet.options import packet_options

        packet, merged = packet_options(
            sc.packet if sc else None,
            sc.transport_options if sc else {},
            list(options),
            names,
            mtu=mtu,
            queue=queue,
        )
    else:
        if mtu is not None or queue is not None:
            where = "--mtu" if mtu is not None else "--queue"
            raise SpecError([Problem(where, "is an option of the packet engine (packetsim)")])
        merged = merge_options(sc.transport_options if sc else {}, list(options), engine)
        _check_options(merged, names, engine)
    the_seed = seed if seed is not None else (sc.seed if sc else 0)
    size_text = size or (sc.size if sc else DEFAULT_SIZE)
    nbytes = parse_size(size_text)
    texts = tuple(failures if failures is not None else (sc.failures if sc else ()))
    if failures is not None and "none" in [f.strip() for f in failures]:
        if len(failures) > 1:
            raise SpecError([Problem("--fail none", "runs without failures: give it alone")])
        texts = ()  # the spec's failures turned off
    parsed = tuple(parse_failure(f, topology) for f in texts)
    load = build_traffic(spec, kind, nbytes, hosts, the_seed, topology.plan.hosts)
    return Scenario(
        engine=engine,
        transports=names,
        traffic_kind=kind,
        size=size_text,
        nbytes=nbytes,
        hosts=hosts,
        seed=the_seed,
        failure_texts=texts,
        options=tuple(
            (n, tuple(sorted(o.items()))) for n, o in sorted(merged.items()) if n in names and o
        ),
        rtol=rtol,
        packet=tuple(sorted(packet.items())),
        failures=parsed,
        traffic=load,
    )


def _transports(
    given: Sequence[str] | None, from_spec: Sequence[str] | None, engine: Engine
) -> tuple[str, ...]:
    """The transports to run: the flag's, else the spec's, else the engine's defaults; each
    one the engine implements. The bound (``ideal``) in the spec's list is reported by every
    prediction, so the packet engine takes it without running it as a transport."""
    valid = implemented_by(engine)
    if given is not None:
        names = [n.strip() for n in given if n.strip()]
        where = "--transport"
    elif from_spec is not None:
        names = [n for n in from_spec if not (engine not in REGISTRY[n].engines and _bound(n))]
        where = "scenario.transports"
    else:
        return DEFAULTS[engine]
    problems = []
    for name in names:
        if name not in REGISTRY:
            known = ", ".join(valid)
            what = "packet transport" if engine == "packet" else "transport"
            problems.append(Problem(where, f"unknown {what} '{name}'; known: {known}"))
        elif engine not in REGISTRY[name].engines:
            problems.append(
                Problem(
                    where,
                    f"the {engine} engine does not implement '{name}'; "
                    f"it implements {', '.join(valid)}",
                )
            )
    if problems:
        raise SpecError(problems)
    if not names:
        raise SpecError([Problem(where, f"no transport to run; choose from {', '.join(valid)}")])
    return tuple(names)


def _bound(name: str) -> bool:
    return name in REGISTRY and REGISTRY[name].bound


def merge_options(
    base: Mapping[str, Mapping[str, float]], given: list[str], engine: Engine = "flow"
) -> dict[str, dict[str, float]]:
    """The scenario's transport options overridden by ``TRANSPORT.KEY=VALUE`` texts, each
    checked against the options its transport takes (``--option`` problems)."""
    from clusterloom.spec.scenario import option_problems

    out = {name: dict(opts) for name, opts in base.items()}
    flow_names = implemented_by("flow")
    problems: list[Problem] = []
    for text in given:
        m = re.fullmatch(r"([a-z-]+)\.([a-z_]+)=([-+0-9.eE]+)", text.strip())
        if not m:
            problems.append(
                Problem(f"--option {text}", "expected TRANSPORT.KEY=NUMBER, e.g. mrc-spray.evs=16")
            )
            continue
        name, key, value = m.groups()
        if name not in flow_names:
            known = ", ".join(flow_names)
            problems.append(
                Problem(
                    f"--option {text}",
                    f"unknown transport '{name}'; known: {known}"
                    if name not in REGISTRY
                    else f"'{name}' takes no options; transports with options: {known}",
                )
            )
            continue
        try:
            out.setdefault(name, {})[key] = float(value)
        except ValueError:
            problems.append(Problem(f"--option {text}", f"'{value}' is not a number"))
    if engine == "flow":
        for name, opts in out.items():
            if name in flow_names:
                problems += option_problems(name, opts, f"--option {name}")
    if problems:
        raise SpecError(problems)
    return out


def _check_options(
    merged: Mapping[str, Mapping[str, float]], names: Sequence[str], engine: Engine
) -> None:
    """Each chosen transport takes its options on ``engine``: the flow engine builds each one
    (typed options, checked ranges); the packet engine's take the keys of their defaults."""
    if engine == "flow":
        from clusterloom.sim.flow.transports import transport

        for name in names:
            transport(name, **merged.get(name, {}))
        return
    from clusterloom.sim.packet.transports import transport_class

    problems = []
    for name in names:
        allowed = transport_class(name).defaults
        for key in merged.get(name, {}):
            if key not in allowed:
                problems.append(
                    Problem(
                        f"transport_options.{name}.{key}",
                        f"the packet engine's {name} does not take {key}; "
                        f"allowed: {', '.join(sorted(allowed)) or 'none'}",
                    )
                )
    if problems:
        raise SpecError(problems)


def late_failures(failures: Sequence[Failure], makespans_ps: Sequence[int]) -> None:
    """Refuse failures that start after every transport finished: they changed nothing, so
    the run does not show what was asked (``--fail`` problems)."""
    end = max(makespans_ps, default=0)
    late = [f for f in failures if f.start_ps >= end]
    if late:
        raise SpecError(
            [
                Problem(
                    f"--fail {f.label}",
                    f"starts at {to_us(f.start_ps):,.3f} us, after every transport "
                    f"finished (the last at {to_us(end):,.3f} us); use an earlier time",
                )
                for f in late
            ]
        )


def build_traffic(
    cluster: ClusterSpec, kind: str, nbytes: int, hosts: int | None, seed: int, fabric_hosts: int
) -> Traffic:
    """The flows of traffic ``kind`` (permutation, all-to-all, incast, ring, step,
    htsim:FILE) among the first ``hosts`` hosts (all of the fabric's by default)."""
    from clusterloom.sim import traffic as tr
    from clusterloom.sim.htsim import read_htsim

    n = hosts or fabric_hosts
    if n > fabric_hosts or n < 2:
        raise SpecError([Problem("--hosts", f"between 2 and the fabric's {fabric_hosts} hosts")])
    if kind == "permutation":
        return tr.permutation(n, nbytes, seed=seed)
    if kind == "all-to-all":
        return tr.all_to_all(n, nbytes)
    if kind == "incast":
        return tr.incast(n - 1, nbytes, receiver=n - 1, n_hosts=n)
    if kind == "ring":
        return tr.ring_all_reduce(n, nbytes)
    if kind == "step":
        from clusterloom.workload import design_workload

        if cluster.job is None:
            raise SpecError([Problem("--traffic", "step traffic needs a job section in the spec")])
        w = design_workload(cluster)
        return tr.from_step_flows(w.flows, w.ops, n_hosts=w.layout.world)
    if kind.startswith("htsim:"):
        return read_htsim(kind.split(":", 1)[1])
    raise SpecError(
        [
            Problem(
                "--traffic",
                f"unknown traffic '{kind}'; use permutation, "
                "all-to-all, incast, ring, step or htsim:FILE",
            )
        ]
    )
