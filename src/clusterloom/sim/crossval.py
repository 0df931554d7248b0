"""Cross-validation of the packet-level engine against the flow-level one: the same topology,
traffic and transport name through both, completion times compared flow by flow.

The flow-level engine is a fluid model: rates are max-min fair and change instantly, there are
no headers, no queues, no propagation or serialization delay. The packet engine adds each of
these, so where the fluid assumptions hold (no congestion control transients, no loss, paths
fixed) a flow's packet-level completion time is its fluid one stretched by the header overhead
``(mtu + header) / mtu`` plus the path's latency: one propagation delay per link and one extra
packet serialization per store-and-forward hop. :func:`expected_packet_fct` is that
prediction; :func:`compare` reports the ratio of measured to predicted for every flow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from clusterloom.fabric.topology import Topology
from clusterloom.sim.flow.run import run as run_flow
from clusterloom.sim.flow.transports import transport as flow_transport
from clusterloom.sim.packet.engine import PacketConfig
from clusterloom.sim.packet.run import config_for, run_packets
from clusterloom.sim.paths import build_router
from clusterloom.sim.traffic import Traffic
from clusterloom.units import BITS_PER_BYTE, PS_PER_S

__all__ = ["Comparison", "compare", "expected_packet_fct"]


@dataclass(frozen=True)
class Comparison:
    transport: str
    flow_fct_ps: NDArray[np.int64]
    packet_fct_ps: NDArray[np.int64]
    predicted_ps: NDArray[np.float64]

    @property
    def ratio(self) -> NDArray[np.float64]:
        """Measured packet-level FCT over the prediction from the fluid FCT (1.0: agree)."""
        return self.packet_fct_ps / self.predicted_ps

    @property
    def makespan_ratio(self) -> float:
        return float(self.packet_fct_ps.max() / self.predicted_ps.max())


def expected_packet_fct(
    flow_fct_ps: NDArray[np.int64],
    hops: int,
    config: PacketConfig,
    *,
    rate_bps: float,
    latency_ps: int,
) -> NDArray[np.float64]:
    """The fluid FCT with headers, the path latency and one serialization per extra hop."""
    stretch = (config.mtu + config.header) / config.mtu
    ser = (config.mtu + config.header) * BITS_PER_BYTE * PS_PER_S / rate_bps
    out = flow_fct_ps * stretch + hops * latency_ps + (hops - 1) * ser
    return np.asarray(out, dtype=np.float64)


def compare(topology: Topology, traffic: Traffic, name: str, *, seed: int = 0) -> Comparison:
    """Run ``traffic`` with transport ``name`` through both engines (module docstring)."""
    router = build_router(topology)
    fluid = run_flow(topology, traffic, flow_transport(name), seed=seed, router=router)
    cfg = config_for(name)
    packet = run_packets(topology, traffic, name, seed=seed, router=router, config=cfg)
    hops = 2 * topology.plan.tiers
    rate = float(topology.link_capacity_bps[0])
    lat = int(topology.link_latency_ps[0])
    pred = expected_packet_fct(fluid.fct_ps, hops, cfg, rate_bps=rate, latency_ps=lat)
    return Comparison(name, fluid.fct_ps, packet.fct_ps, pred)
