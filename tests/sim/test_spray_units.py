"""The sprayers route their EVs in chunks (``transports.ROUTE_CHUNK_EVS``, to bound memory):
the units are the same whatever the chunk, with and without a failed link."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterloom.sim.flow import transports
from clusterloom.sim.flow.transports import MrcSpray
from clusterloom.sim.packet.fabrics import fat_tree
from clusterloom.sim.paths import build_router
from clusterloom.sim.traffic import permutation

K4 = fat_tree(4)


@pytest.mark.parametrize("balance", [False, True])
@pytest.mark.parametrize("dead", [None, 5])
def test_chunked_routing_gives_the_same_units(
    monkeypatch: pytest.MonkeyPatch, balance: bool, dead: int | None
) -> None:
    router = build_router(K4)
    t = permutation(16, 1000, seed=2)
    src, dst = t.src.astype(np.int64), t.dst.astype(np.int64)
    alive = np.ones(K4.n_links, dtype=bool)
    if dead is not None:
        alive[dead] = False
    tr = MrcSpray(evs=16, balance=balance)
    whole = tr.units(router, src, dst, alive=alive, seed=1)
    monkeypatch.setattr(transports, "ROUTE_CHUNK_EVS", 40)  # 2 connections per chunk
    chunked = tr.units(router, src, dst, alive=alive, seed=1)
    for name in ("unit_flow", "unit_ptr", "unit_link", "unit_share"):
        assert np.array_equal(getattr(whole, name), getattr(chunked, name)), name


def _merged_by_numpy(
    f: np.ndarray, paths: np.ndarray, share: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The reference: ``np.unique`` over (flow, path) rows, kept in first-occurrence order,
    shares summed by ``np.bincount`` (in row order)."""
    key = np.concatenate([f[:, None], paths], axis=1)
    rows, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    merged = np.bincount(inverse.reshape(-1), share, minlength=rows.shape[0])[order]
    return rows[order][:, 0], rows[order][:, 1:], merged


@given(
    st.integers(1, 300),
    st.integers(1, 6),
    st.integers(1, 5),
    st.integers(1, 40),
    st.integers(0, 2**32 - 1),
)
@settings(max_examples=60, deadline=None)
def test_merging_same_paths_equals_numpy_unique(
    n: int, width: int, flows: int, links: int, seed: int
) -> None:
    """The compiled merge gives numpy's unique-and-bincount to the bit: the same rows in the
    same order and the same float sums, on rows with many repeats and ``-1`` padding."""
    rng = np.random.default_rng(seed)
    f = rng.integers(0, flows, n).astype(np.int64)
    paths = rng.integers(-1, links, (n, width)).astype(np.int64)
    share = rng.random(n)
    got = transports._merge_same_paths(f, paths, share)
    want = _merged_by_numpy(f, paths, share)
    for a, b in zip(got, want, strict=True):
        assert a.tolist() == b.tolist()
