"""Speed work on the packet engine must not move a run: every case below was run on the engine
before the change (``data/identity.json``, written by running this file as a script on that
code) and must give the same finish times to the picosecond, the same retransmissions,
failures, events, drops, trims, marks, pauses, largest queue and unfinished lines.

Cases: every transport on a k=4 fat tree (a 500 KB permutation, with and without a host link
failure, an 8-to-1 incast of 300 KB, a chained ring all-reduce) and a k=8 permutation with a
core switch failure; ``roce-ecmp`` also in htsim's matched configuration (no DCQCN, no
marking, PFC thresholds in bytes) and ``receiver-driven`` with trimming off.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from clusterloom.sim.failures import parse_failure
from clusterloom.sim.packet.fabrics import fat_tree
from clusterloom.sim.packet.run import PacketResult, config_for, run_packets
from clusterloom.sim.traffic import Traffic, incast, permutation

DATA = Path(__file__).with_name("data") / "identity.json"
TRANSPORTS = ("roce-ecmp", "mrc-spray", "metaroce", "receiver-driven")


def _chained_ring(n_hosts: int, group: int, nbytes: int) -> Traffic:
    src, dst, deps = [], [], []
    stride = n_hosts // group
    for g in range(stride):
        base = len(src)
        for s in range(2 * (group - 1)):
            for r in range(group):
                src.append(g + r * stride)
                dst.append(g + ((r + 1) % group) * stride)
                deps.append([] if s == 0 else [base + (s - 1) * group + (r - 1) % group])
    return Traffic.from_arrays(src, dst, nbytes // group, n_hosts=n_hosts, deps=deps)


def _cases() -> dict[str, tuple[Any, ...]]:
    """name -> (k, traffic maker, transport, failure texts, options, config overrides)."""
    out: dict[str, tuple[Any, ...]] = {}
    for t in TRANSPORTS:
        out[f"k4-perm-{t}"] = (4, ("perm", 500_000), t, (), {}, {})
        out[f"k4-perm-link-{t}"] = (4, ("perm", 500_000), t, ("link:0@20us",), {}, {})
        out[f"k4-incast-{t}"] = (4, ("incast", 300_000), t, (), {}, {})
        out[f"k4-ring-{t}"] = (4, ("ring", 1_000_000), t, ("link:3@30us",), {}, {})
        out[f"k8-perm-switch-{t}"] = (8, ("perm", 1_000_000), t, ("switch:200@40us",), {}, {})
    out["k4-perm-roce-matched"] = (
        4,
        ("perm", 500_000),
        "roce-ecmp",
        (),
        {"dcqcn": 0, "ack_every": 1},
        {"ecn": False, "pfc_xoff": 60_000, "pfc_xon": 48_000},
    )
    out["k8-perm-rd-notrim"] = (
        8,
        ("perm", 1_000_000),
        "receiver-driven",
        (),
        {},
        {"trimming": False},
    )
    return out


def _run(case: tuple[Any, ...]) -> PacketResult:
    from dataclasses import replace

    k, (kind, size), transport, fails, options, overrides = case
    topo = fat_tree(k)
    n = topo.plan.hosts
    if kind == "perm":
        traffic = permutation(n, size, seed=1)
    elif kind == "incast":
        traffic = incast(8, size, n_hosts=n)
    else:
        traffic = _chained_ring(n, 4, size)
    failures = tuple(parse_failure(f, topo) for f in fails)
    cfg = config_for(transport)
    if overrides:
        cfg = replace(cfg, **overrides)
    return run_packets(topo, traffic, transport, failures, config=cfg, options=options or None)


def _digest(r: PacketResult) -> dict[str, Any]:
    return {
        "finish_sha256": hashlib.sha256(np.ascontiguousarray(r.finish_ps).tobytes()).hexdigest(),
        "fct_max_ps": int(r.fct_ps.max()),
        "retransmissions": int(r.retransmissions.sum()),
        "failed": int(r.failed.sum()),
        "end_ps": r.end_ps,
        "events": r.events,
        "drops": r.drops,
        "trims": r.trims,
        "marks": r.marks,
        "pauses": r.pauses,
        "max_queue_bytes": r.max_queue_bytes,
        "data_bytes_delivered": r.data_bytes_delivered,
        "unfinished": list(r.unfinished),
    }


@pytest.mark.parametrize("name", sorted(_cases()))
def test_the_run_is_the_one_recorded_before_the_speed_work(name: str) -> None:
    expected = json.loads(DATA.read_text())[name]
    assert _digest(_run(_cases()[name])) == expected


if __name__ == "__main__":
    out = {name: _digest(_run(case)) for name, case in sorted(_cases().items())}
    DATA.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"{len(out)} cases -> {DATA}", file=sys.stderr)
