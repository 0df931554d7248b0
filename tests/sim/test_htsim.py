"""htsim connection-matrix files: parsing, writing, round trips and every malformed case."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from clusterloom.errors import OutputError, SpecError
from clusterloom.sim.htsim import format_htsim, parse_htsim, read_htsim, write_htsim
from clusterloom.sim.traffic import Traffic, all_to_all, from_step_flows, ring_all_reduce
from clusterloom.units import PS_PER_US
from clusterloom.workload.algorithms import Algorithm, Collective
from clusterloom.workload.flows import step_flows
from clusterloom.workload.ops import CollectiveOp, LinkClass

SMALL = """\
Nodes 4
Connections 5
Triggers 2
0->1 id 1 start 0 size 1000 recv_done_trigger 7
2->3 id 2 start 2500000 size 4000 send_done_trigger 9
3->0 id 3 start 0 size 10 send_done_trigger 9
1->2 id 4 trigger 7 size 2000
0->3 id 5 trigger 9 size 300 prio 3
trigger id 7 oneshot
trigger id 9 barrier count 2
"""


def test_small_file() -> None:
    """Hosts 0..3; flow 4 starts when flow 1 is delivered (oneshot 7), flow 5 when flows 2 and 3
    both are (barrier 9)::

        t=0     [1] 0->1 1000 B ──oneshot 7──▶ [4] 1->2 2000 B
        t=2.5us [2] 2->3 4000 B ─┐
        t=0     [3] 3->0   10 B ─┴─barrier 9─▶ [5] 0->3  300 B
    """
    t = parse_htsim(SMALL)
    assert t.n_hosts == 4
    assert t.src.tolist() == [0, 2, 3, 1, 0]
    assert t.dst.tolist() == [1, 3, 0, 2, 3]
    assert t.nbytes.tolist() == [1000, 4000, 10, 2000, 300]
    assert t.start_ps.tolist() == [0, 2_500_000, 0, 0, 0]
    assert [t.deps(i).tolist() for i in range(5)] == [[], [], [], [0], [1, 2]]
    assert t.group.tolist() == [-1] * 5 and t.group_names == ()
    assert t.levels().tolist() == [0, 0, 0, 1, 1]


def test_comments_and_blank_lines_are_skipped() -> None:
    text = "# a comment\n\nNodes 2\n  # indented\nConnections 1\n\n0->1 start 1000000 size 5\n"
    t = parse_htsim(text)
    assert t.start_ps.tolist() == [PS_PER_US] and t.nbytes.tolist() == [5]


def test_written_file_matches_the_htsim_grammar() -> None:
    t = Traffic.from_arrays(
        [0, 1, 2, 3],
        [1, 2, 3, 0],
        [10, 20, 30, 40],
        deps=[[], [0], [0], [1, 2]],
        n_hosts=4,
        start_ps=[3 * PS_PER_US, 0, 0, 0],
    )
    text = format_htsim(t)
    assert text.splitlines() == [
        "Nodes 4",
        "Connections 4",
        "Triggers 2",
        "0->1 id 1 start 3000000 size 10 recv_done_trigger 1",
        "1->2 id 2 trigger 1 size 20 recv_done_trigger 2",
        "2->3 id 3 trigger 1 size 30 recv_done_trigger 2",
        "3->0 id 4 trigger 2 size 40",
        "trigger id 1 oneshot",
        "trigger id 2 barrier count 2",
    ]
    assert "send_done_trigger 1" in format_htsim(t, done="send")
    assert parse_htsim(text) == t


def test_start_is_in_picoseconds() -> None:
    """csg-htsim's connection-matrix loader keeps ``start`` as picoseconds
    (connection_matrix.cpp: "start is in picoseconds already"), so a start that is not a whole
    microsecond goes through both ways unchanged, and a decimal is rounded to a picosecond."""
    t = Traffic.from_arrays([0], [1], 5, start_ps=[1_499_999], n_hosts=2)
    assert "start 1499999 size 5" in format_htsim(t)
    assert parse_htsim(format_htsim(t)).start_ps.tolist() == [1_499_999]
    text = "Nodes 2\nConnections 1\n0->1 start 2500000.6 size 5\n"
    assert parse_htsim(text).start_ps.tolist() == [2_500_001]


def test_write_and_read_a_file(tmp_path: Path) -> None:
    t = Traffic.concat(ring_all_reduce(4, 4000, name="ar"), all_to_all(4, 9))
    path = write_htsim(t, tmp_path / "sub" / "ar.cm")
    assert path.read_text().startswith("# clusterloom group-names")
    assert read_htsim(path) == t


def test_unreadable_file_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as err:
        read_htsim(tmp_path / "missing.cm")
    assert "cannot read" in str(err.value)


def test_step_flows_traffic_is_expressible() -> None:
    g = np.array([[0, 1, 2, 3], [4, 5, 6, 7]], dtype=np.int32)
    ops = (
        CollectiveOp(
            "dp",
            "ar",
            "backward",
            Collective.ALL_REDUCE,
            Algorithm.RING,
            4096,
            1,
            g,
            LinkClass.SCALE_OUT,
        ),
        CollectiveOp(
            "ep",
            "a2a",
            "forward",
            Collective.ALL_TO_ALL,
            Algorithm.DIRECT,
            999,
            1,
            g[:, ::2],
            LinkClass.SCALE_OUT,
        ),
        CollectiveOp(
            "tp",
            "ag",
            "forward",
            Collective.ALL_GATHER,
            Algorithm.RING,
            800,
            1,
            g.T.copy(),
            LinkClass.SCALE_UP,
        ),
    )
    t = from_step_flows(step_flows(ops, ranks_per_domain=4, channels=2), ops)
    assert t.n_deps > 0
    assert parse_htsim(format_htsim(t)) == t


def test_inexpressible_traffic_is_an_output_error() -> None:
    # flow 0 is a dependency of {0} and of {0, 1}: it would have to activate two triggers
    shared = Traffic.from_arrays([0, 1, 2, 3], [1, 2, 3, 0], 5, deps=[[], [], [0], [0, 1]])
    with pytest.raises(OutputError, match="activates one trigger"):
        format_htsim(shared)
    timed = Traffic.from_arrays([0, 1], [1, 0], 5, deps=[[], [0]], start_ps=[0, 5])
    with pytest.raises(OutputError, match="start time"):
        format_htsim(timed)


def test_a_flow_over_htsim_int_becomes_a_chain() -> None:
    """Flow 0 (5 GB) before flow 1 (1 KB): htsim's size is a C int, so flow 0 is written as
    three connections of 5e9/3 bytes (rounded, the first takes the extra byte) chained by
    oneshot triggers; flow 1 waits for the last piece.

        0->1 5e9  ==>  0->1 id 1 (1,666,666,667) -> id 2 (1,666,666,667) -> id 3 (1,666,666,666)
        1->0 1e3  ==>  1->0 id 4, trigger of id 3
    """
    t = Traffic.from_arrays([0, 1], [1, 0], [5_000_000_000, 1000], deps=[[], [0]])
    back = parse_htsim(format_htsim(t))
    assert back.nbytes.tolist() == [1_666_666_667, 1_666_666_667, 1_666_666_666, 1000]
    assert back.src.tolist() == [0, 0, 0, 1]
    assert [back.deps(i).tolist() for i in range(4)] == [[], [0], [1], [2]]
    assert back.total_bytes == t.total_bytes
    assert t.split_flows(10**10) is t


# -- round trip over random traffic with random (htsim-expressible) dependency DAGs ---------------


@st.composite
def traffics(draw: st.DrawFn) -> Traffic:
    n_hosts = draw(st.integers(2, 9))
    n = draw(st.integers(0, 30))
    src = draw(st.lists(st.integers(0, n_hosts - 1), min_size=n, max_size=n))
    hop = draw(st.lists(st.integers(1, n_hosts - 1), min_size=n, max_size=n))
    dst = [(s + h) % n_hosts for s, h in zip(src, hop, strict=True)]
    size = draw(st.lists(st.integers(0, 2**31 - 1), min_size=n, max_size=n))
    start_us = draw(st.lists(st.integers(0, 10**6), min_size=n, max_size=n))
    # dependency sets: disjoint sets of earlier flows, each shared by any number of later flows
    sets: list[list[int]] = []
    free: list[int] = []
    deps: list[list[int]] = []
    for k in range(n):
        choice = draw(st.integers(0, 2))
        if choice == 1 and free:
            members = draw(st.lists(st.sampled_from(free), min_size=1, max_size=4, unique=True))
            free = [f for f in free if f not in members]
            sets.append(sorted(members))
            deps.append(sets[-1])
        elif choice == 2 and sets:
            deps.append(draw(st.sampled_from(sets)))
        else:
            deps.append([])
        free.append(k)
    start = [0 if d else s * PS_PER_US for d, s in zip(deps, start_us, strict=True)]
    n_groups = draw(st.integers(0, 3))
    group = draw(st.lists(st.integers(-1, n_groups - 1), min_size=n, max_size=n))
    names = draw(st.lists(st.text(max_size=8), min_size=n_groups, max_size=n_groups))
    return Traffic.from_arrays(
        src,
        dst,
        size,
        n_hosts=n_hosts,
        start_ps=start,
        deps=deps,
        group=group,
        group_names=names,
    )


@given(traffics(), st.sampled_from(["recv", "send"]))
def test_round_trip(t: Traffic, done: str) -> None:
    t.validate()
    assert parse_htsim(format_htsim(t, done=done)) == t  # type: ignore[arg-type]


# -- malformed files -------------------------------------------------------------------------------

HEAD = "Nodes 4\nConnections 1\n"


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        (HEAD + "0-1 start 0 size 5\n", 3, "'0-1'"),
        (HEAD + "0->x start 0 size 5\n", 3, "'0->x'"),
        (HEAD + "0->1 start 0 size -5\n", 3, "negative"),
        (HEAD + "0->1 start 0 size 5kB\n", 3, "'size 5kB'"),
        (HEAD + "0->1 start soon size 5\n", 3, "'start soon'"),
        (HEAD + "0->1 start 0 size\n", 3, "'size' needs a value"),
        (HEAD + "0->1 start 0\n", 3, "no 'size'"),
        (HEAD + "0->1 size 5\n", 3, "no start method"),
        (HEAD + "0->4 start 0 size 5\n", 3, "destination '4'"),
        (HEAD + "7->1 start 0 size 5\n", 3, "source '7'"),
        (HEAD + "2->2 start 0 size 5\n", 3, "itself"),
        (HEAD + "0->1 start 0 size 5 colour red\n", 3, "'colour'"),
        (HEAD + "0->1 start 0 size 5 size 6\n", 3, "twice"),
        (HEAD + "0->1 id 0 start 0 size 5\n", 3, "id 0"),
        (HEAD + "0->1 trigger 3 size 5\n", 3, "'trigger 3': trigger never defined"),
        (HEAD + "0->1 start 0 trigger 3 size 5\n", 3, "both 'start' and 'trigger'"),
        (HEAD + "0->1 start 0 size 5 recv_done_trigger 2\n", 3, "never defined"),
        ("Nodes 4\nConnections 2\n0->1 start 0 size 5\n", 2, "'Connections 2'"),
        ("Nodes 4\nConnections 0\n0->1 start 0 size 5\n", 2, "has 1 connections"),
        ("Nodes four\nConnections 0\n", 1, "'Nodes four'"),
        ("Nodes 4 5\nConnections 0\n", 1, "'Nodes' header"),
        ("Connections 0\n", 1, "no 'Nodes' header"),
        ("Nodes 2\nNodes 3\nConnections 0\n", 2, "repeated"),
        ("Nodes 2\nConnections 0\nhello world\n", 3, "'hello'"),
        ("Nodes 2\nConnections 0\nfailure switch_type TOR\n", 3, "failure"),
        (
            "Nodes 2\nConnections 2\nTriggers 1\n0->1 id 1 start 0 size 5 recv_done_trigger 1\n"
            "1->0 id 2 trigger 1 size 5\ntrigger id 1 barrier 1\n",
            6,
            "'1'",
        ),
        (
            "Nodes 2\nConnections 2\nTriggers 1\n0->1 id 1 start 0 size 5 recv_done_trigger 1\n"
            "1->0 id 2 trigger 1 size 5\ntrigger id 1 barrier count 2\n",
            6,
            "'count 2'",
        ),
        (
            "Nodes 2\nConnections 1\nTriggers 1\n1->0 id 2 trigger 1 size 5\n"
            "trigger id 1 oneshot\n",
            5,
            "activated by 0 connections",
        ),
        (
            "Nodes 2\nConnections 2\nTriggers 1\n0->1 id 1 start 0 size 5 recv_done_trigger 1\n"
            "1->0 id 2 trigger 1 size 5\ntrigger id 1 multishot\n",
            6,
            "multishot",
        ),
        (
            "Nodes 2\nConnections 2\nTriggers 2\n0->1 id 1 start 0 size 5 recv_done_trigger 1\n"
            "1->0 id 2 trigger 1 size 5\ntrigger id 1 oneshot\ntrigger id 1 oneshot\n",
            7,
            "defined twice",
        ),
        (
            "Nodes 2\nConnections 1\n0->1 start 0 size 5 recv_done_trigger 1\ntrigger id 1 "
            "oneshot\n",
            4,
            "no 'Triggers 1' header",
        ),
        (
            "Nodes 2\nConnections 2\n0->1 id 1 start 0 size 5\n1->0 id 1 start 0 size 5\n",
            4,
            "already used on line 3",
        ),
        (
            "Nodes 2\nConnections 2\nTriggers 2\n0->1 id 1 trigger 2 size 5 recv_done_trigger 1\n"
            "1->0 id 2 trigger 1 size 5 recv_done_trigger 2\ntrigger id 1 oneshot\n"
            "trigger id 2 oneshot\n",
            4,
            "cycle",
        ),
    ],
)
def test_malformed_file_names_the_line(text: str, line: int, words: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_htsim(text, source="bad.cm")
    wheres = [p.where for p in err.value.problems]
    assert f"bad.cm line {line}" in wheres
    message = next(p.message for p in err.value.problems if p.where == f"bad.cm line {line}")
    assert words in message


def test_three_bad_lines_give_three_problems(tmp_path: Path) -> None:
    path = tmp_path / "three.cm"
    path.write_text(
        "Nodes 4\nConnections 4\n"
        "0->1 start 0 size 5\n"
        "0->9 start 0 size 5\n"  # host out of range
        "1->2 start 0 size -1\n"  # negative size
        "2->3 start 0 size 5 weight 2\n"  # unknown token
    )
    with pytest.raises(SpecError) as err:
        read_htsim(path)
    assert [p.where for p in err.value.problems] == [f"{path} line {n}" for n in (4, 5, 6)]


def test_several_problems_on_one_line_are_one_problem() -> None:
    with pytest.raises(SpecError) as err:
        parse_htsim(HEAD + "1->1 start x size -3\n")
    assert len(err.value.problems) == 1
    assert err.value.problems[0].message.count(";") == 2


@given(traffics(), st.integers(1, 9))
def test_split_flows_keeps_bytes_and_order(t: Traffic, parts: int) -> None:
    """Cutting flows into chains keeps every flow's bytes, bounds every piece, and keeps the
    dependency structure acyclic with each original dependency on the last piece."""
    max_bytes = max(1, int(t.nbytes.max(initial=0)) // parts)
    split = t.split_flows(max_bytes).validate()
    assert (split.nbytes <= max_bytes).all()
    assert split.total_bytes == t.total_bytes
    pieces = np.maximum(1, -(-t.nbytes // max_bytes))
    assert len(split) == int(pieces.sum())
    last = np.cumsum(pieces) - 1
    first = last - pieces + 1
    for f in range(len(t)):
        assert sorted(split.deps(int(first[f])).tolist()) == sorted(last[t.deps(f)].tolist())
