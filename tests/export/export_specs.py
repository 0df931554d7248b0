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

#: Two 8-GPU nodes on InfiniBand (qm9700) in a hall of two rows of two positions: three racks,
#: so some links leave their row (patch cords, a trunk, panels). Cables in under a second.
SITE_SPEC = """\
version: 1
name: tiny-site
compute:
  accelerators: 16
  accelerators_per_node: 8
fabrics:
  backend:
    switch: qm9700
site:
  buildings:
    - name: b1
      halls:
        - name: h1
          width_m: 40
          depth_m: 30
          template: {rows: 2, positions_per_row: 2, pitch_m: 1.0, origin_m: [0.5, 1.0]}
"""
