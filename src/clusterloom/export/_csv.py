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

from clusterloom.export.atomic import StrPath, atomic_open

#: Characters that make :func:`csv.writer` (``QUOTE_MINIMAL``) quote a field.
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


def csv_fields(col: NDArray[Any]) -> list[str]:
    """The values of ``col`` as CSV fields (``str`` of each, quoted where needed)."""
    if col.dtype.kind in "biuf":  # numbers never need quoting
        return list(map(str, col.tolist()))
    values: list[str] = list(map(str, col.tolist()))
    text = "".join(values)
    if not any(ch in text for ch in SPECIAL):
        return values
    # which fields hold a special character: their code points' positions in the joined text,
    # mapped to fields by the running length of the fields
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    at = np.flatnonzero(np.isin(codes, _SPECIAL_CODES))
    ends = np.cumsum(np.fromiter(map(len, values), dtype=np.int64, count=len(values)))
    for i in np.unique(np.searchsorted(ends, at, side="right")).tolist():
        values[i] = '"' + values[i].replace('"', '""') + '"'
    return values


def csv_text(cols: Sequence[NDArray[Any]]) -> str:
    """Rows of equal-length columns as CSV text, each field quoted as :func:`csv.writer` would
    (the caller formats numbers)."""
    m = cols[0].shape[0]
    if m == 0:
        return ""
    fields = [csv_fields(col) for col in cols]
    if len(fields) == 1:  # a row of one empty field is "" (an empty line is no row)
        fields[0] = [f or '""' for f in fields[0]]
    rows = map(",".join, zip(*fields, strict=True))
    return "\n".join(rows) + "\n"


def csv_chunks(cols: Sequence[NDArray[Any]], chunk: int = 1 << 18) -> Iterator[str]:
    """:func:`csv_text` of ``chunk`` rows at a time."""
    for start in range(0, cols[0].shape[0], chunk):
        yield csv_text([np.asarray(c[start : start + chunk]) for c in cols])


def write_chunks(path: Path, header: tuple[str, ...], chunks: Iterator[str]) -> Path:
    """The header and the text chunks to ``path``, atomically."""
    with atomic_open(path, "w", newline="") as fh:
        fh.write(csv_line(header))
        for chunk in chunks:
            fh.write(chunk)
    return path
