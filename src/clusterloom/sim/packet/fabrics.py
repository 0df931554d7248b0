"""Small fabrics for tests, conformance checks and benchmarks, built through the same spec path
a user's file takes (spec → ``plan_fabric`` → ``generate``)."""

from __future__ import annotations

from typing import Any

import yaml

from clusterloom.fabric.topology import Topology

__all__ = ["fat_tree", "small_fabric"]


def small_fabric(
    hosts: int = 8,
    *,
    planes: int = 1,
    radix: int = 8,
    tiers: int = 2,
    speed_gbps: int = 100,
    latency_ns: int = 1000,
) -> Topology:
    """A fat-tree family fabric of ``hosts`` single-port hosts per plane (one NIC port per
    plane), ``radix``-port switches, ``tiers`` tiers, every link ``latency_ns``."""
    from clusterloom.fabric import generate, plan_fabric
    from clusterloom.spec import parse_spec

    doc: dict[str, Any] = {
        "version": 1,
        "name": f"packet-{hosts}x{planes}",
        "compute": {
            "accelerators": hosts,
            "accelerators_per_node": 1,
            "scale_up": {"domain_size": 1},
            "nic": {"ports_per_accelerator": planes, "port_speed_gbps": speed_gbps},
        },
        "fabrics": {
            "backend": {
                "family": "fat-tree",
                "switch": "sw",
                "tiers": tiers,
                "planes": planes,
                "link_latency_ns": {
                    "host_leaf": latency_ns,
                    "leaf_spine": latency_ns,
                    "spine_core": latency_ns,
                },
            }
        },
        "catalog": {
            "switches": {
                "sw": {
                    "vendor": "test",
                    "ports": radix,
                    "port_speed_gbps": speed_gbps,
                    "power_w": 100,
                }
            }
        },
    }
    return generate(plan_fabric(parse_spec(yaml.safe_dump(doc))))


def fat_tree(k: int, *, speed_gbps: int = 100, latency_ns: int = 1000) -> Topology:
    """The classic three-tier k-ary fat tree (k^3/4 hosts), as the ``fat-tree-k16`` example."""
    return small_fabric(k**3 // 4, radix=k, tiers=3, speed_gbps=speed_gbps, latency_ns=latency_ns)
