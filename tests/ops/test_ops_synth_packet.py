"""``ops synth --engine packet``: drops, ECN marks and PFC pauses come from the packet
engine's per-port counters; everything else is the flow synthesis' (the same draws); a gray
link's drops land on it, a slowed NIC port's queue marks at the leaf port toward it; the size
limit; the command line."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from clusterloom.errors import SpecError
from clusterloom.ops import synth as synth_mod
from clusterloom.ops.fabric import OpsFabric, ops_fabric
from clusterloom.ops.faults import parse_fault
from clusterloom.ops.synth import Synthetic, synthesize
from clusterloom.spec import parse_spec
from helpers import FAT_TREE_K4_SPEC

SPEC = FAT_TREE_K4_SPEC
KW = {"duration_s": 60, "interval_s": 10, "seed": 1}
FROM_PACKETS = ("drops", "ecn_marks", "pfc_pauses")


@pytest.fixture(scope="module")
def fabric() -> OpsFabric:
    return ops_fabric(parse_spec(SPEC, source="k4"))


@pytest.fixture(scope="module")
def healthy(fabric: OpsFabric) -> Synthetic:
    return synthesize(fabric, [], engine="packet", **KW)


def _increase(syn: Synthetic, a_s: float, b_s: float) -> dict[tuple[str, str], tuple[int, ...]]:
    """Per interface, each packet-engine counter's increase from ``a_s`` to ``b_s``."""
    con = duckdb.connect()
    con.register("c", syn.counters)
    a, b = syn.start_ms + round(a_s * 1000), syn.start_ms + round(b_s * 1000)
    cols = ", ".join(f"max({c}) - min({c})" for c in FROM_PACKETS)
    rows = con.sql(
        f"select device, interface, {cols} from c where ts_ms between {a} and {b} group by all"
    ).fetchall()
    return {(r[0], r[1]): tuple(int(x) for x in r[2:]) for r in rows}


def test_only_drops_marks_and_pauses_differ_from_the_flow_synthesis(
    fabric: OpsFabric, healthy: Synthetic
) -> None:
    flow = synthesize(fabric, [], **KW)
    assert healthy.counters.schema == flow.counters.schema
    for name in flow.counters.column_names:
        if name not in (*FROM_PACKETS, "retransmissions"):  # the NICs': the packet runs
            assert healthy.counters[name].equals(flow.counters[name]), name
    assert healthy.probes.equals(flow.probes)
    assert healthy.collectives.equals(flow.collectives)
    assert any("packet engine (roce-ecmp" in n for n in healthy.notes)
    inc = _increase(healthy, 0, 60)
    assert all(v[0] == 0 for v in inc.values())  # lossless and healthy: nothing dropped
    # ECMP collisions queue: the packet engine marks where the flow model's rho**20 did not
    assert sum(v[1] for v in inc.values()) > 0
    # counters stay monotone
    con = duckdb.connect()
    con.register("c", healthy.counters)
    worst = con.sql(
        "select min(d) from (select ecn_marks - lag(ecn_marks) over (partition by device, "
        "interface order by ts_ms) as d from c)"
    ).fetchall()[0]
    assert worst[0] >= 0


def test_a_gray_links_drops_land_on_it(fabric: OpsFabric) -> None:
    label = next(str(x) for x in fabric.link_labels.tolist() if "core0000" in str(x))
    f = parse_fault(f"gray-link:{label}@20s*loss=0.01", fabric)
    syn = synthesize(fabric, [f], engine="packet", **KW)
    link = fabric.link_of_label(label)
    dev, ifs = fabric.end_names
    ends = {(str(dev[link, e]), str(ifs[link, e])) for e in (0, 1)}
    after = _increase(syn, 20, 60)
    assert sum(v[0] for k, v in after.items() if k in ends) > 0
    assert all(v[0] == 0 for k, v in after.items() if k not in ends)
    assert all(v[0] == 0 for v in _increase(syn, 0, 20).values())  # none before it starts
    assert any("retransmissions" in n and " 0 retransmissions" not in n for n in syn.notes)


def test_a_slow_nic_ports_queue_marks_at_the_leaf_port_toward_it(
    fabric: OpsFabric, healthy: Synthetic
) -> None:
    """A permutation sends each host one flow, so the leaf's port toward a host never queues
    on the healthy fabric; with the host's port at a fifth of its rate it queues and marks,
    and it is the port whose marks grow most."""
    f = parse_fault("slow-nic-port:node00005:gpu0p0@20s*rate=0.2", fabric)
    syn = synthesize(fabric, [f], engine="packet", **KW)
    link = int(fabric.router.host_link[5, 0])
    dev, ifs = fabric.end_names
    leaf_port = (str(dev[link, 1]), str(ifs[link, 1]))
    assert leaf_port[0].startswith("be-p0-leaf")
    base = _increase(healthy, 20, 60)
    after = _increase(syn, 20, 60)
    assert _increase(syn, 0, 20)[leaf_port][1] == 0 and base[leaf_port][1] == 0
    grown = {k: after[k][1] - base[k][1] for k in after}
    assert max(grown, key=lambda k: grown[k]) == leaf_port and grown[leaf_port] > 0
    # PFC: only devices upstream of a congested switch port are paused (never the leaf port
    # toward the slow host: a host does not pause its switch here)
    assert after[leaf_port][2] == 0


def test_a_dead_link_is_routed_around_from_the_steady_state(fabric: OpsFabric) -> None:
    """The packet runs start with the routes converged (the flow engine's steady state): a
    dead core link drops nothing, no packet is sent into it, and nothing is resent."""
    label = next(str(x) for x in fabric.link_labels.tolist() if "core0001" in str(x))
    syn = synthesize(fabric, [parse_fault(f"dead-link:{label}@20s", fabric)], engine="packet", **KW)
    assert all(v[0] == 0 for v in _increase(syn, 0, 60).values())
    assert any(" 0 retransmissions" in n for n in syn.notes)
    assert any("2 packet run(s)" in n for n in syn.notes)  # healthy, and the link dead


def test_same_inputs_same_tables(fabric: OpsFabric, healthy: Synthetic) -> None:
    fresh = ops_fabric(parse_spec(SPEC, source="k4"))  # no cached runs
    again = synthesize(fresh, [], engine="packet", **KW)
    assert again.counters.equals(healthy.counters)


def test_size_limit(fabric: OpsFabric, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(synth_mod, "PACKET_HOSTS_MAX", 8)
    monkeypatch.setattr(synth_mod, "PACKET_FLOWS_MAX", 4)
    with pytest.raises(SpecError) as err:
        synthesize(fabric, [], engine="packet", **KW)
    assert [p.where for p in err.value.problems] == ["--engine", "--engine"]
    assert "at most 8 hosts" in str(err.value) and "--engine flow" in str(err.value)


def test_cli(tmp_path: Path) -> None:
    from clusterloom.cli.main import app

    spec = tmp_path / "k4.yaml"
    spec.write_text(SPEC)
    out = tmp_path / "out"
    r = CliRunner().invoke(
        app,
        ["ops", "synth", str(spec), "--engine", "packet", "--duration", "30s", "-o", str(out)],
    )
    assert r.exit_code == 0, r.output
    assert "packet engine (roce-ecmp, PFC, DCQCN)" in " ".join(r.output.split())
    assert (out / "counters.parquet").exists()
    rows = duckdb.connect().sql(f"select count(*) from '{out / 'counters.parquet'}'").fetchall()
    assert rows == [(4 * 2 * 48,)]  # 4 samples of 96 interfaces
