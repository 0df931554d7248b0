"""Input limits of the cluster spec, in one place (documented in ``docs/spec.md``).

Two kinds of limit keep hostile or mistaken input from reaching numpy or a solver:

- **Document limits**, checked on the YAML text before any Python object is built: the file
  size, the nesting depth, the entries of one list or mapping, the length of one scalar, and
  the number of nodes the document has once every alias is expanded (a "billion laughs" bomb
  is refused from its events, before it is expanded).
- **Field ranges**: every number of the spec has a physically meaningful range, given here as
  an annotated type and checked by the schema at parse time with the field named. The ranges
  are generous (an order of magnitude or more beyond any cluster built or announced) and exist
  so that nothing huge, negative or non-finite travels into the stages.

Derived sizes the stages would build (positions of a site, ports of a fabric) are bounded by
the semantic checks in ``load.py`` and ``site.py`` with the same constants.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import yaml
from pydantic import Field

from clusterloom.errors import Problem, SpecError

__all__ = [
    "MAX_ACCELERATORS",
    "MAX_DEPTH",
    "MAX_EFFORT",
    "MAX_HALL_ROWS",
    "MAX_ITEMS",
    "MAX_NODES",
    "MAX_ROW_POSITIONS",
    "MAX_SCALAR_CHARS",
    "MAX_SITE_POSITIONS",
    "MAX_SPEC_BYTES",
    "check_yaml_shape",
]

# -- document limits -------------------------------------------------------------------------

#: bytes of one spec file (the largest built-in example is under 10 KB; a megabyte of YAML
#: takes about 3 s to check and load)
MAX_SPEC_BYTES = 2**20
#: nesting of lists and mappings (the spec's own schema is 7 deep)
MAX_DEPTH = 32
#: entries of one list or mapping
MAX_ITEMS = 100_000
#: characters of one scalar (a name, a description, a number's text)
MAX_SCALAR_CHARS = 65_536
#: nodes of the whole document with every alias expanded where it is used
MAX_NODES = 1_000_000

# -- sizes the stages build ------------------------------------------------------------------

#: accelerators of one spec: twice the largest generation benchmarked (1M, bench_fabric)
MAX_ACCELERATORS = 2**21
#: rack positions of one site (a gigawatt campus has well under 100,000 racks)
MAX_SITE_POSITIONS = 1_000_000
#: rows of one hall, and positions of one row
MAX_HALL_ROWS = 10_000
MAX_ROW_POSITIONS = 10_000
#: CP-SAT deterministic time of one placement model (about seconds on one core): a day
MAX_EFFORT = 86_400.0


# -- field ranges (annotated types used by the spec models) ----------------------------------

#: accelerators, and any parallel degree (tp, pp, dp, cp, ep) carved out of them
Accelerators = Annotated[int, Field(ge=1, le=MAX_ACCELERATORS)]
#: ports, planes, nodes per leaf or unit, servers per rack: counts inside one device or group
DeviceCount = Annotated[int, Field(ge=1, le=65_536)]
#: a port or link speed in Gb/s (1.6T ports ship today; 3.2T is announced)
PortGbps = Annotated[int, Field(ge=1, le=12_800)]
#: a bandwidth per accelerator in Gb/s (NVLink 5 is 7,200)
BandwidthGbps = Annotated[float, Field(ge=0, le=1_000_000)]
#: a one-way latency in nanoseconds, up to one second
LatencyNs = Annotated[float, Field(ge=0, le=1e9)]
#: a coordinate on a campus, metres from its origin (100 km either way)
CoordinateM = Annotated[float, Field(ge=-100_000, le=100_000)]
#: a length or extent in metres (a building, a route between buildings)
LengthM = Annotated[float, Field(gt=0, le=100_000)]
#: a small length in metres (a rack pitch, depth, aisle)
SpacingM = Annotated[float, Field(gt=0, le=100)]
#: a length in millimetres (a tray, duct or rack cross-section)
LengthMm = Annotated[float, Field(gt=0, le=10_000)]
#: a power or cooling budget in kW (a gigawatt campus is 1,000,000 kW)
PowerKw = Annotated[float, Field(gt=0, le=100_000_000)]
#: a power draw in watts of one device or one end of a link
PowerW = Annotated[float, Field(ge=0, le=1_000_000)]
#: a mass in kg (a loaded rack is about 1,500)
MassKg = Annotated[float, Field(gt=0, le=1_000_000)]
#: a price in US dollars of one item
PriceUsd = Annotated[float, Field(ge=0, le=1e12)]
#: rack units of a device or rack
RackUnits = Annotated[int, Field(ge=1, le=256)]
#: a model dimension (hidden, ffn_hidden, heads, vocabulary, sequence length...)
ModelDim = Annotated[int, Field(ge=1, le=2**24)]
#: a count of layers, experts, sequences per batch
ModelCount = Annotated[int, Field(ge=1, le=2**24)]
#: a seed of a random generator (CP-SAT and numpy both take it)
Seed = Annotated[int, Field(ge=0, le=2**31 - 1)]


def _too_big(where: str, what: str, limit: int, fix: str) -> SpecError:
    return SpecError([Problem(where, f"{what} exceeds the limit of {limit:,}; {fix}")])


@dataclass
class _Open:
    """A list or mapping whose end event has not come yet."""

    allowed: int  # events it may hold: a mapping's keys and values are both events
    anchor: str | None
    nodes: int = 1
    events: int = 0


def check_yaml_shape(text: str, source: str) -> None:
    """Refuse a YAML document beyond the document limits, from its events alone: nothing is
    constructed, so an alias bomb costs the size of its text, not of its expansion.

    Raises ``SpecError`` naming the line; a document that does not parse is left to the loader,
    which names the YAML error.
    """
    if len(text) > MAX_SPEC_BYTES:  # characters; the byte limit is checked on the file
        raise _too_big(source, "the spec's size", MAX_SPEC_BYTES, "a spec is a few KB")
    expanded: dict[str, int] = {}  # anchor -> nodes of its expansion
    stack: list[_Open] = []
    total = 0

    def line(event: yaml.Event) -> str:
        mark = event.start_mark
        return f"{source} line {mark.line + 1}" if mark is not None else source

    def add(nodes: int, event: yaml.Event) -> None:
        nonlocal total
        if stack:
            top = stack[-1]
            top.nodes += nodes
            top.events += 1
            if top.events > top.allowed:
                raise _too_big(line(event), "a list or mapping's entries", MAX_ITEMS, "split it")
        else:
            total += nodes
        if total + sum(f.nodes for f in stack) > MAX_NODES:
            raise _too_big(
                line(event),
                "the document's nodes with aliases expanded",
                MAX_NODES,
                "an alias used many times expands to many copies; write the values out",
            )

    try:
        for event in yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            if isinstance(event, yaml.ScalarEvent):
                if len(event.value) > MAX_SCALAR_CHARS:
                    raise _too_big(
                        line(event), "a value's length", MAX_SCALAR_CHARS, "shorten the value"
                    )
                if event.anchor:
                    expanded[event.anchor] = 1
                add(1, event)
            elif isinstance(event, yaml.CollectionStartEvent):
                if len(stack) >= MAX_DEPTH:
                    raise _too_big(line(event), "nesting depth", MAX_DEPTH, "flatten the document")
                per_item = 2 if isinstance(event, yaml.MappingStartEvent) else 1
                stack.append(_Open(per_item * MAX_ITEMS, event.anchor))
            elif isinstance(event, yaml.CollectionEndEvent):
                done = stack.pop()
                if done.anchor:
                    expanded[done.anchor] = done.nodes
                add(done.nodes, event)
            elif isinstance(event, yaml.AliasEvent):
                add(expanded.get(str(event.anchor), 1), event)
    except yaml.YAMLError:
        return
