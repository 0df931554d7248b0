"""The sprayers route their EVs in chunks (``transports.ROUTE_CHUNK_EVS``, to bound memory):
the units are the same whatever the chunk, with and without a failed link."""

from __future__ import annotations

import numpy as np
import pytest

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
