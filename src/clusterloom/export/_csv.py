"""CSV text built from columns of arrays: millions of rows without a Python object per row
until the last join, written atomically in chunks.

Every CSV file of the exports is written here, by RFC 4180 rules: a field holding a comma, a
double quote, a carriage return or a line feed is enclosed in double quotes with its quotes
doubled; every other field is written as it is (as :func:`csv.writer` does with
``QUOTE_MINIMAL`` and ``lineterminator="\\n"``, which in Python 3.11 misses a lone carriage
return).

The column path's check is vectorised: a column's text is joined once and searched for those
four characters, and only the fields that hold one are rewritten, so a column of names (which
never needs quoting) costs a join and four scans.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from clusterloom.atomic import StrPath, atomic_open

#: Characters that make a field quoted (RFC 4180; ``csv.writer`` with ``QUOTE_MINIMAL``).
SPECIAL = (",", '"', "\r", "\n")
_SPECIAL_CODES = np.array([ord(ch) for ch in SPECIAL], dtype=np.uint32)


def obj(values: Sequence[Any]) -> NDArray[np.object_]:
    """A 1-D object array of ``values`` (strings stay Python strings, for fast joins)."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def quote(field: str) -> str:
    """``field`` as one CSV field: quoted (quotes doubled) when it holds a comma, a double quote
    or a line break, else unchanged."""
    if "," in field or '"' in field or "\n" in field or "\r" in field:
        return '"' + field.replace('"', '""') + '"'
    return field


def csv_line(fields: Iterable[object]) -> str:
    """One CSV row with its line feed, as :func:`csv.writer` writes it (``None`` is an empty
    field; a row of one empty field is ``""``), except that a field holding a lone carriage
    return is quoted too (Python 3.11's writer leaves it bare with ``lineterminator="\\n"``,
    which its own reader then rejects)."""
    out = ["" if f is None else quote(str(f)) for f in fields]
    if out == [""]:
        return '""\n'
    return ",".join(out) + "\n"


def write_rows(path: StrPath, header: Sequence[str], rows: Iterable[Iterable[object]]) -> Path:
    """A CSV file of ``header`` and ``rows`` (quoted by :func:`csv_line`), atomically; return
    its path."""
    with atomic_open(path, "w", newline="") as fh:
        fh.write(csv_line(header))
        for row in rows:
            fh.write(csv_line(row))
    return Path(path)


#: A column of :func:`csv_text`: an array of values, a string (the same in every row), or one
#: field made of several parts laid end to end (arrays of equal length and constant strings),
#: such as ``("to ", device, " ", port)``.
Column = NDArray[Any] | str | tuple[NDArray[Any] | str, ...]


def _strings(col: NDArray[Any]) -> tuple[NDArray[Any], str]:
    """``col`` as values that join as text (the array itself when it holds strings), and its
    text joined (empty for numbers, which never need quoting)."""
    if col.dtype.kind in "biuf":
        return obj(list(map(str, col.tolist()))), ""
    values = col.tolist()
    try:
        return col, "".join(values)  # a TypeError when a value is not a string
    except TypeError:
        text = list(map(str, values))
        return obj(text), "".join(text)


def _quoted(values: NDArray[Any], text: str) -> NDArray[Any]:
    """``values`` (whose joined text is ``text``) with the fields that hold a special character
    quoted. Only those fields are touched: the positions of the special characters in the
    joined text map to fields by the running length of the fields."""
    if not any(ch in text for ch in SPECIAL):
        return values
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    at = np.flatnonzero(np.isin(codes, _SPECIAL_CODES))
    ends = np.cumsum(np.fromiter(map(len, values.tolist()), dtype=np.int64, count=len(values)))
    out = np.array(values, dtype=object)
    for i in np.unique(np.searchsorted(ends, at, side="right")).tolist():
        out[i] = '"' + str(out[i]).replace('"', '""') + '"'
    return out


def csv_fields(col: NDArray[Any]) -> NDArray[Any]:
    """The values of ``col`` as CSV fields (``str`` of each, quoted where needed)."""
    return _quoted(*_strings(col))


def _parts(col: Column, m: int) -> list[NDArray[Any] | str]:
    """The pieces one column puts in each row: its quoted field, or the parts of a composite
    field as they are when none holds a special character (else the field they make, quoted)."""
    if isinstance(col, str):
        return [quote(col)]
    if not isinstance(col, tuple):
        return [csv_fields(col)]
    parts: list[tuple[NDArray[Any] | str, str]] = [
        (p, p) if isinstance(p, str) else _strings(p) for p in col
    ]
    if not any(ch in text for _, text in parts for ch in SPECIAL):
        return [p for p, _ in parts]
    return [csv_fields(_joined([p for p, _ in parts], m))]


def _joined(parts: Sequence[NDArray[Any] | str], m: int) -> NDArray[np.object_]:
    """The ``m`` strings that ``parts`` (arrays of strings and constants) make end to end."""
    lists = [[p] * m if isinstance(p, str) else p.tolist() for p in parts]
    return obj(list(map("".join, zip(*lists, strict=True))))


def csv_text(cols: Sequence[Column]) -> str:
    """Rows of equal-length columns as CSV text, each field quoted as :func:`csv.writer` would
    (the caller formats numbers). Every row is laid out as pieces (fields, parts of composite
    fields, separators) in one object matrix joined once."""
    m = next(
        p.shape[0]
        for c in cols
        for p in (c if isinstance(c, tuple) else (c,))
        if not isinstance(p, str)
    )  # (at least one column is an array)
    if m == 0:
        return ""
    fields = [_parts(col, m) for col in cols]
    if len(fields) == 1:  # a row of one empty field is "" (an empty line is no row)
        joined = _joined(fields[0], m)
        fields = [[np.where(joined == "", '""', joined).astype(object)]]
    pieces = np.empty((m, sum(len(f) for f in fields) + len(fields)), dtype=object)
    k = 0
    for f in fields:
        for part in f:
            pieces[:, k] = part
            k += 1
        pieces[:, k] = ","
        k += 1
    pieces[:, -1] = "\n"
    return "".join(pieces.ravel().tolist())


def csv_chunks(cols: Sequence[NDArray[Any]], chunk: int = 1 << 18) -> Iterator[str]:
    """:func:`csv_text` of ``chunk`` rows at a time."""
    for start in range(0, cols[0].shape[0], chunk):
        yield csv_text([c[start : start + chunk] for c in cols])


def write_chunks(path: Path, header: tuple[str, ...], chunks: Iterator[str]) -> Path:
    """The header and the text chunks to ``path``, atomically."""
    with atomic_open(path, "w", newline="") as fh:
        fh.write(csv_line(header))
        for chunk in chunks:
            fh.write(chunk)
    return path
