"""Runtime operations (issue 23, ``docs/ops.md``), a lifecycle part reading designs and the
simulators: telemetry in (``model``: the tables; ``fabric``: a design's names, interfaces and
probe paths), faults found and localised, mitigations checked in the simulator before they are
proposed. No stage imports it."""

from clusterloom.ops.fabric import OpsFabric, load_fabric, ops_fabric
from clusterloom.ops.model import (
    COLLECTIVE_SCHEMA,
    COUNTER_SCHEMA,
    COUNTERS,
    PROBE_SCHEMA,
    RATE_SCHEMA,
    Fault,
    FaultKind,
    Suspect,
    SuspectKind,
)

__all__ = [
    "COLLECTIVE_SCHEMA",
    "COUNTERS",
    "COUNTER_SCHEMA",
    "PROBE_SCHEMA",
    "RATE_SCHEMA",
    "Fault",
    "FaultKind",
    "OpsFabric",
    "Suspect",
    "SuspectKind",
    "load_fabric",
    "ops_fabric",
]
