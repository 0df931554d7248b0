"""clusterloom: networks of frontier AI training clusters, from intent to a buildable, verified
fabric. The public surface is re-exported here; everything else lives in domain packages."""

from clusterloom._version import __version__
from clusterloom.errors import ClusterloomError, OutputError, Problem, SpecError
from clusterloom.fabric import FabricDesign, FabricPlan, Topology, design_fabric, plan_fabric
from clusterloom.findings import Finding, Severity
from clusterloom.pipeline import Design, run_design
from clusterloom.sim.predict import predict
from clusterloom.sim.scenario import Scenario, resolve_scenario
from clusterloom.spec import ClusterSpec, load_spec, parse_spec

__all__ = [
    "ClusterSpec",
    "ClusterloomError",
    "Design",
    "FabricDesign",
    "FabricPlan",
    "Finding",
    "OutputError",
    "Problem",
    "Scenario",
    "Severity",
    "SpecError",
    "Topology",
    "__version__",
    "design_fabric",
    "load_spec",
    "parse_spec",
    "plan_fabric",
    "predict",
    "resolve_scenario",
    "run_design",
]
