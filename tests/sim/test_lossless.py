"""The engine's lossless model (``FlowSet.lossless``: PFC without congestion control), on
small cases with closed forms (docs/sim.md, "Lossless fabric")."""

from __future__ import annotations

import numpy as np
import pytest

from clusterloom.sim.flow.engine import FlowSet, SimInputError, UnitSet, simulate

C = 1e9  # bytes/s
S = 1e6  # bytes
PS = 1e12


def _fct_us(links: dict[str, float], paths: list[list[str]], lossless: bool) -> list[float]:
    names = list(links)
    cap = np.array([links[n] for n in names])
    units = UnitSet.from_paths(
        range(len(paths)), [[names.index(x) for x in path] for path in paths]
    )
    flows = FlowSet.create(np.full(len(paths), S), lossless=lossless)
    res = simulate(cap, flows, units)
    return [float(x) / 1e6 for x in res.fct_ps]


def test_input_port_sharing() -> None:
    """Port O serves its two inputs equally, not its four flows::

        A : nA -> I1 --+
        B1: n1 -+      +--> O
        B2: n2 -+- I2 -+
        B3: n3 -+

    Max-min gives every flow C/4 (all done at 4 S/C). Lossless: I1 and I2 get C/2 each at O,
    so A goes at C/2 (done at 2 S/C) and each B at C/6; then the three B share O at C/3 each
    and finish the 2 S/3 left at 4 S/C."""
    links = {"nA": C, "n1": C, "n2": C, "n3": C, "I1": C, "I2": C, "O": C}
    paths = [["nA", "I1", "O"], ["n1", "I2", "O"], ["n2", "I2", "O"], ["n3", "I2", "O"]]
    t = S / C * PS / 1e6  # S/C in us
    assert _fct_us(links, paths, False) == pytest.approx([4 * t] * 4, rel=1e-9)
    assert _fct_us(links, paths, True) == pytest.approx([2 * t] + [4 * t] * 3, rel=1e-9)


def test_head_of_line_blocking() -> None:
    """C shares the input link I (capacity 2C) with A, whose bottleneck is O::

        A: nA -+-- I (2C) --> O <-- J <-- nD :D
        C: nC -+          \\-> P

    Max-min: A and D share O at C/2 (done at 2 S/C), C alone on P at C (done at S/C). With
    PFC, A's backlog pauses I, which carries A and C half and half (its two inputs), so C is
    held to A's rate, C/2, and finishes with A at 2 S/C."""
    links = {"nA": C, "nC": C, "nD": C, "I": 2 * C, "J": C, "O": C, "P": C}
    paths = [["nA", "I", "O"], ["nC", "I", "P"], ["nD", "J", "O"]]
    t = S / C * PS / 1e6
    assert _fct_us(links, paths, False) == pytest.approx([2 * t, t, 2 * t], rel=1e-9)
    assert _fct_us(links, paths, True) == pytest.approx([2 * t, 2 * t, 2 * t], rel=1e-9)


def test_lossless_takes_split_flows_only() -> None:
    with pytest.raises(SimInputError, match="split flows only"):
        FlowSet.create([S], lossless=True, coupled=True)


def test_roce_ecmp_pfc_hol_on_a_fat_tree_keeps_links_within_capacity() -> None:
    """``roce-ecmp pfc_hol=1`` on a k=4 permutation: every flow finishes, no link is ever over
    its capacity, the run is deterministic, and here the last finish is no earlier than
    max-min's (the model holds flows back; not a theorem for every traffic)."""
    from clusterloom.sim.flow.run import run
    from clusterloom.sim.flow.transports import transport
    from clusterloom.sim.packet.fabrics import fat_tree
    from clusterloom.sim.traffic import permutation

    t = fat_tree(4)
    traffic = permutation(16, 500_000, seed=1)
    plain = run(t, traffic, transport("roce-ecmp"), seed=1)
    a = run(t, traffic, transport("roce-ecmp", pfc_hol=1), seed=1)
    b = run(t, traffic, transport("roce-ecmp", pfc_hol=1), seed=1)
    assert (a.finish_ps >= 0).all()
    assert a.seg_max_util.max() <= 1 + 1e-9
    assert a.finish_ps.tolist() == b.finish_ps.tolist()
    assert a.finish_ps.max() >= plain.finish_ps.max()
