"""Numbers as the pages show them: thousands separators, and a unit read from the figure's
name (``cost_usd``, ``power_w``, ``length_m``, ``fct_p99_us``, ``completion_ms``, ``*_pct``),
scaled through ``clusterloom.units``."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from clusterloom.units import to_kilowatts, to_megawatts

DASH = "\u2013"

#: summary figures with a readable label (others are shown by their key)
LABELS: Mapping[str, str] = {
    "accelerators": "accelerators",
    "switches": "switches",
    "links": "links",
    "cables": "cables",
    "racks": "racks",
    "halls": "halls",
    "cost_usd": "cost",
    "power_w": "power",
    "errors": "errors",
    "warnings": "warnings",
    "checks_passed": "checks passed",
    "finished": "flows finished",
    "total": "flows",
    "fct_p50_us": "FCT p50",
    "fct_p99_us": "FCT p99",
    "fct_max_us": "FCT max",
    "completion_ms": "completion",
    "ideal_ms": "ideal bound",
    "vs_ideal": "\u00d7 ideal",
}


def label(key: str) -> str:
    return LABELS.get(key, key.replace("_", " "))


def number(value: float) -> str:
    """``value`` with thousands separators; integers exact, others to 3 significant digits
    (at least one decimal below 100)."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int) or (
        isinstance(value, float) and value.is_integer() and abs(value) >= 100
    ):
        return f"{int(value):,}"
    if not math.isfinite(value):
        return DASH
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:,.1f}"
    if magnitude >= 1:
        return f"{value:,.2f}"
    return f"{value:.3g}"


def _usd(value: float) -> str:
    if abs(value) >= 1e6:
        return f"${value / 1e6:,.2f}M"
    if abs(value) >= 1e3:
        return f"${value / 1e3:,.1f}k"
    return f"${value:,.2f}"


def _watts(value: float) -> str:
    if abs(value) >= 1e6:
        return f"{to_megawatts(value):,.2f} MW"
    if abs(value) >= 1e3:
        return f"{to_kilowatts(value):,.1f} kW"
    return f"{value:,.0f} W"


def _micros(value: float) -> str:
    if abs(value) >= 1e6:
        return f"{value / 1e6:,.3g} s"
    if abs(value) >= 1e3:
        return f"{value / 1e3:,.3g} ms"
    return f"{number(value)} \u00b5s"


def figure(key: str, value: Any) -> str:
    """``value`` of the figure named ``key`` with its unit; text as it is; None as a dash."""
    if value is None or value == "":
        return DASH
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return DASH
    k = key.lower()
    if k.endswith("_usd") or k == "cost":
        return _usd(value)
    if k.endswith("_w") or k == "power":
        return _watts(value)
    if k.endswith("_us"):
        return _micros(value)
    if k.endswith("_ms"):
        return f"{number(value)} ms"
    if k.endswith("_m"):
        return f"{number(value)} m"
    if k.endswith("_kw"):
        return f"{number(value)} kW"
    if k.endswith("_kg"):
        return f"{number(value)} kg"
    if k.endswith("_db"):
        return f"{value:.2f} dB"
    if k.endswith("_pct"):
        return f"{number(value)}%"
    if k.endswith("_mm2"):
        return f"{number(value)} mm\u00b2"
    return number(value)


def cell(value: Any) -> str:
    """A table cell: numbers with separators (no unit: the column header names it)."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return DASH
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    return f"{value:g}"


def utc_ms(ms: int) -> str:
    """Milliseconds since the epoch as a UTC time to the second (``2026-12-01 00:00:00``)."""
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")
