"""Fault texts and files: every kind round trips, bad texts are named, the simulator failures
carry the fault, random faults are valid and plausible."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterloom.errors import SpecError
from clusterloom.ops.fabric import load_fabric, ops_fabric
from clusterloom.ops.faults import (
    PROBE_EVS,
    fault_failures,
    flap_windows,
    format_fault,
    parse_fault,
    random_fault,
    read_faults,
)
from clusterloom.ops.model import Fault, FaultKind
from clusterloom.sim.failures import parse_failure
from clusterloom.spec import parse_spec
from helpers import FAT_TREE_K4_SPEC

K4 = FAT_TREE_K4_SPEC


@pytest.fixture(scope="module")
def fabric():  # type: ignore[no-untyped-def]
    return ops_fabric(parse_spec(K4, source="k4"))


def _spine_link(fabric) -> int:  # type: ignore[no-untyped-def]
    return int(np.flatnonzero(fabric.topology.link_tier == 2)[0])


def test_every_kind_parses_and_round_trips(fabric) -> None:  # type: ignore[no-untyped-def]
    link = fabric.link_label(_spine_link(fabric))
    a, b = link.split("~")
    port = ":".join(fabric.endpoint(3, 0))
    other = ":".join(fabric.endpoint(9, 0))
    texts = {
        f"gray-link:{link}@10s-50s*loss=0.01": (FaultKind.GRAY_LINK, 10_000, 50_000),
        f"gray-link:{b}~{a}@1.5m*rate=0.5": (FaultKind.GRAY_LINK, 90_000, None),
        f"flapping-link:{link}@0s*flaps=3": (FaultKind.FLAPPING_LINK, 0, None),
        f"dead-link:{link}@500ms-2s": (FaultKind.DEAD_LINK, 500, 2000),
        f"slow-nic-port:{port}@1m*rate=0.25": (FaultKind.SLOW_NIC_PORT, 60_000, None),
        f"dead-ev:{port}>{other}#{PROBE_EVS[1]}@10s": (FaultKind.DEAD_EV, 10_000, None),
        f"dead-ev:be-p0-spine0001#{PROBE_EVS[0]}@10s": (FaultKind.DEAD_EV, 10_000, None),
        "mis-hashed-switch:be-p0-leaf0001@20s*share=0.9": (
            FaultKind.MIS_HASHED_SWITCH,
            20_000,
            None,
        ),
        "congested-spine:be-p0-spine0002@20s*load=0.4": (FaultKind.CONGESTED_SPINE, 20_000, None),
        "straggler-rank:rank:7@1m*delay=20ms": (FaultKind.STRAGGLER_RANK, 60_000, None),
    }
    for text, (kind, start, end) in texts.items():
        f = parse_fault(text, fabric)
        assert (f.kind, f.start_ms, f.end_ms) == (kind, start, end), text
        assert parse_fault(format_fault(f), fabric) == f, text
    reversed_link = parse_fault(f"gray-link:{b}~{a}@1.5m*rate=0.5", fabric)
    assert reversed_link.target == link  # kept lower end first
    assert reversed_link.rate == 0.5
    straggler = parse_fault("straggler-rank:rank:7@1m*delay=20ms", fabric)
    assert straggler.severity == 20_000.0  # microseconds
    assert parse_fault(f"flapping-link:{link}@0s", fabric).severity == 2.0  # the default


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("gray-link", "expected KIND:TARGET@START"),
        ("grey-link:x~y@1s*loss=0.1", "unknown kind 'grey-link'"),
        ("gray-link:nolink@1s*loss=0.1", "not a link label"),
        ("gray-link:a:b~c:d@1s*loss=0.1", "no link 'a:b~c:d'"),
        ("gray-link:LINK@1s", "needs loss=P"),
        ("gray-link:LINK@1s*loss=1.5", "loss=1.5"),
        ("gray-link:LINK@1s*loss=abc", "not a number"),
        ("gray-link:LINK@1s*flaps=2", "keys loss, rate"),
        ("dead-link:LINK@10s-5s", "end of a fault comes after its start"),
        ("dead-link:LINK@10parsecs", "not a time like"),
        ("dead-link:LINK@2d", "not a time like"),
        ("dead-link:LINK@25h", "beyond a day"),
        ("slow-nic-port:node99999:gpu0p0@1s*rate=0.5", "no NIC port"),
        ("slow-nic-port:PORT@1s", "needs rate=F"),
        ("dead-ev:PORT>PORT#49152@1s", "different hosts"),
        ("dead-ev:be-p0-spine0001@1s", "SRC>DST#EV"),
        ("dead-ev:be-p0-spine9999#5@1s", "no switch 'be-p0-spine9999'"),
        ("mis-hashed-switch:be-p0-core0000@1s", "fewer than two uplinks"),
        ("mis-hashed-switch:be-p0-leaf0000@1s*share=0", "share=0"),
        ("congested-spine:be-p0-leaf0000@1s", "is a leaf"),
        ("straggler-rank:rank:16@1s", "rank:N with N from 0 to 15"),
        ("straggler-rank:7@1s", "rank:N"),
        ("straggler-rank:rank:1@1s*delay=5", "not a time like 500us"),
        ("flapping-link:LINK@1s*flaps=100", "flaps=100"),
    ],
)
def test_bad_texts_are_named(fabric, text: str, says: str) -> None:  # type: ignore[no-untyped-def]
    text = text.replace("LINK", fabric.link_label(_spine_link(fabric)))
    text = text.replace("PORT", ":".join(fabric.endpoint(2, 0)))
    with pytest.raises(SpecError) as err:
        parse_fault(text, fabric)
    problems = err.value.problems
    assert len(problems) >= 1
    assert problems[0].where == f"fault {text}"
    assert says in problems[0].message, problems[0].message


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(list(FaultKind)))
def test_random_faults_are_valid_and_round_trip(seed: int, kind: FaultKind) -> None:
    fabric = _K4_CACHE.setdefault("f", ops_fabric(parse_spec(K4, source="k4")))
    f = random_fault(fabric, kind, np.random.default_rng(seed), duration_ms=600_000)
    assert f.kind is kind
    assert 60_000 <= f.start_ms < 180_000 and f.end_ms is None
    assert parse_fault(format_fault(f), fabric) == f
    if kind is FaultKind.GRAY_LINK:
        assert (1e-3 <= f.loss <= 5e-2) != (0.1 <= f.rate <= 0.5)
    if kind is FaultKind.SLOW_NIC_PORT:
        assert 0.05 <= f.rate <= 0.2
    if kind is FaultKind.DEAD_EV:
        assert int(f.target.rpartition("#")[2]) in PROBE_EVS
    if kind is FaultKind.STRAGGLER_RANK:
        assert 2_000 <= f.severity <= 20_000


_K4_CACHE: dict[str, object] = {}


def test_random_faults_are_seeded(fabric) -> None:  # type: ignore[no-untyped-def]
    for kind in FaultKind:
        a = random_fault(fabric, kind, np.random.default_rng(5), duration_ms=60_000)
        b = random_fault(fabric, kind, np.random.default_rng(5), duration_ms=60_000)
        assert a == b


def test_failures_carry_the_faults(fabric) -> None:  # type: ignore[no-untyped-def]
    t = fabric.topology
    link = _spine_link(fabric)
    label = fabric.link_label(link)
    dead = parse_fault(f"dead-link:{label}@1s-3s", fabric)
    (text,) = fault_failures(dead, fabric)
    fl = parse_failure(text, t)
    assert fl.links.tolist() == [link] and fl.fraction == 0.0
    assert (fl.start_ps, fl.end_ps) == (10**12, 3 * 10**12)
    gray = parse_fault(f"gray-link:{label}@1s*rate=0.25", fabric)
    (text,) = fault_failures(gray, fabric)
    fl = parse_failure(text, t)
    assert fl.fraction == 0.25 and fl.end_ps is None
    lossy = parse_fault(f"gray-link:{label}@1s*loss=0.01", fabric)
    assert fault_failures(lossy, fabric) == ()  # loss: no failure expresses it
    port = parse_fault(f"slow-nic-port:{':'.join(fabric.endpoint(5, 0))}@0s*rate=0.5", fabric)
    (text,) = fault_failures(port, fabric)
    fl = parse_failure(text, t)
    assert fl.fraction == 0.5
    assert fl.links.tolist() == [int(fabric.router.host_link[5, 0])]
    for other in ("straggler-rank:rank:1@1s", "congested-spine:be-p0-spine0000@1s"):
        assert fault_failures(parse_fault(other, fabric), fabric) == ()
    # in force from a run's start, for a steady-state check in a simulator
    flap = parse_fault(f"flapping-link:{label}@10s*flaps=2", fabric)
    for f, frac in ((dead, 0.0), (gray, 0.25), (port, 0.5), (flap, 0.0)):
        (text,) = fault_failures(f, fabric, at_start=True)
        fl = parse_failure(text, t)
        assert (fl.start_ps, fl.end_ps, fl.fraction) == (0, None, frac), text
    assert fault_failures(lossy, fabric, at_start=True) == ()


def test_flapping_windows(fabric) -> None:  # type: ignore[no-untyped-def]
    label = fabric.link_label(_spine_link(fabric))
    f = parse_fault(f"flapping-link:{label}@10s-70s*flaps=4", fabric)
    wins = flap_windows(f, 10**9)
    # 4 a minute for a minute: down 7.5 s of every 15 s
    assert wins == ((10_000, 17_500), (25_000, 32_500), (40_000, 47_500), (55_000, 62_500))
    texts = fault_failures(f, fabric)
    assert len(texts) == 4
    fl = [parse_failure(x, fabric.topology) for x in texts]
    assert all(x.fraction == 0.0 for x in fl)
    assert [x.start_ps // 10**9 for x in fl] == [a for a, _ in wins]
    open_ended = parse_fault(f"flapping-link:{label}@0s*flaps=1", fabric)
    with pytest.raises(SpecError, match="needs a horizon"):
        fault_failures(open_ended, fabric)
    assert len(fault_failures(open_ended, fabric, horizon_ms=300_000)) == 5


def test_a_file_of_faults(fabric, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    label = fabric.link_label(_spine_link(fabric))
    yml = tmp_path / "faults.yaml"
    yml.write_text(
        "faults:\n"
        f"  - dead-link:{label}@10s\n"
        f"  - {{kind: gray-link, target: '{label}', start: 5, end: 20s, loss: 0.02}}\n"
        "  - {kind: straggler-rank, target: 'rank:3', start: 1m, delay: 5ms}\n"
    )
    got = read_faults(yml, fabric)
    assert [f.kind for f in got] == [
        FaultKind.DEAD_LINK,
        FaultKind.GRAY_LINK,
        FaultKind.STRAGGLER_RANK,
    ]
    assert (got[1].start_ms, got[1].end_ms, got[1].loss) == (5000, 20_000, 0.02)
    assert got[2].severity == 5000.0
    js = tmp_path / "faults.json"
    js.write_text(json.dumps([format_fault(f) for f in got]))
    assert read_faults(js, fabric) == got
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"- dead-link:{label}@10s\n- {{kind: dead-link}}\n- straggler-rank:rank:99@1s\n")
    with pytest.raises(SpecError) as err:
        read_faults(bad, fabric)
    wheres = [p.where for p in err.value.problems]
    assert len(wheres) == 2
    assert wheres[0].startswith(f"{bad}: faults[1]") and wheres[1].startswith(f"{bad}: faults[2]")
    notalist = tmp_path / "x.yaml"
    notalist.write_text("just: text\n")
    with pytest.raises(SpecError, match="expected a list"):
        read_faults(notalist, fabric)


def test_examples_targets(tmp_path: Path) -> None:
    fabric = load_fabric("hgx-1k-roce")
    f = random_fault(fabric, FaultKind.SLOW_NIC_PORT, np.random.default_rng(0), duration_ms=10_000)
    assert fabric.host_of(*f.target.split(":")) is not None
    assert isinstance(f, Fault)
