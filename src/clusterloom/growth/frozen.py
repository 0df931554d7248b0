"""Frozen fabrics (``growth.frozen.fabrics``): what a grown design does to a fabric that must
not change, as error findings.

A frozen fabric keeps every installed link: none is re-patched (its ends change or it goes) or
re-pulled (same ends, another cable), and no device is added to it. The grown design is still
made (the spec asks for it); each breach is an error finding naming the links or devices, so
``design`` exits 1 and says what the growth would do to the frozen fabric.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from clusterloom.export.naming import topology_names
from clusterloom.findings import Finding, Severity
from clusterloom.growth.rework import Growth, link_names

if TYPE_CHECKING:
    from clusterloom.pipeline import Design

#: links or devices named in one finding; the rest are counted
SHOWN = 8


def _named(what: str, names: list[str]) -> str:
    shown = ", ".join(names[:SHOWN])
    more = f" and {len(names) - SHOWN:,} more" if len(names) > SHOWN else ""
    return f"{len(names):,} {what}: {shown}{more}"


def frozen_fabric_findings(design: Design, growth: Growth, fabric: str) -> list[Finding]:
    """The breaches of frozen ``fabric`` in ``design`` grown from ``growth.baseline``."""
    catalog = design.spec.resolved_catalog()
    base = growth.baseline
    new_i = [fd.name for fd in design.fabrics].index(fabric)
    old = [fd.name for fd in base.fabrics]
    if fabric not in old:
        return []
    old_i = old.index(fabric)
    where = "growth.frozen.fabrics"
    out: list[Finding] = []
    c, change = design.cabling, growth.change
    if change is not None and c is not None and base.cabling is not None:
        old_names = link_names(base.cabling, base.fabrics, catalog)
        new_names = link_names(c, design.fabrics, catalog)
        gone = [old_names[r] for r in change.removed.tolist() if base.cabling.fabric[r] == old_i]
        pulled = [new_names[r] for r in change.changed.tolist() if c.fabric[r] == new_i]
    else:
        gone = [f"{m.a} ~ {m.b}" for m in design.fabric(fabric).moves]
        pulled = []
    for code, what, names in (
        ("frozen-fabric-repatch", "installed links re-patched", gone),
        ("frozen-fabric-repull", "installed links re-pulled", pulled),
    ):
        if names:
            out.append(
                Finding(
                    Severity.ERROR,
                    code,
                    f"frozen fabric {fabric}: {_named(what, sorted(names))}; keep the growth "
                    "off it or unfreeze it",
                    where,
                )
            )
    before = set(topology_names(base.fabric(fabric).topology, catalog).devices.tolist())
    after = topology_names(design.fabric(fabric).topology, catalog).devices
    added = sorted({str(d) for d in np.asarray(after).tolist() if d not in before})
    if added:
        out.append(
            Finding(
                Severity.ERROR,
                "frozen-fabric-grown",
                f"frozen fabric {fabric}: {_named('new devices', added)}; a frozen fabric "
                "takes no new device",
                where,
            )
        )
    return out


def with_frozen_fabrics(design: Design, growth: Growth) -> Design:
    """``design`` with each frozen fabric's breaches among that fabric's findings."""
    frozen = design.spec.growth.frozen.fabrics if design.spec.growth is not None else ()
    fabrics = list(design.fabrics)
    for i, fd in enumerate(fabrics):
        if fd.name in frozen:
            extra = frozen_fabric_findings(design, growth, fd.name)
            fabrics[i] = replace(fd, findings=(*fd.findings, *extra))
    return replace(design, fabrics=tuple(fabrics))
