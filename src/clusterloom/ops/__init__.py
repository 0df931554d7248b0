"""Runtime operations (issue 23, ``docs/ops.md``), a lifecycle part reading designs and the
simulators; no stage imports it.

- ``model`` (the telemetry tables, ``Fault``, ``Suspect``) and ``fabric`` (``OpsFabric``: a
  design's names, interfaces and probe paths) are what the parts hand each other;
- ``ingest`` (checked readers of exposition text, CSV and Parquet; rates) and ``telemetry``
  (``TelemetryStore``: Parquet parts, DuckDB, rollups, retention) take telemetry in;
- ``faults`` and ``synth`` make ground truth from the flow engine under injected faults;
- ``detect``, ``localise`` (tomography over the design's paths) and ``evaluate`` find faults;
- ``mitigate`` checks mitigations in the simulator before proposing them; ``incident`` and
  ``page`` keep and show an incident's timeline;
- ``probe`` (a real UDP probe agent) and ``probe_lab`` (its namespace lab).
"""

from clusterloom.ops.detect import Anomaly, detect
from clusterloom.ops.evaluate import Evaluation, evaluate
from clusterloom.ops.fabric import OpsFabric, load_fabric, ops_fabric
from clusterloom.ops.faults import (
    fault_failures,
    format_fault,
    parse_fault,
    random_fault,
    read_faults,
)
from clusterloom.ops.incident import Incident, read_incident
from clusterloom.ops.ingest import (
    Ingested,
    counter_rates,
    read_collectives,
    read_counters,
    read_probes,
)
from clusterloom.ops.localise import Localisation, localise, tomography
from clusterloom.ops.mitigate import (
    Checked,
    Mitigation,
    candidates,
    check_mitigations,
    propose_mitigation,
)
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
from clusterloom.ops.page import render_incident
from clusterloom.ops.probe import ProbeConfig, Prober, Responder
from clusterloom.ops.probe_lab import run_lab
from clusterloom.ops.synth import Synthetic, synthesize, write_synthetic
from clusterloom.ops.telemetry import Retention, TelemetryStore

__all__ = [
    "COLLECTIVE_SCHEMA",
    "COUNTERS",
    "COUNTER_SCHEMA",
    "PROBE_SCHEMA",
    "RATE_SCHEMA",
    "Anomaly",
    "Checked",
    "Evaluation",
    "Fault",
    "FaultKind",
    "Incident",
    "Ingested",
    "Localisation",
    "Mitigation",
    "OpsFabric",
    "ProbeConfig",
    "Prober",
    "Responder",
    "Retention",
    "Suspect",
    "SuspectKind",
    "Synthetic",
    "TelemetryStore",
    "candidates",
    "check_mitigations",
    "counter_rates",
    "detect",
    "evaluate",
    "fault_failures",
    "format_fault",
    "load_fabric",
    "localise",
    "ops_fabric",
    "parse_fault",
    "propose_mitigation",
    "random_fault",
    "read_collectives",
    "read_counters",
    "read_faults",
    "read_incident",
    "read_probes",
    "render_incident",
    "run_lab",
    "synthesize",
    "tomography",
    "write_synthetic",
]
