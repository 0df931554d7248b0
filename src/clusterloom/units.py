"""Explicit units. Integers where exactness matters, named helpers for every conversion.

- data rates: bits per second (``int``), e.g. ``gbps(400) == 400_000_000_000``
- simulation and link latency: picoseconds (``int``)
- lengths: metres (``float``); power: watts (``float``); money: US dollars (``float``)
- a bill of materials' sums: milliwatts and cents (``int``), so that a total is exactly the sum
  of its lines, e.g. ``cents(345.5) == 34_550``
"""

from __future__ import annotations

BPS_PER_GBPS = 1_000_000_000
PS_PER_NS = 1_000
PS_PER_US = 1_000_000
PS_PER_S = 1_000_000_000_000
KBPS_PER_GBPS = 1_000_000

#: Propagation delay in fibre and copper, about 5 ns per metre (refractive index ~1.47).
PS_PER_METRE_FIBRE = 4_900


def gbps(value: float) -> int:
    """Gigabits per second to bits per second."""
    return round(value * BPS_PER_GBPS)


def to_gbps(bps: int) -> float:
    """Bits per second to gigabits per second."""
    return bps / BPS_PER_GBPS


def to_tbps(bps: int) -> float:
    """Bits per second to terabits per second."""
    return bps / (1000 * BPS_PER_GBPS)


def ns(value: float) -> int:
    """Nanoseconds to picoseconds."""
    return round(value * PS_PER_NS)


def to_ns(ps: int) -> float:
    """Picoseconds to nanoseconds."""
    return ps / PS_PER_NS


def to_kbps(bps: int) -> int:
    """Bits per second to kilobits per second (NetBox's interface speed unit)."""
    return bps // 1000


def cents(usd: float) -> int:
    """US dollars to cents."""
    return round(usd * 100)


def to_usd(amount_cents: int) -> float:
    """Cents to US dollars."""
    return amount_cents / 100


def milliwatts(watts: float) -> int:
    """Watts to milliwatts."""
    return round(watts * 1000)


def to_watts(mw: int) -> float:
    """Milliwatts to watts."""
    return mw / 1000


def fmt_bytes(n: float) -> str:
    """Bytes for people: '1.5 GB' (decimal units)."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:,.1f} {unit}"
    return f"{n:,.0f} B"
