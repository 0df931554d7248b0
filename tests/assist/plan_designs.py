"""Baselines and targets made for the change-plan tests through the pipeline (``design -o``
files, grown with ``run_design(installed=...)`` as ``clusterloom change`` grows them)::

    base      64 x 200G GPUs (8 nodes), 8 leaves x 8 uplinks striped 4 + 4 over 2 spines,
              tomahawk3-32x400g, a hall of 2 rows of 4; a job (TP 8 in the node, PP 2, DP 4)
    growth    the same at 128 GPUs: 16 uplinks a leaf (spine ports full: half of each leaf's
              installed uplinks re-patched onto the new stripe)
    switch    base with tomahawk4-64x400g switches (the spine racks' cables re-pulled)
    b128      128 GPUs in scalable units of 8 nodes (16 leaves)
    restripe  b128 in one scalable unit of 16 nodes: host links striped onto other leaves
    p1        64 GPUs with 2 NIC ports each, one plane, no site (fabrics only)
    plane     p1 with a second plane
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from diff_pairs import spec, write_run

from clusterloom.spec import ClusterSpec, parse_spec
from helpers import SMALL_MODEL

JOB = {
    "model": dict(SMALL_MODEL),
    "batch": {"global_batch": 64, "micro_batch": 1},
    "parallelism": {"tp": 8, "pp": 2},
    "compute": {"peak_tflops": 1000, "utilisation": 0.5},
}


def _with_job(doc: dict[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["job"] = copy.deepcopy(JOB)
    doc["compute"]["scale_up"] = {"domain_size": 8, "bandwidth_gbps": 3600}
    return doc


def _su(doc: dict[str, Any], nodes: int) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["fabrics"]["backend"]["scalable_unit_nodes"] = nodes
    return doc


def _ports(planes: int) -> dict[str, Any]:
    doc = spec()
    doc["compute"]["nic"]["ports_per_accelerator"] = 2
    doc["fabrics"]["backend"]["planes"] = planes
    doc.pop("site")
    return doc


BASELINES: dict[str, dict[str, Any]] = {
    "base": _with_job(spec()),
    "b128": _su(spec(accelerators=128), 8),
    "p1": _ports(1),
}
#: change kind -> (baseline, target spec)
CHANGES: dict[str, tuple[str, dict[str, Any]]] = {
    "growth": ("base", _with_job(spec(accelerators=128))),
    "switch replaced": ("base", _with_job(spec(switch="tomahawk4-64x400g"))),
    "re-stripe": ("b128", _su(spec(accelerators=128), 16)),
    "plane added": ("p1", _ports(2)),
}


def target(kind: str) -> ClusterSpec:
    return parse_spec(yaml.safe_dump(CHANGES[kind][1]))


def write_baselines(folder: Path) -> dict[str, Path]:
    """Every baseline written as ``design -o`` writes it, by name."""
    return {name: write_run(doc, folder / name)[1] for name, doc in BASELINES.items()}
