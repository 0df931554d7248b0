"""The packet engine's options: a partial ``PacketConfig`` keeps the transport's switch setup,
the option set (types, ranges, packets or bytes), RoCE without DCQCN, and the options through
``resolve_scenario`` into the recorded scenario.

An 8-host fabric for the incasts (6 senders to host 7, two planes)::

    h0..h7 ── leaves ── spines (2 planes)
"""

from __future__ import annotations

import pytest

from clusterloom.errors import SpecError
from clusterloom.sim.packet.engine import PacketConfig
from clusterloom.sim.packet.fabrics import small_fabric
from clusterloom.sim.packet.options import ENGINE_OPTIONS, config_from, parse_value
from clusterloom.sim.packet.run import config_for, run_packets
from clusterloom.sim.traffic import incast

PKT = 4096 + 64  # a full packet on the wire at the default MTU


@pytest.fixture(scope="module")
def fabric8():  # type: ignore[no-untyped-def]
    return small_fabric(8, planes=2)


# -- a partial config keeps the transport's switch setup (issue 15, item 2) --------------------


def test_a_bare_config_keeps_pfc_and_trimming() -> None:
    """``PacketConfig(mtu=4000)`` used to be a config with pfc=False and trimming=False (the
    dataclass defaults), which replaced the transport's choice; unset fields are now None."""
    roce = config_for("roce-ecmp", PacketConfig(mtu=4000))
    assert roce.pfc is True and roce.trimming is False and roce.mtu == 4000
    rd = config_for("receiver-driven", PacketConfig(mtu=4000))
    assert rd.trimming is True and rd.pfc is False
    assert rd.buffer_bytes == 12 * (4000 + 64)  # the 12-packet queue follows the MTU
    assert rd.ecn_kmax == rd.buffer_bytes and rd.ecn_kmin == rd.buffer_bytes // 2
    # given on purpose, a field is kept
    assert config_for("roce-ecmp", PacketConfig(pfc=False)).pfc is False
    assert config_for("receiver-driven", PacketConfig(buffer_bytes=PKT * 30)).buffer_bytes == (
        PKT * 30
    )
    # without a transport: the engine's defaults
    plain = PacketConfig().resolved()
    assert plain.pfc is False and plain.trimming is False and plain.buffer_bytes == 512 * 1024
    assert (plain.ecn_kmin, plain.ecn_kmax) == (64 * 1024, 256 * 1024)


def test_a_run_with_a_bare_config_is_lossless_for_roce_and_trims_for_receiver_driven(
    fabric8,  # type: ignore[no-untyped-def]
) -> None:
    load = incast(6, 256 * 1024, receiver=7, n_hosts=8)
    low = PacketConfig(mtu=4000, pfc_xoff=4 * PKT, pfc_xon=2 * PKT, buffer_bytes=8 * PKT)
    roce = run_packets(fabric8, load, "roce-ecmp", config=low)
    assert roce.drops == 0 and roce.pauses > 0 and roce.finished == 6
    rd = run_packets(fabric8, load, "receiver-driven", config=PacketConfig(mtu=4000))
    assert rd.drops == 0 and rd.trims > 0 and rd.finished == 6
    lossy = run_packets(
        fabric8, load, "roce-ecmp", config=PacketConfig(pfc=False, buffer_bytes=8 * PKT)
    )
    assert lossy.drops > 0 and lossy.pauses == 0  # PFC off only when asked for


# -- RoCE without DCQCN ------------------------------------------------------------------------


def test_roce_without_dcqcn_ignores_marks(fabric8) -> None:  # type: ignore[no-untyped-def]
    """With ``dcqcn=0`` a mark changes nothing: the run is the run with marking off, to the
    picosecond; with DCQCN the marks slow the senders."""
    load = incast(6, 256 * 1024, receiver=7, n_hosts=8)
    marked = PacketConfig(ecn_kmin=4 * PKT, ecn_kmax=8 * PKT)
    off = run_packets(fabric8, load, "roce-ecmp", config=marked, options={"dcqcn": 0})
    quiet = run_packets(fabric8, load, "roce-ecmp", config=PacketConfig(ecn=False))
    dcqcn = run_packets(fabric8, load, "roce-ecmp", config=marked)
    assert off.marks > 0 and quiet.marks == 0
    assert off.finish_ps.tolist() == quiet.finish_ps.tolist()
    assert dcqcn.finish_ps.tolist() != off.finish_ps.tolist()


# -- values ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("queue", "35", 35 * PKT),
        ("queue", 35, 35 * PKT),
        ("queue", "35pkt", 35 * PKT),
        ("queue", "140000B", 140_000),
        ("queue", "64KiB", 65_536),
        ("pfc_xoff", "15 packets", 15 * PKT),
        ("ecn", "off", 0),
        ("ecn", "ON", 1),
        ("pfc", True, 1),
        ("mtu", "4000", 4000),
        ("reroute_us", "2.5", 2.5),
    ],
)
def test_values_in_packets_or_bytes(key: str, value: object, expected: float) -> None:
    assert parse_value(ENGINE_OPTIONS[key], value, PKT) == expected


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("queue", "3xB", "packets (35 or 35pkt) or bytes"),
        ("queue", "0", "from 1"),
        ("ecn", "maybe", "on or off"),
        ("mtu", "10", "from 64 to 65536"),
        ("mtu", "4000.5", "whole number"),
        ("pfc", 3, "on or off"),
        ("end_us", "nan", "finite"),
    ],
)
def test_bad_values_say_what_is_expected(key: str, value: object, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        parse_value(ENGINE_OPTIONS[key], value, PKT)


def test_every_engine_option_sets_a_config_field() -> None:
    cfg = config_from(
        {k: knob.lo if knob.kind != "bool" else 1 for k, knob in ENGINE_OPTIONS.items()}
    )
    assert cfg.mtu == 64 and cfg.pfc is True and cfg.reroute_ps == 0
    assert cfg.max_time_ps == 1_000_000  # end_us = 1


# -- through resolve_scenario: the spec's scenario.packet, then the flags -----------------------


def _spec(scenario: str | None):  # type: ignore[no-untyped-def]
    from clusterloom.examples import example_text
    from clusterloom.spec import parse_spec

    text = example_text("fat-tree-k16").split("\nscenario:")[0].rstrip() + "\n"
    if scenario is not None:
        text += "scenario:\n" + scenario
    return parse_spec(text, source="test")


@pytest.fixture(scope="module")
def k16():  # type: ignore[no-untyped-def]
    from clusterloom.fabric import generate, plan_fabric

    return generate(plan_fabric(_spec(None)))


SECTION = (
    "  transports: [roce-ecmp, receiver-driven]\n"
    "  packet:\n"
    "    mtu: 4000\n"
    "    queue: 35\n"
    "    options: {ecn: off, pfc_xoff: 15, pfc_xon: 12}\n"
    "    transport_options: {roce-ecmp: {dcqcn: 0, ack_every: 1}, receiver-driven: {queue: 8}}\n"
)


def test_the_spec_section_and_the_flags_are_resolved_and_recorded(k16) -> None:  # type: ignore[no-untyped-def]
    from clusterloom.sim.scenario import resolve_scenario

    sc = resolve_scenario(_spec(SECTION), k16, engine="packet", hosts=8)
    pkt = 4000 + 64
    assert dict(sc.packet) == {
        "mtu": 4000,
        "queue": 35 * pkt,
        "ecn": 0,
        "pfc_xoff": 15 * pkt,
        "pfc_xon": 12 * pkt,
    }
    assert sc.options_of("roce-ecmp") == {"dcqcn": 0, "ack_every": 1}
    assert sc.options_of("receiver-driven") == {"queue": 8 * pkt}
    record = sc.to_dict()
    assert record["packet_options"]["queue"] == 35 * pkt
    assert record["transport_options"]["roce-ecmp"]["dcqcn"] == 0
    # flags win key by key; a size in packets counts the MTU given on the same command line
    over = resolve_scenario(
        _spec(SECTION),
        k16,
        engine="packet",
        hosts=8,
        mtu=2000,
        queue="140000B",
        options=["ecn=on", "roce-ecmp.ack_every=4", "pfc_xoff=20"],
    )
    assert dict(over.packet)["queue"] == 140_000 and dict(over.packet)["mtu"] == 2000
    assert dict(over.packet)["ecn"] == 1 and dict(over.packet)["pfc_xoff"] == 20 * 2064
    assert over.options_of("roce-ecmp") == {"dcqcn": 0, "ack_every": 4}


@pytest.mark.parametrize(
    ("kwargs", "fragments"),
    [
        ({"options": ["bogus=1"]}, ["--option bogus=1", "unknown key 'bogus'", "queue (size"]),
        (
            {"options": ["roce-ecmp.colour=1"]},
            ["unknown key 'colour' of roce-ecmp", "allowed: rto_us", "dcqcn (bool"],
        ),
        ({"options": ["roce-ecmp.dcqcn=2"]}, ["roce-ecmp.dcqcn is on or off"]),
        ({"options": ["metaroce.paths=0"]}, ["metaroce.paths is from 1 to 256"]),
        ({"options": ["tcp.x=1"]}, ["unknown packet transport 'tcp'"]),
        ({"options": ["queue"]}, ["expected KEY=VALUE"]),
        ({"queue": "3xB"}, ["--queue", "packets (35 or 35pkt) or bytes"]),
        ({"mtu": 10}, ["--mtu", "from 64 to 65536"]),
        ({"options": ["pfc_xon=20", "pfc_xoff=10"]}, ["need 0 < pfc_xon <= pfc_xoff"]),
        ({"options": ["roce-ecmp.trimming=on"]}, ["pfc (lossless) and trimming exclude"]),
    ],
)
def test_a_bad_key_or_value_is_refused_naming_it(k16, kwargs, fragments) -> None:  # type: ignore[no-untyped-def]
    from clusterloom.sim.scenario import resolve_scenario

    with pytest.raises(SpecError) as info:
        resolve_scenario(
            _spec("  transports: [roce-ecmp]\n"), k16, engine="packet", hosts=8, **kwargs
        )
    for fragment in fragments:
        assert fragment in str(info.value)


def test_the_flow_engine_refuses_packet_options(k16) -> None:  # type: ignore[no-untyped-def]
    from clusterloom.sim.scenario import resolve_scenario

    with pytest.raises(SpecError, match="packet engine"):
        resolve_scenario(_spec(None), k16, hosts=8, mtu=4000)


def test_the_spec_section_is_checked_on_load() -> None:
    from clusterloom.spec import parse_spec  # noqa: F401

    with pytest.raises(SpecError) as info:
        _spec("  packet:\n    queue: lots\n    transport_options: {roce-ecmp: {dcqcn: 5}}\n")
    text = str(info.value)
    assert "scenario.packet.queue" in text and "packets (35 or 35pkt)" in text
    assert "scenario.packet.transport_options.roce-ecmp.dcqcn" in text


def test_the_options_reach_the_run(k16) -> None:  # type: ignore[no-untyped-def]
    """predict builds each transport's config from the scenario: the MTU shows in the bytes
    on the wire, the queue of receiver-driven in its trims."""
    from clusterloom.sim.predict import PacketPrediction, predict
    from clusterloom.sim.scenario import resolve_scenario

    spec = _spec("  transports: [roce-ecmp]\n  size: 40000B\n")
    a = resolve_scenario(spec, k16, engine="packet", hosts=2, options=["roce-ecmp.dcqcn=0"])
    b = resolve_scenario(spec, k16, engine="packet", hosts=2, mtu=4000)
    ra, rb = predict(k16, a), predict(k16, b)
    assert isinstance(ra, PacketPrediction) and isinstance(rb, PacketPrediction)
    # 40,000 B: 10 packets of 4,000 B, or 9 of 4,096 and one of 3,136 (one more header)
    fa, fb = ra.outcomes[0].result.fct_ps, rb.outcomes[0].result.fct_ps
    assert (fb < fa).all()
