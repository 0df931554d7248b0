"""What happened (issue 22, parts 4-6): realised figures a plan's forecasts and sources are
held against. Reconciliation grades a source's trust per field by how often it agreed with
them; learning fits each forecast source's bias and spread from them; a decision's outcome
records them.

An actuals file is CSV with the header ``quantity,site,program,period,value`` and one realised
figure a row:

- ``demand``: accelerators running at ``site`` for ``program`` by the end of ``period``
  (cumulative, as forecasts are);
- ``it_power_kw``: IT power available at ``site`` by the end of ``period`` (``program``
  empty);
- ``ready``: 1 when ``site`` (a hall: ``site/hall``) was ready for fit-out by the end of
  ``period``, else 0 (``program`` empty).

- ``delivered`` (issue 22 item 6: lead-time learning): ``value`` units of ``part`` (a plan's
  part id, ``switch:sn5600``) ordered for ``site`` in ``period`` arrived in quarter
  ``delivered`` (``program`` empty). Its delivered lead is ``delivered - period`` quarters.

``period`` is a quarter label (``2027Q1``). The header may go on with the two optional
columns ``part,delivered`` (``quantity,site,program,period,value,part,delivered``): a
``delivered`` row fills both (``delivered`` a quarter label, not before ``period``), every
other row leaves them empty. Every refusal names the line and the column.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from clusterloom.capacity.input import quarter_index
from clusterloom.errors import Problem, SpecError

__all__ = [
    "ACTUALS_HEADER",
    "DELIVERY_COLUMNS",
    "Actual",
    "Quantity",
    "parse_actuals",
    "read_actuals",
]

Quantity = Literal["demand", "it_power_kw", "ready", "delivered"]
ACTUALS_HEADER = ("quantity", "site", "program", "period", "value")
#: the optional columns of a ``delivered`` row
DELIVERY_COLUMNS = ("part", "delivered")
#: the most rows an actuals file may hold
MAX_ROWS = 1_000_000


@dataclass(frozen=True, order=True)
class Actual:
    quantity: Quantity
    site: str
    program: str  #: empty for a quantity of a site
    period: str  #: quarter label, ``2027Q1``
    value: float
    part: str = ""  #: a ``delivered`` row's part id, else empty
    delivered: str = ""  #: a ``delivered`` row's quarter of arrival, else empty

    @property
    def quarter(self) -> int:
        return quarter_index(self.period)

    @property
    def lead(self) -> int:
        """A ``delivered`` row's delivered lead: quarters from order to arrival."""
        return quarter_index(self.delivered) - quarter_index(self.period)

    def as_list(self) -> list[str | float]:
        """The row as an outcome record keeps it (the two delivery columns only when set)."""
        head: list[str | float] = [self.quantity, self.site, self.program, self.period, self.value]
        return [*head, self.part, self.delivered] if self.part else head


def parse_actuals(text: str, source: str = "<actuals>") -> tuple[Actual, ...]:
    """The rows of an actuals file, sorted; ``SpecError`` with one problem per bad line."""
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    names = tuple(h.strip() for h in header) if header is not None else ()
    if names not in (ACTUALS_HEADER, ACTUALS_HEADER + DELIVERY_COLUMNS):
        raise SpecError(
            [
                Problem(
                    f"{source}:1",
                    f"the header must be {','.join(ACTUALS_HEADER)} (optionally followed by "
                    f"{','.join(DELIVERY_COLUMNS)} for delivered rows)",
                )
            ]
        )
    width = len(names)
    problems: list[Problem] = []
    rows: list[Actual] = []
    seen: dict[tuple[str, str, str, str, str], int] = {}
    for n, row in enumerate(reader, start=2):
        if not row or all(not c.strip() for c in row):
            continue
        if n - 1 > MAX_ROWS:
            problems.append(Problem(f"{source}:{n}", f"more than {MAX_ROWS:,} rows"))
            break
        where = f"{source}:{n}"
        if len(row) != width:
            problems.append(Problem(where, f"{len(row)} columns; expected {width}"))
            continue
        cells = [c.strip() for c in row] + ["", ""][: len(ACTUALS_HEADER) + 2 - width]
        quantity, site, program, period, value_text, part, delivered = cells
        if quantity not in get_args(Quantity):
            problems.append(
                Problem(f"{where} quantity", f"'{quantity}' is not one of {get_args(Quantity)}")
            )
            continue
        if not site:
            problems.append(Problem(f"{where} site", "name the site"))
            continue
        if (quantity == "demand") != bool(program):
            problems.append(
                Problem(
                    f"{where} program",
                    "demand names its program; power, readiness and deliveries leave it empty",
                )
            )
            continue
        if quantity == "delivered":
            if width == len(ACTUALS_HEADER):
                problems.append(
                    Problem(
                        where,
                        "a delivered row needs the columns part,delivered: add them to the header",
                    )
                )
                continue
            if not re.fullmatch(r"[a-z-]+:.+", part):
                problems.append(
                    Problem(f"{where} part", f"'{part}' is not a part id like switch:sn5600")
                )
                continue
        elif part or delivered:
            problems.append(
                Problem(f"{where} part", "only a delivered row fills part and delivered")
            )
            continue
        try:
            quarter_index(period)
        except ValueError:
            problems.append(Problem(f"{where} period", f"'{period}' is not a quarter like 2027Q1"))
            continue
        if quantity == "delivered":
            try:
                arrived = quarter_index(delivered)
            except ValueError:
                problems.append(
                    Problem(f"{where} delivered", f"'{delivered}' is not a quarter like 2027Q3")
                )
                continue
            if arrived < quarter_index(period):
                problems.append(
                    Problem(
                        f"{where} delivered",
                        f"{delivered} is before {period}, the quarter it was ordered in",
                    )
                )
                continue
        try:
            value = float(value_text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0 or (quantity == "ready" and value not in (0, 1)):
            problems.append(
                Problem(
                    f"{where} value",
                    f"'{value_text}' is not "
                    + ("0 or 1" if quantity == "ready" else "a number of at least 0"),
                )
            )
            continue
        key = (quantity, site, program, period, part + "@" + delivered)
        if key in seen:
            problems.append(Problem(where, f"the same figure as line {seen[key]}"))
            continue
        seen[key] = n
        rows.append(
            Actual(quantity, site, program, period, value, part, delivered)  # type: ignore[arg-type]
        )
    if problems:
        raise SpecError(problems)
    return tuple(sorted(rows))


def read_actuals(path: str | Path) -> tuple[Actual, ...]:
    p = Path(path)
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError([Problem(str(p), f"cannot read it: {exc}")]) from exc
    return parse_actuals(text, str(p))
