"""Fuzzing the conformance script driver: mutated shipped scripts and random text give a
Script within the documented limits or a ConformanceInputError naming the script's lines;
running a parsed script gives a pass or a fail (or a ConformanceInputError), nothing else.
Parsing is fuzzed at the full budget, running (milliseconds to seconds each) at a tenth of
it. Every input that ever failed is a file in ``corpus/script/``, replayed below."""

from __future__ import annotations

import math
import re
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterloom.conformance import ConformanceInputError, Status
from clusterloom.conformance.script import (
    FIELD_RANGES,
    OPTION_RANGES,
    SCRIPT_MAX_FLOW_BYTES,
    SCRIPT_MAX_LINES,
    SCRIPT_MAX_MESSAGES,
    SCRIPT_MAX_TIME_PS,
    Script,
    parse_script,
    run_script,
)
from clusterloom.errors import ClusterloomError

CORPUS = Path(__file__).parent / "corpus" / "script"
SOURCE = "fuzz.pkt"
_SCRIPTS = resources.files("clusterloom.conformance").joinpath("scripts")
SEEDS = [
    _SCRIPTS.joinpath(name).read_text(encoding="utf-8")
    for name in sorted(p.name for p in _SCRIPTS.iterdir() if p.name.endswith(".pkt"))
]
PROFILE = settings.get_profile("clusterloom-fuzz")

EXTREME = [
    "9" * 400 + "us",
    "1e400us",
    "99999999999999999999999ms",
    "1000001us",
    "+999ms",
    "-1us",
    "0us",
    "+0us",
    "\u0663us",
    "nanus",
    "9" * 5000,
    "0" * 5000 + "1",
    "0x" + "f" * 400,
    "0b" + "1" * 257,
    "-1",
    "nan",
    "inf",
    "1e400",
    "@" + "9" * 5000,
    "@16777216",
    "@",
    "*",
    "<",
    ">",
    "data",
    "ack",
    "nack",
    "pull",
    "probe",
    "probe-ack",
    "cnp",
    '"',
    "'",
    "\\",
    "#",
    "",
    "é",
    "\x00",
]
FIELD_WORDS = [f"{f}={v}" for f in FIELD_RANGES for v in ("-1", "0", "1", "16777216", "*", "@0")]
OPTION_WORDS = [
    f"{o}={v}" for o in OPTION_RANGES for v in ("0", "1e9", "nan", "-1", "0.5", "1e-9", "64")
]
DIRECTIVES = [
    "transport mrc-spray",
    "transport roce-ecmp ack_every=1",
    "transport receiver-driven",
    "transport metaroce",
    "transport nosuch",
    "flow bytes=67108864",
    "flow bytes=67108865",
    "flow messages=8192,8192",
    "flow messages=" + "1," * 5000 + "1",
    "side receiver",
    "side sender",
    "tolerance 1000000us",
    "tolerance 1us",
    "check X",
    "check",
]

token = st.one_of(
    st.sampled_from(EXTREME + FIELD_WORDS + OPTION_WORDS),
    st.text(max_size=10),
    st.integers().map(str),
)
line = st.one_of(
    st.sampled_from(DIRECTIVES),
    st.lists(token, max_size=8).map(" ".join),
    st.text(max_size=60),
)


@st.composite
def mutated(draw: st.DrawFn) -> str:
    lines = draw(st.sampled_from(SEEDS)).splitlines()
    for _ in range(draw(st.integers(1, 5))):
        op = draw(st.sampled_from(["drop", "insert", "dup", "swap", "retype"]))
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
            words = lines[at].split()
            if words:
                k = draw(st.integers(0, len(words) - 1))
                words[k] = draw(token)
            lines[at] = " ".join(words)
    return "\n".join(lines) + "\n"


def assert_parse_contract(text: str) -> Script | None:
    """A Script within the limits, or None after a well-formed ConformanceInputError."""
    try:
        s = parse_script(text, source=SOURCE)
    except ConformanceInputError as err:
        assert err.problems
        for p in err.problems:
            assert re.fullmatch(rf"{re.escape(SOURCE)}(: line [0-9]+)?", p.where), p.where
            assert p.message.strip(), p
        return None
    except ClusterloomError as err:  # pragma: no cover - the parser raises one kind
        pytest.fail(f"{type(err).__name__} instead of ConformanceInputError: {err}")
    assert s.transport and any(ln.direction == ">" for ln in s.lines)
    assert 0 <= s.nbytes <= SCRIPT_MAX_FLOW_BYTES
    assert len(s.messages) <= SCRIPT_MAX_MESSAGES
    assert all(0 <= m <= SCRIPT_MAX_FLOW_BYTES for m in s.messages)
    assert 0 <= s.tolerance_ps <= SCRIPT_MAX_TIME_PS
    assert len(s.lines) <= SCRIPT_MAX_LINES
    times = [ln.time_ps for ln in s.lines]
    assert times == sorted(times) and all(0 <= t <= SCRIPT_MAX_TIME_PS for t in times)
    for name, value in s.options.items():
        assert math.isfinite(value)
        if name in OPTION_RANGES:
            lo, hi, whole = OPTION_RANGES[name]
            assert lo <= value <= hi and (not whole or value.is_integer())
    for ln in s.lines:
        for name, v in ln.fields.items():
            if isinstance(v, int):
                lo, hi = FIELD_RANGES[name]
                assert lo <= v <= hi
            else:
                assert v == "*" or re.fullmatch(r"@[0-9]+", v), v
    return s


def assert_run_contract(s: Script) -> None:
    try:
        result = run_script(s)
    except ConformanceInputError as err:  # an @K naming data never sent, a transport's refusal
        assert err.problems and all(p.where and p.message.strip() for p in err.problems), err
        return
    assert result.status in (Status.PASS, Status.FAIL)
    assert result.detail and result.implementation == s.transport


def test_seeds_parse_and_pass() -> None:
    for seed in SEEDS:
        s = assert_parse_contract(seed)
        assert s is not None
        assert run_script(s).status is Status.PASS


@settings(PROFILE)
@given(mutated())
def test_mutated_scripts_parse(text: str) -> None:
    assert_parse_contract(text)


@settings(PROFILE)
@given(st.lists(line, max_size=25).map("\n".join))
def test_random_lines_parse(text: str) -> None:
    assert_parse_contract(text)


@settings(PROFILE)
@given(st.text(max_size=2000))
def test_random_text_parses(text: str) -> None:
    assert_parse_contract(text)


@settings(PROFILE, max_examples=max(PROFILE.max_examples // 10, 5))
@given(mutated())
def test_mutated_scripts_run(text: str) -> None:
    s = assert_parse_contract(text)
    if s is not None:
        assert_run_contract(s)


#: corpus files of the reported bugs: the line named and words of the message
KNOWN = {
    "time-overflow.pkt": (3, "past 1000000us"),
    "tolerance-overflow.pkt": (3, "at most 1000000us"),
    "pseq-2-pow-40.pkt": (3, "pseq: '1099511627776' is out of range"),
    "at-5000-digits.pkt": (3, "ev=@K: '99999999999999999999...' is too long"),
    "timer-zero.pkt": (1, "option 'timer_us=0': expected a number in 1..1e+06"),
    "bytes-5000-digits.pkt": (2, "flow bytes: '99999999999999999999...' is too long"),
    # found by the fuzzer: errors of the transport's constructor, now named by their line
    "two-transports.pkt": (5, "transport given twice (first on line 1)"),
    "option-of-another-transport.pkt": (1, "option 'ack_every' is not one of mrc-spray's"),
    "messages-sum.pkt": (2, "messages sum to 16385, not the flow's 16384 bytes"),
}
CORPUS_FILES = sorted(p.name for p in CORPUS.iterdir() if p.is_file())


def test_corpus_holds_the_known_bugs() -> None:
    assert set(KNOWN) <= set(CORPUS_FILES)


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_corpus(name: str) -> None:
    text = (CORPUS / name).read_bytes().decode("utf-8")
    s = assert_parse_contract(text)
    if name in KNOWN:
        line, words = KNOWN[name]
        assert s is None
        with pytest.raises(ConformanceInputError) as err:
            parse_script(text, source=SOURCE)
        messages = [p.message for p in err.value.problems if p.where == f"{SOURCE}: line {line}"]
        assert any(words in m for m in messages), err.value.problems
    elif s is not None:
        assert_run_contract(s)
