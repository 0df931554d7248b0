"""What the store keeps of a design and of a run beside their files: a design's summary figures
(read from the figures its artifacts compute once: ``Design.bom``, ``Cabling.totals``,
``Placement``) and its findings with the stage that found them; a run's per-transport figures
read from its Parquet files with DuckDB."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from clusterloom.errors import StoreError
from clusterloom.findings import Finding, Severity
from clusterloom.units import ms_from_s, to_ms, to_usd, to_watts, us

if TYPE_CHECKING:
    from clusterloom.pipeline import Design

Figure = float | int | str


def design_summary(design: Design) -> dict[str, Figure]:
    """The figures a list of designs shows: sizes, the one BOM's cost and power, findings."""
    compute = design.spec.compute
    bom = design.bom
    findings = design.findings
    counts = {s: sum(1 for f in findings if f.severity is s) for s in Severity}
    out: dict[str, Figure] = {
        "accelerators": compute.accelerators,
        "nodes": compute.nodes,
        "fabrics": len(design.fabrics),
        "switches": bom.switches,
        "links": sum(fd.topology.n_links for fd in design.fabrics),
        "transceivers": bom.transceivers,
        "cost_usd": to_usd(bom.cost_cents),
        "power_w": to_watts(bom.power_mw),
        "bom_basis": "cabling" if bom.cabled else "estimate",
        "errors": counts[Severity.ERROR],
        "warnings": counts[Severity.WARNING],
        "checks_passed": counts[Severity.INFO],
    }
    if design.workload is not None:
        out["step_ms"] = ms_from_s(design.workload.timing.step_s)
    if design.placement is not None:
        out["racks"] = design.placement.n_racks
        out["halls"] = design.placement.floor.n_halls
    if design.cabling is not None:
        totals = design.cabling.totals
        out["cables"] = totals.realized
        out["trunks"] = totals.trunks
        out["backbones"] = totals.backbones
    return out


def staged_findings(design: Design) -> list[dict[str, str]]:
    """Every finding of ``design`` with the stage that found it, in the order
    ``Design.findings`` gives them (keys: stage, severity, code, object, message)."""
    staged: list[tuple[str, Finding]] = []
    if design.workload is not None:
        staged += [("workload", f) for f in design.workload.findings]
    for fd in design.fabrics:
        staged += [(f"fabric:{fd.name}", f) for f in fd.findings]
    if design.placement is not None:
        staged += [("placement", f) for f in design.placement.findings]
    if design.cabling is not None:
        staged += [("cabling", f) for f in design.cabling.findings]
    return [
        {
            "stage": stage,
            "severity": f.severity.value,
            "code": f.code,
            "object": f.where,
            "message": f.message,
        }
        for stage, f in staged
    ]


_GROUPS = """
SELECT transport, flows, finished, completion_us, ideal_us, vs_ideal
FROM read_parquet(?) WHERE "group" IS NULL ORDER BY transport
"""
_FLOWS = """
SELECT transport, quantile_cont(fct_us, 0.5), quantile_cont(fct_us, 0.99), max(fct_us)
FROM read_parquet(?) GROUP BY transport ORDER BY transport
"""


def _ms(value_us: float | None) -> float | None:
    return None if value_us is None else to_ms(us(value_us))


def run_summary(run_dir: Path) -> dict[str, dict[str, float | int | None]]:
    """Per transport: flows ``total`` and ``finished``, FCT p50/p99/max in µs (of the finished
    flows), ``completion_ms`` (null unless every flow finished), ``vs_ideal``. Read from
    ``groups.parquet`` (its whole-traffic row) and ``flows.parquet``."""
    groups, flows = run_dir / "groups.parquet", run_dir / "flows.parquet"
    for path in (groups, flows):
        if not path.is_file():
            raise StoreError(
                f"{run_dir}: no {path.name}; record a `clusterloom simulate -o DIR` directory"
            )
    try:
        with duckdb.connect() as con:
            whole = con.execute(_GROUPS, [str(groups)]).fetchall()
            fct = {r[0]: r[1:] for r in con.execute(_FLOWS, [str(flows)]).fetchall()}
    except duckdb.Error as exc:
        raise StoreError(f"{run_dir}: its results cannot be read: {exc}") from exc
    out: dict[str, dict[str, float | int | None]] = {}
    for transport, total, finished, completion_us, ideal_us, vs_ideal in whole:
        p50, p99, top = fct.get(transport, (None, None, None))
        out[str(transport)] = {
            "total": int(total),
            "finished": int(finished),
            "fct_p50_us": p50,
            "fct_p99_us": p99,
            "fct_max_us": top,
            "completion_ms": _ms(completion_us),
            "ideal_ms": _ms(ideal_us),
            "vs_ideal": vs_ideal,
        }
    return out
