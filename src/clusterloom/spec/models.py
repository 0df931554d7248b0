"""The cluster spec: one versioned YAML document, parsed into frozen pydantic models.

Sections (later stages add theirs): ``compute`` (accelerators, nodes, scale-up domain, NIC ports
and which of them serve scale-up or scale-out), ``fabrics`` (a backend scale-out fabric and an
optional frontend fabric), ``job`` (a training job, optional: see ``job.py``), ``catalog``
(overrides of the built-in equipment catalog), ``scenario`` (a flow-level simulation,
optional: see ``scenario.py``) and ``site`` (the floor placement uses, optional: see
``site.py``).
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, model_validator

from clusterloom.spec._base import SpecModel
from clusterloom.spec.catalog import Catalog, builtin_catalog
from clusterloom.spec.job import JobSpec
from clusterloom.spec.limits import (
    Accelerators,
    BandwidthGbps,
    DeviceCount,
    LatencyNs,
    PortGbps,
)
from clusterloom.spec.scenario import ScenarioSpec
from clusterloom.spec.site import SiteSpec

SPEC_VERSION = 1

SwitchRole = Literal["leaf", "spine", "core"]
LinkTier = Literal["host_leaf", "leaf_spine", "spine_core"]
SWITCH_ROLES: tuple[SwitchRole, ...] = ("leaf", "spine", "core")
LINK_TIERS: tuple[LinkTier, ...] = ("host_leaf", "leaf_spine", "spine_core")


def _parse_ratio(value: object) -> object:
    """Accept an oversubscription as a number (3, 1.5) or as a ratio string written either way
    round: operators write '3:1' (downlink to uplink) and '1:3' (uplink to downlink) for the
    same switch, and an oversubscription is never below 1, so the larger side is the downlink
    bandwidth and the value is larger / smaller ('1:7' and '7:1' are both 7)."""
    if isinstance(value, bool):
        raise ValueError("an oversubscription is a number like 3 or a ratio like '3:1'")
    if isinstance(value, str) and ":" in value:
        left, _, right = value.partition(":")
        try:
            a, b = float(left), float(right)
        except ValueError:
            raise ValueError(f"'{value}' is not a ratio like '3:1'") from None
        if not (a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)):
            raise ValueError(f"'{value}': both sides of a ratio are bandwidths above 0, like '3:1'")
        return max(a, b) / min(a, b)
    return value


#: Downlink to uplink bandwidth ratio of a switch tier; 1 is non-blocking.
Ratio = Annotated[float, BeforeValidator(_parse_ratio), Field(ge=1.0, le=64.0)]


class ScaleUpSpec(SpecModel):
    """The scale-up domain: accelerators joined by a memory-semantic fabric (NVLink, UALink...)."""

    domain_size: Accelerators = Field(
        default=8, description="accelerators per scale-up domain (8 for an HGX node, 72 for NVL72)"
    )
    technology: Literal["nvlink", "ualink", "ethernet"] = "nvlink"
    bandwidth_gbps: BandwidthGbps = Field(
        default=0.0, description="scale-up bandwidth per accelerator, one direction"
    )


class NicSpec(SpecModel):
    """Accelerator NIC ports. Each port serves scale-out or scale-up ("network fungibility")."""

    ports_per_accelerator: DeviceCount = 1
    port_speed_gbps: PortGbps = 400
    scale_out_ports: DeviceCount | None = Field(
        default=None, description="ports per accelerator on the backend fabric (default: all)"
    )

    @model_validator(mode="after")
    def _split_fits(self) -> NicSpec:
        if self.scale_out_ports is not None and self.scale_out_ports > self.ports_per_accelerator:
            raise ValueError(
                f"scale_out_ports ({self.scale_out_ports}) exceeds ports_per_accelerator "
                f"({self.ports_per_accelerator})"
            )
        return self

    @property
    def scale_out(self) -> int:
        return self.ports_per_accelerator if self.scale_out_ports is None else self.scale_out_ports

    @property
    def scale_up(self) -> int:
        """Ports given to the scale-up domain instead of the scale-out fabric."""
        return self.ports_per_accelerator - self.scale_out


class FrontendNicSpec(SpecModel):
    """Host (CPU) NIC ports per node on the frontend fabric."""

    ports_per_node: DeviceCount = 1
    port_speed_gbps: PortGbps = 200


class ComputeSpec(SpecModel):
    accelerators: Accelerators
    accelerators_per_node: DeviceCount = 8
    accelerator_model: str = Field(default="generic", max_length=128)
    scale_up: ScaleUpSpec = ScaleUpSpec()
    nic: NicSpec = NicSpec()
    frontend_nic: FrontendNicSpec | None = None

    @property
    def nodes(self) -> int:
        return self.accelerators // self.accelerators_per_node


class SwitchChoice(SpecModel):
    """Switch model per tier; spine and core default to the leaf's model."""

    leaf: str
    spine: str | None = None
    core: str | None = None


class Oversubscription(SpecModel):
    """Downlink:uplink bandwidth per switch tier (the top tier has no uplinks)."""

    leaf: Ratio = 1.0
    spine: Ratio = 1.0


class LinkLatency(SpecModel):
    """One-way latency per link tier in nanoseconds (propagation, ~4.9 ns per metre of fibre)."""

    host_leaf: LatencyNs = 150.0
    leaf_spine: LatencyNs = 500.0
    spine_core: LatencyNs = 1500.0


class LinkMedia(SpecModel):
    """Catalog media name per link tier; unset tiers get a default by family and tier."""

    host_leaf: str | None = None
    leaf_spine: str | None = None
    spine_core: str | None = None


class FabricSpec(SpecModel):
    family: Literal["rail-optimized", "fat-tree"] = "rail-optimized"
    planes: DeviceCount | None = Field(
        default=None, description="independent planes; default: one per host port"
    )
    tiers: Literal[2, 3, "auto"] = "auto"
    switch: str | SwitchChoice
    oversubscription: Oversubscription = Oversubscription()
    scalable_unit_nodes: Accelerators | None = Field(
        default=None, description="nodes per scalable unit (rail-optimized); default: fill a leaf"
    )
    nodes_per_leaf: DeviceCount | None = Field(
        default=None, description="nodes on one top-of-rack leaf (fat-tree); default: fill it"
    )
    pod_leaves: DeviceCount | None = Field(
        default=None, description="leaves per pod in a 3-tier fabric; default: the most that fit"
    )
    link_latency_ns: LinkLatency = LinkLatency()
    media: LinkMedia = LinkMedia()

    def switch_for(self, role: SwitchRole) -> str:
        if isinstance(self.switch, str):
            return self.switch
        chosen = getattr(self.switch, role)
        return self.switch.leaf if chosen is None else str(chosen)


class FabricsSpec(SpecModel):
    backend: FabricSpec
    frontend: FabricSpec | None = None


class GrowthSpec(SpecModel):
    """How the design grows (docs/growth.md)."""

    plan_for_accelerators: Accelerators | None = Field(
        default=None,
        description="size the spine and core layers for this many accelerators at first build, "
        "so that growing to it re-patches no installed link (docs/growth.md)",
    )


class ClusterSpec(SpecModel):
    version: Literal[1]
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=64)
    description: str = Field(default="", max_length=4096)
    compute: ComputeSpec
    fabrics: FabricsSpec
    job: JobSpec | None = None
    catalog: Catalog | None = None
    scenario: ScenarioSpec | None = None
    site: SiteSpec | None = None
    growth: GrowthSpec | None = None

    def resolved_catalog(self) -> Catalog:
        """The built-in catalog with this spec's overrides applied."""
        return builtin_catalog().merged(self.catalog)
