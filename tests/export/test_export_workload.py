"""Workload exports: byte-identical across runs, consistent with the design, loadable."""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path

import numpy as np
import pytest

from clusterloom.pipeline import run_design
from clusterloom.spec import parse_spec
from clusterloom.write import write_design
from helpers import job_spec


def test_workload_files_are_consistent_and_deterministic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = parse_spec(job_spec(parallelism={"tp": 2, "pp": 2, "zero": 1}))
    design = run_design(spec)
    first = write_design(design, tmp_path / "a", flows=True)
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 86_400)  # a day later
    second = write_design(run_design(spec), tmp_path / "b", flows=True)
    names = [p.relative_to(tmp_path / "a") for p in first]
    assert names == [p.relative_to(tmp_path / "b") for p in second]
    assert {"workload.json", "traffic_matrix.csv", "flows.npz"} <= {str(n) for n in names}
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name

    w = design.workload
    assert w is not None
    doc = json.loads((tmp_path / "a" / "workload.json").read_text())
    assert doc["step"]["step_s"] == pytest.approx(w.timing.step_s, rel=1e-5)
    assert len(doc["collectives"]) == len(w.ops)

    with (tmp_path / "a" / "traffic_matrix.csv").open() as fh:
        rows = list(csv.reader(fh))
    assert rows[0][1:] == [str(i) for i in range(16)]  # dense: 16 ranks
    grid = np.array([[int(x) for x in row[1:]] for row in rows[1:]])
    assert grid.shape == (16, 16) and np.trace(grid) == 0
    assert grid.sum() == pytest.approx(w.matrix.sum(), rel=1e-9)

    # per-flow files only when asked for: the summary files are the default
    default = write_design(design, tmp_path / "c")
    assert [p.relative_to(tmp_path / "c") for p in default] == [
        n for n in names if str(n) != "flows.npz"
    ]

    flows = np.load(tmp_path / "a" / "flows.npz")
    assert np.array_equal(flows["src"], w.flows.src)
    assert np.array_equal(flows["dep_idx"], w.flows.dep_idx)
    assert list(flows["op_name"]) == [op.name for op in w.ops]


def test_sparse_matrix_for_large_jobs(tmp_path: Path) -> None:
    from clusterloom.export.workload_files import DENSE_MATRIX_LIMIT, write_traffic_matrix

    spec = parse_spec(
        job_spec(
            accelerators=2048,
            parallelism={"tp": 8, "pp": 4, "zero": 1},
            batch={"global_batch": 128, "micro_batch": 1},
        )
    )
    assert spec.compute.accelerators > DENSE_MATRIX_LIMIT
    w = run_design(spec).workload
    assert w is not None
    path = write_traffic_matrix(w, tmp_path / "m.csv")
    lines = path.read_text().splitlines()
    assert lines[0] == "src,dst,bytes"
    triplets = np.array([[int(x) for x in line.split(",")] for line in lines[1:]])
    assert len(triplets) == w.matrix.nnz
    assert triplets[:, 2].sum() == pytest.approx(w.matrix.sum(), rel=1e-9)
