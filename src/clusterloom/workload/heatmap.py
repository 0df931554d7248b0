"""The traffic matrix as a heat-map picture: a PNG encoded here with zlib (no plotting library).

The matrix is summed into at most ``blocks x blocks`` cells of consecutive ranks, shown on a
logarithmic colour scale (dark: no traffic; yellow: the busiest cell).
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

import numpy as np
from numpy.typing import NDArray

# a perceptually ordered ramp (after viridis), RGB at evenly spaced stops
_RAMP = np.array(
    [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]], dtype=np.float64
)
_EMPTY = np.array([245, 245, 245], dtype=np.float64)


def block_sums(matrix: Any, world: int, blocks: int) -> tuple[NDArray[np.float64], int]:
    """Sum a sparse ``world x world`` matrix into ``ceil(world / size)`` square cells of ``size``
    consecutive ranks; returns the cells and ``size``."""
    size = max(1, -(-world // blocks))
    n = -(-world // size)
    coo = matrix.tocoo()
    cells = np.zeros((n, n), dtype=np.float64)
    np.add.at(cells, (coo.row // size, coo.col // size), coo.data)
    return cells, size


def colourise(cells: NDArray[np.float64]) -> NDArray[np.uint8]:
    """RGB image of ``cells`` on a log scale; zero cells are light grey."""
    out = np.empty((*cells.shape, 3), dtype=np.float64)
    positive = cells > 0
    out[:] = _EMPTY
    if positive.any():
        logs = np.log10(cells[positive])
        lo, hi = logs.min(), logs.max()
        t = (logs - lo) / (hi - lo) if hi > lo else np.ones_like(logs)
        pos = t * (len(_RAMP) - 1)
        i = np.minimum(pos.astype(int), len(_RAMP) - 2)
        frac = (pos - i)[:, None]
        out[positive] = _RAMP[i] * (1 - frac) + _RAMP[i + 1] * frac
    return np.rint(out).astype(np.uint8)


def png(rgb: NDArray[np.uint8], scale: int = 1) -> bytes:
    """Encode an RGB image as PNG, each pixel enlarged to ``scale x scale``."""
    img = np.repeat(np.repeat(rgb, scale, axis=0), scale, axis=1)
    h, w, _ = img.shape
    raw = b"".join(b"\x00" + img[row].tobytes() for row in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def heatmap_png(matrix: Any, world: int, blocks: int = 256, pixels: int = 512) -> bytes:
    """The traffic matrix as a PNG about ``pixels`` wide."""
    cells, _ = block_sums(matrix, world, blocks)
    return png(colourise(cells), scale=max(1, pixels // cells.shape[0]))
