"""The one exception tree of clusterloom.

    ClusterloomError             root: every error the library raises on purpose
    ├── SpecError                a cluster spec that cannot be used (parse, schema, semantics,
    │                            impossible fabric); carries one Problem per thing to fix
    ├── OutputError              an artifact could not be written
    ├── NetBoxError              a push into NetBox failed; one Problem per refused object
    ├── PluginError              an installed transport plug-in that cannot be used; one
    │                            Problem per plug-in, naming its entry point
    ├── SimInputError            (sim.flow.engine; also a ValueError) inconsistent engine input
    ├── StoreError               (clusterloom.store) a design store that cannot be used, or a
    │                            reference, table, column or artifact it does not hold
    ├── PacketSimError           (sim.packet.engine; also a ValueError) a scenario the packet
    │                            engine cannot run
    ├── LabError                 (srv6.lab) the lab cannot run here (no root, no namespaces)
    │                            or a command it ran failed
    ├── PictureError             (report._svg; also a ValueError) a picture asked of what
    │                            cannot be drawn (a device outside its rack, two in one U)
    ├── ChartError               (web.charts; also a ValueError) a run table or transport a
    │                            chart needs is missing
    └── ConformanceInputError    (conformance.harness) a malformed script or capture, an
                                 implementation missing a required method; one Problem each

Foreign exceptions (pydantic, yaml, OSError) are translated at the boundary with
``raise ... from exc`` so that the command line can print them as one line per problem.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input: where (a dotted field path or 'line N') and what to do."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message


class ClusterloomError(Exception):
    """Root of every error clusterloom raises on purpose."""


class SpecError(ClusterloomError):
    """A cluster spec that cannot be used. ``problems`` lists every problem found, not just one."""

    def __init__(self, problems: list[Problem] | tuple[Problem, ...]) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems) or "invalid spec")


class OutputError(ClusterloomError):
    """An output could not be written (permissions, disk full, a path that is a file...)."""


class NetBoxError(ClusterloomError):
    """A push into NetBox failed (unreachable, token refused, an object refused); one Problem
    per object NetBox refused."""

    def __init__(self, problems: list[Problem] | tuple[Problem, ...]) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems) or "NetBox push failed")


class PluginError(ClusterloomError):
    """An installed transport plug-in (entry-point group ``clusterloom.transports``) that
    cannot be used: it fails to load, is not a ``TransportPlugin``, or clashes with another
    transport. One Problem per plug-in, naming its entry point and distribution."""

    def __init__(self, problems: list[Problem] | tuple[Problem, ...]) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems) or "transport plug-in refused")


class StoreError(ClusterloomError):
    """The design store (``clusterloom.store``) refused a request: a store that cannot be
    opened or migrated, a reference that is not found or is ambiguous, a table, column or
    artifact name the owner does not hold. One line saying what and how to fix it."""
