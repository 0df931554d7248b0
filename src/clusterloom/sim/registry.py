"""The one transport registry: each transport named once, with the engines that implement it.

::

    name             flow  packet
    roce-ecmp         x      x
    mrc-spray         x      x
    metaroce                 x
    receiver-driven   x      x
    ideal             x      (the bound; every prediction reports it)

The engines keep their implementations (``sim.flow.transports``, ``sim.packet.transports``);
this module knows only names, so a scenario can be checked and defaulted without importing an
engine. ``tests/sim/test_registry.py`` checks that it matches what the engines implement.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["DEFAULTS", "ENGINES", "REGISTRY", "Engine", "TransportInfo", "implemented_by"]

Engine = Literal["flow", "packet"]
ENGINES: tuple[Engine, ...] = ("flow", "packet")


@dataclass(frozen=True)
class TransportInfo:
    """A transport's name, the engines that implement it and what it models."""

    name: str
    engines: frozenset[Engine]
    summary: str
    #: the physical bound rather than a protocol: a prediction reports it whatever the engine
    bound: bool = False


REGISTRY: dict[str, TransportInfo] = {
    t.name: t
    for t in (
        TransportInfo("roce-ecmp", frozenset(ENGINES), "RoCE, one ECMP-hashed path per queue pair"),
        TransportInfo("mrc-spray", frozenset(ENGINES), "MRC, packets sprayed over many EVs"),
        TransportInfo("metaroce", frozenset({"packet"}), "sprayed RoCE with receiver rate hints"),
        TransportInfo(
            "receiver-driven", frozenset(ENGINES), "sprayed, paced by the receiver's pulls"
        ),
        TransportInfo(
            "ideal", frozenset({"flow"}), "the bound: every flow at its fair share", bound=True
        ),
    )
}

#: the transports a run compares when neither the spec nor the command line names them
DEFAULTS: dict[Engine, tuple[str, ...]] = {
    "flow": ("roce-ecmp", "mrc-spray", "receiver-driven", "ideal"),
    "packet": ("roce-ecmp", "mrc-spray", "metaroce", "receiver-driven"),
}


def implemented_by(engine: Engine) -> tuple[str, ...]:
    """The transports ``engine`` implements, by name, sorted."""
    return tuple(sorted(n for n, t in REGISTRY.items() if engine in t.engines))
