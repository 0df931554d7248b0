"""The fluid engine against cases worked out by hand, plus properties on random instances.

Capacities are in bytes/s; C = 1e9 B/s, so 1 MB at full rate takes 1 ms = 1e9 ps.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from clusterloom.sim.flow import engine
from clusterloom.sim.flow.engine import (
    Action,
    Callback,
    FlowSet,
    Reroute,
    SetCapacity,
    SimInputError,
    SimResult,
    SimState,
    UnitSet,
    fct_percentiles,
    max_min_fair,
    simulate,
)

C = 1e9
MB = 1e6
MS = 10**9  # ps


def _rates_at(time_ps: int, seen: list[SimState]) -> Callback:
    """A callback that records the state at ``time_ps``."""

    def fn(state: SimState) -> None:
        seen.append(state)

    return Callback(time_ps, fn)


def _check_conservation(res: SimResult, flows: FlowSet, capacity: np.ndarray) -> None:
    delivered = np.bincount(res.units.unit_flow, res.unit_bytes, minlength=flows.n_flows)
    done = res.finish_ps >= 0
    np.testing.assert_allclose(delivered[done], flows.size[done], rtol=1e-9)
    assert (res.seg_max_util <= 1 + 1e-9).all()


def test_public_surface() -> None:
    public = {k for k, v in vars(engine).items() if not k.startswith("_")}
    assert set(engine.__all__) <= public
    assert {"simulate", "FlowSet", "UnitSet", "SimResult", "fct_percentiles"} <= set(engine.__all__)


@pytest.mark.parametrize("k", [1, 2, 4, 5])
def test_one_bottleneck_shared_by_k_flows(k: int) -> None:
    """k flows over one link, each gets C/k and finishes at size / (C/k).

    h0 ─┐
    h1 ─┼── link 0 (C) ──▶
    ..  │
    hk ─┘
    """
    flows = FlowSet.create([MB] * k)
    units = UnitSet.from_paths(range(k), [[0]] * k)
    seen: list[SimState] = []
    res = simulate([C], flows, units, [_rates_at(0, seen)], watch_links=[0])
    np.testing.assert_allclose(seen[0].unit_rate, C / k)
    assert (res.finish_ps == k * MS).all()
    assert (res.start_ps == 0).all()
    np.testing.assert_allclose(res.link_load(0), [C])
    np.testing.assert_array_equal(res.fct_ps, k * MS)
    _check_conservation(res, flows, np.array([C]))


def test_classic_two_bottlenecks() -> None:
    """Links A (cap 1 C) and B (cap 2 C): flow 1 on A, flow 2 on A and B, flow 3 on B.

        f1 ──▶ A(1) ──────────▶
        f2 ──▶ A(1) ──▶ B(2) ──▶
        f3 ───────────▶ B(2) ──▶

    Max-min: A is the first bottleneck (f1 = f2 = 0.5); f3 takes the rest of B: 1.5.
    Sizes 0.5, 1, 3 MB. f1 finishes at 0.5/0.5 = 1 ms; by then f2 sent 0.5, f3 1.5 MB.
    Now f2 = 1 (A alone), f3 = 1 (B shared): f2 finishes at 1 + 0.5/1 = 1.5 ms; f3 has
    1.5 - 0.5 = 1 MB left, alone on B at 2: 1.5 + 1/2 = 2 ms.
    """
    cap = np.array([C, 2 * C])
    np.testing.assert_allclose(
        max_min_fair([[1, 1, 0], [0, 1, 1]], cap), [0.5 * C, 0.5 * C, 1.5 * C]
    )
    flows = FlowSet.create([0.5 * MB, MB, 3 * MB])
    units = UnitSet.from_paths([0, 1, 2], [[0], [0, 1], [1]])
    seen: list[SimState] = []
    res = simulate(cap, flows, units, [_rates_at(0, seen)])
    np.testing.assert_allclose(seen[0].flow_rate, [0.5 * C, 0.5 * C, 1.5 * C])
    np.testing.assert_array_equal(res.finish_ps, [MS, 3 * MS // 2, 2 * MS])
    np.testing.assert_array_equal(res.seg_start_ps, [0, MS, 3 * MS // 2])
    np.testing.assert_array_equal(res.seg_end_ps, [MS, 3 * MS // 2, 2 * MS])
    np.testing.assert_allclose(res.link_load(0), [C, C, 0])
    np.testing.assert_allclose(res.link_load(1), [2 * C, 2 * C, 2 * C])
    _check_conservation(res, flows, cap)


def test_uncoupled_units_on_disjoint_paths_add_up() -> None:
    """One 2 MB flow as two uncoupled units (half each) on disjoint links.

        ┌── unit 0 ── link 0 (C) ──┐
    src ┤                          ├ dst
        └── unit 1 ── link 1 (C) ──┘

    Each unit runs at C with 1 MB: flow rate 2 C, finish 1 ms.
    """
    flows = FlowSet.create([2 * MB])
    units = UnitSet.from_paths([0, 0], [[0], [1]])
    seen: list[SimState] = []
    res = simulate([C, C], flows, units, [_rates_at(0, seen)])
    np.testing.assert_allclose(seen[0].flow_rate, [2 * C])
    assert res.finish_ps[0] == MS
    np.testing.assert_allclose(res.unit_bytes, [MB, MB])


def test_pooled_spray_with_a_shared_path() -> None:
    """The coupled case above, pooled: f0's two units are entities of weight 1/2 drawing on
    one pool of 2 MB; f1 (split, one unit) also uses link 1.

        f0 ─┬─ w 1/2 ── link 0 (C) ──▶
            └─ w 1/2 ──┐
        f1 ────────────┴ link 1 (C) ──▶

    All levels rise together: link 1 carries l/2 + l = C at l = 2C/3, freezing f0's second
    unit (C/3) and f1 (2C/3); f0's first unit rises on to l = 2C (C on link 0). f0 delivers
    4C/3 and finishes at 1.5 ms; f1 has then sent 1 MB, gets link 1 alone and finishes its
    other 1 MB at 2.5 ms. (Coupled, both took 3 ms.)
    """
    units = UnitSet.from_paths([0, 0, 1], [[0], [1], [1]], share=[0.5, 0.5, 1.0])
    seen: list[SimState] = []
    flows = FlowSet.create([2 * MB, 2 * MB], pooled=[True, False])
    res = simulate([C, C], flows, units, [_rates_at(0, seen)], watch_links=[0, 1])
    np.testing.assert_allclose(seen[0].unit_rate, [C, C / 3, 2 * C / 3])
    np.testing.assert_allclose(seen[0].flow_rate, [4 * C / 3, 2 * C / 3])
    np.testing.assert_array_equal(res.finish_ps, [3 * MS // 2, 5 * MS // 2])
    np.testing.assert_allclose(res.unit_bytes, [1.5 * MB, 0.5 * MB, 2 * MB])
    _check_conservation(res, flows, np.array([C, C]))


def test_pooled_unit_on_a_dead_link_is_a_black_hole() -> None:
    """f0 pooled 50/50: unit 0 over links 0 -> 1, unit 1 over links 0 -> 2; link 2 is dead.
    Unit 1 keeps sending (as packets sprayed onto a dead path before the sender notices) and
    loads link 0 only, up to the dead hop; it delivers nothing. Both units get C/2 of the NIC
    link 0, f0 delivers C/2: 2 MB in 4 ms. A reroute at 1 ms that drops unit 1 (the transport
    noticed) gives f0 the whole link from then: 0.5 MB sent, 1.5 MB left at C, done at 2.5 ms.

        f0 ── link 0 (C) ─┬── link 1 (C) ──▶
                          └── link 2 (dead) ✕
    """
    units = UnitSet.from_paths([0, 0], [[0, 1], [0, 2]])
    seen: list[SimState] = []
    flows = FlowSet.create([2 * MB], pooled=True)
    res = simulate([C, C, 0.0], flows, units, [_rates_at(0, seen)], watch_links=[0, 1, 2])
    np.testing.assert_allclose(seen[0].unit_rate, [C / 2, C / 2])
    np.testing.assert_allclose(seen[0].flow_rate, [C / 2])
    assert res.finish_ps[0] == 4 * MS
    np.testing.assert_allclose(res.link_load(0), [C])
    np.testing.assert_allclose(res.link_load(2), [0.0])
    np.testing.assert_allclose(res.unit_bytes, [2 * MB, 0.0])

    def notice(state: SimState) -> Reroute:
        return Reroute(units=UnitSet.from_paths([0], [[0, 1]]))

    fixed = simulate([C, C, 0.0], flows, units, [Callback(MS, notice)])
    assert fixed.finish_ps[0] == 5 * MS // 2


def test_pooled_units_stall_when_none_delivers_or_the_first_hop_is_dead() -> None:
    """A unit whose first link is dead stalls (its NIC port is down: it sends nothing), so the
    other unit gets the whole of its own NIC link; a flow with no delivering unit stalls."""
    units = UnitSet.from_paths([0, 0], [[2, 1], [0, 1]])
    seen: list[SimState] = []
    res = simulate([C, C, 0.0], FlowSet.create([MB], pooled=True), units, [_rates_at(0, seen)])
    np.testing.assert_allclose(seen[0].unit_rate, [0.0, C])
    assert res.finish_ps[0] == MS
    dead_end = UnitSet.from_paths([0, 0], [[0, 2], [1, 2]])
    stuck = simulate([C, C, 0.0], FlowSet.create([MB], pooled=True), dead_end, max_time_ps=MS)
    assert stuck.finish_ps[0] == -1
    assert stuck.seg_max_util.max(initial=0.0) == 0.0


def test_rate_tolerance_batches_close_completions_late_never_early() -> None:
    """Two 1 MB flows on separate links of C and C/1.005 finish at 1 ms and 1.005 ms. Exact,
    they are two events; at rtol=1e-2 one batch at 1.005 ms (the later of the two, so the first
    is late by 0.5%, within rtol); at rtol=1e-3 they stay apart."""
    flows = FlowSet.create([MB, MB])
    units = UnitSet.from_paths([0, 1], [[0], [1]])
    cap = [C, C / 1.005]
    exact = simulate(cap, flows, units)
    np.testing.assert_array_equal(exact.finish_ps, [MS, 1_005_000_000])
    batched = simulate(cap, flows, units, rtol=1e-2)
    np.testing.assert_array_equal(batched.finish_ps, [1_005_000_000, 1_005_000_000])
    assert batched.events < exact.events
    apart = simulate(cap, flows, units, rtol=1e-3)
    np.testing.assert_array_equal(apart.finish_ps, exact.finish_ps)


@pytest.mark.parametrize(("paths", "finish"), [([[0], [0]], 2 * MS), ([[0], [1]], MS)])
def test_hash_collision_halves_the_rate(paths: list[list[int]], finish: int) -> None:
    """Two 1 MB flows hashed onto the same link share it (C/2 each, 2 ms); spread over two
    links each runs at C (1 ms).

        f0 ─┐                       f0 ── link 0 ──▶
            ├─ link 0 ──▶    vs
        f1 ─┘                       f1 ── link 1 ──▶
    """
    res = simulate([C, C], FlowSet.create([MB, MB]), UnitSet.from_paths([0, 1], paths))
    assert (res.finish_ps == finish).all()


def test_coupled_spray_with_a_shared_path() -> None:
    """A coupled flow f0 sprayed 50/50 over links 0 and 1; f1 also uses link 1.

        f0 ─┬─ 50% ── link 0 (C) ──▶
            └─ 50% ──┐
        f1 ──────────┴ link 1 (C) ──▶

    Both rise together at rate t: link 1 carries 0.5 t + t = C, so t = 2C/3 for both (link 0
    carries only C/3: the fixed split holds f0 back). Uncoupled, the two units would be separate
    entities: C on link 0, and C/2 for each of the others on link 1.
    With 2 MB each, both finish at 2 / (2/3) = 3 ms.
    """
    units = UnitSet.from_paths([0, 0, 1], [[0], [1], [1]], share=[0.5, 0.5, 1.0])
    seen: list[SimState] = []
    coupled = FlowSet.create([2 * MB, 2 * MB], coupled=[True, False])
    res = simulate([C, C], coupled, units, [_rates_at(0, seen)], watch_links=[0, 1])
    np.testing.assert_allclose(seen[0].flow_rate, [2 * C / 3, 2 * C / 3])
    np.testing.assert_allclose(seen[0].unit_rate, [C / 3, C / 3, 2 * C / 3])
    np.testing.assert_allclose(res.link_load(0), [C / 3])
    np.testing.assert_allclose(res.link_load(1), [C])
    np.testing.assert_array_equal(res.finish_ps, [3 * MS, 3 * MS])

    seen.clear()
    simulate([C, C], FlowSet.create([2 * MB, 2 * MB]), units, [_rates_at(0, seen)])
    np.testing.assert_allclose(seen[0].unit_rate, [C, C / 2, C / 2])


def test_dependency_chain_runs_back_to_back() -> None:
    """f0 → f1 → f2 on one link (1, 2, 3 MB): finishes at 1, 3, 6 ms.

    f0 ─▶ f1 ─▶ f2      all on link 0 (C)
    """
    flows = FlowSet.create([MB, 2 * MB, 3 * MB], deps=[[], [0], [1]])
    res = simulate([C], flows, UnitSet.from_paths([0, 1, 2], [[0]] * 3))
    np.testing.assert_array_equal(res.start_ps, [0, MS, 3 * MS])
    np.testing.assert_array_equal(res.finish_ps, [MS, 3 * MS, 6 * MS])


@pytest.mark.parametrize(("start", "expected"), [(0, 3 * MS), (5 * MS, 5 * MS)])
def test_two_dependencies_start_at_the_later(start: int, expected: int) -> None:
    """f2 waits for f0 (1 MB, link 0) and f1 (3 MB, link 1): it starts at max(start, 3 ms).

    f0 (link 0) ─┐
                 ├─▶ f2 (link 2)
    f1 (link 1) ─┘
    """
    flows = FlowSet.create([MB, 3 * MB, MB], start_ps=[0, 0, start], deps=[[], [], [0, 1]])
    res = simulate([C, C, C], flows, UnitSet.from_paths([0, 1, 2], [[0], [1], [2]]))
    assert res.start_ps[2] == expected
    assert res.finish_ps[2] == expected + MS


def test_outage_delays_by_exactly_its_length() -> None:
    """Link 0 fails at 0.4 ms and recovers at 0.7 ms: a 1 MB flow finishes at 1 + 0.3 ms.

    f0 ── link 0 (C → 0 → C) ──▶
    """
    seen: list[SimState] = []
    actions: list[Action] = [
        SetCapacity(4 * MS // 10, [0], 0.0),
        _rates_at(5 * MS // 10, seen),
        SetCapacity(7 * MS // 10, [0], C),
    ]
    res = simulate([C], FlowSet.create([MB]), UnitSet.from_paths([0], [[0]]), actions)
    assert res.finish_ps[0] == 13 * MS // 10
    assert seen[0].unit_rate[0] == 0.0 and seen[0].flow_active[0]
    np.testing.assert_allclose(seen[0].flow_remaining, [0.6 * MB])
    # the callback is an event too: it splits the outage in two segments
    np.testing.assert_array_equal(res.seg_start_ps, np.array([0, 4, 5, 7]) * MS // 10)
    np.testing.assert_allclose(res.seg_max_util, [1.0, 0.0, 0.0, 1.0])


def test_stalled_entity_blocks_no_one() -> None:
    """Link 0 has capacity 0: e0 (links 0, 1) stalls at 0, e1 gets all of link 1.

    e0 ── link 0 (0) ──┐
    e1 ────────────────┴ link 1 (C) ──▶
    """
    np.testing.assert_allclose(max_min_fair([[1, 0], [1, 1]], [0.0, C]), [0.0, C])


def test_reroute_a_stalled_flow_after_a_delay() -> None:
    """Link 0 fails at 0.4 ms for good; a callback 0.1 ms later moves the flow to link 1.

        f0 ── link 0 (C → 0)    then    f0 ── link 1 (C)

    Sent 0.4 MB before the failure, 0.6 MB after the move at 0.5 ms: finish 0.5 + 0.6 = 1.1 ms.
    """

    def move(state: SimState) -> Reroute:
        assert state.unit_rate[0] == 0.0
        return Reroute(units=UnitSet.from_paths([0], [[1]]))

    actions: list[Action] = [SetCapacity(4 * MS // 10, [0], 0.0), Callback(5 * MS // 10, move)]
    res = simulate([C, C], FlowSet.create([MB]), UnitSet.from_paths([0], [[0]]), actions)
    assert res.finish_ps[0] == 11 * MS // 10
    np.testing.assert_allclose(res.unit_bytes, [0.4 * MB, 0.6 * MB])
    np.testing.assert_array_equal(res.unit_replaced_ps, [5 * MS // 10, -1])
    np.testing.assert_array_equal(res.units.unit_flow, [0, 0])


def test_callback_schedules_more_actions() -> None:
    """A callback at 0.2 ms schedules a gray failure of link 0 at 0.5 ms (same result as
    scheduling it up front: see the next test)."""

    def later(state: SimState) -> Reroute:
        return Reroute(actions=(SetCapacity(5 * MS // 10, [0], 0.5 * C),))

    res = simulate(
        [C], FlowSet.create([MB]), UnitSet.from_paths([0], [[0]]), [Callback(2 * MS // 10, later)]
    )
    assert res.finish_ps[0] == 15 * MS // 10


def test_gray_failure_slows_exactly() -> None:
    """Link 0 drops to half its capacity at 0.5 ms: 0.5 MB sent, the other 0.5 MB at C/2 takes
    1 ms: finish 1.5 ms.

        f0 ── link 0 (C → C/2) ──▶
    """
    res = simulate(
        [C],
        FlowSet.create([MB]),
        UnitSet.from_paths([0], [[0]]),
        [SetCapacity(MS // 2, 0, 0.5 * C)],
    )
    assert res.finish_ps[0] == 3 * MS // 2


def test_cap_leaves_the_rest_to_others() -> None:
    """Three flows on link 0; f0 is capped at C/10, so f1 and f2 get 0.45 C each.

        f0 (cap C/10) ─┐
        f1 ────────────┼─ link 0 (C) ──▶
        f2 ────────────┘

    A coupled flow sprayed 50/50 with a cap of C/10 on one unit runs at most at C/5 in all.
    """
    seen: list[SimState] = []
    units = UnitSet.from_paths([0, 1, 2], [[0]] * 3, cap=[C / 10, np.inf, np.inf])
    simulate([C], FlowSet.create([MB] * 3), units, [_rates_at(0, seen)])
    np.testing.assert_allclose(seen[0].unit_rate, [C / 10, 0.45 * C, 0.45 * C])

    seen.clear()
    sprayed = UnitSet.from_paths([0, 0], [[0], [1]], cap=[C / 10, np.inf])
    res = simulate([C, C], FlowSet.create([MB], coupled=True), sprayed, [_rates_at(0, seen)])
    np.testing.assert_allclose(seen[0].unit_rate, [C / 10, C / 10])
    assert res.finish_ps[0] == 5 * MS


def test_zero_size_and_max_time() -> None:
    """An empty flow finishes when it starts; a flow cut off by max_time_ps has finish -1."""
    flows = FlowSet.create([0.0, MB], start_ps=[7, 0])
    res = simulate([C], flows, UnitSet.from_paths([0, 1], [[0], [0]]), max_time_ps=MS // 2)
    assert res.start_ps[0] == 7 and res.finish_ps[0] == 7
    assert res.finish_ps[1] == -1 and res.end_ps == MS // 2
    assert res.fct_ps[1] == -1
    np.testing.assert_allclose(res.unit_bytes, [0.0, 0.5 * MB])


def test_fct_percentiles() -> None:
    flows = FlowSet.create([MB, 2 * MB], start_ps=[0, MS])
    res = simulate([C, C], flows, UnitSet.from_paths([0, 1], [[0], [1]]))
    pct = fct_percentiles(res, q=(0, 50, 100))
    assert pct == {0.0: MS, 50.0: 1.5 * MS, 100.0: 2 * MS}


def test_conservation_and_capacity_over_time() -> None:
    """Staggered flows over a small line of links; every segment stays within capacity and
    every byte is delivered exactly once."""
    cap = np.array([C, 2 * C, 0.5 * C, C])
    paths = [[0, 1], [1, 2], [2, 3], [0, 3], [1], [0, 1, 2, 3]]
    flows = FlowSet.create(
        [MB, 2 * MB, 0.3 * MB, 1.5 * MB, 0.7 * MB, MB],
        start_ps=[0, 100_000, 0, 250_000_000, 3, 1_000_000_000],
        coupled=[False, True, False, True, False, False],
    )
    res = simulate(cap, flows, UnitSet.from_paths(range(6), paths))
    assert (res.finish_ps > 0).all()
    _check_conservation(res, flows, cap)
    for link in range(cap.size):
        assert (res.link_load(link) <= cap[link] * (1 + 1e-9)).all()


@pytest.mark.parametrize(
    ("flows", "units", "message"),
    [
        (
            FlowSet.create([MB]),
            UnitSet.from_paths([0, 0], [[0], [0]], share=[0.5, 0.4]),
            "flow 0: unit shares sum",
        ),
        (FlowSet.create([MB]), UnitSet.from_paths([0], [[3]]), "unit 0: link 3 out of range"),
        (
            FlowSet.create([MB, MB, MB], deps=[[2], [0], [1]]),
            UnitSet.from_paths([0, 1, 2], [[0]] * 3),
            "dependency cycle: flow 0 waits for flow 2 waits for flow 1 waits for flow 0",
        ),
        (FlowSet.create([MB, MB]), UnitSet.from_paths([0], [[0]]), "flow 1: has no units"),
        (FlowSet.create([MB]), UnitSet.from_paths([0], [[]]), "unit 0: no links"),
        (FlowSet.create([MB]), UnitSet.from_paths([0], [[0, 0]]), "unit 0: link 0 listed twice"),
    ],
)
def test_invalid_input_names_the_culprit(flows: FlowSet, units: UnitSet, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        simulate([C], flows, units)
    with pytest.raises(SimInputError):
        simulate([C], flows, units)


# --------------------------------------------------------------------------------------------
# random instances


@st.composite
def instances(draw: Any) -> tuple[np.ndarray, FlowSet, UnitSet]:
    n_links = draw(st.integers(1, 20))
    cap = (
        np.array(
            draw(
                st.lists(
                    st.sampled_from([0.5, 1.0, 2.0, 3.0, 10.0]), min_size=n_links, max_size=n_links
                )
            )
        )
        * C
    )
    n_flows = draw(st.integers(1, 30))
    link = st.integers(0, n_links - 1)
    flow_of, paths, shares, caps = [], [], [], []
    for f in range(n_flows):
        k = draw(st.integers(1, 3))
        weights = np.array(draw(st.lists(st.integers(1, 4), min_size=k, max_size=k)), dtype=float)
        for w in weights / weights.sum():
            flow_of.append(f)
            paths.append(sorted(set(draw(st.lists(link, min_size=1, max_size=4)))))
            shares.append(w)
            caps.append(draw(st.sampled_from([np.inf, np.inf, 0.2 * C, C])))
    mode = np.array(draw(st.lists(st.integers(0, 2), min_size=n_flows, max_size=n_flows)))
    flows = FlowSet.create(
        np.array(draw(st.lists(st.floats(0.01, 5.0), min_size=n_flows, max_size=n_flows))) * MB,
        start_ps=draw(st.lists(st.integers(0, 3 * MS), min_size=n_flows, max_size=n_flows)),
        coupled=mode == 1,
        pooled=mode == 2,
    )
    return cap, flows, UnitSet.from_paths(flow_of, paths, share=shares, cap=caps)


def _check_max_min(state: SimState, flows: FlowSet, cap: np.ndarray) -> None:
    """Weighted max-min: every active entity has a level > 0 and either sits at its cap or has
    a saturated link on which no entity has a higher level; no link is over capacity. An
    entity's level is its rate over its weight: a coupled flow (weight 1, rate the flow's), a
    unit of a split flow (weight 1) or of a pooled flow (weight its share)."""
    u = state.units
    alive = np.flatnonzero(state.unit_alive & state.flow_active[u.unit_flow])
    entities: list[tuple[float, float, set[int]]] = []  # level, cap on the level, links
    for f in np.unique(u.unit_flow[alive]):
        mine = alive[u.unit_flow[alive] == f]
        if flows.coupled[f]:
            share = u.unit_share[mine]
            ecap = min(
                (u.cap[x] / s for x, s in zip(mine, share, strict=True) if s > 0), default=np.inf
            )
            links = {int(x) for m in mine if u.unit_share[m] > 0 for x in u.links(m)}
            entities.append((float(state.flow_rate[f]), ecap, links))
        else:
            weight = u.unit_share if flows.pooled[f] else np.ones(u.n_units)
            entities += [
                (
                    float(state.unit_rate[m] / weight[m]),
                    float(u.cap[m] / weight[m]),
                    set(u.links(m).tolist()),
                )
                for m in mine
                if weight[m] > 0
            ]
    load = np.zeros(cap.size)
    for m in alive:
        load[u.links(m)] += state.unit_rate[m]
    assert (load <= cap * (1 + 1e-9)).all()
    saturated = load >= cap * (1 - 1e-9)
    for level, ecap, links in entities:
        assert level > 0
        if level >= ecap * (1 - 1e-9):
            continue
        assert any(
            saturated[link]
            and all(r <= level * (1 + 1e-9) for r, _, other in entities if link in other)
            for link in links
        )


@given(instances())
def test_random_instances(instance: tuple[np.ndarray, FlowSet, UnitSet]) -> None:
    cap, flows, units = instance
    seen: list[SimState] = []
    first = int(flows.start_ps.min())
    res = simulate(cap, flows, units, [_rates_at(first, seen)])
    _check_max_min(seen[0], flows, cap)
    assert (res.finish_ps >= res.start_ps).all() and (res.start_ps >= flows.start_ps).all()
    _check_conservation(res, flows, cap)
    again = simulate(cap, flows, units, [_rates_at(first, [])])
    for name in (
        "start_ps",
        "finish_ps",
        "unit_bytes",
        "seg_start_ps",
        "seg_ptr",
        "seg_link",
        "seg_load",
    ):
        np.testing.assert_array_equal(getattr(res, name), getattr(again, name))
