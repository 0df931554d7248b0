"""Specs of the report tests."""

from __future__ import annotations

#: text from the spec and catalog that must be escaped; a tiny fabric that draws warnings
HOSTILE_SPEC = """\
version: 1
name: hostile
description: "<script>alert('x')</script> & <img src=https://example.com/x.png>"
compute:
  accelerators: 16
  accelerators_per_node: 8
fabrics:
  backend:
    switch: "<b>sw</b>"
catalog:
  switches:
    "<b>sw</b>":
      vendor: "Evil & Co <i>"
      ports: 64
      port_speed_gbps: 400
      power_w: 500
"""
