"""Packet level against flow level on the same topology and traffic (docs/packet.md,
"Cross-validation"): within the stated tolerance where the fluid assumptions hold."""

from __future__ import annotations

import pytest

from clusterloom.sim.crossval import compare
from clusterloom.sim.packet.fabrics import small_fabric
from clusterloom.sim.traffic import Traffic, incast, permutation


@pytest.fixture(scope="module")
def fabric():  # type: ignore[no-untyped-def]
    return small_fabric(8, planes=1)


@pytest.mark.parametrize("name", ["roce-ecmp", "mrc-spray", "receiver-driven"])
def test_lone_flow_within_one_percent(fabric, name: str) -> None:  # type: ignore[no-untyped-def]
    c = compare(fabric, Traffic.from_arrays([0], [5], [2_000_000], n_hosts=8), name)
    assert abs(c.ratio[0] - 1) <= 0.01


def test_receiver_driven_incast_within_two_percent(fabric) -> None:  # type: ignore[no-untyped-def]
    c = compare(fabric, incast(4, 1_000_000, receiver=7, n_hosts=8), "receiver-driven")
    assert abs(c.makespan_ratio - 1) <= 0.02
    assert all(abs(r - 1) <= 0.02 for r in c.ratio)


def test_sprayed_permutation_within_five_percent(fabric) -> None:  # type: ignore[no-untyped-def]
    c = compare(fabric, permutation(8, 2_000_000, seed=1), "mrc-spray")
    assert abs(c.ratio.mean() - 1) <= 0.05 and abs(c.makespan_ratio - 1) <= 0.05


def test_ecmp_collisions_are_where_the_engines_part(fabric) -> None:  # type: ignore[no-untyped-def]
    """Same hash, same collisions; but DCQCN on PFC does not reach the fluid max-min share on
    a shared link, so colliding RoCE flows finish later at the packet level (documented)."""
    c = compare(fabric, permutation(8, 2_000_000, seed=1), "roce-ecmp")
    alone = c.ratio[c.flow_fct_ps == c.flow_fct_ps.min()]
    assert all(abs(r - 1) <= 0.02 for r in alone)
    assert c.makespan_ratio > 1.1
