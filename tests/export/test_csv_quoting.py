"""Every CSV the exports write is a correct CSV (RFC 4180 quoting, the rules of ``csv.writer``),
whatever the text in it: the fast column path (``export._csv``), the row writer, and every file
of whole designs, one of them with catalog names full of commas and quotes."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from clusterloom.examples import example_text
from clusterloom.export._csv import csv_chunks, csv_line, csv_text, obj, write_chunks, write_rows
from clusterloom.pipeline import Design, run_design
from clusterloom.spec import parse_spec
from clusterloom.write import write_design
from helpers import SMALL_MODEL, design_of

#: Columns that name or identify the row's object: never empty where the header has them (nor
#: is the first column of any file; ``trunk`` is an id in ``trunks.csv`` only, the cut sheet
#: leaves it empty for a direct link).
ID_COLUMNS = frozenset(
    {
        "name",
        "device",
        "label",
        "segment",
        "rack",
        "model",
        "slug",
        "a_device",
        "a_port",
        "b_device",
        "b_port",
        "side_a_device",
        "side_a_name",
        "side_b_device",
        "side_b_name",
        "item",
    }
)


def _parse(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def _writer_text(rows: list[list[Any]]) -> str:
    buf = io.StringIO(newline="")
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


def _read_all(out: Path) -> dict[str, list[list[str]]]:
    """Every ``*.csv`` under ``out`` (by path relative to it), parsed by ``csv.reader``, each
    checked: a header of distinct names, every row as many fields as the header, no empty id
    (nor an empty first field)."""
    files: dict[str, list[list[str]]] = {}
    for path in sorted(out.rglob("*.csv")):
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh, strict=True))
        name = path.relative_to(out).as_posix()
        assert rows, name
        header = rows[0]
        assert len(set(header)) == len(header) and all(header), (name, header)
        for i, row in enumerate(rows[1:], start=2):
            assert len(row) == len(header), f"{name} line {i}: {len(row)} fields, {row}"
        # the first column names the row, except bom.csv's: its fabric is empty, by design, on
        # the plant the fabrics share (trunks, panels) and on the total
        first = [] if header[0] == "fabric" else [0]
        ids = [*first, *(j for j, h in enumerate(header) if h in ID_COLUMNS)]
        for row in rows[1:]:
            assert all(row[j] for j in ids), (name, row)
        files[name] = rows
    return files


def _column(rows: list[list[str]], name: str) -> list[str]:
    j = rows[0].index(name)
    return [r[j] for r in rows[1:]]


# -- the column path -------------------------------------------------------------------------

TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from([",", '"', "\n", "\r", " ", "\t", ";", "a", "é", "\u2028", "\U0001f600"]),
        st.characters(blacklist_categories=("Cs",)),
    ),
    max_size=12,
)


@st.composite
def _columns(draw: st.DrawFn) -> list[list[str]]:
    rows = draw(st.integers(0, 12))
    n = draw(st.integers(1, 5))
    return [draw(st.lists(TEXT, min_size=rows, max_size=rows)) for _ in range(n)]


@given(_columns(), st.integers(1, 5))
def test_csv_text_reads_back_exactly(columns: list[list[str]], chunk: int) -> None:
    cols = [obj(c) for c in columns]
    text = csv_text(cols)
    rows = [list(r) for r in zip(*columns, strict=True)]
    assert _parse(text) == rows
    assert "".join(csv_chunks(cols, chunk)) == text
    # csv.writer's own bytes, wherever it quotes correctly (Python 3.11 leaves a lone
    # carriage return bare with lineterminator "\n", which its reader then rejects)
    if not any("\r" in v for c in columns for v in c):
        assert text == _writer_text(rows)


@given(_columns(), TEXT)
def test_composite_fields_read_back(columns: list[list[str]], text: str) -> None:
    """A field made of parts end to end (``("to ", device, " ", port)``), alone or with others."""
    a, *rest = columns
    m = len(a)
    b = rest[0] if rest else [text] * m
    composite = ("to ", obj(a), text, obj(b))
    joined = [f"to {x}{text}{y}" for x, y in zip(a, b, strict=True)]
    assert _parse(csv_text([composite])) == [[v] for v in joined]
    cols = [obj(c) for c in rest]
    rows = [[*r, j] for r, j in zip(zip(*rest, strict=True), joined, strict=True)] if rest else []
    if rest:
        assert _parse(csv_text([*cols, composite])) == rows


@given(st.lists(st.integers(-(10**12), 10**12), min_size=1, max_size=20), TEXT)
def test_csv_text_mixes_numbers_and_text(numbers: list[int], text: str) -> None:
    m = len(numbers)
    cols = [
        np.array(numbers, dtype=np.int64),
        obj([text] * m),  # (np.full would drop trailing NULs: numpy strings strip them)
        np.array(numbers, dtype=np.float64) / 8,
    ]
    expected = [[str(x), text, str(x / 8)] for x in numbers]
    assert _parse(csv_text(cols)) == expected


@given(st.lists(st.one_of(TEXT, st.integers(), st.none()), min_size=1, max_size=6))
def test_csv_line_reads_back(fields: list[object]) -> None:
    line = csv_line(fields)
    assert line.endswith("\n")
    assert _parse(line) == [["" if f is None else str(f) for f in fields]]


def test_quoting_by_hand() -> None:
    cols = [obj(["a,b", 'say "hi"', "", "x\ny", " pad ", "\r"]), np.arange(6)]
    assert csv_text(cols) == (
        '"a,b",0\n"say ""hi""",1\n,2\n"x\ny",3\n pad ,4\n"\r",5\n'  # spaces need no quotes
    )
    assert csv_text([obj(["", "a"])]) == '""\na\n'  # one empty field is a row, not a blank
    assert csv_text(["same, always", obj(["x", "y"])]) == '"same, always",x\n"same, always",y\n'
    assert csv_text([obj([])]) == ""


def test_writers_quote_the_header(tmp_path: Path) -> None:
    header = ("plain", "with, comma", 'with "quote"')
    row = ("1", "2,3", '"4"')
    a = write_chunks(tmp_path / "a.csv", header, iter([csv_text([obj([v]) for v in row])]))
    b = write_rows(tmp_path / "b.csv", header, [row])
    for path in (a, b):
        with open(path, newline="") as fh:
            assert list(csv.reader(fh)) == [list(header), list(row)]


# -- whole designs ---------------------------------------------------------------------------


def test_every_csv_of_the_example_parses(tmp_path: Path) -> None:
    """``hgx-1k-roce`` (a site, so every file: placement, cabling, the NetBox plant):
    ``device_types_panels.csv`` had an unquoted comma in its description."""
    d = design_of(example_text("hgx-1k-roce"))
    write_design(d, tmp_path)
    files = _read_all(tmp_path)
    for name in (
        "bom.csv",
        "options.csv",
        "placement/racks.csv",
        "cabling/cut_sheet.csv",
        "cabling/trunks.csv",
        "netbox/devices.csv",
        "netbox/interfaces.csv",
        "netbox/cables.csv",
        "netbox/custom_fields.csv",
        "netbox/cables_plant.csv",
    ):
        assert len(files[name]) > 1, name
    x_m = files["netbox/custom_fields.csv"][1]
    assert x_m[:5] == [
        "x_m",
        "dcim.rack",
        "decimal",
        "x (m)",
        "rack centre across its hall, metres",
    ]


SWITCH = 'leaf, "fast"'
MEDIUM = 'sr8, "800g"\nlong reach'
VENDOR = 'Acme, "Inc"'
COMPUTE_RACK = 'hgx, "4"'
NETWORK_RACK = 'net,\r"48"'
PATCH_RACK = 'patch, "48"'


def _hostile_spec() -> dict[str, Any]:
    """32 GPUs over two halls, every switch, medium and rack a catalog entry whose name holds
    a comma, quotes and a line break; 800G parallel optics (two MPO legs: multi-port cords)."""
    template = {"rows": 2, "positions_per_row": 2, "pitch_m": 1.0, "origin_m": [0.5, 1.0]}
    return {
        "version": 1,
        "name": "hostile",
        "description": 'commas, "quotes"\nand lines',
        "compute": {
            "accelerators": 32,
            "accelerators_per_node": 8,
            "accelerator_model": 'H100, "SXM"',
            "scale_up": {"domain_size": 8, "bandwidth_gbps": 3600},
            "nic": {"ports_per_accelerator": 1, "port_speed_gbps": 800},
        },
        "fabrics": {
            "backend": {
                "switch": SWITCH,
                "media": {"host_leaf": MEDIUM, "leaf_spine": MEDIUM},
            }
        },
        "job": {
            "model": dict(SMALL_MODEL),
            "batch": {"global_batch": 64, "micro_batch": 1},
            "parallelism": {"tp": 2, "pp": 4},
            "compute": {"peak_tflops": 1000, "utilisation": 0.5},
        },
        "catalog": {
            "switches": {
                SWITCH: {"vendor": VENDOR, "ports": 64, "port_speed_gbps": 800, "power_w": 1000}
            },
            "media": {
                MEDIUM: {
                    "kind": "mmf",
                    "speed_gbps": 800,
                    "reach_m": 50,
                    "fibers": 16,
                    "power_w_per_end": 15,
                    "cost_usd_per_end": 900,
                    "cable_cost_usd": 90,
                }
            },
            "racks": {
                COMPUTE_RACK: {
                    "kind": "compute",
                    "servers": 4,
                    "server_ru": 8,
                    "first_u": 3,
                    "power_kw": 41,
                    "weight_kg": 1400,
                },
                NETWORK_RACK: {
                    "kind": "network",
                    "first_u": 3,
                    "usable_ru": 40,
                    "power_kw": 30,
                    "weight_kg": 180,
                },
                PATCH_RACK: {
                    "kind": "patch",
                    "power_kw": 1,
                    "weight_kg": 400,
                    "patch_ports": 1728,
                },
            },
        },
        "site": {
            "racks": {"compute": COMPUTE_RACK, "network": NETWORK_RACK, "patch": PATCH_RACK},
            "buildings": [
                {
                    "name": "b1",
                    "halls": [
                        {"name": f"h{i}", "width_m": 40, "depth_m": 30, "template": template}
                        for i in (1, 2)
                    ],
                }
            ],
        },
    }


@pytest.fixture(scope="module")
def hostile() -> Design:
    return run_design(parse_spec(yaml.safe_dump(_hostile_spec())))


def test_hostile_catalog_names_keep_every_csv_whole(
    hostile: Design, tmp_path_factory: pytest.TempPathFactory
) -> None:
    out = tmp_path_factory.mktemp("hostile")
    write_design(hostile, out)
    files = _read_all(out)
    assert "traffic_matrix.csv" in files

    cut = files["cabling/cut_sheet.csv"]
    assert len(cut) > 1 and set(_column(cut, "medium")) == {MEDIUM}
    assert set(_column(cut, "kind")) == {"mmf"}
    devices = files["netbox/devices.csv"]
    switches = [r for r in devices[1:] if r[1].endswith("-switch")]
    assert switches and {r[3] for r in switches} == {SWITCH}
    assert {r[2] for r in switches} == {VENDOR}
    servers = [r for r in devices[1:] if r[1] == "ai-server"]
    assert {r[3] for r in servers} == {'H100, "SXM" 8-accelerator server'}
    racks = files["placement/racks.csv"]
    assert {COMPUTE_RACK, NETWORK_RACK} <= set(_column(racks, "rack_type"))
    assert any(
        v.startswith(f"{COMPUTE_RACK}: ") for v in _column(files["netbox/racks.csv"], "description")
    )
    items = set(_column(files["bom.csv"], "item"))
    assert SWITCH in items and any(MEDIUM in i for i in items)
    assert any(MEDIUM in i for i in _column(files["cabling/bom.csv"], "item"))
    # a link of two MPO legs ends on two front ports, one field of NetBox's cable import
    ports = {p for p in _column(files["netbox/cables.csv"], "side_b_name") if "," in p}
    assert ports and all(p.count(",") == 1 and p.startswith("F") for p in ports)
