"""Packet-level simulation: discrete events in integer picoseconds, output-queued switches
with ECN, drop-tail, trimming and PFC, and transports as state machines (``docs/packet.md``)."""

from clusterloom.sim.packet.base import Connection, ConnSpec
from clusterloom.sim.packet.engine import Packet, PacketConfig, PacketSim, PacketSimError
from clusterloom.sim.packet.fabrics import fat_tree, small_fabric
from clusterloom.sim.packet.run import PacketResult, config_for, run_packets
from clusterloom.sim.packet.transports import TRANSPORTS, set_receiver_rate, transport_class

__all__ = [
    "TRANSPORTS",
    "ConnSpec",
    "Connection",
    "Packet",
    "PacketConfig",
    "PacketResult",
    "PacketSim",
    "PacketSimError",
    "config_for",
    "fat_tree",
    "run_packets",
    "set_receiver_rate",
    "small_fabric",
    "transport_class",
]
