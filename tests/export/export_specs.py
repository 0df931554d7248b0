"""Specs of the export tests: small designs that exercise both fabrics, 3 tiers, InfiniBand,
breakout and infeasible options. Each builds in well under a second."""

from __future__ import annotations

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
