"""Path avoidance of a coupled (fixed-split) flow, ``FlowSet.avoid`` (docs/sim.md, "Path
avoidance"), on a case with a closed form."""

from __future__ import annotations

import numpy as np
import pytest

from clusterloom.sim.flow.engine import AVOID_ROUNDS, FlowSet, SimInputError, UnitSet, simulate

C = 1e9  # bytes/s
S = 1e6  # bytes


def _fct_s(avoid: float) -> list[float]:
    """F sprays half and half over L1 and L2; G crosses L1 only::

        F: nF (2C) -+- L1 (C) -+
                    +- L2 (C)  |
        G: nG (C) -------------+ (on L1)

    Fixed split: L1 carries F/2 + G, so both go at 2C/3. Avoiding, each round takes a
    fraction ``a`` off F's share on the saturated L1: after k rounds F's share there is
    ``s = q / (1 + q)``, ``q = (1 - a) ** k``, and L1 gives both ``C / (1 + s)``."""
    nf, ng, l1, l2 = range(4)
    units = UnitSet.from_paths([0, 0, 1], [[nf, l1], [nf, l2], [ng, l1]], share=[0.5, 0.5, 1.0])
    flows = FlowSet.create([S, S], coupled=[True, False], avoid=[avoid, 0.0])
    res = simulate(np.array([2 * C, C, C, C]), flows, units)
    return [float(x) / 1e12 for x in res.fct_ps]


def test_fixed_split_without_avoidance() -> None:
    assert _fct_s(0.0) == pytest.approx([1.5 * S / C] * 2, rel=1e-9)


@pytest.mark.parametrize("a", [0.2, 0.5])
def test_avoidance_moves_share_off_the_congested_path(a: float) -> None:
    q = (1 - a) ** AVOID_ROUNDS
    s = q / (1 + q)
    assert _fct_s(a) == pytest.approx([(1 + s) * S / C] * 2, rel=1e-9)


def test_avoidance_keeps_a_flow_whose_every_path_is_congested() -> None:
    """Two flows sprayed over the same two links: every path of each is saturated, so the
    split stays even and both go at C (2 S / (2 C) each)."""
    units = UnitSet.from_paths([0, 0, 1, 1], [[0], [1], [0], [1]], share=[0.5] * 4)
    flows = FlowSet.create([S, S], coupled=True, avoid=0.5)
    res = simulate(np.array([C, C]), flows, units)
    assert (res.fct_ps / 1e12).tolist() == pytest.approx([S / C] * 2, rel=1e-9)


def test_avoid_is_for_coupled_flows_in_range() -> None:
    with pytest.raises(SimInputError, match="coupled flows only"):
        FlowSet.create([S], avoid=0.2)
    with pytest.raises(SimInputError, match="avoid"):
        FlowSet.create([S], coupled=True, avoid=1.0)
