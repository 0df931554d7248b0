"""Hypothesis strategies for growth steps, shared by the growth tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from helpers import switch_entry


@st.composite
def growth_steps(draw: st.DrawFn) -> tuple[dict[str, Any], int, int]:
    """A small fabric (2 or 3 tiers, either family, 1-2 planes) and two node counts."""
    family = draw(st.sampled_from(["rail-optimized", "fat-tree"]))
    cages = draw(st.sampled_from([8, 12, 16, 32]))
    apn = draw(st.sampled_from([2, 4, 8]))
    planes = draw(st.sampled_from([1, 2]))
    before = draw(st.integers(1, 48))
    after = draw(st.integers(before, 96))
    kwargs: dict[str, Any] = dict(
        accelerators_per_node=apn,
        scale_out_ports=planes,
        ports_per_accelerator=planes,
        planes=planes,
        port_speed_gbps=100,
        family=family,
        leaf_oversubscription=draw(st.sampled_from([1, 2])),
        switch="sw",
        catalog_switches={"sw": switch_entry(cages, 100)},
    )
    return kwargs, before, after
