"""Small fabrics for the SRv6 tests (2 and 3 tiers, parallel links, several planes)."""

from __future__ import annotations

from functools import cache

from clusterloom.fabric.topology import Topology, generate
from helpers import kport_plan

#: (hosts, radix, tiers, planes): 2-tier; 2-tier with 2 links per leaf-spine pair; 2 planes;
#: 3-tier with 2 cores per group; 3-tier with 4 links per spine-core pair; 3-tier, 2 planes
SHAPES = [(8, 4, 2, 1), (12, 8, 2, 1), (16, 8, 2, 2), (16, 4, 3, 1), (32, 8, 3, 1), (64, 8, 3, 2)]


@cache
def topology(shape: tuple[int, int, int, int]) -> Topology:
    hosts, radix, tiers, planes = shape
    return generate(
        kport_plan(hosts, radix, tiers=tiers, planes=planes, ports_per_accelerator=planes)
    )
