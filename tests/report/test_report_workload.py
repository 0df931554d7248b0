"""The report's workload section and the heat-map PNG encoder."""

from __future__ import annotations

import re
import struct
import zlib

import numpy as np
from scipy import sparse

from clusterloom.pipeline import run_design
from clusterloom.report import render_report
from clusterloom.spec import parse_spec
from clusterloom.workload.heatmap import block_sums, colourise, png
from helpers import job_spec


def _decode_png(data: bytes) -> tuple[int, int, bytes]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    return width, height, zlib.decompress(idat)


def test_png_round_trip() -> None:
    rgb = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    width, height, raw = _decode_png(png(rgb, scale=2))
    assert (width, height) == (6, 4)
    rows = [raw[i * (1 + 18) : (i + 1) * (1 + 18)] for i in range(4)]
    assert all(r[0] == 0 for r in rows)  # filter type none
    pixels = np.frombuffer(b"".join(r[1:] for r in rows), dtype=np.uint8).reshape(4, 6, 3)
    assert np.array_equal(pixels[::2, ::2], rgb)


def test_block_sums_conserve_bytes_and_colours_order_by_volume() -> None:
    m = sparse.csr_matrix(np.array([[0, 5, 0, 1], [5, 0, 0, 0], [0, 0, 0, 100], [1, 0, 100, 0]]))
    cells, size = block_sums(m, 4, 2)
    assert size == 2 and cells.sum() == m.sum()
    assert cells.tolist() == [[10.0, 1.0], [1.0, 200.0]]
    rgb = colourise(cells)
    assert rgb[1, 1].tolist() == [253, 231, 37]  # busiest: top of the ramp
    assert rgb[0, 1].tolist() == [68, 1, 84]  # least: bottom


def test_report_has_a_workload_section_with_an_inline_heat_map() -> None:
    html = render_report(run_design(parse_spec(job_spec())))
    assert '<section id="workload">' in html
    assert "Biggest communication costs" in html
    # the PNG is an <image> of the SVG that draws its axes and colour scale
    assert re.search(r'<image [^>]*href="data:image/png;base64,[A-Za-z0-9+/=]+"', html)
    assert not re.search(r"(src|href)=\"https?:", html)


def test_workload_section_breaks_the_step_down_beside_its_bounds() -> None:
    """The step table reads StepTime.breakdown: compute, bubble with its schedule, optimizer,
    exposed communication per dimension, the step, each beside its bandwidth bound; the lead
    gives MFU, HFU, TFLOP/s per accelerator and the roofline bound; memory per stage."""
    design = run_design(parse_spec(job_spec(compute={"peak_tflops": 1000})))
    html = render_report(design)
    section = html[html.index('<section id="workload">') :]
    section = section[: section.index("</section>")]
    step = section[section.index('id="workload-step"') :]
    step = step[: step.index("</table>")]
    w = design.workload
    assert w is not None
    for label, _, _ in w.timing.breakdown():
        assert label in step
    assert "interleaved 1F1B, v=2" in step and "exposed TP communication" in step
    assert f"MFU {w.timing.mfu:.1%}" in section and "model TFLOP/s per accelerator" in section
    assert "roofline bound" in section and 'id="workload-memory"' in section
