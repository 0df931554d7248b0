"""Two recorded designs compared: each summary figure's delta, the findings (with their
stages) that appear in the second or clear from the first, and the assistant's diff of the two
designs' files (``clusterloom.assist.diff``: the BOM lines that differ, devices, links, racks,
fibres pulled, blast radius), the one diff ``clusterloom diff`` also prints."""

from __future__ import annotations

from pathlib import Path
from tempfile import TemporaryDirectory
from typing import TYPE_CHECKING, Any

from clusterloom.assist.diff import DesignDiff, diff_designs, read_run, reads
from clusterloom.store.records import DesignRecord
from clusterloom.store.summary import run_summary

if TYPE_CHECKING:
    from clusterloom.store.store import Store


def _figures(a: DesignRecord, b: DesignRecord) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for key in sorted(set(a.summary) | set(b.summary)):
        va, vb = a.summary.get(key), b.summary.get(key)
        numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (va, vb))
        delta = vb - va if numeric else None  # type: ignore[operator]
        if isinstance(delta, float):
            delta = round(delta, 6)
        out[key] = {"a": va, "b": vb, "delta": delta, "changed": va != vb}
    return out


def _changes(store: Store, a: DesignRecord, b: DesignRecord) -> DesignDiff:
    """The assistant's diff (``assist.diff``) of the two designs' files, copied from the
    store into temporary directories."""
    with TemporaryDirectory(prefix="clusterloom-diff-") as tmp:
        da, db = Path(tmp) / "a", Path(tmp) / "b"
        store.materialize(a.id, da, keep=reads)
        store.materialize(b.id, db, keep=reads)
        return diff_designs(read_run(da, a.ref, run_summary), read_run(db, b.ref, run_summary))


def _findings(store: Store, a: DesignRecord, b: DesignRecord) -> dict[str, list[dict[str, str]]]:
    def key(f: dict[str, str]) -> tuple[str, ...]:
        return (f["stage"], f["severity"], f["code"], f["object"], f["message"])

    fa, fb = store.findings(a.id), store.findings(b.id)
    ka, kb = {key(f) for f in fa}, {key(f) for f in fb}
    return {
        "appear": [f for f in fb if key(f) not in ka],
        "clear": [f for f in fa if key(f) not in kb],
    }


def design_diff(store: Store, a: DesignRecord, b: DesignRecord) -> dict[str, Any]:
    """``b`` against ``a``: deltas are b - a. ``bom`` and ``changes`` come from the one diff
    of two designs (``assist.diff``: devices, links, racks, fibres, blast radius);
    ``findings`` are the store's, with the stage that found them."""
    changes = _changes(store, a, b).to_dict()
    return {
        "a": {"id": a.id, "ref": a.ref, "spec_hash": a.spec_hash},
        "b": {"id": b.id, "ref": b.ref, "spec_hash": b.spec_hash},
        "same_spec": a.spec_hash == b.spec_hash,
        "summary": _figures(a, b),
        "bom": changes["bom"]["lines"],
        "findings": _findings(store, a, b),
        "changes": changes,
    }
