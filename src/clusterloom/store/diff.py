"""Two recorded designs compared: each summary figure's delta, the BOM lines that differ
(DuckDB over the two ``bom`` Parquet tables, joined on fabric, tier, category, item and
length), and the findings that appear in the second or clear from the first."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import duckdb

from clusterloom.errors import StoreError
from clusterloom.store.records import DesignRecord

if TYPE_CHECKING:
    from clusterloom.store.store import Store

_KEY = ("fabric", "tier", "category", "item", "length_m")
_BOM_SQL = """
WITH a AS (SELECT fabric, tier, category, item, length_m, sum(quantity) AS q,
                  sum(cost_usd) AS c FROM read_parquet(?) GROUP BY ALL),
     b AS (SELECT fabric, tier, category, item, length_m, sum(quantity) AS q,
                  sum(cost_usd) AS c FROM read_parquet(?) GROUP BY ALL)
SELECT coalesce(a.fabric, b.fabric), coalesce(a.tier, b.tier), coalesce(a.category, b.category),
       coalesce(a.item, b.item), coalesce(a.length_m, b.length_m),
       coalesce(a.q, 0), coalesce(b.q, 0), coalesce(a.c, 0), coalesce(b.c, 0)
FROM a FULL OUTER JOIN b
  ON a.fabric IS NOT DISTINCT FROM b.fabric AND a.tier IS NOT DISTINCT FROM b.tier
 AND a.category = b.category AND a.item = b.item
 AND a.length_m IS NOT DISTINCT FROM b.length_m
WHERE coalesce(a.q, 0) <> coalesce(b.q, 0) OR coalesce(a.c, 0) <> coalesce(b.c, 0)
ORDER BY 3, 4, 1 NULLS FIRST, 2 NULLS FIRST, 5 NULLS FIRST
"""


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


def _bom(store: Store, a: DesignRecord, b: DesignRecord) -> list[dict[str, Any]]:
    pa, pb = store.table_source(a.id, "bom"), store.table_source(b.id, "bom")
    if pa is None or pb is None:
        return []
    try:
        with duckdb.connect() as con:
            rows = con.execute(_BOM_SQL, [str(pa), str(pb)]).fetchall()
    except duckdb.Error as exc:
        raise StoreError(f"diff {a.ref} {b.ref}: the BOMs cannot be compared: {exc}") from exc
    out = []
    for *key, qa, qb, ca, cb in rows:
        line = dict(zip(_KEY, key, strict=True))
        line.update(
            quantity_a=int(qa),
            quantity_b=int(qb),
            quantity_delta=int(qb) - int(qa),
            cost_usd_a=round(float(ca), 2),
            cost_usd_b=round(float(cb), 2),
            cost_usd_delta=round(float(cb) - float(ca), 2),
        )
        out.append(line)
    return out


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
    """``b`` against ``a``: deltas are b - a."""
    return {
        "a": {"id": a.id, "ref": a.ref, "spec_hash": a.spec_hash},
        "b": {"id": b.id, "ref": b.ref, "spec_hash": b.spec_hash},
        "same_spec": a.spec_hash == b.spec_hash,
        "summary": _figures(a, b),
        "bom": _bom(store, a, b),
        "findings": _findings(store, a, b),
    }
