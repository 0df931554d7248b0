"""Figures with their units, as the pages show them."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from clusterloom.web.format import DASH, cell, figure, number


def test_units_read_from_the_figure_name() -> None:
    assert figure("cost_usd", 3_891_375.0) == "$3.89M"
    assert figure("cost_usd", 12_500) == "$12.5k"
    assert figure("power_w", 66_792.0) == "66.8 kW"
    assert figure("power_w", 1_370_000) == "1.37 MW"
    assert figure("power_w", 800) == "800 W"
    assert figure("fct_p99_us", 43.40432) == "43.4 \u00b5s"
    assert figure("fct_max_us", 1_000_000.0) == "1 s"
    assert figure("fct_max_us", 2_500.0) == "2.5 ms"
    assert figure("completion_ms", 0.0434) == "0.0434 ms"
    assert figure("length_m", 26.2) == "26.2 m"
    assert figure("fill_pct", 6.2) == "6.20%"
    assert figure("loss_db", 0.98) == "0.98 dB"
    assert figure("accelerators", 131_072) == "131,072"
    assert figure("bom_basis", "cabling") == "cabling"
    assert figure("anything", None) == DASH
    assert figure("vs_ideal", math.inf) == DASH


@given(st.integers(min_value=-(10**12), max_value=10**12))
def test_an_integer_is_exact_with_separators(n: int) -> None:
    text = number(n)
    assert int(text.replace(",", "")) == n
    assert all(len(group) == 3 for group in text.lstrip("-").split(",")[1:])


@given(st.floats(min_value=1e-6, max_value=1e12, allow_nan=False))
def test_a_float_keeps_about_three_significant_digits(x: float) -> None:
    shown = float(number(x).replace(",", ""))
    assert math.isclose(shown, x, rel_tol=0.01, abs_tol=0.005)


def test_a_table_cell_has_no_unit() -> None:
    assert cell(None) == ""
    assert cell(3) == "3"
    assert cell(123_456) == "123,456"
    assert cell(26.2) == "26.2"
    assert cell("b1-h1-r01-p07") == "b1-h1-r01-p07"
