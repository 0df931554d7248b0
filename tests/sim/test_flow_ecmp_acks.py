"""The lossless model's ACKs (docs/sim.md, "Lossless fabric"): a sender without congestion
control is not clocked by its ACKs, so a saturated reverse link carries their load but does
not freeze the sender at that link's level, as it would as one of its max-min entities."""

from __future__ import annotations

import numpy as np
import pytest

from clusterloom.sim.flow.engine import FlowSet, simulate
from helpers import ack_case_units

C = 1e9  # bytes/s
S = 1e6  # bytes
#: ACK bytes per data byte: a 64-byte ACK per 4,000 + 64-byte packet
A = 64 / 4064


def _run(lossless: bool) -> tuple[list[float], list[float]]:
    """Links nA, n1, n2 (senders' NICs) and R; flow 0 sends on nA alone and its ACKs cross
    R, which flows 1 and 2 (from n1 and n2) saturate with data::

        0: nA ->            (ACKs on R)
        1: n1 -+
        2: n2 -+-> R
    """
    units = ack_case_units(A)
    flows = FlowSet.create(np.full(3, S), lossless=lossless)
    res = simulate(np.full(4, C), flows, units)
    t_us = S / C * 1e6
    fct = [float(x) / 1e6 / t_us for x in res.fct_ps]  # in units of S/C
    peak = [float(res.link_load(link).max()) / C for link in range(4)]
    assert float(res.seg_max_util.max()) <= 1.0 + 1e-9  # no link over capacity, ACKs counted
    return fct, peak


def test_acks_do_not_hold_a_lossless_sender() -> None:
    """Flow 0 goes at C on its own link (done at S/C) while its ACKs take A C of R; flows 1
    and 2 share the rest, (1 - A) C/2 each, then C/2 each: done at S/C + (1 + A) S/C =
    (2 + A) S/C. R is never over capacity, ACK load included. Max-min gives the same (ACK
    entries freeze no one there either, tests/sim/test_flow_maxmin_acks.py); before, R froze
    all three at C/(2 + A), done together at (2 + A) S/C."""
    plain, _ = _run(False)
    assert plain == pytest.approx([1.0, 2 + A, 2 + A], rel=1e-6)
    fct, peak = _run(True)
    assert fct == pytest.approx([1.0, 2 + A, 2 + A], rel=1e-6)
    assert max(peak) <= 1.0 + 1e-9
    assert peak[3] == pytest.approx(1.0, rel=1e-6)  # R full: data and ACKs


def test_a_lossless_run_with_acks_is_deterministic_and_within_capacity() -> None:
    """``roce-ecmp dcqcn=0`` (an ACK per packet on every reverse link) on a k=4 permutation:
    every flow finishes, no link is ever over its capacity with the ACK load counted, and the
    run is the same twice."""
    from clusterloom.sim.flow.run import run
    from clusterloom.sim.flow.transports import transport
    from clusterloom.sim.packet.fabrics import fat_tree
    from clusterloom.sim.traffic import permutation

    t = fat_tree(4)
    traffic = permutation(16, 500_000, seed=3)
    tr = transport("roce-ecmp", dcqcn=0, ack_every=1)
    a = run(t, traffic, tr, seed=4)
    b = run(t, traffic, tr, seed=4)
    assert (a.finish_ps >= 0).all()
    assert np.array_equal(a.finish_ps, b.finish_ps)
    assert np.array_equal(a.unit_bytes, b.unit_bytes)
    assert float(a.seg_max_util.max()) <= 1.0 + 1e-9
