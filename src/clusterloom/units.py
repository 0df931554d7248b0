"""Explicit units. Integers where exactness matters, named helpers for every conversion.

- data rates: bits per second (``int``), e.g. ``gbps(400) == 400_000_000_000``; bytes per
  second (``float``) where the workload's alpha-beta model reads them
- simulation and link latency: picoseconds (``int``), e.g. ``us(2) == 2_000_000``; the
  workload's step model in seconds (``float``)
- lengths: metres (``float``); power: watts (``float``); money: US dollars (``float``)
- a bill of materials' sums: milliwatts and cents (``int``), so that a total is exactly the sum
  of its lines, e.g. ``cents(345.5) == 34_550``
"""

from __future__ import annotations

BPS_PER_GBPS = 1_000_000_000
BITS_PER_BYTE = 8
PS_PER_NS = 1_000
PS_PER_US = 1_000_000
PS_PER_MS = 1_000_000_000
PS_PER_S = 1_000_000_000_000
KBPS_PER_GBPS = 1_000_000

#: Propagation delay in fibre and copper, about 5 ns per metre (refractive index ~1.47).
PS_PER_METRE_FIBRE = 4_900


def gbps(value: float) -> int:
    """Gigabits per second to bits per second."""
    return round(value * BPS_PER_GBPS)


def to_gbps(bps: float) -> float:
    """Bits per second to gigabits per second."""
    return bps / BPS_PER_GBPS


def to_tbps(bps: float) -> float:
    """Bits per second to terabits per second."""
    return bps / (1000 * BPS_PER_GBPS)


def ns(value: float) -> int:
    """Nanoseconds to picoseconds."""
    return round(value * PS_PER_NS)


def to_ns(ps: int) -> float:
    """Picoseconds to nanoseconds."""
    return ps / PS_PER_NS


def bytes_per_s(gbps_value: float) -> float:
    """Gigabits per second to bytes per second."""
    return gbps_value * BPS_PER_GBPS / BITS_PER_BYTE


def tx_ps(n_bytes: int, rate_bps: int) -> int:
    """Picoseconds to serialize ``n_bytes`` at ``rate_bps`` (rounded down)."""
    return n_bytes * BITS_PER_BYTE * PS_PER_S // rate_bps


def bdp_bytes(rate_bps: float, rtt_ps: float) -> float:
    """The bytes in flight at ``rate_bps`` over ``rtt_ps`` (the bandwidth-delay product)."""
    return rate_bps * rtt_ps / BITS_PER_BYTE / PS_PER_S


def us(value: float) -> int:
    """Microseconds to picoseconds (htsim's ``timeFromUs``)."""
    return round(value * PS_PER_US)


def to_us(ps: float) -> float:
    """Picoseconds to microseconds."""
    return ps / PS_PER_US


def to_ms(ps: float) -> float:
    """Picoseconds to milliseconds."""
    return ps / PS_PER_MS


def to_s(ps: float) -> float:
    """Picoseconds to seconds."""
    return ps / PS_PER_S


def seconds_from_us(value: float) -> float:
    """Microseconds to seconds (the workload's step model)."""
    return value * 1e-6


def ms_from_s(seconds: float) -> float:
    """Seconds to milliseconds (the workload's step model, for people)."""
    return seconds * 1e3


def tflops(value: float) -> float:
    """Teraflops to floating-point operations per second."""
    return value * 1e12


def kilowatts(value: float) -> float:
    """Kilowatts to watts."""
    return value * 1000.0


def to_kilowatts(watts: float) -> float:
    """Watts to kilowatts."""
    return watts / 1e3


def to_megawatts(watts: float) -> float:
    """Watts to megawatts."""
    return watts / 1e6


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
