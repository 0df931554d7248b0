"""Specs of the export tests: small designs that exercise both fabrics, 3 tiers, InfiniBand,
breakout and infeasible options. Each builds in well under a second."""

from __future__ import annotations

#: 1,024 GPUs on a rail-optimized backend (sn5600 at 400G: breakout factor 2) and a fat-tree
#: frontend of two planes (tomahawk4 at 200G).
DEMO_SPEC = """\
version: 1
name: demo-1k
description: a <small> cluster & friends
compute:
  accelerators: 1024
  accelerators_per_node: 8
  nic: {ports_per_accelerator: 1, port_speed_gbps: 400}
  frontend_nic: {ports_per_node: 2, port_speed_gbps: 200}
fabrics:
  backend: {switch: sn5600}
  frontend: {family: fat-tree, switch: tomahawk4-64x400g}
"""

#: 256 GPUs on a forced 3-tier InfiniBand backend (qm9700 at 400G: native ports, factor 1).
IB_SPEC = """\
version: 1
name: ib-3tier
compute:
  accelerators: 256
  accelerators_per_node: 8
fabrics:
  backend: {switch: qm9700, tiers: 3}
"""
