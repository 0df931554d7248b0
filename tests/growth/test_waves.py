"""The change plan in waves (``growth.waves``): the greedy packing against a brute-force
minimum on small cases, and the plan of hgx-1k-roce 1,024 -> 1,280 GPUs.

A resource is a switch's uplinks (or a host's links); a wave may drain a resource down to its
floor; re-patched links come back on new ports after their wave::

    leaf A: 8 uplinks, floor 50%      wave 1: drain 4, re-patch, restore (A back to 8)
    4 to re-patch, 2 to re-pull       wave 2: drain the other 2 (6 of 8 live)
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from test_apply import _hgx, _links, installed_of

from clusterloom.changes import apply_plan, apply_racks
from clusterloom.growth.waves import Packing, pack_waves
from clusterloom.pipeline import Design, run_design


def _valid(p: Packing, wave: np.ndarray, forced: np.ndarray | None = None) -> bool:
    """Whether the assignment keeps every resource at its floor in every wave (a resource with
    a link forced in a wave is exempt there), simulated apart from ``pack_waves``."""
    live = p.live.astype(float).copy()
    done = np.zeros(len(p.res), dtype=bool)
    got = np.zeros(len(p.deps), dtype=bool)
    for w in range(1, int(wave.max(initial=0)) + 1):
        now = wave == w
        used = np.bincount(p.res[now], weights=p.cost[now], minlength=len(live))
        exempt = set(p.res[now & forced].tolist()) if forced is not None else set()
        for r in range(len(live)):
            if r not in exempt and live[r] - used[r] < p.floor[r] - 1e-9:
                return False
        gone = now & p.removed
        live -= np.bincount(p.res[gone], weights=p.cost[gone], minlength=len(live))
        done |= now
        for j, d in enumerate(p.deps):
            if not got[j] and all(done[i] for i in d):
                got[j] = True
                if p.gain_res[j] >= 0:
                    live[p.gain_res[j]] += p.gain[j]
        if w == 1:
            live += p.fresh
    return True


def _least(p: Packing) -> int:
    """The least number of waves of any valid plan (every wave drains something)."""
    n = len(p.res)
    for k in range(1, n + 1):
        for combo in itertools.product(range(1, k + 1), repeat=n):
            wave = np.array(combo)
            if len(set(combo)) == k and _valid(p, wave):
                return k
    raise AssertionError("no valid plan")


@st.composite
def in_place(draw: st.DrawFn) -> Packing:
    """Resources of one link speed each; every removed link re-patched in place (a new link on
    its resource taking its port): the class where the greedy is proven least."""
    k = draw(st.integers(1, 3))
    cost = np.array([draw(st.sampled_from([1.0, 2.0])) for _ in range(k)])
    links = draw(st.integers(1, 6))
    live = np.array([draw(st.integers(2, 6)) for _ in range(k)]) * cost
    share = draw(st.sampled_from([0.25, 0.5, 0.75]))
    floor = share * live
    res = np.array([draw(st.integers(0, k - 1)) for _ in range(links)])
    removed = np.array([draw(st.booleans()) for _ in range(links)])
    fresh = np.array([draw(st.integers(0, 2)) for _ in range(k)]) * cost
    keep = [i for i in range(links) if removed[i]]
    return Packing(
        res,
        cost[res],
        removed,
        live,
        np.maximum(floor, 1e-9),
        res[keep],
        cost[res][keep],
        tuple((i,) for i in keep),
        fresh,
    )


@settings(max_examples=60, deadline=None, derandomize=True)
@given(in_place())
def test_the_greedy_takes_the_least_waves_when_links_are_re_patched_in_place(p: Packing) -> None:
    assume((p.live[p.res] - p.cost >= p.floor[p.res] - 1e-9).all())  # else forced (below)
    wave, forced = pack_waves(p)
    assert not forced.any() and _valid(p, wave)
    assert int(wave.max()) == _least(p)


@st.composite
def coupled(draw: st.DrawFn) -> Packing:
    """Mixed speeds, links removed without replacement, refills needing other resources."""
    k = draw(st.integers(1, 3))
    links = draw(st.integers(1, 6))
    res = np.array([draw(st.integers(0, k - 1)) for _ in range(links)])
    cost = np.array([draw(st.sampled_from([1.0, 2.0, 3.0])) for _ in range(links)])
    live = np.array([draw(st.integers(1, 8)) for _ in range(k)], dtype=float)
    floor = np.maximum(draw(st.sampled_from([0.0, 0.5])) * live, 1e-9)
    new = draw(st.integers(0, 4))
    deps = tuple(
        tuple(sorted(draw(st.sets(st.integers(0, links - 1), max_size=2)))) for _ in range(new)
    )
    gain_res = np.array([draw(st.integers(-1, k - 1)) for _ in range(new)], dtype=np.int64)
    return Packing(
        res,
        cost,
        np.array([draw(st.booleans()) for _ in range(links)]),
        live,
        floor,
        gain_res,
        np.array([draw(st.sampled_from([1.0, 2.0])) for _ in range(new)]),
        deps,
        np.zeros(k),
    )


@settings(max_examples=60, deadline=None, derandomize=True)
@given(coupled())
def test_the_greedy_keeps_every_floor_but_where_a_link_is_forced(p: Packing) -> None:
    """Outside the proven class: every link in a wave, each resource at its floor in every
    wave except where it had to drain a link over it; no fewer waves than the least."""
    wave, forced = pack_waves(p)
    assert (wave >= 1).all() and _valid(p, wave, forced)
    if not forced.any():
        assert int(wave.max()) >= _least(p)


def test_a_link_no_wave_can_hold_is_forced_into_the_first() -> None:
    """A leaf of one 400G uplink at a 50% floor: draining it leaves 0, whatever the wave."""
    one = np.array([0])
    p = Packing(one, np.array([400.0]), np.array([False]), np.array([400.0]),
                np.array([200.0]), one[:0], np.zeros(0), (), np.zeros(1))  # fmt: skip
    wave, forced = pack_waves(p)
    assert wave.tolist() == [1] and forced.tolist() == [True]


@pytest.fixture(scope="module")
def hgx_step() -> tuple[Design, Design]:
    before = run_design(_hgx(1024), compare=False)
    return before, run_design(_hgx(1280), compare=False, installed=installed_of(before))


@pytest.mark.slow
def test_hgx_1k_to_1_25k_drains_in_two_waves_and_only_the_rack_move_cuts(
    hgx_step: tuple[Design, Design],
) -> None:
    """Wave 1 re-patches leaves 8-15's 32 of 64 uplinks each (exactly the 50% floor); wave 2 is
    the move of the rack holding leaves 0-7, which drains every link of those leaves at once:
    their 512 accelerators are cut for the move, forced, a warning (``drain-forced``), not the
    error ``drain-host-cut``. Outside that wave no leaf falls below 50%, no host is cut."""
    before, grown = hgx_step
    g = grown.growth
    assert g is not None
    plan = g.plan
    assert plan.summary["waves"] == 2 and len(plan.steps) == 12
    assert [s.order for s in plan.steps] == list(range(1, 13))
    move = {s.wave for s in plan.steps if s.action == "move-rack"}
    assert move == {2}
    for s in plan.steps:
        if s.wave in move:
            continue
        assert s.checks["backend:leaf-uplinks-left"] >= 0.5
        assert s.checks["backend:leaves-below"] == 0
        assert s.checks["backend:hosts-cut"] == s.checks["frontend:hosts-cut"] == 0
    drain = [s for s in plan.steps if s.action == "drain"]
    assert [s.checks["backend:leaf-uplinks-left"] for s in drain] == [0.5, 0.0]
    assert drain[1].checks["backend:hosts-cut"] == 512  # the moved rack's leaves' hosts
    # the move wave drains the moved rack's links only: every one touches leaves 0-7
    moved = {f"be-p0-leaf{i:04d}" for i in range(8)}
    assert all(moved & {e.split(":")[0] for e in n.split("~")} for n in drain[1].objects)
    codes = {(f.code, f.severity.value) for f in grown.fabric("backend").findings}
    assert ("drain-forced", "warning") in codes
    assert not {c for c, _ in codes} & {"drain-host-cut", "drain-capacity"}
    (forced,) = [f for f in grown.fabric("backend").findings if f.code == "drain-forced"]
    assert "forced" in forced.message and "512 hosts" in forced.message
    # the plan still gives the grown design exactly, every step valid
    assert apply_plan(_links(before), plan) == _links(grown)
    assert apply_racks(installed_of(before).racks, plan) == installed_of(grown).racks
    assert all(s.valid for s in plan.steps)
    errors = {f.code for f in grown.findings if f.severity.value == "error"}
    assert errors == {"tray-fill"}  # the example's own tray findings: the exit code's reason


@pytest.mark.parametrize(
    ("u", "share", "d"), [(8, 0.5, 6), (8, 0.5, 4), (64, 0.5, 32), (8, 0.75, 5)]
)
def test_one_leaf_re_patched_in_place_takes_the_closed_form_of_waves(
    u: int, share: float, d: int
) -> None:
    """A leaf of ``u`` uplinks, ``d`` of them re-patched in place, floor ``share``: a wave
    drains at most ``floor((1 - share) u)``, so ``ceil(d / that)`` waves."""
    res = np.zeros(d, dtype=np.int64)
    p = Packing(res, np.ones(d), np.ones(d, dtype=bool), np.array([float(u)]),
                np.array([share * u]), res, np.ones(d), tuple((i,) for i in range(d)),
                np.zeros(1))  # fmt: skip
    wave, forced = pack_waves(p)
    per = int((1 - share) * u)
    assert int(wave.max()) == -(-d // per) and not forced.any()
    assert np.bincount(wave)[1:].max() == min(per, d)
