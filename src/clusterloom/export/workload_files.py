"""Workload exports: ``workload.json`` (the breakdown and step time), ``traffic_matrix.csv``
(dense for jobs of at most ``DENSE_MATRIX_LIMIT`` ranks, else sparse ``src,dst,bytes`` rows) and
``flows.npz`` (every flow of one pass of a step's collectives, for the simulators)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from clusterloom.atomic import StrPath, atomic_open, atomic_write
from clusterloom.pipeline import Design
from clusterloom.workload import WorkloadDesign

DENSE_MATRIX_LIMIT = 1024
WORKLOAD_SCHEMA_VERSION = 1


def workload_document(design: Design) -> dict[str, Any]:
    w = design.workload
    assert w is not None and design.spec.job is not None
    t = w.timing
    return {
        "schema": "clusterloom.workload",
        "schema_version": WORKLOAD_SCHEMA_VERSION,
        "spec_hash": design.provenance.spec_hash,
        "model": {
            "name": design.spec.job.model.name,
            "parameters": w.shape.parameters,
            "active_parameters": w.shape.active_parameters,
        },
        "layout": {"order": list(w.layout.order), "sizes": list(w.layout.sizes)},
        "micro_batches": w.micro_batches,
        "step": {
            "compute_s": round(t.compute_s, 6),
            "bubble_s": round(t.bubble_s, 6),
            "communication_s": round(t.comm_s, 6),
            "exposed_communication_s": round(t.exposed_comm_s, 6),
            "step_s": round(t.step_s, 6),
            "bound_step_s": round(t.bound_step_s, 6),
            "mfu": round(t.mfu, 4),
            "flops": t.flops_per_step,
            "optimizer_s": round(t.optimizer_s, 6),
            "exposed_s_by_dimension": {k: round(v, 6) for k, v in t.exposed.items()},
            "hfu": round(t.hfu, 4),
            "hardware_flops": t.hardware_flops_per_step,
            "tflops_per_accelerator": round(t.tflops_per_accelerator, 1),
            "ideal_step_s": round(t.ideal_step_s, 6),
            "schedule": t.schedule,
            "virtual_stages": t.virtual_stages,
            "stage_layers": list(t.stage_layers),
            "communication_source": t.comm_source,
        },
        "memory_bytes_peak_stage": {
            "stage": w.memory.peak.stage,
            "total": round(w.memory.peak.total),
            "capacity": round(w.memory.capacity),
            "fits": w.memory.fits,
        },
        "volume_bytes_by_dimension": {k: round(v) for k, v in w.volume_by("dim").items()},
        "volume_bytes_by_link": {k: round(v) for k, v in w.volume_by("link").items()},
        "nic": {
            "flows_max": w.nic.flows_max,
            "flows_mean": round(w.nic.flows_mean, 3),
            "peers_max": w.nic.peers_max,
            "peers_mean": round(w.nic.peers_mean, 3),
            "bytes_max": round(w.nic.bytes_max),
        },
        "collectives": [
            {
                "name": o.op.name,
                "dimension": o.op.dim,
                "phase": o.op.phase,
                "collective": o.op.collective.value,
                "algorithm": o.op.algorithm.value,
                "link": o.op.link.value,
                "groups": o.op.n_groups,
                "group_size": o.op.group_size,
                "bytes": o.op.nbytes,
                "per_step": o.op.per_step,
                "call_s": round(o.call_s, 9),
                "bound_s": round(o.bound_s, 9),
                "exposed_step_s": round(o.exposed_s, 9),
            }
            for o in t.ops
        ],
        "findings": [f.to_dict() for f in w.findings],
    }


def write_workload_json(design: Design, path: StrPath) -> Path:
    text = json.dumps(workload_document(design), indent=2) + "\n"
    return atomic_write(path, text)


def write_traffic_matrix(w: WorkloadDesign, path: StrPath) -> Path:
    """Bytes per step from each rank to each other: a dense grid (header ``src\\dst,0,1,...``)
    when there are at most ``DENSE_MATRIX_LIMIT`` ranks, else ``src,dst,bytes`` per non-zero."""
    world = w.layout.world
    coo = w.matrix.tocoo()
    with atomic_open(path) as fh:
        if world <= DENSE_MATRIX_LIMIT:
            dense = np.zeros((world, world), dtype=np.int64)
            dense[coo.row, coo.col] = np.rint(coo.data).astype(np.int64)
            fh.write("src\\dst," + ",".join(map(str, range(world))) + "\n")
            for i in range(world):
                fh.write(f"{i}," + ",".join(map(str, dense[i].tolist())) + "\n")
        else:
            order = np.lexsort((coo.col, coo.row))
            fh.write("src,dst,bytes\n")
            rows = np.column_stack(
                [coo.row[order], coo.col[order], np.rint(coo.data[order]).astype(np.int64)]
            )
            np.savetxt(fh, rows, fmt="%d", delimiter=",")
    return Path(path)


def write_flows(w: WorkloadDesign, path: StrPath) -> Path:
    """All flow arrays of ``w.flows`` plus the op names, as an uncompressed ``.npz`` that
    ``numpy.load`` reads. Written with fixed zip timestamps (``numpy.savez`` stamps the current
    time) so that the same spec gives the same bytes."""
    f = w.flows
    arrays = {
        "op": f.op,
        "src": f.src,
        "dst": f.dst,
        "nbytes": f.nbytes,
        "step": f.step,
        "port": f.port,
        "dep_ptr": f.dep_ptr,
        "dep_idx": f.dep_idx,
        "per_step": f.per_step,
        "op_name": np.array([op.name for op in w.ops]),
    }
    with atomic_open(path, "wb") as fh, zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED) as zf:
        for name, array in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            with zf.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.ascontiguousarray(array))
    return Path(path)
