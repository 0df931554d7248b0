"""Equipment catalog: switches, link media (optics and cables), rack types and accelerators.

The built-in catalog (``catalog.yaml`` beside this file) holds public, indicative figures; a spec's
``catalog`` section overrides entries by name or adds new ones. Costs are indicative list prices in
US dollars, meant for comparing options, not for quoting.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any, Literal

import yaml
from pydantic import Field, model_validator

from clusterloom.spec._base import SpecModel
from clusterloom.spec.limits import (
    DeviceCount,
    LengthM,
    MassKg,
    PortGbps,
    PowerKw,
    PowerW,
    PriceUsd,
    RackUnits,
)

MediaKind = Literal["dac", "aec", "aoc", "mmf", "smf"]
RackKind = Literal["compute", "network", "patch"]
OPTICAL_KINDS: frozenset[str] = frozenset({"mmf", "smf"})


class SwitchModel(SpecModel):
    """A switch: native ports and the speeds each port can be broken out to."""

    vendor: str = Field(max_length=128)
    asic: str = Field(default="", max_length=128)
    technology: Literal["ethernet", "infiniband"] = "ethernet"
    ports: DeviceCount = Field(description="native (cage) ports")
    port_speed_gbps: PortGbps = Field(description="native speed of one cage")
    breakouts_gbps: tuple[PortGbps, ...] = Field(
        default=(), description="lower speeds one cage can be split into (native speed implied)"
    )
    power_w: PowerW = Field(gt=0, description="typical system power without optics, watts")
    rack_units: RackUnits = 1
    weight_kg: MassKg = Field(default=25.0, description="chassis with fans and PSUs")
    cost_usd: PriceUsd = 0.0
    source: str = ""

    @model_validator(mode="after")
    def _breakouts_divide(self) -> SwitchModel:
        for speed in self.breakouts_gbps:
            if self.port_speed_gbps % speed:
                raise ValueError(
                    f"breakout speed {speed}G does not divide the native {self.port_speed_gbps}G"
                )
        return self

    @property
    def speeds_gbps(self) -> tuple[int, ...]:
        """Every port speed this switch offers, fastest first."""
        return tuple(sorted({self.port_speed_gbps, *self.breakouts_gbps}, reverse=True))

    def breakout_factor(self, speed_gbps: int) -> int | None:
        """Logical ports per cage at ``speed_gbps``; None when that speed is not offered."""
        if speed_gbps not in self.speeds_gbps:
            return None
        return self.port_speed_gbps // speed_gbps

    def ports_per_cage(self, speed_gbps: int) -> int:
        """Logical ports one cage carries at ``speed_gbps`` (1 when the speed is not a
        breakout of this switch)."""
        return self.breakout_factor(speed_gbps) or 1

    def radix(self, speed_gbps: int) -> int | None:
        """Logical ports at ``speed_gbps``; None when that speed is not offered."""
        factor = self.breakout_factor(speed_gbps)
        return None if factor is None else self.ports * factor

    @property
    def capacity_gbps(self) -> int:
        return self.ports * self.port_speed_gbps


class MediaModel(SpecModel):
    """A link medium: a cable assembly (dac, aec, aoc) or a pair of transceivers and fibre."""

    kind: MediaKind
    speed_gbps: PortGbps
    reach_m: LengthM
    fibers: int = Field(default=0, ge=0, le=64, description="fibres per link (0 for copper)")
    power_w_per_end: PowerW = 0.0
    cost_usd_per_end: PriceUsd = Field(default=0.0, description="transceiver or cable end")
    cable_cost_usd: PriceUsd = Field(default=0.0, description="cable or patch cord per link")
    source: str = ""

    @property
    def optical(self) -> bool:
        """True when the link is two pluggable transceivers joined by fibre."""
        return self.kind in OPTICAL_KINDS


class RackModel(SpecModel):
    """A rack type: a compute rack (servers and their power), a network rack (switches by rack
    unit) or a patch-panel rack (a distribution frame)."""

    kind: RackKind
    rack_units: RackUnits = 48
    width_mm: int = Field(default=600, ge=1, le=10_000)
    depth_mm: int = Field(default=1200, ge=1, le=10_000)
    servers: int = Field(default=0, ge=0, le=256, description="compute: servers (nodes) it holds")
    server_ru: RackUnits = Field(default=1, description="compute: rack units per server")
    first_u: RackUnits = Field(default=1, description="lowest rack unit used for equipment")
    usable_ru: int = Field(default=0, ge=0, le=256, description="network: rack units for switches")
    power_kw: PowerKw = Field(
        description="compute: the rack's draw when loaded; network and patch: the most it "
        "may draw (its PDUs)"
    )
    weight_kg: MassKg = Field(description="compute: loaded; network and patch: empty")
    cooling: Literal["air", "liquid", "hybrid"] = "air"
    patch_ports: int = Field(
        default=0, ge=0, le=100_000, description="patch: duplex ports it terminates"
    )
    source: str = ""

    @model_validator(mode="after")
    def _fits(self) -> RackModel:
        if self.kind == "compute":
            if self.servers < 1:
                raise ValueError("a compute rack holds at least one server (servers)")
            top = self.first_u - 1 + self.servers * self.server_ru
            if top > self.rack_units:
                raise ValueError(
                    f"{self.servers} servers of {self.server_ru}U from U{self.first_u} need "
                    f"{top}U, the rack has {self.rack_units}U"
                )
        if self.kind == "network" and not 0 < self.usable_ru <= self.rack_units - self.first_u + 1:
            raise ValueError(
                f"a network rack needs usable_ru between 1 and {self.rack_units - self.first_u + 1}"
            )
        return self


class AcceleratorModel(SpecModel):
    """An accelerator as the step-time model sees it: a roofline (dense peak FLOP/s at 16 bits,
    memory bandwidth) and the efficiency parameters fitted to published training throughput
    (``docs/workload.md``, Calibration).

    A matrix multiply of shape ``m x k @ k x n`` runs at
    ``gemm_efficiency x g(m) x g(n) x g(k)`` of peak with ``g(d) = d / (d + gemm_half_dim)``
    (small dimensions fill the tensor cores badly); a memory-bound operation moves its bytes at
    ``memory_efficiency`` of the bandwidth; every kernel costs ``kernel_overhead_us`` more.
    """

    peak_tflops: float = Field(gt=0, le=1e6, description="dense BF16/FP16 peak, TFLOP/s")
    fp8_tflops: float | None = Field(default=None, gt=0, le=1e6, description="dense FP8 peak")
    memory_gb: float = Field(gt=0, le=1e5, description="HBM capacity, GB (1e9 bytes)")
    memory_bandwidth_gbs: float = Field(gt=0, le=1e6, description="HBM bandwidth, GB/s")
    gemm_efficiency: float = Field(default=0.7, gt=0, le=1, description="large-GEMM share of peak")
    gemm_half_dim: float = Field(
        default=128.0, ge=0, le=1e5, description="GEMM dimension at which a factor g(d) is 1/2"
    )
    memory_efficiency: float = Field(default=0.8, gt=0, le=1, description="share of bandwidth")
    kernel_overhead_us: float = Field(default=3.1, ge=0, le=1e4, description="per kernel launch")
    source: str = ""


class Catalog(SpecModel):
    switches: dict[str, SwitchModel] = Field(default_factory=dict)
    media: dict[str, MediaModel] = Field(default_factory=dict)
    racks: dict[str, RackModel] = Field(default_factory=dict)
    accelerators: dict[str, AcceleratorModel] = Field(default_factory=dict)

    def merged(self, override: Catalog | None) -> Catalog:
        """This catalog with ``override``'s entries replacing or adding by name."""
        if override is None:
            return self
        return Catalog(
            switches={**self.switches, **override.switches},
            media={**self.media, **override.media},
            racks={**self.racks, **override.racks},
            accelerators={**self.accelerators, **override.accelerators},
        )


@cache
def builtin_catalog() -> Catalog:
    """The catalog shipped with clusterloom."""
    text = resources.files("clusterloom.spec").joinpath("catalog.yaml").read_text("utf-8")
    data: Any = yaml.safe_load(text)
    return Catalog.model_validate(data)
