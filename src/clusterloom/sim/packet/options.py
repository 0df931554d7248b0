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
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Literal

from clusterloom.errors import Problem, SpecError
from clusterloom.sim.packet.engine import PacketConfig
from clusterloom.units import PS_PER_US

__all__ = [
    "ENGINE_OPTIONS",
    "Knob",
    "OptionKind",
    "check_transport_option",
    "config_from",
    "parse_value",
    "resolve_engine",
    "split_options",
    "transport_knobs",
]

OptionKind = Literal["bool", "int", "float", "size", "bytes"]


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
