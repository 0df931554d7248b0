"""Transport conformance: executable checks any multipath, out-of-order, receiver-driven
transport implementation can be run against (``docs/conformance.md``)."""

from clusterloom.conformance.checks import CHECKS, Check
from clusterloom.conformance.harness import (
    FEATURES,
    ConformanceInputError,
    Implementation,
    Outcome,
    PacketImplementation,
    Scenario,
)
from clusterloom.conformance.suite import CheckResult, Status, junit_xml, run_suite, write_junit

__all__ = [
    "CHECKS",
    "FEATURES",
    "Check",
    "CheckResult",
    "ConformanceInputError",
    "Implementation",
    "Outcome",
    "PacketImplementation",
    "Scenario",
    "Status",
    "junit_xml",
    "run_suite",
    "write_junit",
]
