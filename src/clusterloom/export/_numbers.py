"""How exported numbers are rounded, in one place so that JSON, CSV and reports agree.

Power to 0.1 W and money to whole dollars for totals; unit figures keep a little more.
"""

from __future__ import annotations


def watts(value: float) -> float:
    """A power total, to 0.1 W."""
    return round(value, 1) + 0.0  # + 0.0 turns -0.0 into 0.0


def dollars(value: float) -> int:
    """A cost total, to the whole dollar."""
    return round(value)


def ratio(value: float) -> float:
    """A derived figure (a bandwidth per host), to three decimals."""
    return round(value, 3) + 0.0
