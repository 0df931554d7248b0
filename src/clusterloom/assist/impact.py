"""The predicted impact of a change plan's state (``docs/assist.md``, "Change plans"): the
flow engine (``sim.predict``) on the backend with the state's missing links failed from the
start, against the same traffic on the undrained baseline.

Assumptions, each tested:

- The traffic is the target spec's ``scenario:`` (kind, size, seed, its first transport) among
  the baseline's installed hosts; a kind that names its own hosts (``step``, ``htsim:``) is
  replaced by a permutation of the same size, and a spec without a scenario takes the standard
  one (a 2 MB permutation) with ``roce-ecmp``, the first of the flow engine's defaults.
- The engine routes on one fabric's topology, and a mid-change state mixes the baseline's links
  and the target's, which no generated topology holds. So a state is run twice: on the
  baseline's topology with every baseline link the state has not live failed, and on the
  target's with every target link it has not live failed; each view leaves out links the state
  does have live (the other design's), so each is a lower bound of the state's capacity, and
  the better of the two (fewer unfinished flows, then the shorter completion) is kept: the
  predicted slowdown is an upper bound. The first state (nothing drained) is exactly the
  baseline, the last exactly the target.
- A drained link is withdrawn before traffic meets it: the transport's failure reaction delay
  (``roce-ecmp.reroute_s``, ``detect_s`` of the sprayers) is set to 0, so flows start on
  the surviving paths.
- Flows whose hosts have no live path do not finish; they are counted (``flows-unfinished``),
  and the completion time is that of the finished flows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from clusterloom.growth.drained import LinkTable, fabric_rows
from clusterloom.units import to_us

if TYPE_CHECKING:
    from clusterloom.fabric import FabricDesign
    from clusterloom.sim.scenario import Scenario
    from clusterloom.spec import Catalog, ClusterSpec

__all__ = ["Impact", "Predictor"]

#: each transport's failure reaction delay: a drained link is withdrawn from routing before
#: traffic meets it (a planned change, not a failure to detect), so the delay is 0
_REACTION = {"roce-ecmp": "reroute_s", "mrc-spray": "detect_s", "receiver-driven": "detect_s"}
#: traffic kinds that take their hosts from the count given (the others name their own)
_BY_COUNT = ("permutation", "all-to-all", "incast", "ring")


@dataclass(frozen=True)
class Impact:
    """One state's predicted figures: the completion of the traffic and the p99 flow
    completion time (finished flows), flows left unfinished, and which view gave them."""

    completion_us: float
    fct_p99_us: float
    unfinished: int
    view: str


class Predictor:
    """Runs states of one change on the backend's two topologies (module docstring)."""

    def __init__(
        self,
        table: LinkTable,
        baseline: FabricDesign,
        target: FabricDesign,
        spec: ClusterSpec,
        hosts: int,
        catalog: Catalog,
    ) -> None:
        self.table = table
        self.views = tuple(
            (name, fd.topology, self._rows(fd, catalog))
            for name, fd in (("baseline", baseline), ("target", target))
        )
        self.scenario = _scenario(spec, target, hosts)
        self.reference: Impact | None = None
        self._seen: dict[bytes, Impact] = {}

    def _rows(self, fd: FabricDesign, catalog: Catalog) -> NDArray[np.int64]:
        names = fabric_rows(fd, catalog)[0].tolist()
        return np.array([self.table.index[n] for n in names], dtype=np.int64)

    def predict(self, live: NDArray[np.bool_]) -> Impact:
        """The better view of ``live`` (cached by state)."""
        key = np.packbits(live).tobytes()
        hit = self._seen.get(key)
        if hit is None:
            hit = min(
                (self._run(name, topo, rows, live) for name, topo, rows in self.views),
                key=lambda i: (i.unfinished, i.completion_us, i.view),
            )
            self._seen[key] = hit
        return hit

    def _run(
        self, view: str, topology: object, rows: NDArray[np.int64], live: NDArray[np.bool_]
    ) -> Impact:
        from clusterloom.sim.failures import Failure
        from clusterloom.sim.predict import FlowPrediction, predict

        down = np.flatnonzero(~live[rows]).astype(np.int64)
        failures = (Failure("drained", down, 0, None),) if len(down) else ()
        sc = replace(self.scenario, failures=failures, failure_texts=())
        out = predict(topology, sc)  # type: ignore[arg-type]
        assert isinstance(out, FlowPrediction)
        s = out.summaries[0]
        p99 = 0.0 if np.isnan(s.fct_p99_ps) else to_us(int(s.fct_p99_ps))
        return Impact(round(to_us(s.makespan_ps), 3), round(p99, 3), s.flows - s.finished, view)

    def checks(self, live: NDArray[np.bool_]) -> dict[str, int | float | str]:
        """The state's impact as ``backend:...`` checks, the slowdown against the baseline."""
        if self.reference is None:
            self.reference = self.predict(self.table.base)
        now, ref = self.predict(live), self.reference
        slow = now.completion_us / ref.completion_us if ref.completion_us > 0 else 1.0
        return {
            "backend:predicted-completion-us": now.completion_us,
            "backend:predicted-fct-p99-us": now.fct_p99_us,
            "backend:predicted-slowdown": round(slow, 4),
            "backend:flows-unfinished": now.unfinished,
            "backend:predicted-view": now.view,
        }

    def describe(self) -> str:
        sc = self.scenario
        return (
            f"{sc.traffic_kind} of {sc.size} among {sc.hosts} installed hosts, {sc.transports[0]}"
        )


def _scenario(spec: ClusterSpec, target: FabricDesign, hosts: int) -> Scenario:
    from clusterloom.sim.registry import DEFAULTS
    from clusterloom.sim.scenario import resolve_scenario

    sc = spec.scenario
    kind = sc.traffic if sc is not None and sc.traffic in _BY_COUNT else "permutation"
    first = (sc.transports[0],) if sc is not None and sc.transports else DEFAULTS["flow"][:1]
    react = _REACTION.get(first[0])
    return resolve_scenario(
        spec,
        target.topology,
        traffic=kind,
        transports=first,
        options=[f"{first[0]}.{react}=0"] if react else [],
        failures=["none"],
        hosts=hosts,
    )
