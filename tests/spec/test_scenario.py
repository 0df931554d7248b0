"""The scenario section: a good one loads, every bad input is a Problem at its field path."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from clusterloom.errors import SpecError
from clusterloom.spec import parse_spec
from clusterloom.spec.scenario import ScenarioSpec, failure_problems
from helpers import MINIMAL_SPEC


def _spec(scenario: dict[str, Any]) -> str:
    return MINIMAL_SPEC + yaml.safe_dump({"scenario": scenario})


def _problems(scenario: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(SpecError) as info:
        parse_spec(_spec(scenario))
    return {p.where: p.message for p in info.value.problems}


def test_a_full_scenario_loads() -> None:
    spec = parse_spec(
        _spec(
            {
                "traffic": "htsim",
                "htsim_file": "flows.cm",
                "size": "512KiB",
                "transports": ["roce-ecmp", "mrc-spray", "receiver-driven", "ideal"],
                "seed": 7,
                "failures": ["link:17@1ms", "plane:1@2ms-4ms*0.5", "port:12:3@0", "switch:40@1us"],
                "transport_options": {
                    "roce-ecmp": {"qps": 4, "reroute_s": 1.0},
                    "mrc-spray": {"evs": 128, "detect_s": "20e-6"},
                    "receiver-driven": {"loss": 0.01},
                },
            }
        )
    )
    s = spec.scenario
    assert s is not None and s.traffic == "htsim" and s.seed == 7
    assert s.failures[1] == "plane:1@2ms-4ms*0.5"
    assert s.transport_options["mrc-spray"]["detect_s"] == pytest.approx(20e-6)


def test_the_section_is_optional_and_has_defaults() -> None:
    assert parse_spec(MINIMAL_SPEC).scenario is None
    s = parse_spec(_spec({})).scenario
    assert s == ScenarioSpec()
    assert s.traffic == "permutation" and s.size == "2MB" and s.failures == ()


def test_unknown_fields_and_traffic_kinds_are_schema_problems() -> None:
    found = _problems({"traffik": "ring"})
    assert "unknown field" in found["scenario.traffik"]
    found = _problems({"traffic": "shuffle", "seed": -1})
    assert "scenario.traffic" in found and "scenario.seed" in found


def test_unknown_and_repeated_transports() -> None:
    found = _problems({"transports": ["roce-ecmp", "tcp", "roce-ecmp"]})
    assert "unknown transport 'tcp'" in found["scenario.transports[1]"]
    assert "known: ideal, metaroce, mrc-spray" in found["scenario.transports[1]"]
    assert "twice" in found["scenario.transports[2]"]
    assert "scenario.transports[0]" not in found


@pytest.mark.parametrize(
    ("failure", "message"),
    [
        ("link17@1ms", "is not a failure like"),
        ("cable:1@1ms", "is not a failure like"),
        ("link:1@1qs", "is not a time"),
        ("link:1@1.2.3ms", "is not a time"),
        ("link:1@2ms-1ms", "end must come after the start"),
        ("plane:0@1ms*1.5", "fraction in [0, 1)"),
    ],
)
def test_malformed_failures_name_their_index(failure: str, message: str) -> None:
    found = _problems({"failures": ["link:0@0", "plane:1@2ms-4ms*0.5", failure]})
    assert set(found) == {"scenario.failures[2]"}
    assert message in found["scenario.failures[2]"]


def test_failure_syntax_needs_no_topology() -> None:
    assert failure_problems("link:99999999@1ms", "x") == []
    assert failure_problems("port:3:1@5us-7us*0.25", "x") == []


def test_bad_sizes() -> None:
    assert "not a size" in _problems({"size": "2 parsecs"})["scenario.size"]


def test_htsim_file_goes_with_htsim_traffic() -> None:
    assert "needs the connection-matrix" in _problems({"traffic": "htsim"})["scenario.htsim_file"]
    found = _problems({"traffic": "ring", "htsim_file": "x.cm"})
    assert "only read for traffic: htsim" in found["scenario.htsim_file"]


def test_step_traffic_needs_a_job() -> None:
    assert "needs a job" in _problems({"traffic": "step"})["scenario.traffic"]


def test_bad_transport_options() -> None:
    found = _problems(
        {
            "transport_options": {
                "roce-ecmp": {"qps": 0, "colour": 1},
                "mrc-spray": {"evs": 2.5, "detect_s": -1},
                "receiver-driven": {"loss": 1.0},
                "tcp": {"cwnd": 10},
            }
        }
    )
    assert "positive whole number" in found["scenario.transport_options.roce-ecmp.qps"]
    assert "unknown option" in found["scenario.transport_options.roce-ecmp.colour"]
    assert "positive whole number" in found["scenario.transport_options.mrc-spray.evs"]
    assert ">= 0" in found["scenario.transport_options.mrc-spray.detect_s"]
    assert "loss rate" in found["scenario.transport_options.receiver-driven"]
    assert "unknown transport 'tcp'" in found["scenario.transport_options.tcp"]
    found = _problems({"transport_options": {"ideal": {"x": "abc"}}})
    assert "valid number" in found["scenario.transport_options.ideal.x"]


def test_switch_options_take_0_or_1_and_reach_the_transport() -> None:
    found = _problems({"transport_options": {"mrc-spray": {"balance": 2}}})
    assert "1 (on) or 0 (off)" in found["scenario.transport_options.mrc-spray.balance"]
    from clusterloom.sim.flow.transports import transport

    assert transport("mrc-spray", balance=0, evs=16.0).mode == "coupled"
    assert transport("mrc-spray", balance=1, evs=16.0).mode == "pooled"
    assert transport("mrc-spray", evs=16.0).mode == "coupled"  # the default: a fixed split
    assert transport("mrc-spray", evs=16.0).evs == 16  # type: ignore[attr-defined]
