"""The one transport registry: each transport named once, with the engines that implement it.

::

    name             flow  packet
    roce-ecmp         x      x
    mrc-spray         x      x
    metaroce                 x
    receiver-driven   x      x
    ideal             x      (the bound; every prediction reports it)

The engines keep their built-in implementations (``sim.flow.transports``,
``sim.packet.transports``); this module knows their names only, so a scenario can be checked
and defaulted without importing an engine. ``tests/sim/test_predict.py`` checks that it
matches what the engines implement.

Plug-ins
--------
A transport model can come from another package, without a fork, through the entry-point
group ``clusterloom.transports`` (as pytest and nornir load theirs). The entry point names an
object that is a :class:`TransportPlugin`::

    # the plug-in's pyproject.toml
    [project.entry-points."clusterloom.transports"]
    vendor-spray = "vendor_nic.clusterloom:PLUGIN"

    # vendor_nic/clusterloom.py
    from clusterloom.sim.packet.transports import MrcSpray
    from clusterloom.sim.registry import TransportPlugin

    class VendorSpray(MrcSpray):            # a packet-engine Connection
        name = "vendor-spray"
        defaults = {**MrcSpray.defaults, "evs": 64.0}

    PLUGIN = TransportPlugin("vendor-spray", "our NIC's sprayer", packet=VendorSpray)

``flow`` is a flow-engine model (a frozen dataclass whose fields are its options, with the
methods of ``sim.flow.transports.Transport``); ``packet`` a subclass of
``sim.packet.base.Connection`` (its ``defaults`` are its options). A plug-in gives one or both;
its ``name`` is the entry point's name and each implementation's ``name``. Plug-ins are loaded
once, on first use of :data:`REGISTRY`, in the order of their names; they are never run by
default (a scenario names them) and take part in everything a built-in does: scenarios and
their option checks, ``simulate``, ``packetsim``, ``predict`` and ``conformance``. A plug-in
that cannot be used (it fails to import, is not a ``TransportPlugin``, reuses a name, gives no
engine, or an implementation of the wrong kind) is refused with a :class:`PluginError` naming
its entry point, rather than silently left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Literal

from clusterloom.errors import PluginError, Problem

__all__ = [
    "DEFAULTS",
    "ENGINES",
    "ENTRY_POINT_GROUP",
    "REGISTRY",
    "Engine",
    "TransportInfo",
    "TransportPlugin",
    "implemented_by",
    "plugin_implementation",
]

Engine = Literal["flow", "packet"]
ENGINES: tuple[Engine, ...] = ("flow", "packet")
ENTRY_POINT_GROUP = "clusterloom.transports"
#: a transport's name: lower-case words joined by hyphens (as the built-ins')
NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


@dataclass(frozen=True)
class TransportPlugin:
    """What an entry point of ``clusterloom.transports`` loads: a transport model from another
    package, for one or both engines."""

    name: str
    summary: str
    #: the flow-engine model: a frozen dataclass (its fields are its options)
    flow: type | None = None
    #: the packet-engine model: a subclass of ``sim.packet.base.Connection``
    packet: type | None = None


@dataclass(frozen=True)
class TransportInfo:
    """A transport's name, the engines that implement it and what it models."""

    name: str
    engines: frozenset[Engine]
    summary: str
    #: the physical bound rather than a protocol: a prediction reports it whatever the engine
    bound: bool = False
    #: ``built-in``, or the entry point it came from (``name = module:object (distribution)``)
    origin: str = "built-in"
    #: a plug-in's implementations by engine (the built-ins' live in the engines)
    plugin: TransportPlugin | None = None


BUILT_IN: tuple[TransportInfo, ...] = (
    TransportInfo("roce-ecmp", frozenset(ENGINES), "RoCE, one ECMP-hashed path per queue pair"),
    TransportInfo("mrc-spray", frozenset(ENGINES), "MRC, packets sprayed over many EVs"),
    TransportInfo("metaroce", frozenset({"packet"}), "sprayed RoCE with receiver rate hints"),
    TransportInfo("receiver-driven", frozenset(ENGINES), "sprayed, paced by the receiver's pulls"),
    TransportInfo(
        "ideal", frozenset({"flow"}), "the bound: every flow at its fair share", bound=True
    ),
)


def _origin(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    where = f" ({dist.name} {dist.version})" if dist is not None else ""
    return f"entry point {ENTRY_POINT_GROUP}:{ep.name} = {ep.value}{where}"


def _plugin_info(ep: EntryPoint, taken: Mapping[str, TransportInfo]) -> TransportInfo:
    """The registry entry of one entry point, or a PluginError saying why it cannot be used."""
    origin = _origin(ep)

    def refuse(why: str) -> PluginError:
        return PluginError([Problem(origin, why)])

    try:
        plugin = ep.load()
    except Exception as exc:  # a plug-in's own failure, translated at the boundary
        raise refuse(f"does not load: {type(exc).__name__}: {exc}") from exc
    if not isinstance(plugin, TransportPlugin):
        raise refuse(
            f"is a {type(plugin).__name__}, not a clusterloom.sim.registry.TransportPlugin"
        )
    if not NAME.fullmatch(plugin.name) or plugin.name != ep.name:
        raise refuse(
            f"names its transport '{plugin.name}'; the name must be the entry point's "
            f"('{ep.name}'), lower-case words joined by hyphens"
        )
    if plugin.name in taken:
        raise refuse(f"'{plugin.name}' is taken by {taken[plugin.name].origin}; rename it")
    engines: set[Engine] = set()
    for engine, impl in (("flow", plugin.flow), ("packet", plugin.packet)):
        if impl is None:
            continue
        if not isinstance(impl, type) or getattr(impl, "name", None) != plugin.name:
            raise refuse(
                f"its {engine} implementation must be a class whose name is '{plugin.name}'"
            )
        engines.add(engine)  # type: ignore[arg-type]
    if not engines:
        raise refuse("gives neither a flow nor a packet implementation")
    return TransportInfo(
        plugin.name, frozenset(engines), plugin.summary, origin=origin, plugin=plugin
    )


class _Registry(Mapping[str, TransportInfo]):
    """The built-ins, then the installed plug-ins, loaded on first use."""

    def __init__(self) -> None:
        self._entries: dict[str, TransportInfo] | None = None

    def _load(self) -> dict[str, TransportInfo]:
        if self._entries is None:
            entries = {t.name: t for t in BUILT_IN}
            for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
                info = _plugin_info(ep, entries)
                entries[info.name] = info
            self._entries = entries
        return self._entries

    def reload(self) -> None:
        """Read the installed plug-ins again on next use (after installing one at run time)."""
        self._entries = None

    def __getitem__(self, name: str) -> TransportInfo:
        return self._load()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())


#: every transport by name: the built-ins and the installed plug-ins
REGISTRY = _Registry()

#: the transports a run compares when neither the spec nor the command line names them
#: (built-ins only: a plug-in runs when a scenario names it)
DEFAULTS: dict[Engine, tuple[str, ...]] = {
    "flow": ("roce-ecmp", "mrc-spray", "receiver-driven", "ideal"),
    "packet": ("roce-ecmp", "mrc-spray", "metaroce", "receiver-driven"),
}


def implemented_by(engine: Engine) -> tuple[str, ...]:
    """The transports ``engine`` implements, by name, sorted."""
    return tuple(sorted(n for n, t in REGISTRY.items() if engine in t.engines))


def plugin_implementation(name: str, engine: Engine) -> type | None:
    """A plug-in's implementation of ``name`` on ``engine``; None for a built-in or a name
    the registry does not hold (the engine then says what it knows)."""
    info = REGISTRY.get(name)
    if info is None or info.plugin is None:
        return None
    return info.plugin.flow if engine == "flow" else info.plugin.packet
