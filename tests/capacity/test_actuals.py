"""Actuals files: rows read and sorted, every bad line named."""

from __future__ import annotations

import pytest

from clusterloom.capacity.actuals import Actual, parse_actuals
from clusterloom.errors import SpecError

HEAD = "quantity,site,program,period,value\n"


def test_rows_are_read_and_sorted() -> None:
    rows = parse_actuals(HEAD + "it_power_kw,west,,2027Q2,900\ndemand,east,llm,2027Q1,512\n")
    assert rows == (
        Actual("demand", "east", "llm", "2027Q1", 512.0),
        Actual("it_power_kw", "west", "", "2027Q2", 900.0),
    )
    assert rows[0].quarter == 2027 * 4


@pytest.mark.parametrize(
    ("line", "where"),
    [
        ("supply,east,,2027Q1,1", "quantity"),
        ("demand,east,,2027Q1,1", "program"),
        ("demand,east,llm,2027Q5,1", "period"),
        ("demand,east,llm,2027Q1,-3", "value"),
        ("ready,east/h1,,2027Q1,0.5", "value"),
        ("demand,east,llm", "3 columns"),
    ],
)
def test_a_bad_line_is_named(line: str, where: str) -> None:
    with pytest.raises(SpecError) as e:
        parse_actuals(HEAD + "demand,east,llm,2027Q1,1\n" + line + "\n", "a.csv")
    (problem,) = e.value.problems
    assert problem.where.startswith("a.csv:3")
    assert where in problem.where or where in problem.message


def test_a_duplicate_and_a_wrong_header_are_refused() -> None:
    with pytest.raises(SpecError, match="line 2"):
        parse_actuals(HEAD + "demand,e,p,2027Q1,1\ndemand,e,p,2027Q1,2\n")
    with pytest.raises(SpecError, match="header"):
        parse_actuals("site,value\n")
