"""The fabric operations works on: a design's backend topology with its names, its interfaces
and the exact path of every probe (issue 23).

Telemetry names devices and interfaces as the exports do (``export.naming``); this module maps
them to the topology's physical links and back. Physical link ``i`` has two ends: end 0 at
``link_src`` (the lower tier: a host, or the lower switch) and end 1 at ``link_dst``. The
simulators' directed link ``2 * i`` runs from end 0 to end 1 (upward), ``2 * i + 1`` back; so an
interface at end 0 transmits on directed link ``2 * i`` and receives on ``2 * i + 1``, and one
at end 1 the other way round (:meth:`OpsFabric.tx_directed`).

A probe's path is the one the simulators route: ``sim.paths.route`` with the EV hashed at every
switch under the fabric's hash seed (``hash_seed``). A real fabric's hash function is not that
one; with SRv6 path programs (``srv6.programs``) the path of an EV is known exactly, and without
them a probe agent learns it (``ops probe`` traces the hops). The design is read from a run
directory (the spec kept in its ``design.json``), a spec file or a built-in example, and its
backend fabric regenerated from the spec: generation is deterministic, so the names and link
ids are the run's. (A grown design's kept links are not reproduced: read the grown run's spec.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from clusterloom.errors import Problem, SpecError

if TYPE_CHECKING:
    from clusterloom.export.naming import TopologyNames
    from clusterloom.fabric.topology import Topology
    from clusterloom.sim.paths import Router
    from clusterloom.spec import ClusterSpec

__all__ = ["OpsFabric", "load_fabric", "ops_fabric"]

I64 = NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class OpsFabric:
    """A design's backend fabric as operations sees it. ``hash_seed`` is the seed of the
    switches' ECMP hash the paths are computed with (the simulators' ``seed``)."""

    spec: ClusterSpec
    topology: Topology
    names: TopologyNames
    hash_seed: int = 0

    @cached_property
    def router(self) -> Router:
        from clusterloom.sim.paths import build_router

        return build_router(self.topology)

    # -- names ---------------------------------------------------------------------------

    @cached_property
    def end_names(self) -> tuple[NDArray[np.object_], NDArray[np.object_]]:
        """``(devices, interfaces)``, each ``[n_links, 2]``: the name of each end of each
        physical link (end 0 the lower)."""
        t, n = self.topology, self.names
        dev = np.stack([n.device(t.link_src), n.device(t.link_dst)], axis=1)
        ifs = np.stack(
            [n.interface(t.link_src, t.link_src_port), n.interface(t.link_dst, t.link_dst_port)],
            axis=1,
        )
        return dev, ifs

    def link_label(self, link: int) -> str:
        """``device:interface~device:interface`` of physical link ``link``, lower end first."""
        dev, ifs = self.end_names
        return f"{dev[link, 0]}:{ifs[link, 0]}~{dev[link, 1]}:{ifs[link, 1]}"

    @cached_property
    def link_labels(self) -> NDArray[np.object_]:
        dev, ifs = self.end_names
        out: NDArray[np.object_] = dev[:, 0] + ":" + ifs[:, 0] + "~" + dev[:, 1] + ":" + ifs[:, 1]
        return out

    @cached_property
    def _label_index(self) -> dict[str, int]:
        return {str(s): i for i, s in enumerate(self.link_labels.tolist())}

    def link_of_label(self, label: str) -> int:
        """The physical link a label names (either end first); ``SpecError`` if none."""
        hit = self._label_index.get(label)
        if hit is None:
            a, _, b = label.partition("~")
            hit = self._label_index.get(f"{b}~{a}")
        if hit is None:
            raise SpecError([Problem(label, "the design has no such link")])
        return hit

    @cached_property
    def _interface_index(self) -> dict[tuple[str, str], int]:
        dev, ifs = self.end_names
        out: dict[tuple[str, str], int] = {}
        for end in (0, 1):
            pairs = zip(dev[:, end].tolist(), ifs[:, end].tolist(), strict=True)
            for i, (d, f) in enumerate(pairs):
                out[(d, f)] = 2 * i + end
        return out

    def interface(self, device: str, interface: str) -> tuple[int, int] | None:
        """``(physical link, end)`` of an interface, or None when the design has none."""
        hit = self._interface_index.get((device, interface))
        return None if hit is None else divmod(hit, 2)

    def tx_directed(self, link: I64, end: I64) -> I64:
        """The directed link an interface at ``end`` of ``link`` transmits on."""
        return np.asarray(2 * link + end, dtype=np.int64)

    def rx_directed(self, link: I64, end: I64) -> I64:
        """The directed link it receives on."""
        return np.asarray(2 * link + 1 - end, dtype=np.int64)

    def interface_table(self) -> pa.Table:
        """Every interface of the design: ``device``, ``interface``, ``link``, ``end``,
        ``tx`` and ``rx`` (its directed links), ``tier`` (1 host-leaf, 2 leaf-spine, 3
        spine-core), ``plane``, ``capacity_bps``. Join telemetry on (device, interface)."""
        dev, ifs = self.end_names
        t = self.topology
        links = np.arange(t.n_links, dtype=np.int64)
        link2 = np.concatenate([links, links])
        end2 = np.repeat(np.array([0, 1], dtype=np.int64), t.n_links)
        return pa.table(
            {
                "device": pa.array(np.concatenate([dev[:, 0], dev[:, 1]]).tolist(), pa.string()),
                "interface": pa.array(np.concatenate([ifs[:, 0], ifs[:, 1]]).tolist(), pa.string()),
                "link": link2,
                "end": end2.astype(np.int8),
                "tx": 2 * link2 + end2,
                "rx": 2 * link2 + 1 - end2,
                "tier": np.asarray(t.link_tier, dtype=np.int8)[link2],
                "plane": np.asarray(t.link_plane, dtype=np.int16)[link2],
                "capacity_bps": np.asarray(t.link_capacity_bps, dtype=np.int64)[link2],
            }
        )

    # -- host endpoints --------------------------------------------------------------------

    @property
    def host_ports(self) -> int:
        """Host ports per host (every plane's): ``port = plane * ports_per_host + j``."""
        p = self.topology.plan
        return int(p.ports_per_host * p.planes)

    def endpoint(self, host: int, port: int) -> tuple[str, str]:
        """``(device, interface)`` of host ``host``'s NIC port ``port``."""
        n = self.names
        h = np.array([host])
        return str(n.device(h)[0]), str(n.interface(h, np.array([port]))[0])

    @cached_property
    def _endpoint_index(self) -> dict[tuple[str, str], tuple[int, int]]:
        p = self.topology.plan
        hosts = np.repeat(np.arange(p.hosts, dtype=np.int64), self.host_ports)
        ports = np.tile(np.arange(self.host_ports, dtype=np.int64), p.hosts)
        dev = self.names.device(hosts).tolist()
        ifs = self.names.interface(hosts, ports).tolist()
        return {
            (d, f): (h, k)
            for d, f, h, k in zip(dev, ifs, hosts.tolist(), ports.tolist(), strict=True)
        }

    def host_of(self, device: str, interface: str) -> tuple[int, int] | None:
        """``(host, port)`` of a NIC endpoint named ``device``/``interface``, or None."""
        return self._endpoint_index.get((device, interface))

    # -- paths ---------------------------------------------------------------------------

    def paths(
        self,
        src: I64,
        dst: I64,
        port: I64,
        ev: I64,
        alive: NDArray[np.bool_] | None = None,
    ) -> I64:
        """Directed links of each probe's path (rows ``-1`` padded), hosts ``src`` to ``dst``
        on host port ``port`` (both ends) with entropy value ``ev``; ``alive`` marks the
        usable physical links (default: all), as routing around a failure sees them."""
        from clusterloom.sim.paths import route

        return route(
            self.router,
            np.asarray(src, dtype=np.int64),
            np.asarray(dst, dtype=np.int64),
            np.asarray(port, dtype=np.int64),
            np.asarray(ev, dtype=np.int64),
            seed=self.hash_seed,
            alive=alive,
        )


def ops_fabric(spec: ClusterSpec, *, hash_seed: int = 0) -> OpsFabric:
    """The backend fabric of ``spec``, generated and named as the exports name it."""
    from clusterloom.export.naming import topology_names
    from clusterloom.fabric.sizing import plan_fabric
    from clusterloom.fabric.topology import generate

    topology = generate(plan_fabric(spec))
    names = topology_names(topology, spec.resolved_catalog())
    return OpsFabric(spec, topology, names, hash_seed)


def load_fabric(source: str | Path, *, hash_seed: int = 0) -> OpsFabric:
    """The fabric of a design given as a run directory (``design -o``), a spec file or the
    name of a built-in example; ``SpecError`` naming ``source`` otherwise."""
    from clusterloom.examples import example_names, example_text
    from clusterloom.spec import load_spec, parse_spec

    p = Path(source)
    if p.is_dir():
        doc_path = p / "design.json"
        try:
            spec_data = json.loads(doc_path.read_text())["spec"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SpecError(
                [Problem(str(p), f"not a design run (no readable design.json spec): {exc}")]
            ) from exc
        # the spec as the run kept it, read back through the spec's own reader and checks
        text = json.dumps(spec_data)
        return ops_fabric(parse_spec(text, source=str(doc_path)), hash_seed=hash_seed)
    if p.is_file():
        return ops_fabric(load_spec(p), hash_seed=hash_seed)
    if str(source) in example_names():
        text = example_text(str(source))
        return ops_fabric(parse_spec(text, source=f"example {source}"), hash_seed=hash_seed)
    raise SpecError(
        [
            Problem(
                str(source),
                "not a run directory, a spec file or a built-in example "
                f"({', '.join(example_names())})",
            )
        ]
    )
