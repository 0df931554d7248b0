"""The packet engine's options: every key a run takes, its type, range and meaning, and the
parsing of ``KEY=VALUE`` texts (``clusterloom packetsim --option``, the spec's
``scenario.packet`` section).

Two kinds of key:

- **engine-wide** (:data:`ENGINE_OPTIONS`): the switches and packets of the run, fields of
  :class:`~clusterloom.sim.packet.engine.PacketConfig` (``mtu``, ``queue``, ``ecn``, ``pfc``,
  thresholds...). Given bare (``queue=35``) they apply to every transport of the run; given
  with a transport (``receiver-driven.queue=8``) to that transport's run only.
- **per transport**: the keys of the transport's ``defaults`` (``roce-ecmp.dcqcn=0``), typed
  and bounded by its ``option_types``.

Values: a number; a switch as ``on``/``off`` (also ``1``/``0``, ``true``/``false``); a queue
size or threshold as packets (a bare number or ``35pkt``: full packets, MTU plus header) or
bytes with a unit (``140000B``, ``64KiB``). Everything resolves to plain numbers (sizes to
bytes), so a scenario records exactly what ran.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Protocol

from clusterloom.errors import Problem, SpecError
from clusterloom.sim.packet.base import Connection, OptionKind
from clusterloom.sim.packet.engine import PacketConfig
from clusterloom.units import PS_PER_US

__all__ = [
    "ENGINE_OPTIONS",
    "Knob",
    "OptionKind",
    "PacketSection",
    "check_transport_option",
    "config_for",
    "config_from",
    "packet_options",
    "parse_value",
    "resolve_engine",
    "split_options",
    "transport_knobs",
]


@dataclass(frozen=True)
class Knob:
    """One option: its key, type, closed range (in its unit after parsing) and meaning;
    ``field`` is the :class:`PacketConfig` field it sets (engine-wide keys), ``htsim`` the htsim
    flag it corresponds to, if any."""

    key: str
    kind: OptionKind
    lo: float
    hi: float
    help: str
    field: str = ""
    htsim: str = ""
    scale: int = 1  # config value = option value * scale (``reroute_us`` to picoseconds)

    def describe(self) -> str:
        unit = {"size": "packets or bytes", "bytes": "bytes", "bool": "on/off"}.get(self.kind, "")
        return f"{self.key} ({self.kind}{', ' + unit if unit and unit != self.kind else ''})"


MAX_QUEUE_BYTES = 1 << 30  # 1 GiB per port: far beyond any switch buffer
ENGINE_OPTIONS: dict[str, Knob] = {
    k.key: k
    for k in (
        Knob("mtu", "bytes", 64, 65_536, "payload bytes of a full data packet", "mtu", "-mtu"),
        Knob("header", "bytes", 16, 1024, "bytes of every header (ACK, trimmed packet)", "header"),
        Knob(
            "queue",
            "size",
            1,
            MAX_QUEUE_BYTES,
            "data buffer per switch port",
            "buffer_bytes",
            "-q",
        ),
        Knob(
            "control_queue",
            "size",
            1,
            MAX_QUEUE_BYTES,
            "control (ACK, pull, header) buffer per switch port",
            "control_buffer_bytes",
        ),
        Knob("ecn", "bool", 0, 1, "ECN marking at the switches", "ecn"),
        Knob("ecn_kmin", "size", 0, MAX_QUEUE_BYTES, "marking starts above this", "ecn_kmin"),
        Knob("ecn_kmax", "size", 0, MAX_QUEUE_BYTES, "every packet marked from here", "ecn_kmax"),
        Knob("pfc", "bool", 0, 1, "lossless: PFC pauses instead of drops", "pfc"),
        Knob(
            "pfc_xoff",
            "size",
            1,
            MAX_QUEUE_BYTES,
            "pause the upstream port above this",
            "pfc_xoff",
            "-pfc_thresholds (high)",
        ),
        Knob(
            "pfc_xon",
            "size",
            1,
            MAX_QUEUE_BYTES,
            "resume it at or below this",
            "pfc_xon",
            "-pfc_thresholds (low)",
        ),
        Knob("trimming", "bool", 0, 1, "cut overflowing packets to their header", "trimming"),
        Knob(
            "reroute_us",
            "float",
            0,
            86_400e6,
            "routing reconvergence after a failure (us)",
            "reroute_ps",
            scale=PS_PER_US,
        ),
        Knob(
            "end_us",
            "float",
            1,
            86_400e6,
            "simulated time limit of a run (us)",
            "max_time_ps",
            "-end",
            scale=PS_PER_US,
        ),
    )
}

_TRUE = {"on", "true", "yes", "1"}
_FALSE = {"off", "false", "no", "0"}
_SIZE = re.compile(r"([0-9.eE+]+)\s*(pkts?|packets?|[kKMG]?i?B)?")
_SCALE = {"B": 1, "kB": 10**3, "KB": 10**3, "MB": 10**6, "GB": 10**9}
_SCALE |= {"KiB": 2**10, "kiB": 2**10, "MiB": 2**20, "GiB": 2**30}


def parse_value(knob: Knob, value: object, packet_bytes: int) -> float:
    """The value of ``knob`` given as ``value`` (a text, number or bool), in its unit (sizes in
    bytes, a packet being ``packet_bytes``). Raises ``ValueError`` saying what is expected."""
    if isinstance(value, bool):
        number: float = int(value)
        if knob.kind != "bool":
            raise ValueError(f"{knob.key} is a number, not on/off")
    elif isinstance(value, int | float):
        number = float(value)
        if knob.kind == "size":
            number *= packet_bytes
    else:
        text = str(value).strip()
        if knob.kind == "bool":
            low = text.lower()
            if low not in _TRUE | _FALSE:
                raise ValueError(f"{knob.key} is on or off (1/0, true/false), got '{text}'")
            return 1 if low in _TRUE else 0
        m = _SIZE.fullmatch(text) if knob.kind == "size" else None
        try:
            if m is not None:
                unit = m.group(2) or "pkt"
                if unit.startswith("p"):
                    number = float(m.group(1)) * packet_bytes
                elif unit in _SCALE:
                    number = float(m.group(1)) * _SCALE[unit]
                else:
                    raise ValueError(unit)
            else:
                number = float(text)
        except ValueError:
            want = {
                "size": "packets (35 or 35pkt) or bytes with a unit (140000B, 64KiB)",
                "bytes": "a whole number of bytes",
                "int": "a whole number",
                "float": "a number",
            }.get(knob.kind, "a number")
            raise ValueError(f"{knob.key} is {want}, got '{text}'") from None
    if not math.isfinite(number):
        raise ValueError(f"{knob.key} must be finite, got {number}")
    if knob.kind in ("int", "bytes", "size", "bool"):
        if knob.kind != "size" and number != int(number):
            raise ValueError(f"{knob.key} is a whole number, got {number:g}")
        number = round(number)
        if knob.kind == "bool" and number not in (0, 1):
            raise ValueError(f"{knob.key} is on or off (1/0), got {number}")
    if not knob.lo <= number <= knob.hi:
        raise ValueError(f"{knob.key} is from {knob.lo:g} to {knob.hi:g}, got {number:g}")
    return number


def transport_knobs(name: str) -> dict[str, Knob]:
    """The options transport ``name`` takes, typed (its ``defaults`` and ``option_types``)."""
    from clusterloom.sim.packet.transports import transport_class

    cls = transport_class(name)
    out = {}
    for key in cls.defaults:
        kind, lo, hi = cls.option_types.get(key, ("float", 0.0, 1e12))
        out[key] = Knob(key, kind, lo, hi, f"{name} option")
    return out


def _valid_keys(name: str | None) -> str:
    engine = ", ".join(k.describe() for k in ENGINE_OPTIONS.values())
    if name is None:
        return f"engine-wide keys: {engine}; per transport: TRANSPORT.KEY"
    mine = ", ".join(k.describe() for k in transport_knobs(name).values()) or "none"
    return f"allowed: {mine}; engine-wide keys (also as {name}.KEY): {engine}"


def check_transport_option(name: str, key: str, value: object, where: str, pkt: int) -> float:
    """One option of transport ``name``: its own key, or an engine-wide key for its run only.
    Raises ``SpecError`` at ``where`` naming the key and listing the valid ones."""
    knob = transport_knobs(name).get(key) or ENGINE_OPTIONS.get(key)
    if knob is None:
        raise SpecError([Problem(where, f"unknown key '{key}' of {name}; {_valid_keys(name)}")])
    try:
        return parse_value(knob, value, pkt)
    except ValueError as exc:
        raise SpecError([Problem(where, f"{name}.{exc}")]) from None


def resolve_engine(
    given: Mapping[str, object], where: Mapping[str, str], base: Mapping[str, float] | None = None
) -> dict[str, float]:
    """Engine-wide options from raw values (``given``, each at ``where[key]``) over ``base``
    (already resolved): ``mtu`` and ``header`` first, then sizes in packets of them."""
    out = dict(base or {})
    problems: list[Problem] = []
    for key in given:
        if key not in ENGINE_OPTIONS:
            problems.append(
                Problem(where.get(key, key), f"unknown key '{key}'; {_valid_keys(None)}")
            )
    known = [k for k in given if k in ENGINE_OPTIONS]
    order = sorted(known, key=lambda k: k not in ("mtu", "header"))
    for key in order:
        knob = ENGINE_OPTIONS[key]
        default = PacketConfig()
        pkt = int(out.get("mtu", default.mtu)) + int(out.get("header", default.header))
        try:
            out[key] = parse_value(knob, given[key], pkt)
        except ValueError as exc:
            problems.append(Problem(where.get(key, key), str(exc)))
    if problems:
        raise SpecError(problems)
    return out


def split_options(options: Mapping[str, float]) -> tuple[dict[str, float], dict[str, float]]:
    """A transport's resolved options split into engine-wide keys (for its run's config) and
    its own."""
    engine = {k: v for k, v in options.items() if k in ENGINE_OPTIONS}
    return engine, {k: v for k, v in options.items() if k not in ENGINE_OPTIONS}


def config_from(options: Mapping[str, float], base: PacketConfig | None = None) -> PacketConfig:
    """A :class:`PacketConfig` with the engine-wide ``options`` set on ``base`` (the default
    config: unset fields stay the engine's or the transport's choice)."""
    cfg = base or PacketConfig()
    names = {f.name for f in fields(PacketConfig)}
    changes: dict[str, object] = {}
    for key, value in options.items():
        knob = ENGINE_OPTIONS[key]
        assert knob.field in names
        if knob.kind == "bool":
            changes[knob.field] = bool(value)
        elif knob.scale != 1:
            changes[knob.field] = round(value * knob.scale)
        else:
            changes[knob.field] = int(value)
    return replace(cfg, **changes)  # type: ignore[arg-type]  # values typed per field above


class PacketSection(Protocol):
    """What :func:`packet_options` reads of the spec's ``scenario.packet`` section
    (:class:`clusterloom.spec.scenario.PacketScenarioSpec`)."""

    @property
    def mtu(self) -> int | None: ...
    @property
    def queue(self) -> int | str | None: ...
    @property
    def options(self) -> Mapping[str, bool | int | float | str]: ...
    @property
    def transport_options(self) -> Mapping[str, Mapping[str, bool | int | float | str]]: ...


_OPTION_TEXT = re.compile(r"(?:([a-z][a-z0-9-]*)\.)?([a-z_]+)=(.*)")


#: an option as given: its raw value and where it was given (a field path or a flag)
_Given = tuple[object, str]


def packet_options(
    ps: PacketSection | None,
    transport_options: Mapping[str, Mapping[str, float]],
    given: list[str],
    names: Sequence[str],
    *,
    mtu: int | None = None,
    queue: str | None = None,
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """The packet engine's options: engine-wide (resolved, sizes in bytes) and per chosen
    transport, from the spec's ``scenario.packet`` section ``ps`` and its
    ``transport_options``, then ``mtu``, ``queue`` and the ``given`` texts; each key and value
    checked (``SpecError`` naming the key and listing the valid ones)."""
    raw, per = _from_spec(ps, transport_options)
    problems = _from_flags(raw, per, given, mtu, queue)
    try:
        engine = resolve_engine(
            {k: v for k, (v, _) in raw.items()}, {k: w for k, (_, w) in raw.items()}
        )
    except SpecError as exc:  # reported with the transports' problems
        problems += exc.problems
        engine = {}
    out = _per_transport(engine, per, names, problems)
    if not problems:
        flagged = bool(given) or mtu is not None or queue is not None
        problems += _config_problems(
            engine, out, names, "--option" if flagged else "scenario.packet"
        )
    if problems:
        raise SpecError(problems)
    return engine, out


def _from_spec(
    ps: PacketSection | None, transport_options: Mapping[str, Mapping[str, float]]
) -> tuple[dict[str, _Given], dict[str, dict[str, _Given]]]:
    """Engine-wide and per-transport options as the spec gives them. The spec's
    ``transport_options`` reach the packet engine too: a key its transport does not take is
    refused (as before the packet section), not dropped; ``scenario.packet`` wins over them."""
    from clusterloom.sim.registry import REGISTRY

    raw: dict[str, _Given] = {}
    per: dict[str, dict[str, _Given]] = {}
    if ps is not None:
        top: dict[str, object] = {"mtu": ps.mtu, "queue": ps.queue}
        for key, value in top.items():
            if value is not None:
                raw[key] = (value, f"scenario.packet.{key}")
        for key, value in ps.options.items():
            raw[key] = (value, f"scenario.packet.options.{key}")
        for name, opts in ps.transport_options.items():
            for key, value in opts.items():
                per.setdefault(name, {})[key] = (
                    value,
                    f"scenario.packet.transport_options.{name}.{key}",
                )
    for name, flat in transport_options.items():
        if name in REGISTRY and "packet" in REGISTRY[name].engines:
            for key, number in flat.items():
                at = f"scenario.transport_options.{name}.{key}"
                per.setdefault(name, {}).setdefault(key, (number, at))
    return raw, per


def _from_flags(
    raw: dict[str, _Given],
    per: dict[str, dict[str, _Given]],
    given: list[str],
    mtu: int | None,
    queue: str | None,
) -> list[Problem]:
    """The command line's options over the spec's (in place); problems of their form and
    transport names."""
    from clusterloom.sim.registry import REGISTRY, implemented_by

    if mtu is not None:
        raw["mtu"] = (mtu, "--mtu")
    if queue is not None:
        raw["queue"] = (queue, "--queue")
    problems: list[Problem] = []
    for text in given:
        m = _OPTION_TEXT.fullmatch(text.strip())
        if not m:
            problems.append(
                Problem(
                    f"--option {text}",
                    "expected KEY=VALUE (engine-wide, e.g. ecn=off) or TRANSPORT.KEY=VALUE "
                    "(e.g. roce-ecmp.dcqcn=0)",
                )
            )
            continue
        name, key, value = m.groups()
        if name is None:
            raw[key] = (value, f"--option {text}")
        else:
            per.setdefault(name, {})[key] = (value, f"--option {text}")
    for name in per:
        if name not in REGISTRY or "packet" not in REGISTRY[name].engines:
            known = ", ".join(implemented_by("packet"))
            at = next(iter(per[name].values()))[1]
            problems.append(Problem(at, f"unknown packet transport '{name}'; known: {known}"))
    return problems


def _per_transport(
    engine: Mapping[str, float],
    per: Mapping[str, Mapping[str, _Given]],
    names: Sequence[str],
    problems: list[Problem],
) -> dict[str, dict[str, float]]:
    """Each transport's options checked (every transport named, so a typo in one not run is
    still caught) and those of the chosen ones kept; problems appended to ``problems``."""
    from clusterloom.sim.registry import implemented_by

    default = PacketConfig()
    out: dict[str, dict[str, float]] = {}
    packet_names = set(implemented_by("packet"))
    for name in [*names, *(n for n in per if n not in names and n in packet_names)]:
        texts = per.get(name, {})
        mine: dict[str, float] = {}
        # the transport's own mtu and header first: its sizes in packets count them
        for key in sorted(texts, key=lambda k: k not in ("mtu", "header")):
            value, at = texts[key]
            size = int(mine.get("mtu", engine.get("mtu", default.mtu)))
            size += int(mine.get("header", engine.get("header", default.header)))
            try:
                mine[key] = check_transport_option(name, key, value, at, size)
            except SpecError as exc:
                problems += exc.problems
        if mine and name in names:
            out[name] = mine
    return out


def _config_problems(
    engine: Mapping[str, float],
    per: Mapping[str, Mapping[str, float]],
    names: Sequence[str],
    where: str,
) -> list[Problem]:
    """What each chosen transport's whole configuration breaks (xon above xoff, PFC with
    trimming, a queue smaller than a packet), at ``where``."""
    problems = []
    for name in names:
        knobs, _ = split_options(per.get(name, {}))
        cfg = config_for(name, config_from({**engine, **knobs}))
        problems += [Problem(where, f"{name}: {b}") for b in cfg.problems()]
    return problems


def config_for(name: str | type[Connection], base: PacketConfig | None = None) -> PacketConfig:
    """The switch configuration a transport asks for, on ``base``: PFC for ``roce-ecmp``,
    trimming and shallow buffers for ``receiver-driven``, drop-tail with ECN for the others.

    Only the fields ``base`` leaves unset (None) take the transport's choice; a field given is
    kept. So a bare ``PacketConfig(mtu=4000)`` keeps PFC for ``roce-ecmp`` and trimming for
    ``receiver-driven``, and ``PacketConfig(pfc=False)`` turns PFC off on purpose."""
    from clusterloom.sim.packet.transports import transport_class

    cls = transport_class(name) if isinstance(name, str) else name
    cfg = base or PacketConfig()
    wanted: dict[str, object] = {}
    if cfg.pfc is None:
        wanted["pfc"] = cls.wants_pfc
    if cfg.trimming is None:
        wanted["trimming"] = cls.wants_trimming
    if cfg.buffer_bytes is None:
        if cls.wants_buffer_packets is not None:
            wanted["buffer_bytes"] = cls.wants_buffer_packets * cfg.packet_bytes
        elif cls.wants_buffer_bytes is not None:
            wanted["buffer_bytes"] = cls.wants_buffer_bytes
    return replace(cfg, **wanted).resolved()  # type: ignore[arg-type]
