"""The whole program table summarised by closed forms (never materialised), and the plan's
checks: no SID or prefix reused, every locator covered by a route, room for growth.

Per NIC port ``k`` (plane ``k // ports_per_host``), with ``c_l`` the NIC ports on leaf ``l``
and ``S_q`` those in pod ``q``: same-leaf port pairs ``sum c_l (c_l - 1)``, same-pod pairs
``sum_q S_q^2 - sum c_l^2``, the rest cross pods; every pair carries the port's ``K_k`` EVs,
each program ``sids_needed`` SIDs of 16 bytes. A source NIC port on leaf ``l`` of pod ``q``
holds ``K_k ((c_l - 1) s_0 + (S_q - c_l) s_1 + (H - S_q) s_2)`` SIDs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from clusterloom.fabric.topology import Role
from clusterloom.findings import Finding, Severity
from clusterloom.srv6.encoding import SID_BYTES, words
from clusterloom.srv6.plan import AddressPlan
from clusterloom.srv6.programs import CLASS_NAMES, TRANSIT, port_evs, sids_needed


@dataclass(frozen=True)
class ClassCount:
    """One class of port pairs over the whole fabric."""

    name: str
    port_pairs: int
    programs: int
    paths_per_pair: int
    sids_per_program: int

    @property
    def nbytes(self) -> int:
        return self.programs * self.sids_per_program * SID_BYTES


@dataclass(frozen=True)
class TableSummary:
    """The program table of a fabric: per class, and what one NIC (all its ports) holds."""

    evs: int
    classes: tuple[ClassCount, ...]
    nic_entries_max: int
    nic_bytes_max: int
    nic_bytes_min: int
    capacity: int
    #: one NIC's table factored: per destination NIC port its two uSIDs, per plane the transit
    #: uSIDs of each path once (the EV's path index is the closed form of ``programs``)
    nic_factored_bytes: int

    @property
    def programs(self) -> int:
        return sum(c.programs for c in self.classes)

    @property
    def nbytes(self) -> int:
        return sum(c.nbytes for c in self.classes)

    def as_dict(self) -> dict[str, object]:
        return {
            "evs_per_connection": self.evs,
            "usids_per_container": self.capacity,
            "programs": self.programs,
            "bytes": self.nbytes,
            "per_nic": {
                "entries_max": self.nic_entries_max,
                "bytes_max": self.nic_bytes_max,
                "bytes_min": self.nic_bytes_min,
                "factored_bytes": self.nic_factored_bytes,
            },
            "classes": [
                {
                    "class": c.name,
                    "port_pairs": c.port_pairs,
                    "programs": c.programs,
                    "paths_per_pair": c.paths_per_pair,
                    "sids_per_program": c.sids_per_program,
                    "bytes": c.nbytes,
                }
                for c in self.classes
            ],
        }


def _port_counts(plan: AddressPlan, port: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """NIC ports of ``port`` per leaf, and per host the counts on its own leaf and pod."""
    p = plan.topology.plan
    leaf = plan.nic_leaf[:, port].astype(np.int64)
    per_leaf = np.bincount(leaf, minlength=p.leaves)
    per_pod = np.bincount(np.arange(p.leaves) // p.pod_leaves, weights=per_leaf).astype(np.int64)
    return per_leaf, per_pod


def summarize(plan: AddressPlan, evs: int) -> TableSummary:
    """The whole table by closed forms over leaf and pod counts (see the module docstring)."""
    p = plan.topology.plan
    cap = plan.fmt.capacity
    sids = [sids_needed(t, cap) for t in TRANSIT]
    paths = [1, p.spines_per_pod, p.spines_per_pod * max(p.cores_per_group, 1)]
    pairs = [0, 0, 0]
    programs = [0, 0, 0]
    nic_entries = np.zeros(p.hosts, dtype=np.int64)
    nic_sids = np.zeros(p.hosts, dtype=np.int64)
    for port in range(plan.host_ports):
        k = int(port_evs(evs, port, plan.host_ports).shape[0])
        per_leaf, per_pod = _port_counts(plan, port)
        h = int(per_leaf.sum())
        same_leaf = int((per_leaf * (per_leaf - 1)).sum())
        same_pod = int((per_pod**2).sum() - (per_leaf**2).sum())
        counts = [same_leaf, same_pod, h * (h - 1) - same_leaf - same_pod]
        for i, c in enumerate(counts):
            pairs[i] += c
            programs[i] += c * k
        leaf = plan.nic_leaf[:, port].astype(np.int64)
        c_l = per_leaf[leaf]
        s_q = per_pod[leaf // p.pod_leaves]
        nic_entries += k * (h - 1)
        nic_sids += k * ((c_l - 1) * sids[0] + (s_q - c_l) * sids[1] + (h - s_q) * sids[2])
    classes = tuple(
        ClassCount(CLASS_NAMES[i], pairs[i], programs[i], paths[i], sids[i])
        for i in range(3)
        if pairs[i]
    )
    usid_bytes = -(-plan.fmt.usid_bits // 8)
    transit_paths = max(paths[i] * TRANSIT[i] for i in range(3) if pairs[i])
    factored = plan.host_ports * ((p.hosts - 1) * 2 + transit_paths) * usid_bytes
    return TableSummary(
        evs,
        classes,
        int(nic_entries.max()),
        int(nic_sids.max()) * SID_BYTES,
        int(nic_sids.min()) * SID_BYTES,
        cap,
        factored,
    )


def _unique(values: NDArray[np.uint64]) -> int:
    """Rows of ``values`` (``n x 2``) that repeat an earlier row."""
    return int(values.shape[0] - np.unique(values, axis=0).shape[0])


def _halves(addresses: list[int]) -> NDArray[np.uint64]:
    mask = (1 << 64) - 1
    return np.array([(a >> 64, a & mask) for a in addresses], dtype=np.uint64).reshape(-1, 2)


def nic_sid_halves(plan: AddressPlan) -> NDArray[np.uint64]:
    """Every NIC SID as two 64-bit halves (``[host * ports + port]``), vectorized."""
    ports = plan.host_ports
    leaf = np.asarray(plan.usid(Role.LEAF, plan.nic_leaf.astype(np.int64)))
    pairs = np.stack([leaf.ravel(), plan.nic_local.astype(np.int64).ravel()], axis=1)
    low = words(pairs, plan.fmt)
    planes = np.arange(ports) // plan.ports_per_host
    blocks = _halves([plan.block(int(q)) for q in planes.tolist()])
    return low | np.tile(blocks, (plan.topology.plan.hosts, 1))


def check_plan(plan: AddressPlan) -> list[Finding]:
    """The plan's checks as findings (an error: a reused SID or an unrouted locator)."""
    t, p = plan.topology, plan.topology.plan
    where = f"srv6.{p.fabric}"
    out: list[Finding] = []
    switches = [n for n in range(p.hosts, t.n_nodes)]
    locators = _halves(
        [
            plan.locator(int(t.node_plane[n]), Role(int(t.node_role[n])), int(t.node_index[n]))
            for n in switches
        ]
    )
    nics = nic_sid_halves(plan)
    reused = _unique(locators) + _unique(nics)
    out.append(
        Finding(
            Severity.ERROR if reused else Severity.INFO,
            "srv6-sid-reuse",
            f"{reused:,} SIDs reused among {len(switches):,} switch locators and "
            f"{nics.shape[0]:,} NIC SIDs",
            where,
        )
    )
    degree = t.degree()[p.hosts :]
    unrouted = int((degree == 0).sum()) + int((plan.nic_leaf < 0).sum())
    out.append(
        Finding(
            Severity.ERROR if unrouted else Severity.INFO,
            "srv6-locator-route",
            f"{unrouted:,} locators without a route (a switch with no link, a NIC port with no "
            "leaf); every other is routed by its neighbours over their links to it",
            where,
        )
    )
    fmt = plan.fmt
    spare = fmt.global_limit - plan.used_global
    out.append(
        Finding(
            Severity.INFO,
            "srv6-growth-room",
            f"a plane reserves {plan.used_global:,} of {fmt.global_limit:,} global "
            f"{fmt.usid_bits}-bit uSIDs ({plan.options.growth:.0%} growth held back per tier); "
            f"{spare:,} more remain; a leaf's NIC ports use {p.tier('leaf').down:,} of "
            f"{(1 << fmt.usid_bits) - 1:,} local uSIDs",
            where,
        )
    )
    return out
