"""The shapes that would have avoided a growth step's forced re-patching, each with its cost.

When a grown fabric cannot keep the installed links (``fabric/stable.py``: hgx-1k-roce 1,024 ->
1,280 GPUs, the 8 spines of 128 ports are full, the spine layer grows to 16 and every leaf's
stripe halves: 512 links forced), :func:`growth_alternatives` evaluates, through the same sizing,
generation, stabilization and bill of materials as the design itself:

- **accept the re-patch**: the grown design as it is (the figures of this step);
- **over-build the spine layer**: the first build sized for the grown count
  (``growth.plan_for_accelerators``): as many spines, fewer ports used on each;
- **reserve spine ports** (of 3 tiers: core ports): the first build on a top tier with more
  ports at the link speed (a larger switch or a finer breakout from the catalog, the same
  technology), sized for the grown count, so fewer switches carry the same stripes;
- **a 3rd tier from the start**: the first build as one pod of a 3-tier fabric (spines with half
  their ports up to cores) sized for the grown count; growth adds pods under the same cores;
- **a 3rd tier now**: cores added above the installed pod at this step; the installed spines use
  every port as a downlink, so the ones they need for uplinks are re-patched (its figures say how
  many).

For each: the first build is generated and the grown fabric stabilized against it, so
``links_repatched`` is :func:`stabilize`'s forced count, never a formula; costs are the fabric
bills of materials (``fabric/bom.py``), the extra of the first build against what was built and
the cost of the step.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from clusterloom.errors import SpecError
from clusterloom.fabric.bom import bill_of_materials
from clusterloom.fabric.options import price_option
from clusterloom.fabric.sizing import FabricPlan, fabric_spec, plan_fabric
from clusterloom.fabric.stable import InstalledLinks, installed_links_of, stabilize
from clusterloom.fabric.topology import generate
from clusterloom.spec import ClusterSpec, SwitchRole

__all__ = ["GrowthAlternative", "growth_alternatives"]

When = Literal["first build", "this step"]


@dataclass(frozen=True)
class GrowthAlternative:
    """One shape for a growth step: what it adds, re-patches and costs, what traffic sees."""

    name: str
    when: When  #: decided at the first build, or at this step
    shape: str  #: the shape in words (counts and ports)
    ask: str  #: how a spec asks for it
    switches_added: int = 0  #: switches this step adds to that first build
    links_added: int = 0  #: links this step pulls (new, or re-patched ends)
    links_repatched: int = 0  #: installed links that must move (stabilize's forced count)
    first_build_usd: float = 0.0  #: what the first build costs beyond the one built
    step_usd: float = 0.0  #: the grown fabric's bill of materials less that first build's
    tiers: int = 0
    switch_hops: int = 0  #: switches on the longest leaf-to-leaf path
    ecmp_paths: int = 0
    bisection_per_host_gbps: float = 0.0
    traffic: str = ""  #: what it changes for traffic against accepting the re-patch
    infeasible: str = ""  #: why this shape cannot be built (then no figures)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _hops(plan: FabricPlan) -> int:
    return 5 if plan.tiers == 3 and plan.pods > 1 else 3


def _variant(spec: ClusterSpec, fabric: str, **changes: Any) -> ClusterSpec:
    """``spec`` with ``fabrics.{fabric}`` fields replaced."""
    fs = fabric_spec(spec, fabric).model_dump()
    fabrics = {**spec.fabrics.model_dump(), fabric: {**fs, **changes}}
    return ClusterSpec.model_validate({**spec.model_dump(), "fabrics": fabrics})


@dataclass(frozen=True)
class _Step:
    """What an alternative's figures are measured against: the grown spec, the installed
    links and the plan they were built from."""

    spec: ClusterSpec
    fabric: str
    installed: InstalledLinks
    built: FabricPlan
    built_usd: float
    grown: FabricPlan


def _evaluate(
    step: _Step,
    name: str,
    when: When,
    ask: str,
    grown: FabricPlan,
    first: FabricPlan | None,
    shape: str,
) -> GrowthAlternative:
    """``grown`` stabilized against ``first`` generated (None: against the installed links)."""
    catalog = step.spec.resolved_catalog()
    links = step.installed if first is None else installed_links_of(generate(first))
    topology = generate(grown)
    st = stabilize(topology, links)
    before = bill_of_materials(first or step.built, catalog)
    after = price_option(step.spec, grown, name, False)
    return GrowthAlternative(
        name=name,
        when=when,
        shape=shape,
        ask=ask,
        switches_added=after.switches - before.switches,
        links_added=topology.n_links - st.kept,
        links_repatched=st.forced,
        first_build_usd=before.cost_usd - step.built_usd,
        step_usd=after.cost_usd - before.cost_usd,
        tiers=grown.tiers,
        switch_hops=_hops(grown),
        ecmp_paths=after.ecmp_paths,
        bisection_per_host_gbps=after.bisection_per_host_gbps,
    )


def _spines(plan: FabricPlan) -> str:
    """The upper layers in words: spines (and cores), the ports each uses of its radix."""

    def layer(role: SwitchRole, count: int) -> str:
        t = plan.tier(role)
        return (
            f"{count * plan.planes:,} {role}s ({t.model}, {t.down + t.up} of {t.radix} "
            f"ports at {plan.speed_gbps}G used)"
        )

    out = layer("spine", plan.spines)
    return out if plan.tiers == 2 else f"{out}, {layer('core', plan.cores)}"


def _reserve_ports(step: _Step, baseline: ClusterSpec, grown_n: int) -> GrowthAlternative:
    """The first build on the cheapest larger-radix top tier (spines of 2 tiers, cores of 3)
    that keeps every installed link."""
    fabric, built, catalog = step.fabric, step.built, step.spec.resolved_catalog()
    top: SwitchRole = "spine" if built.tiers == 2 else "core"
    name = f"reserve {top} ports"
    now = catalog.switches[built.tier(top).model]
    best: GrowthAlternative | None = None
    best_key: tuple[int, float, str] = (0, 0.0, "")
    for model in sorted(catalog.switches):
        sw = catalog.switches[model]
        radix = sw.radix(built.speed_gbps)
        if sw.technology != now.technology or radix is None or radix <= built.tier(top).radix:
            continue
        choice = {t.role: t.model for t in built.switch_tiers} | {top: model}
        try:
            first = plan_fabric(_variant(baseline, fabric, switch=choice), fabric, plan_for=grown_n)
            grown = plan_fabric(_variant(step.spec, fabric, switch=choice), fabric)
        except SpecError:
            continue
        ask = f"fabrics.{fabric}.switch.{top}: {model} and growth.plan_for_accelerators: {grown_n}"
        alt = _evaluate(step, name, "first build", ask, grown, first, _spines(first))
        # fewest re-patched, then the cheapest over both builds, then by name
        key = (alt.links_repatched, alt.first_build_usd + alt.step_usd, model)
        if best is None or key < best_key:
            best, best_key = alt, key
    if best is not None:
        return best
    # the ports the top tier needs to keep every installed stripe at the grown size
    if top == "spine":
        need = step.grown.pod_leaves * (built.tier("leaf").up // built.spines_per_pod)
    else:
        need = step.grown.pods * (built.tier("spine").up // built.cores_per_group)
    return GrowthAlternative(
        name,
        "first build",
        f"{top}s of {need:,} ports at {built.speed_gbps}G",
        f"a {now.technology} switch of that radix under catalog.switches",
        infeasible=f"no {now.technology} switch in the catalog has more than "
        f"{built.tier(top).radix} ports at {built.speed_gbps}G",
    )


def _third_tier(step: _Step, baseline: ClusterSpec, grown_n: int) -> list[GrowthAlternative]:
    """Cores above pods of the installed leaves: from the start, or added now."""
    fabric, built = step.fabric, step.built
    pod = built.leaves
    out = []
    whens: tuple[When, ...] = ("first build", "this step")
    for when in whens:
        name = "a 3rd tier from the start" if when == "first build" else "a 3rd tier now"
        ask = f"fabrics.{fabric}.tiers: 3, pod_leaves: {pod}" + (
            f" and growth.plan_for_accelerators: {grown_n}" if when == "first build" else ""
        )
        try:
            grown = plan_fabric(_variant(step.spec, fabric, tiers=3, pod_leaves=pod), fabric)
            first = None
            if when == "first build":
                ready = _variant(baseline, fabric, tiers=3, pod_leaves=pod)
                first = plan_fabric(ready, fabric, plan_for=grown_n)
        except SpecError as exc:
            out.append(GrowthAlternative(name, when, "", ask, infeasible=exc.problems[0].message))
            continue
        core = grown.tier("core")
        shape = (
            f"pods of {pod:,} leaves, {grown.spines_per_pod * grown.planes:,} spines per pod "
            f"({grown.tier('spine').down} down, {grown.tier('spine').up} up), "
            f"{grown.cores * grown.planes:,} cores ({core.model}) at the grown size"
        )
        out.append(_evaluate(step, name, when, ask, grown, first, shape))
    return out


def growth_alternatives(
    spec: ClusterSpec,
    baseline: ClusterSpec,
    fabric: str,
    plan: FabricPlan,
    installed: InstalledLinks,
) -> tuple[GrowthAlternative, ...]:
    """Every shape for growing ``baseline``'s ``fabric`` (installed as ``installed``) to
    ``spec``'s ``plan``, accepting the re-patch first (see the module)."""
    catalog = spec.resolved_catalog()
    built = plan_fabric(baseline, fabric)
    cost = bill_of_materials(built, catalog).cost_usd
    step = _Step(spec, fabric, installed, built, cost, plan)
    grown_n = spec.compute.accelerators
    accept = _evaluate(
        step, "accept the re-patch", "this step", "(this design)", plan, None, _spines(plan)
    )
    out = [accept]
    over = plan_fabric(baseline, fabric, plan_for=grown_n)
    out.append(
        _evaluate(
            step,
            "over-build the spine layer",
            "first build",
            f"growth.plan_for_accelerators: {grown_n}",
            plan,
            over,
            _spines(over),
        )
    )
    out.append(_reserve_ports(step, baseline, grown_n))
    if built.tiers == 2 and plan.tiers == 2:
        out += _third_tier(step, baseline, grown_n)
    return tuple(_traffic(a, accept) for a in out)


def _traffic(alt: GrowthAlternative, accept: GrowthAlternative) -> GrowthAlternative:
    """``alt`` with what it changes for traffic, against accepting the re-patch."""
    if alt.infeasible:
        return alt
    changes = []
    if alt.switch_hops != accept.switch_hops:
        changes.append(
            f"{alt.switch_hops} switches leaf to leaf across pods instead of {accept.switch_hops}"
        )
    if alt.ecmp_paths != accept.ecmp_paths:
        changes.append(f"{alt.ecmp_paths:,} ECMP paths instead of {accept.ecmp_paths:,}")
    if not math.isclose(alt.bisection_per_host_gbps, accept.bisection_per_host_gbps):
        changes.append(
            f"{alt.bisection_per_host_gbps:,.0f} Gb/s bisection per host instead of "
            f"{accept.bisection_per_host_gbps:,.0f}"
        )
    text = "; ".join(changes) or (
        f"the same paths: {alt.switch_hops} switches leaf to leaf, {alt.ecmp_paths:,} ECMP paths, "
        f"{alt.bisection_per_host_gbps:,.0f} Gb/s bisection per host"
    )
    return replace(alt, traffic=text)
