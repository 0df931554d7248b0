"""Shared builders of cluster specs for the tests.

Specs are built as plain dicts and dumped to YAML so that every test goes through the same
``parse_spec`` path a user's file does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from clusterloom.fabric.sizing import FabricPlan, plan_fabric
from clusterloom.pipeline import Design, run_design
from clusterloom.spec import ClusterSpec, parse_spec

#: A small valid spec: two 8-GPU nodes on one InfiniBand leaf pair.
MINIMAL_SPEC = """\
version: 1
name: tiny
compute:
  accelerators: 16
  accelerators_per_node: 8
fabrics:
  backend:
    switch: qm9700
"""


#: A k=4 fat tree of 16 one-GPU hosts at 100 Gb/s, 1 us links: the smallest 3-tier Clos.
FAT_TREE_K4_SPEC = """
version: 1
name: fat-tree-k4
description: k=4 fat tree, 16 hosts
compute:
  accelerators: 16
  accelerators_per_node: 1
  scale_up: {domain_size: 1}
  nic: {ports_per_accelerator: 1, port_speed_gbps: 100}
fabrics:
  backend:
    family: fat-tree
    tiers: 3
    switch: k4
    link_latency_ns: {host_leaf: 1000, leaf_spine: 1000, spine_core: 1000}
catalog:
  switches:
    k4: {vendor: generic, ports: 4, port_speed_gbps: 100, power_w: 100, rack_units: 1,
         source: "a 4-port switch: the k of the k-ary fat tree"}
"""


def switch_entry(
    ports: int, speed_gbps: int = 100, breakouts: tuple[int, ...] = ()
) -> dict[str, Any]:
    """A catalog switch with ``ports`` native ports at ``speed_gbps``."""
    entry: dict[str, Any] = {
        "vendor": "test",
        "ports": ports,
        "port_speed_gbps": speed_gbps,
        "power_w": 100,
    }
    if breakouts:
        entry["breakouts_gbps"] = list(breakouts)
    return entry


def spec_dict(
    *,
    accelerators: int,
    accelerators_per_node: int = 8,
    ports_per_accelerator: int = 1,
    port_speed_gbps: int = 400,
    scale_out_ports: int | None = None,
    switch: str | dict[str, str] = "qm9700",
    family: str = "rail-optimized",
    planes: int | None = None,
    tiers: int | str = "auto",
    leaf_oversubscription: float | str = 1,
    spine_oversubscription: float | str = 1,
    scalable_unit_nodes: int | None = None,
    pod_leaves: int | None = None,
    catalog_switches: dict[str, dict[str, Any]] | None = None,
    name: str = "test-cluster",
) -> dict[str, Any]:
    """A spec as a dict; the scale-up domain is one node so any whole number of nodes is valid."""
    nic: dict[str, Any] = {
        "ports_per_accelerator": ports_per_accelerator,
        "port_speed_gbps": port_speed_gbps,
    }
    if scale_out_ports is not None:
        nic["scale_out_ports"] = scale_out_ports
    backend: dict[str, Any] = {
        "family": family,
        "switch": switch,
        "tiers": tiers,
        "oversubscription": {"leaf": leaf_oversubscription, "spine": spine_oversubscription},
    }
    if planes is not None:
        backend["planes"] = planes
    if scalable_unit_nodes is not None:
        backend["scalable_unit_nodes"] = scalable_unit_nodes
    if pod_leaves is not None:
        backend["pod_leaves"] = pod_leaves
    doc: dict[str, Any] = {
        "version": 1,
        "name": name,
        "compute": {
            "accelerators": accelerators,
            "accelerators_per_node": accelerators_per_node,
            "scale_up": {"domain_size": accelerators_per_node},
            "nic": nic,
        },
        "fabrics": {"backend": backend},
    }
    if catalog_switches:
        doc["catalog"] = {"switches": catalog_switches}
    return doc


def spec_yaml(**kwargs: Any) -> str:
    return yaml.safe_dump(spec_dict(**kwargs), sort_keys=False)


def build_spec(**kwargs: Any) -> ClusterSpec:
    """Parse (and check) the spec ``spec_dict(**kwargs)`` describes."""
    return parse_spec(spec_yaml(**kwargs))


def build_plan(**kwargs: Any) -> FabricPlan:
    """Size the backend fabric of ``build_spec(**kwargs)``."""
    return plan_fabric(build_spec(**kwargs))


def kport_plan(
    hosts: int,
    radix: int,
    *,
    family: str = "fat-tree",
    accelerators_per_node: int = 1,
    speed_gbps: int = 100,
    **kwargs: Any,
) -> FabricPlan:
    """A plan on a custom ``radix``-port switch running at ``speed_gbps`` (no breakout)."""
    return build_plan(
        accelerators=hosts,
        accelerators_per_node=accelerators_per_node,
        port_speed_gbps=speed_gbps,
        switch="kport",
        family=family,
        catalog_switches={"kport": switch_entry(radix, speed_gbps)},
        **kwargs,
    )


#: a small dense model for job specs: 8 layers, hidden 1024
SMALL_MODEL: dict[str, int] = {
    "layers": 8,
    "hidden": 1024,
    "ffn_hidden": 4096,
    "heads": 16,
    "vocab": 32000,
    "sequence_length": 2048,
}


def job_spec(accelerators: int = 16, per_node: int = 8, **job: object) -> str:
    doc = {
        "version": 1,
        "name": "job",
        "compute": {
            "accelerators": accelerators,
            "accelerators_per_node": per_node,
            "scale_up": {"domain_size": per_node, "bandwidth_gbps": 3600},
            "nic": {"ports_per_accelerator": 1, "port_speed_gbps": 400},
        },
        "fabrics": {"backend": {"switch": "sn5600"}},
        "job": {
            "model": dict(SMALL_MODEL),
            "batch": {"global_batch": 64, "micro_batch": 1},
            "parallelism": {"tp": 2, "pp": 4},
            "compute": {"peak_tflops": 1000, "utilisation": 0.5},
        },
    }
    for key, value in job.items():
        doc["job"][key] = value  # type: ignore[index]
    return yaml.safe_dump(doc)


#: 4,096 GPUs with 2 x 400G: the 1 x 800G variant cannot be built in 2 tiers (an option shown
#: as infeasible, with its reason)
OPTIONS_SPEC = """\
version: 1
name: options-4k
compute:
  accelerators: 4096
  accelerators_per_node: 8
  nic: {ports_per_accelerator: 2, port_speed_gbps: 400}
fabrics:
  backend: {switch: sn5600}
"""


def design_of(text: str) -> Design:
    """Run every stage on the spec ``text``."""
    return run_design(parse_spec(text))


#: 1,024 GPUs on a rail-optimized backend (sn5600 at 400G: breakout factor 2) and a fat-tree
#: frontend of two planes (tomahawk4 at 200G).
TWO_FABRIC_SPEC = """\
version: 1
name: demo-1k
description: a <small> cluster & friends
compute:
  accelerators: 1024
  accelerators_per_node: 8
  nic: {ports_per_accelerator: 1, port_speed_gbps: 400}
  frontend_nic: {ports_per_node: 2, port_speed_gbps: 200}
fabrics:
  backend: {switch: sn5600}
  frontend: {family: fat-tree, switch: tomahawk4-64x400g}
"""


def installed_rows(installed: Any) -> dict[str, list[tuple[int, ...]]]:
    """Every link of every fabric of an installed baseline by identity, sorted (links have no
    order: a directory lists them in the topology's, NetBox by interface)."""
    import numpy as np

    out = {}
    for name, x in installed.links.items():
        cols = (x.tier, x.a_role, x.a_plane, x.a_index, x.a_port)
        cols += (x.b_role, x.b_plane, x.b_index, x.b_port)
        out[name] = sorted(map(tuple, np.stack(cols, axis=1).tolist()))
    return out


def assert_same_baseline(got: Any, want: Any) -> None:
    """Two installed baselines name the same spec, fabrics, racks and links."""
    assert got.spec == want.spec
    assert got.fabrics == want.fabrics
    assert got.racks == want.racks and got.racks
    assert installed_rows(got) == installed_rows(want)


def hall_case(base: str, hall: dict[str, Any], **site: Any) -> tuple[Any, Any, Any, Any]:
    """``base`` on one hall: the site, its floor, the racks to place (after the stage's
    pre-checks) and the link weights between units, as a hall model gets them."""
    from clusterloom.fabric import design_fabric, fabric_names
    from clusterloom.placement.solve import unit_links
    from clusterloom.placement.stage import _checked_demand

    doc = yaml.safe_load(base)
    doc["site"] = {"buildings": [{"name": "b1", "halls": [hall]}], **site}
    spec = parse_spec(yaml.safe_dump(doc))
    fabrics = tuple(design_fabric(spec, f, compare=False) for f in fabric_names(spec))
    assert spec.site is not None
    floor, demand = _checked_demand(spec, spec.site, fabrics)
    ends = [
        (dev.node_rack[fd.topology.link_src], dev.node_rack[fd.topology.link_dst])
        for dev, fd in zip(demand.devices, fabrics, strict=True)
    ]
    return spec.site, floor, demand, unit_links(demand, ends)


def two_hall_spec_text(rows: int = 2) -> str:
    """moe-2k's four scalable units on two halls of ``rows`` rows: with two, each hall holds two
    units with trunks of its own, and backbones join the halls."""
    from clusterloom.examples import example_text

    doc = yaml.safe_load(example_text("moe-2k"))
    hall = doc["site"]["buildings"][0]["halls"][0]
    hall["template"]["rows"] = rows
    doc["site"]["buildings"][0]["halls"] = [hall, {**hall, "name": "h2", "x_m": 20}]
    doc.pop("job")
    return str(yaml.safe_dump(doc))


def packet_figures(r: Any) -> tuple[object, ...]:
    """Every figure of a ``sim.packet.run.PacketResult`` that two runs meant to be the same run
    must share (the tests that compare a compiled path, a saving or a counter against the
    plain run)."""
    return (
        r.start_ps.tolist(),
        r.finish_ps.tolist(),
        r.retransmissions.tolist(),
        r.failed.tolist(),
        r.end_ps,
        r.events,
        r.drops,
        r.trims,
        r.marks,
        r.pauses,
        r.max_queue_bytes,
        r.data_bytes_delivered,
        r.unfinished,
    )


def ack_case_units(ack_weight: float) -> Any:
    """The flow engine's three-flow ACK case (``tests/sim/test_flow_*_acks.py``): links nA, n1,
    n2 (the senders' NICs) and R; flow 0 sends on nA alone and its ACKs (weight
    ``ack_weight`` of its data) cross R, which flows 1 and 2 saturate with data::

        0: nA ->            (ACKs on R)
        1: n1 -+
        2: n2 -+-> R
    """
    import numpy as np

    from clusterloom.sim.flow.engine import UnitSet

    nA, n1, n2, r = 0, 1, 2, 3
    return UnitSet(
        unit_flow=np.array([0, 1, 2]),
        unit_ptr=np.array([0, 2, 4, 6]),
        unit_link=np.array([nA, r, n1, r, n2, r]),
        unit_share=np.ones(3),
        link_weight=np.array([1.0, ack_weight, 1.0, 1.0, 1.0, 1.0]),
        control=np.array([False, True, False, False, False, False]),
    )


def half_rate_table(
    fabric: Any, intervals: int, t0_ms: int, *, ecn_ratio: Any = None, pfc_ps: Any = None
) -> Any:
    """Rates of every interface of ``fabric`` at half its rate over ``intervals`` 10-second
    intervals from ``t0_ms`` (4,096-byte packets), with no drops or errors; ``ecn_ratio``
    (marks per packet) and ``pfc_ps`` (pauses a second) per row of the result, none if not
    given (``tests/ops/test_ops_fp_packet.py``, ``test_ops_pktloc.py``)."""
    import numpy as np
    import pyarrow as pa

    from clusterloom.ops import RATE_SCHEMA

    table = fabric.interface_table()
    n = table.num_rows * intervals
    cap = np.tile(table["capacity_bps"].to_numpy().astype(float), intervals)
    pps = 0.5 * cap / 8 / 4096
    t = np.repeat(np.arange(intervals), table.num_rows)
    zeros = np.zeros(n)
    return pa.table(
        {
            "ts_ms": t0_ms + (t + 1) * 10_000,
            "device": np.tile(
                np.asarray(table["device"].to_pylist(), dtype=object), intervals
            ).tolist(),
            "interface": np.tile(np.asarray(table["interface"].to_pylist()), intervals).tolist(),
            "link": np.tile(table["link"].to_numpy(), intervals),
            "end": np.tile(table["end"].to_numpy(), intervals).astype(np.int8),
            "seconds": np.full(n, 10.0),
            "tx_bps": 0.5 * cap,
            "rx_bps": 0.5 * cap,
            "tx_pps": pps,
            "rx_pps": pps,
            "drops_ps": zeros,
            "ecn_ps": zeros if ecn_ratio is None else ecn_ratio * pps,
            "pfc_ps": zeros if pfc_ps is None else pfc_ps,
            "fec_corrected_ps": zeros,
            "fec_uncorrected_ps": zeros,
            "up": np.ones(n),
            "flaps": np.zeros(n, dtype=np.int32),
            "speed_bps": cap,
        },
        schema=RATE_SCHEMA,
    )


def probe_keys(fabric: Any, offsets: Sequence[int], per_leaf: int) -> tuple[Any, ...]:
    """Probe keys of every host to the hosts ``offsets`` ahead (on other leaves, ``per_leaf``
    hosts a leaf) over four EVs: ``src, dst, port, ev`` and their paths out and back (the
    reply takes the reverse path with the same EV)."""
    import numpy as np

    hosts = fabric.topology.plan.hosts
    off, evs = np.asarray(offsets), 4
    src = np.repeat(np.arange(hosts), off.size * evs)
    dst = (src + np.tile(np.repeat(off, evs), hosts)) % hosts
    ev = np.tile(np.arange(evs) * 7919 + 1000, hosts * off.size)
    keep = src // per_leaf != dst // per_leaf
    src, dst, ev = src[keep], dst[keep], ev[keep]
    port = np.zeros_like(src)
    paths = np.concatenate(
        [fabric.paths(src, dst, port, ev), fabric.paths(dst, src, port, ev)], axis=1
    )
    return src, dst, port, ev, paths
