"""Fuzzing the htsim connection-matrix reader: mutated valid files and random text give a
valid Traffic within the documented limits or a SpecError naming the file's lines; nothing
else. Every input that ever failed is a file in ``corpus/htsim/``, replayed below."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterloom.errors import ClusterloomError, SpecError
from clusterloom.sim.htsim import (
    HTSIM_MAX_CONNECTIONS,
    HTSIM_MAX_NODES,
    HTSIM_MAX_PROBLEMS,
    HTSIM_MAX_SIZE,
    HTSIM_MAX_START_PS,
    format_htsim,
    parse_htsim,
)
from clusterloom.sim.traffic import Traffic, all_to_all, ring_all_reduce
from clusterloom.units import PS_PER_US

CORPUS = Path(__file__).parent / "corpus" / "htsim"
SOURCE = "fuzz.cm"

HAND_WRITTEN = """\
# a comment
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


def _seeds() -> list[str]:
    chained = Traffic.from_arrays(
        [0, 1, 2, 3, 0],
        [1, 2, 3, 0, 2],
        [10, 20, 30, 40, 2**31 - 1],
        deps=[[], [0], [0], [1, 2], []],
        n_hosts=4,
        start_ps=[3 * PS_PER_US, 0, 0, 0, 7 * PS_PER_US],
        group=[0, 0, 1, 1, -1],
        group_names=["ring", "a2a"],
    )
    return [
        HAND_WRITTEN,
        format_htsim(chained),
        format_htsim(chained, done="send"),
        format_htsim(all_to_all(3, 4096)),
        format_htsim(ring_all_reduce(4, 1 << 20)),
    ]


SEEDS = _seeds()

#: tokens that have broken readers: huge, non-finite, signed, non-ASCII digits, keywords
EXTREME = [
    "99999999999999999999999",
    "99999999999",
    "1e400",
    "1e30",
    "-1e400",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "-0",
    "-1",
    "+1",
    "0",
    "0.0",
    ".5",
    "5.",
    "1e-400",
    "4294967295",
    "4294967296",
    "2147483647",
    "2147483648",
    str(HTSIM_MAX_NODES),
    str(HTSIM_MAX_CONNECTIONS + 1),
    "9" * 5000,
    "0" * 5000 + "1",
    "\u0663",
    "\u00b2",
    "\uff11",
    "0x10",
    "1_000",
    "",
    "->",
    "0->0",
    "1->",
    "->1",
    "99999999999999999999->0",
    "id",
    "start",
    "size",
    "trigger",
    "count",
    "barrier",
    "oneshot",
    "multishot",
    "recv_done_trigger",
    "send_done_trigger",
    "prio",
    "Nodes",
    "Connections",
    "Triggers",
    "Failures",
    "#",
    "\x00",
    "\u2028",
    "\x85",
    "é",
]

META = [
    "# clusterloom group-names " + "[" * 5000,
    "# clusterloom group-names [" + '"x",' * 100 + '"y"]',
    "# clusterloom flow-groups [[99999999999999999999, 1]]",
    "# clusterloom flow-groups [[0, 99999999999999999999]]",
    "# clusterloom flow-groups [[-5, 1]]",
    "# clusterloom flow-groups [[0, " + "9" * 5000 + "]]",
    "# clusterloom flow-groups [[0, 1e400]]",
    "# clusterloom flow-groups [[true, 1]]",
    "# clusterloom flow-groups {}",
    "# clusterloom nonsense 1",
    "# clusterloom group-names",
]

token = st.one_of(st.sampled_from(EXTREME), st.text(max_size=12), st.integers().map(str))
line = st.one_of(
    st.sampled_from(META),
    st.lists(token, max_size=8).map(" ".join),
    st.text(max_size=80),
    st.integers(1, 200_000).map(lambda n: "0->1 start 0 size " + "7" * n),
)


@st.composite
def mutated(draw: st.DrawFn) -> str:
    lines = draw(st.sampled_from(SEEDS)).splitlines()
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["drop", "insert", "dup", "swap", "retype", "extreme"]))
        at = draw(st.integers(0, max(len(lines) - 1, 0)))
        if op == "insert" or not lines:
            lines.insert(at, draw(line))
        elif op == "drop":
            del lines[at]
        elif op == "dup":
            lines[at:at] = [lines[at]] * draw(st.integers(1, 3))
        elif op == "swap":
            other = draw(st.integers(0, len(lines) - 1))
            lines[at], lines[other] = lines[other], lines[at]
        else:
            words = lines[at].split(" ")
            k = draw(st.integers(0, len(words) - 1))
            words[k] = draw(st.sampled_from(EXTREME) if op == "extreme" else token)
            lines[at] = " ".join(words)
    end = draw(st.sampled_from(["\n", "\r\n", "\r", ""]))
    return end.join(lines) + draw(st.sampled_from(["", end]))


def assert_contract(text: str) -> Traffic | SpecError:
    """The reader's contract on any text (module docstring of this file)."""
    try:
        t = parse_htsim(text, source=SOURCE)
    except SpecError as err:
        assert err.problems, "a SpecError without a problem"
        assert len(err.problems) <= HTSIM_MAX_PROBLEMS + 1
        for p in err.problems:
            assert re.fullmatch(rf"{re.escape(SOURCE)}( line [0-9]+)?", p.where), p.where
            assert p.message.strip(), p
        return err
    except ClusterloomError as err:  # pragma: no cover - the reader raises SpecError only
        pytest.fail(f"{type(err).__name__} instead of SpecError: {err}")
    # anything read is a traffic the rest of clusterloom can use, within the limits
    t.validate()
    assert 0 <= t.n_hosts <= HTSIM_MAX_NODES
    assert len(t) <= HTSIM_MAX_CONNECTIONS
    if len(t):
        assert int(t.nbytes.min()) >= 0 and int(t.nbytes.max()) <= HTSIM_MAX_SIZE
        assert int(t.start_ps.min()) >= 0
        assert int(t.start_ps.max()) <= HTSIM_MAX_START_PS
        assert int(max(t.src.max(), t.dst.max())) < t.n_hosts
    assert (t.levels() >= 0).all()
    return t


def test_seeds_are_valid() -> None:
    """The mutations start from files the reader accepts (else they test nothing)."""
    for seed in SEEDS:
        assert isinstance(assert_contract(seed), Traffic)


@settings(settings.get_profile("clusterloom-fuzz"))
@given(mutated())
def test_mutated_files(text: str) -> None:
    assert_contract(text)


@settings(settings.get_profile("clusterloom-fuzz"))
@given(st.text(max_size=2000))
def test_random_text(text: str) -> None:
    assert_contract(text)


@settings(settings.get_profile("clusterloom-fuzz"))
@given(st.lists(line, max_size=30).map("\n".join))
def test_random_lines(text: str) -> None:
    assert_contract(text)


#: corpus files of the reported bugs: the line named and words of the message
KNOWN = {
    "size-99999999999999999999999.cm": (3, "'size 99999999999999999999999': out of range"),
    "start-1e30.cm": (3, "'start 1e30': expected picoseconds 0..9007199254740992"),
    "start-1e400.cm": (3, "'start 1e400': expected picoseconds 0..9007199254740992"),
    "nodes-99999999999.cm": (1, "'Nodes 99999999999': out of range, expected 0..16777216"),
    "size-5000-digits.cm": (3, "out of range, expected 0..2147483647"),
    "prio-5000-zeros.cm": (3, "out of range, expected 0..2147483647"),
    "group-names-deep.cm": (1, "nested too deeply"),
    "flow-groups-past-int64.cm": (1, "groups -1..2147483647"),
}
CORPUS_FILES = sorted(p.name for p in CORPUS.iterdir() if p.is_file())


def test_corpus_holds_the_known_bugs() -> None:
    assert set(KNOWN) <= set(CORPUS_FILES)


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_corpus(name: str) -> None:
    text = (CORPUS / name).read_bytes().decode("utf-8")
    result = assert_contract(text)
    if name in KNOWN:
        line, words = KNOWN[name]
        assert isinstance(result, SpecError)
        messages = {p.where: p.message for p in result.problems}
        assert words in messages.get(f"{SOURCE} line {line}", ""), messages
