"""``mrc-spray``'s receiver and sender in the compiled loop (``_core._mrc_receive``,
``_core._mrc_sacked``: placement, the SACK, loss detection by EV order, the window, the
pump) are the Python run: untraced, the loop receives, answers and sends; under a tracer
everything is Python. The two must agree to the picosecond through drops, trims, marks and
failures, and the loop must have done the work (a test that passes because nothing ran in
the loop proves nothing)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clusterloom.sim.failures import parse_failure
from clusterloom.sim.packet._core import S_DELIV
from clusterloom.sim.packet.base import ConnSpec
from clusterloom.sim.packet.engine import Packet, PacketConfig, PacketSim
from clusterloom.sim.packet.fabrics import fat_tree
from clusterloom.sim.packet.run import PacketResult, config_for, run_packets
from clusterloom.sim.packet.transports import MrcSpray
from clusterloom.sim.traffic import Traffic, incast, permutation
from helpers import packet_figures


class _Trace:
    """A tracer that keeps nothing: it only makes the run all Python."""

    def packet(self, now: int, where: str, host: int, pkt: Packet) -> None:
        return

    def event(self, now: int, flow: int, what: str, a: int = 0, b: int = 0) -> None:
        return

    def routed(self, pkt: Packet) -> None:
        return


_CALLS: dict[str, int] = {}


def _both(
    monkeypatch: pytest.MonkeyPatch, *args: Any, **kw: Any
) -> tuple[PacketResult, PacketResult, list[PacketSim]]:
    """The run untraced and traced, with the engines made (to read what the loop took);
    ``_CALLS`` counts, for the untraced run, the SACKs Python handled (``made_sack``), the
    loop's pumps stopped for Python (``made_pump``) and Python's handlers (``_pull``)."""
    from clusterloom.sim.packet import run as run_mod

    made: list[PacketSim] = []
    _CALLS.clear()
    for name in ("made_sack", "made_pump", "_pull"):
        original = getattr(MrcSpray, name)

        def counted(self: MrcSpray, *a: Any, _f: Any = original, _n: str = name) -> Any:
            _CALLS[_n] = _CALLS.get(_n, 0) + 1
            return _f(self, *a)

        monkeypatch.setattr(MrcSpray, name, counted)

    class Recorded(PacketSim):
        def __init__(self, *a: Any, **k: Any) -> None:
            super().__init__(*a, **k)
            made.append(self)

    monkeypatch.setattr(run_mod, "PacketSim", Recorded)
    plain = run_packets(*args, **kw)
    calls = dict(_CALLS)
    traced = run_packets(*args, **kw, tracer=_Trace())
    _CALLS.clear()
    _CALLS.update(calls)
    return plain, traced, made


@pytest.mark.parametrize(
    "case",
    ["incast-droptail", "incast-trim", "perm-failure", "perm-few-evs"],
)
def test_the_loops_receiver_is_the_python_run(monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    t = fat_tree(4)
    n = t.plan.hosts
    options = None
    failures: tuple[Any, ...] = ()
    if case.startswith("incast"):
        traffic = incast(8, 300_000, n_hosts=n)
        trim = case.endswith("trim")
        cfg = config_for("mrc-spray", PacketConfig(buffer_bytes=24_000, trimming=trim))
    else:
        traffic = permutation(n, 400_000, seed=7)
        cfg = config_for("mrc-spray")
        if case == "perm-failure":  # a spine link dies: losses found by SACKs, EVs timed out
            failures = (parse_failure("link:40@15us", t),)
        else:  # few EVs: each carries many packets in flight, SACKs find losses by EV order
            options = {"evs": 6.0}
    plain, traced, made = _both(
        monkeypatch, t, traffic, "mrc-spray", failures, config=cfg, options=options, seed=3
    )
    assert packet_figures(plain) == packet_figures(traced)
    assert plain.finished == len(traffic)
    if case == "incast-droptail":
        assert plain.drops > 0 and plain.retransmissions.sum() > 0 and plain.marks > 0
    if case == "incast-trim":
        assert plain.trims > 0 and plain.drops == 0
    if case == "perm-failure":
        assert plain.drops > 0 and plain.retransmissions.sum() > 0
    # the loop placed most of the payload (all but each flow's completing packet, trimmed
    # packets and what arrived before start), none under the tracer
    in_loop = [int(s._s[S_DELIV]) for s in made]
    assert in_loop[0] > 0.8 * int(traffic.nbytes.sum()) and in_loop[1] == 0
    # the loop handled the SACKs at the senders: none went to Python, and Python's
    # handlers (a start, timeouts, the pumps the loop stopped for a route) are few on the
    # permutations; not in the incasts, where each trim's NACK, each probe's answer to an EV
    # timed out is one (both Python's)
    packets = int(traffic.nbytes.sum()) // 4096
    assert _CALLS.get("made_sack", 0) == 0
    if options is None:  # 128 EVs: routes held in batches of 32, the loop stops for them
        assert _CALLS.get("made_pump", 0) > 0
    if case.startswith("perm"):
        assert _CALLS["_pull"] < 0.3 * packets


def test_sack_bits_read_from_the_shared_flags() -> None:
    """The receiver's SACK in Python (its completing packet; a run without the loop keeps
    ``rbits``) reads the flags the loop writes: bit i is packet cum + 1 + i, 64 at most."""
    t = fat_tree(4)
    sim = PacketSim(t, config_for("mrc-spray"))
    c = MrcSpray(sim, 0, 0, 5, 100 * 4096, 0, ConnSpec())
    assert c.rx_in_loop
    for seq in (0, 2, 3, 66, 67, 99):
        c.place(seq)
    assert c.cum == 1
    want = sum(1 << (s - 2) for s in (2, 3, 66) if s - 2 < 64)
    assert c.sack_bits(64) == want
    c.got[1] = 1  # as the loop would place it, without the Python bitmap
    c.cum = 4
    assert c.sack_bits(64) == sum(1 << (s - 5) for s in (66, 67) if s - 5 < 64)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    sizes=st.lists(st.integers(1, 120_000), min_size=1, max_size=10),
    ends=st.lists(st.tuples(st.integers(0, 15), st.integers(0, 15)), min_size=10, max_size=10),
    evs=st.integers(1, 8),
    buffer=st.sampled_from([12_000, 40_000, 512 * 1024]),
    seed=st.integers(0, 1_000),
)
def test_any_small_traffic_runs_the_same_in_the_loop(
    monkeypatch: pytest.MonkeyPatch,
    sizes: list[int],
    ends: list[tuple[int, int]],
    evs: int,
    buffer: int,
    seed: int,
) -> None:
    """Flows of any size (one packet, a partial last packet), sharing hosts, any few EVs and
    shallow to deep buffers: the untraced run is the traced one."""
    t = fat_tree(4)
    pairs = [(a, b) for a, b in ends[: len(sizes)] if a != b] or [(0, 9)]
    traffic = Traffic.from_arrays(
        [a for a, _ in pairs], [b for _, b in pairs], sizes[: len(pairs)], n_hosts=16
    )
    cfg = config_for("mrc-spray", PacketConfig(buffer_bytes=buffer))
    plain, traced, _ = _both(
        monkeypatch, t, traffic, "mrc-spray", config=cfg, options={"evs": float(evs)}, seed=seed
    )
    assert packet_figures(plain) == packet_figures(traced)


def test_a_sender_short_of_room_stops_for_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no record spare (a block just large enough for what Python hands over), the
    loop's pump runs out at its first send and stops for Python (``made_pump(-1, ...)``),
    which gives the sender a larger block: the same run."""
    from clusterloom.sim.packet import transports

    monkeypatch.setattr(transports, "_Q_PER_WINDOW", 0)
    monkeypatch.setattr(transports, "_Q_SPARE", 0)
    monkeypatch.setattr(transports, "_Q_GROWTH", 1)  # no record spare, ever
    stopped: list[int] = []
    original = MrcSpray.made_pump

    def counted(self: MrcSpray, i: int, seq: int, now: int) -> None:
        stopped.append(i)
        original(self, i, seq, now)

    monkeypatch.setattr(MrcSpray, "made_pump", counted)
    t = fat_tree(4)
    traffic = permutation(t.plan.hosts, 400_000, seed=2)
    f = (parse_failure("link:40@15us", t),)
    plain = run_packets(t, traffic, "mrc-spray", f, seed=1)
    assert -1 in stopped
    traced = run_packets(t, traffic, "mrc-spray", f, seed=1, tracer=_Trace())
    assert packet_figures(plain) == packet_figures(traced) and plain.finished == len(traffic)


def test_a_retired_connection_gives_a_late_loop_packet_its_ev() -> None:
    """A data packet the loop sent that reaches a retired connection is given its object by
    the answerer, which computes the EV from the index as the connection drew it: hashed
    from the seed and flow, or the index itself on a run given its source routes."""
    import numpy as np

    from clusterloom.sim.packet._core import TAG_EVI_SHIFT, TAG_MADE, TAG_RX
    from clusterloom.sim.packet.transports import _Answerer

    class NoRoutes:
        evs = 256

        def __call__(self, keys: np.ndarray[Any, Any]) -> list[tuple[int, ...] | None]:
            return [None] * len(keys)

    t = fat_tree(4)
    for table in (None, NoRoutes()):
        sim = PacketSim(t, config_for("mrc-spray"), seed=11, source_routes=table)
        c = MrcSpray(sim, 0, 2, 9, 20 * 4096, 0, ConnSpec())
        answer = _Answerer(c, echo_path=False, source_route=c.sr)
        for i in (0, 5, 127):
            tag = TAG_RX | TAG_MADE | (i << TAG_EVI_SHIFT) | 3
            pkt, late = c.made_data(tag), answer.made_data(tag)
            assert (
                (late.ev, late.port, late.seq)
                == (pkt.ev, pkt.port, 3)
                == (
                    c.evs[i],
                    c.ev_port[i],
                    3,
                )
            )
        assert (c.evs[5] == 5) == (table is not None)


def test_roce_pacer_in_the_loop_is_the_python_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """``roce-ecmp`` without DCQCN (htsim's configuration) paces in the loop
    (``_core._roce_pace``): the run through a failure's drops, NAKs, go-back-N and timeouts
    is the traced all-Python one, retransmissions counted alike (a send below the highest
    sequence sent is one), and Python took few of the pacer's turns."""
    from clusterloom.sim.crossval import HTSIM_ROCE
    from clusterloom.sim.packet.transports import RoceEcmp

    turns = [0]
    original = RoceEcmp.on_timer

    def counted(self: RoceEcmp, token: int, now: int) -> None:
        turns[0] += token == 0
        original(self, token, now)

    monkeypatch.setattr(RoceEcmp, "on_timer", counted)  # the class's own: still paced
    t = fat_tree(4)
    traffic = permutation(t.plan.hosts, 300_000, seed=3)
    f = (parse_failure("link:40@15us", t),)
    cfg = replace(config_for("roce-ecmp", HTSIM_ROCE[0]), reroute_ps=30_000_000)
    options = dict(HTSIM_ROCE[1])
    plain = run_packets(t, traffic, "roce-ecmp", f, config=cfg, options=options, seed=2)
    in_python = turns[0]
    turns[0] = 0
    traced = run_packets(
        t, traffic, "roce-ecmp", f, config=cfg, options=options, seed=2, tracer=_Trace()
    )
    assert packet_figures(plain) == packet_figures(traced)
    assert plain.finished == len(traffic) and plain.retransmissions.sum() > 0
    packets = int(traffic.nbytes.sum()) // 4096
    assert turns[0] >= packets  # the traced run paced every packet in Python
    assert in_python < 0.05 * packets  # the loop's run: only turns it had no room for


def test_a_retired_roce_connection_gives_a_late_loop_packet_its_fields() -> None:
    """A data packet the loop's pacer sent that reaches a retired ``roce-ecmp`` connection
    (a go-back-N resend in flight when it retired) is given the object the connection
    would give it: its sequence, payload (the last packet's short one too), EV and port."""
    from clusterloom.sim.crossval import HTSIM_ROCE
    from clusterloom.sim.packet._core import TAG_MADE, TAG_RX
    from clusterloom.sim.packet.transports import RoceEcmp, _RoceAnswerer

    t = fat_tree(4)
    cfg = config_for("roce-ecmp", HTSIM_ROCE[0])
    sim = PacketSim(t, cfg)
    spec = ConnSpec(options=dict(HTSIM_ROCE[1]))
    c = RoceEcmp(sim, 3, 1, 12, 10 * cfg.mtu + 100, 0, spec)
    assert c.pace_in_loop
    late = _RoceAnswerer(c)
    for seq in (0, 4, 10):
        tag = TAG_RX | TAG_MADE | seq
        a, b = c.made_data(tag), late.made_data(tag)
        assert (a.seq, a.payload, a.size, a.ev, a.port, a.key, a.job) == (
            b.seq,
            b.payload,
            b.size,
            b.ev,
            b.port,
            b.key,
            b.job,
        )
        assert a.payload == (100 if seq == 10 else cfg.mtu)
