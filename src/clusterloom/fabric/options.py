"""The options a sizing considered, side by side, so a user sees what each choice costs.

For a fabric the variants are: 2 versus 3 tiers; the host bandwidth split into ports of each
speed the leaf switch offers, one plane per port (e.g. 1 x 800G, 2 x 400G, 4 x 200G, 8 x 100G);
and, on a backend whose accelerators have several NIC ports, how many of them serve scale-out
rather than scale-up (network fungibility). Each variant is sized and priced like the real one.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterloom.errors import SpecError
from clusterloom.fabric.bom import bill_of_materials
from clusterloom.fabric.sizing import FabricPlan, fabric_spec, host_side, plan_fabric
from clusterloom.spec import ClusterSpec
from clusterloom.units import to_gbps

MAX_PORTS_PER_HOST = 16


@dataclass(frozen=True)
class FabricOption:
    """One variant of a fabric, priced, or the reason it cannot be built."""

    label: str
    tiers: int
    planes: int
    speed_gbps: int
    host_ports: int
    chosen: bool
    switches: int = 0
    links: int = 0
    transceivers: int = 0
    power_w: float = 0.0
    cost_usd: float = 0.0
    bisection_per_host_gbps: float = 0.0
    ecmp_paths: int = 0
    infeasible: str = ""


def price_option(spec: ClusterSpec, plan: FabricPlan, label: str, chosen: bool) -> FabricOption:
    bom = bill_of_materials(plan, spec.resolved_catalog())
    return FabricOption(
        label=label,
        tiers=plan.tiers,
        planes=plan.planes,
        speed_gbps=plan.speed_gbps,
        host_ports=plan.ports_per_host * plan.planes,
        chosen=chosen,
        switches=bom.switches,
        links=bom.links,
        transceivers=bom.transceivers,
        power_w=bom.power_w,
        cost_usd=bom.cost_usd,
        bisection_per_host_gbps=to_gbps(2 * plan.bisection_bps * plan.planes / plan.hosts),
        ecmp_paths=plan.ecmp_paths(),
    )


def compare_options(spec: ClusterSpec, fabric: str, chosen: FabricPlan) -> tuple[FabricOption, ...]:
    """Every variant of ``fabric``, the chosen design first."""
    fs = fabric_spec(spec, fabric)
    hs = host_side(spec, fabric)
    catalog = spec.resolved_catalog()
    leaf = catalog.switches[fs.switch_for("leaf")]
    out = [price_option(spec, chosen, "as specified", True)]
    seen = {(chosen.tiers, chosen.speed_gbps, chosen.planes, chosen.ports_per_host * chosen.planes)}

    # (label, plan_fabric keywords, host ports, planes) of each variant
    variants: list[tuple[str, dict[str, int], int, int]] = []
    bandwidth = hs.ports * hs.speed_gbps
    for speed in leaf.speeds_gbps:
        if bandwidth % speed == 0 and bandwidth // speed <= MAX_PORTS_PER_HOST:
            n = bandwidth // speed
            for tiers in (2, 3):
                variants.append(
                    (f"{tiers} tiers, {n} x {speed}G", {"tiers": tiers, "speed_gbps": speed}, n, n)
                )
    if fabric == "backend" and spec.compute.nic.ports_per_accelerator > 1:
        total = spec.compute.nic.ports_per_accelerator
        for k in range(1, total + 1):
            if total % k == 0 and k != hs.ports:
                variants.append(
                    (f"{k} of {total} NIC ports scale-out", {"host_ports": k}, k, chosen.planes)
                )

    for label, kwargs, ports, planes in variants:
        try:
            plan = plan_fabric(spec, fabric, **kwargs)
        except SpecError as exc:
            speed = kwargs.get("speed_gbps", hs.speed_gbps)
            out.append(
                FabricOption(
                    label,
                    kwargs.get("tiers", 0),
                    planes,
                    speed,
                    ports,
                    False,
                    infeasible=exc.problems[0].message,
                )
            )
            continue
        key = (plan.tiers, plan.speed_gbps, plan.planes, plan.ports_per_host * plan.planes)
        if key in seen:
            continue
        seen.add(key)
        out.append(price_option(spec, plan, label, False))
    return tuple(out)
