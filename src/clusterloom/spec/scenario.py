"""The ``scenario`` section of the spec: what ``clusterloom simulate`` runs on the fabric.

::

    scenario:
      traffic: permutation      # permutation | all-to-all | incast | ring | step | htsim
      size: 2MB                 # bytes per flow (generated traffic)
      htsim_file: flows.cm      # the connection matrix, when traffic is htsim
      transports: [roce-ecmp, mrc-spray]   # default: the engine's, see clusterloom.sim.registry
      seed: 0
      failures: ["link:17@1ms", "plane:1@2ms-4ms*0.5"]
      transport_options:
        roce-ecmp: {qps: 4, reroute_s: 1.0}
        mrc-spray: {evs: 128, detect_s: 20e-6}
        receiver-driven: {loss: 0.01}
      packet:                   # the packet engine's (clusterloom.sim.packet.options)
        mtu: 4000               # payload bytes of a full packet
        queue: 35               # per switch port: packets, or bytes with a unit (140000B)
        options: {ecn: off, pfc_xoff: 15, pfc_xon: 12}
        transport_options:
          roce-ecmp: {dcqcn: 0, ack_every: 1}

The model checks shapes only; :func:`scenario_problems` checks the content that needs the
simulator's vocabulary (transport names and options, failure and size syntax) without a
topology: whether a failure's link or switch exists is checked when the fabric is generated.
The simulator is imported inside the function, so loading a spec does not import scipy.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import Field

from clusterloom.errors import Problem, SpecError
from clusterloom.spec._base import SpecModel

__all__ = [
    "TRAFFIC_KINDS",
    "PacketScenarioSpec",
    "ScenarioSpec",
    "TrafficKind",
    "failure_problems",
    "scenario_problems",
]

TrafficKind = Literal["permutation", "all-to-all", "incast", "ring", "step", "htsim"]
TRAFFIC_KINDS: tuple[TrafficKind, ...] = (
    "permutation",
    "all-to-all",
    "incast",
    "ring",
    "step",
    "htsim",
)


#: a packet-engine option's value: a number, on/off, or a size text (35pkt, 140000B, 64KiB)
PacketValue = bool | int | float | Annotated[str, Field(min_length=1, max_length=32)]
#: at most this many keys per options mapping (there are fewer valid keys than this)
MAX_PACKET_KEYS = 64


class PacketScenarioSpec(SpecModel):
    """The packet engine's options (``clusterloom.sim.packet.options``): checked for their
    keys, types and ranges by :func:`scenario_problems`."""

    mtu: int | None = Field(default=None, ge=64, le=65_536, description="payload bytes")
    queue: int | Annotated[str, Field(min_length=1, max_length=32)] | None = Field(
        default=None, description="data buffer per switch port: packets, or bytes with a unit"
    )
    options: dict[str, PacketValue] = Field(default_factory=dict, max_length=MAX_PACKET_KEYS)
    transport_options: dict[str, dict[str, PacketValue]] = Field(
        default_factory=dict, max_length=16
    )


class ScenarioSpec(SpecModel):
    """Traffic, transports and failures of a flow-level simulation."""

    traffic: TrafficKind = "permutation"
    size: str = Field(default="2MB", description="bytes per flow, e.g. 2MB or 512KiB")
    htsim_file: str | None = Field(
        default=None, description="htsim connection-matrix file (traffic: htsim)"
    )
    transports: tuple[str, ...] | None = Field(
        default=None,
        min_length=1,
        description="transports to compare; default: the engine's (clusterloom.sim.registry)",
    )
    seed: int = Field(default=0, ge=0, le=2**32 - 1)
    failures: tuple[str, ...] = ()
    transport_options: dict[str, dict[str, float]] = Field(default_factory=dict)
    packet: PacketScenarioSpec | None = None


def failure_problems(text: str, where: str) -> list[Problem]:
    """Syntax of one failure (``KIND:TARGET@START[-END][*FRACTION]``, see
    :mod:`clusterloom.sim.flow.run`) without a topology: the form, the times, end after start
    and a gray fraction in [0, 1)."""
    from clusterloom.sim.failures import FAILURE_SYNTAX, parse_time

    m = FAILURE_SYNTAX.match(text)
    if not m:
        return [
            Problem(
                where,
                f"'{text}' is not a failure like link:17@1ms or plane:0@2ms-4ms*0.5 "
                "(KIND:TARGET@START[-END][*FRACTION], KIND link, switch, port or plane; "
                "TARGET a number or a name like spine0000 or leaf0003-spine0001)",
            )
        ]
    try:
        start = parse_time(m.group("start"), where)
        end = parse_time(m.group("end"), where) if m.group("end") else None
    except SpecError as exc:
        return list(exc.problems)
    out: list[Problem] = []
    if end is not None and end <= start:
        out.append(Problem(where, f"'{text}': the end must come after the start"))
    fraction = m.group("fraction")
    if fraction is not None:
        try:
            value = float(fraction)
        except ValueError:
            value = -1.0
        if not 0.0 <= value < 1.0:
            out.append(
                Problem(
                    where, f"'{text}': a gray failure keeps a fraction in [0, 1), got {fraction}"
                )
            )
    return out


#: a whole-number option (entropy values, queue pairs) is at most this: MRC sprays over 128 to
#: 256 EVs, RoCE uses a handful of QPs per connection
MAX_OPTION_COUNT = 65_536
#: a time option (``*_s``: detection, reroute) is at most a day, as every simulated time
MAX_OPTION_SECONDS = 86_400


def option_problems(name: str, options: dict[str, float], where: str) -> list[Problem]:
    """Everything wrong with the options of one (known) transport, each at ``where.KEY``."""
    from clusterloom.sim.flow.transports import option_kinds, transport

    kinds = option_kinds(name)
    out: list[Problem] = []
    for key, value in options.items():
        kind = kinds.get(key)
        if kind is None:
            allowed = ", ".join(kinds) or "none"
            out.append(Problem(f"{where}.{key}", f"unknown option of {name}; allowed: {allowed}"))
        elif not math.isfinite(value):
            out.append(Problem(f"{where}.{key}", f"{key} must be a finite number, got {value}"))
        elif kind == "bool" and value not in (0, 1):
            out.append(Problem(f"{where}.{key}", f"{key} is 1 (on) or 0 (off), got {value}"))
        elif kind == "int" and (value != int(value) or value < 1):
            out.append(Problem(f"{where}.{key}", f"{key} is a positive whole number, got {value}"))
        elif kind == "int" and value > MAX_OPTION_COUNT:
            out.append(
                Problem(f"{where}.{key}", f"{key} is at most {MAX_OPTION_COUNT:,}, got {value:g}")
            )
        elif value < 0:
            out.append(Problem(f"{where}.{key}", f"{key} must be >= 0, got {value}"))
        elif key.endswith("_s") and value > MAX_OPTION_SECONDS:
            out.append(
                Problem(
                    f"{where}.{key}",
                    f"{key} is at most {MAX_OPTION_SECONDS:,} s (a day), got {value:g}",
                )
            )
    if out:
        return out
    try:
        transport(name, **options)
    except SpecError as exc:
        out += [Problem(where, p.message) for p in exc.problems]
    return out


def scenario_problems(scenario: ScenarioSpec, base: str = "scenario") -> list[Problem]:
    """Everything wrong with a scenario that its model does not check, each Problem at its field
    path (``scenario.failures[2]``)."""
    from clusterloom.sim.failures import parse_size
    from clusterloom.sim.registry import REGISTRY as TRANSPORTS

    known = ", ".join(sorted(TRANSPORTS))
    out: list[Problem] = []
    try:
        parse_size(scenario.size, f"{base}.size")
    except SpecError as exc:
        out += exc.problems
    if scenario.traffic == "htsim" and scenario.htsim_file is None:
        out.append(Problem(f"{base}.htsim_file", "traffic: htsim needs the connection-matrix file"))
    if scenario.traffic != "htsim" and scenario.htsim_file is not None:
        out.append(
            Problem(
                f"{base}.htsim_file",
                f"only read for traffic: htsim (traffic is {scenario.traffic}); remove it",
            )
        )
    seen: set[str] = set()
    for i, name in enumerate(scenario.transports or ()):
        where = f"{base}.transports[{i}]"
        if name not in TRANSPORTS:
            out.append(Problem(where, f"unknown transport '{name}'; known: {known}"))
        elif name in seen:
            out.append(Problem(where, f"transport '{name}' is listed twice"))
        seen.add(name)
    for i, text in enumerate(scenario.failures):
        out += failure_problems(text, f"{base}.failures[{i}]")
    for name, options in scenario.transport_options.items():
        where = f"{base}.transport_options.{name}"
        if name not in TRANSPORTS:
            out.append(Problem(where, f"unknown transport '{name}'; known: {known}"))
        elif "flow" not in TRANSPORTS[name].engines:
            out += _packet_option_problems(name, options, where)
        else:
            out += option_problems(name, options, where)
    if scenario.packet is not None:
        out += _packet_section_problems(scenario, base)
    return out


def _packet_section_problems(scenario: ScenarioSpec, base: str) -> list[Problem]:
    """Keys, types and ranges of the ``packet`` section (without a topology: the same checks
    as ``resolve_scenario``, on every transport the section names)."""
    from clusterloom.sim.packet.options import packet_options
    from clusterloom.sim.registry import REGISTRY, implemented_by

    assert scenario.packet is not None
    names = [
        n
        for n in scenario.packet.transport_options
        if n in REGISTRY and "packet" in REGISTRY[n].engines
    ]
    try:
        packet_options(
            scenario.packet,
            scenario.transport_options,
            [],
            names or list(implemented_by("packet"))[:1],
        )
    except SpecError as exc:
        return [
            Problem(p.where.replace("scenario.", f"{base}.", 1), p.message) for p in exc.problems
        ]
    return []


def _packet_option_problems(name: str, options: dict[str, float], where: str) -> list[Problem]:
    """Options of a transport only the packet engine implements: its keys, types and ranges."""
    from clusterloom.sim.packet.engine import PacketConfig
    from clusterloom.sim.packet.options import check_transport_option

    out: list[Problem] = []
    for key, value in options.items():
        try:
            check_transport_option(name, key, value, f"{where}.{key}", PacketConfig().packet_bytes)
        except SpecError as exc:
            out += exc.problems
    return out
