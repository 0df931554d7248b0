"""CSV text built from columns of arrays: millions of rows without a Python object per row
until the last join, written atomically in chunks."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from clusterloom.export.atomic import atomic_open


def obj(values: Sequence[Any]) -> NDArray[np.object_]:
    """A 1-D object array of ``values`` (strings stay Python strings, for fast joins)."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def csv_text(cols: Sequence[NDArray[Any]]) -> str:
    """Rows of equal-length columns as CSV text (values are written as they are: the caller
    formats numbers and quotes what needs quoting)."""
    m = cols[0].shape[0]
    pieces = np.empty((m, 2 * len(cols)), dtype=object)
    for j, col in enumerate(cols):
        pieces[:, 2 * j] = col
        pieces[:, 2 * j + 1] = ","
    pieces[:, -1] = "\n"
    return "".join(str(x) for x in pieces.ravel().tolist())


def csv_chunks(cols: Sequence[NDArray[Any]], chunk: int = 1 << 18) -> Iterator[str]:
    """:func:`csv_text` of ``chunk`` rows at a time."""
    for start in range(0, cols[0].shape[0], chunk):
        yield csv_text([np.asarray(c[start : start + chunk], dtype=object) for c in cols])


def write_chunks(path: Path, header: tuple[str, ...], chunks: Iterator[str]) -> Path:
    """The header and the text chunks to ``path``, atomically."""
    with atomic_open(path, "w") as fh:
        fh.write(",".join(header) + "\n")
        for chunk in chunks:
            fh.write(chunk)
    return path
