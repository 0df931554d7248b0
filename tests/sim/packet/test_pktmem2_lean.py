"""An ``mrc-spray`` sender the compiled loop runs keeps no Python copy of what the loop
holds (issue 15, pkt-mem2): its EVs and ports as machine arrays, no value -> index dict
when the values are distinct, its routes only as offsets in the loop's blocks. The look-ups
that replace them must answer as the dict and the lists did, and the run must not change."""

from __future__ import annotations

from typing import Any

import pytest

from clusterloom.sim.crossval import chained_ring_all_reduce
from clusterloom.sim.packet import _core
from clusterloom.sim.packet import transports as tr
from clusterloom.sim.packet.engine import Packet, PacketSim
from clusterloom.sim.packet.fabrics import fat_tree
from clusterloom.sim.packet.run import PacketResult, config_for, run_packets
from clusterloom.sim.packet.transports import MrcSpray
from clusterloom.sim.traffic import permutation
from helpers import packet_figures


class _Trace:
    """Keeps nothing: makes the run all Python (the reference)."""

    def packet(self, now: int, where: str, host: int, pkt: Packet) -> None:
        return

    def event(self, now: int, flow: int, what: str, a: int = 0, b: int = 0) -> None:
        return

    def routed(self, pkt: Packet) -> None:
        return


def _live(sim: PacketSim) -> list[MrcSpray]:
    return [c for c in sim.conns if isinstance(c, MrcSpray) and c._loop]


def _check_lean(sim: PacketSim, seen: list[int]) -> None:
    """Every live connection the loop runs: the look-ups answer as the dict and lists did."""
    for c in _live(sim):
        seen.append(c.flow)
        assert c._lean and c._ev_index is None and c._fwd_l == [] and c._rev_l == []
        want = {ev: i for i, ev in enumerate(c.evs)}
        assert c.ev_index == want and len(want) == c.k
        assert [c._evi(ev) for ev in c.evs] == list(range(c.k))
        absent = next(v for v in range(1 << 20) if v not in want)
        assert c._evi(absent) == c._evi(-1) == c._evi(1 << 40) == -1
        fwd, rev = c._fwd, c._rev
        for lo in range(0, c.k, tr._ROUTE_BATCH):
            hi = min(lo + tr._ROUTE_BATCH, c.k)
            if fwd[lo] is None:  # a batch not computed: neither way, in the loop's block too
                assert fwd[lo:hi] == rev[lo:hi] == [None] * (hi - lo)
                blk = sim.rr_array[c._blk + c.k + lo : c._blk + c.k + hi]
                assert (blk == _core.NOT_HELD).all()
                continue
            entries = sim.pair_entries(c.src, c.dst, c.ev_port[lo:hi], c.evs[lo:hi])
            assert fwd[lo:hi] == entries[: hi - lo] and rev[lo:hi] == entries[hi - lo :]
            assert [c._fwd_entry(i) for i in range(lo, hi)] == entries[: hi - lo]
            assert [c._rev_entry(i) for i in range(lo, hi)] == entries[hi - lo :]


def _run(**kw: Any) -> PacketResult:
    t = fat_tree(4)
    traffic = permutation(t.plan.hosts, 300_000, seed=5)
    return run_packets(t, traffic, "mrc-spray", config=config_for("mrc-spray"), seed=2, **kw)


def test_a_lean_sender_answers_as_the_dict_and_lists_did() -> None:
    seen: list[int] = []

    def at(sim: PacketSim) -> None:
        for t in (3_000_000, 9_000_000, 20_000_000):
            sim.at(t, lambda s=sim: _check_lean(s, seen))

    plain = _run(actions=[(0, at)])
    assert len(seen) >= 16  # the checks ran on live connections
    traced_seen: list[int] = []
    traced = _run(tracer=_Trace(), actions=[(0, at)])  # the same events (the checks' own)
    assert not traced_seen and packet_figures(plain) == packet_figures(traced)


def test_compaction_gives_the_lean_state_back(monkeypatch: pytest.MonkeyPatch) -> None:
    done: list[tuple[bool, bool]] = []
    compact = MrcSpray.compact

    def checked(self: MrcSpray) -> None:
        was = self._lean
        compact(self)
        done.append((was, not self._lean and not self._fwd and not self._rev))
        assert self._evi(0) == -1 and self._blk == self._slots == -1

    monkeypatch.setattr(MrcSpray, "compact", checked)
    t = fat_tree(4)  # a chain: a step's connections retire while the next step runs
    traffic = chained_ring_all_reduce(t.plan.hosts, 8, 400_000)
    run_packets(t, traffic, "mrc-spray", config=config_for("mrc-spray"), seed=2)
    assert len(done) >= 16 and all(was and gone for was, gone in done)


def test_duplicate_ev_values_keep_the_dict_and_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """A value drawn twice (32-bit values, 256 per connection: about one connection in
    130,000) maps to its last index, as the dict built in order does; the connection keeps
    the dict then, and the run is the all-Python one."""
    real = tr.entropy_range

    def clashing(head: Any, n: int, tail: Any = ()) -> list[int]:
        out = real(head, n, tail)
        return [out[i % 5] for i in range(n)]  # 5 values, each at many indices

    monkeypatch.setattr(tr, "entropy_range", clashing)
    kept: list[bool] = []

    def at(sim: PacketSim) -> None:
        def look(s: PacketSim = sim) -> None:
            for c in _live(s):
                kept.append(c._ev_index is not None)
                assert all(
                    c._evi(ev) == max(j for j in range(c.k) if c.evs[j] == ev) for ev in c.evs
                )

        sim.at(5_000_000, look)

    plain = _run(actions=[(0, at)])
    assert kept and all(kept)
    assert packet_figures(plain) == packet_figures(_run(tracer=_Trace(), actions=[(0, at)]))
