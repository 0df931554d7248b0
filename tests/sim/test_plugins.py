"""Transport plug-ins through the entry-point group ``clusterloom.transports``.

Each test installs a real distribution for the run: a ``*.dist-info`` folder with its
``entry_points.txt`` beside a module, on ``sys.path``, found by ``importlib.metadata`` exactly
as a ``pip install``ed plug-in is. The plug-in (``vendor-spray``) is MRC spraying with 64 EVs by
default in both engines; it must behave exactly as ``mrc-spray`` with ``evs=64`` does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusterloom import predict, resolve_scenario
from clusterloom.errors import PluginError, SpecError
from clusterloom.examples import example_text
from clusterloom.fabric import Topology, generate, plan_fabric
from clusterloom.sim.predict import FlowPrediction, PacketPrediction
from clusterloom.sim.registry import DEFAULTS, REGISTRY
from clusterloom.spec import ClusterSpec, parse_spec

PLUGIN = """
from dataclasses import dataclass
from typing import ClassVar

from clusterloom.sim.flow import transports as flow
from clusterloom.sim.packet import transports as packet
from clusterloom.sim.registry import TransportPlugin


@dataclass(frozen=True)
class FlowVendor(flow.MrcSpray):
    name: ClassVar[str] = "vendor-spray"
    evs: int = 64


class PacketVendor(packet.MrcSpray):
    name: ClassVar[str] = "vendor-spray"
    defaults: ClassVar[dict[str, float]] = {**packet.MrcSpray.defaults, "evs": 64}


PLUGIN = TransportPlugin("vendor-spray", "a NIC vendor's sprayer", flow=FlowVendor,
                         packet=PacketVendor)
NOT_A_PLUGIN = 42
CLASH = TransportPlugin("mrc-spray", "takes a built-in's name", flow=FlowVendor)
NO_ENGINE = TransportPlugin("empty", "implements nothing")
"""


def _install(root: Path, entries: dict[str, str]) -> Path:
    """A distribution ``vendor-nic`` with the module above and these entry points."""
    (root / "vendor_nic.py").write_text(PLUGIN)
    info = root / "vendor_nic-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vendor-nic\nVersion: 1.0\n")
    lines = "".join(f"{name} = {value}\n" for name, value in entries.items())
    (info / "entry_points.txt").write_text(f"[clusterloom.transports]\n{lines}")
    return root


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(_install(tmp_path, {"vendor-spray": "vendor_nic:PLUGIN"})))
    REGISTRY.reload()
    yield tmp_path
    monkeypatch.undo()
    sys.modules.pop("vendor_nic", None)
    REGISTRY.reload()


def _spec() -> ClusterSpec:
    text = example_text("fat-tree-k16").split("\nscenario:")[0].rstrip() + "\n"
    return parse_spec(text, source="test")


@pytest.fixture(scope="module")
def topology() -> Topology:
    return generate(plan_fabric(_spec()))


def test_a_plugin_is_registered_with_its_engines_and_origin(installed: Path) -> None:
    info = REGISTRY["vendor-spray"]
    assert info.engines == {"flow", "packet"}
    assert "clusterloom.transports:vendor-spray = vendor_nic:PLUGIN (vendor-nic 1.0)" in (
        info.origin
    )
    assert REGISTRY["mrc-spray"].origin == "built-in"
    # never run by default: a scenario names it
    assert "vendor-spray" not in DEFAULTS["flow"] + DEFAULTS["packet"]


def test_without_the_plugin_the_name_is_refused(topology: Topology) -> None:
    REGISTRY.reload()
    with pytest.raises(SpecError, match="unknown transport 'vendor-spray'"):
        resolve_scenario(_spec(), topology, transports=["vendor-spray"], hosts=16)


def test_the_flow_engine_runs_it_as_the_builtin_it_extends(
    installed: Path, topology: Topology
) -> None:
    spec = _spec()
    both = resolve_scenario(
        spec,
        topology,
        transports=["vendor-spray", "mrc-spray"],
        options=["mrc-spray.evs=64"],
        hosts=32,
        size="256KB",
    )
    result = predict(topology, both)
    assert isinstance(result, FlowPrediction)
    vendor, builtin = result.summaries[:2]
    assert vendor.transport == "vendor-spray" and vendor.finished == vendor.flows == 32
    assert (vendor.makespan_ps, vendor.fct_p99_ps) == (builtin.makespan_ps, builtin.fct_p99_ps)
    # its options are checked like a built-in's, naming what it takes
    with pytest.raises(SpecError, match="evs"):
        resolve_scenario(spec, topology, transports=["vendor-spray"], options=["vendor-spray.x=1"])


def test_the_packet_engine_and_conformance_run_it(installed: Path, topology: Topology) -> None:
    from clusterloom.conformance import PacketImplementation, run_suite
    from clusterloom.conformance.checks import by_id
    from clusterloom.conformance.suite import Status

    scenario = resolve_scenario(
        _spec(),
        topology,
        engine="packet",
        transports=["vendor-spray", "mrc-spray"],
        options=["mrc-spray.evs=64"],
        hosts=16,
        size="64KB",
    )
    result = predict(topology, scenario)
    assert isinstance(result, PacketPrediction)
    vendor, builtin = (o.result for o in result.outcomes)
    assert vendor.finished == 16
    assert vendor.finish_ps.tolist() == builtin.finish_ps.tolist()
    assert vendor.events == builtin.events
    chosen = by_id(["SPR-01", "SPR-03", "LOS-03", "FAIL-01"])
    mine = run_suite(PacketImplementation("vendor-spray"), chosen)
    assert [r.status for r in mine] == [Status.PASS] * 4, [r.detail for r in mine]


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("vendor_nic:NOT_A_PLUGIN", "is a int, not a clusterloom.sim.registry.TransportPlugin"),
        ("vendor_nic:MISSING", "does not load: AttributeError"),
        ("no_such_module:PLUGIN", "does not load: ModuleNotFoundError"),
        ("vendor_nic:NO_ENGINE", "names its transport 'empty'"),
    ],
)
def test_a_broken_plugin_is_refused_naming_its_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, why: str
) -> None:
    monkeypatch.syspath_prepend(str(_install(tmp_path, {"broken": value})))
    REGISTRY.reload()
    try:
        with pytest.raises(PluginError) as info:
            REGISTRY["mrc-spray"]
        assert f"entry point clusterloom.transports:broken = {value} (vendor-nic 1.0)" in str(
            info.value
        )
        assert why in str(info.value)
    finally:
        monkeypatch.undo()
        sys.modules.pop("vendor_nic", None)
        REGISTRY.reload()


@pytest.mark.parametrize(
    ("name", "value", "why"),
    [
        ("mrc-spray", "vendor_nic:CLASH", "'mrc-spray' is taken by built-in"),
        ("empty", "vendor_nic:NO_ENGINE", "gives neither a flow nor a packet implementation"),
    ],
)
def test_a_clash_or_an_empty_plugin_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, value: str, why: str
) -> None:
    monkeypatch.syspath_prepend(str(_install(tmp_path, {name: value})))
    REGISTRY.reload()
    try:
        with pytest.raises(PluginError, match=why):
            list(REGISTRY)
    finally:
        monkeypatch.undo()
        sys.modules.pop("vendor_nic", None)
        REGISTRY.reload()


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "250", "PYTHONPATH": os.pathsep.join([str(root), *sys.path])}
    return subprocess.run(
        [sys.executable, "-m", "clusterloom.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_the_command_line_lists_and_runs_an_installed_plugin(tmp_path: Path) -> None:
    root = _install(tmp_path, {"vendor-spray": "vendor_nic:PLUGIN"})
    spec = tmp_path / "cluster.yaml"
    spec.write_text(example_text("fat-tree-k16").split("\nscenario:")[0].rstrip() + "\n")
    listed = _cli(root, "transports")
    assert listed.returncode == 0, listed.stderr
    assert "vendor-spray" in listed.stdout and "vendor-nic 1.0" in listed.stdout
    run = _cli(
        root,
        "simulate",
        str(spec),
        "--hosts",
        "16",
        "--size",
        "64KB",
        "--transport",
        "vendor-spray,ideal",
    )
    assert run.returncode == 0, run.stderr
    assert "vendor-spray" in run.stdout


def test_the_command_line_refuses_a_broken_plugin_in_one_line(tmp_path: Path) -> None:
    root = _install(tmp_path, {"broken": "vendor_nic:NOT_A_PLUGIN"})
    run = _cli(root, "transports")
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "clusterloom.transports:broken" in lines[0], run.stderr
