"""What an architect reads off the report must be true and readable: floor plans with row labels,
positions and a scale bar; free positions that are free; the quality of a placement bound next
to its gap; heat maps with axes and a colour scale; the simulation drawn over the window where
things happen, with the assumption behind a number stated next to it; the terminal and the page
reading the same figures; a table of contents that reaches every section."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from clusterloom import Design
from clusterloom.cli.main import app
from clusterloom.pipeline import run_design
from clusterloom.placement.floor import FREE
from clusterloom.placement.solve import BOUND_NOTES, bound_quality
from clusterloom.report import render_report
from clusterloom.report.placement import hall_svg
from clusterloom.report.simulation import render_simulation, window_of
from clusterloom.sim.flow.results import Run
from clusterloom.sim.flow.run import compare, parse_failure, run, summarize
from clusterloom.sim.flow.transports import transport
from clusterloom.sim.paths import build_router
from clusterloom.sim.traffic import permutation
from clusterloom.spec import parse_spec
from clusterloom.units import PS_PER_S, PS_PER_US
from helpers import MINIMAL_SPEC, kport_plan, spec_yaml, switch_entry


def _hall(name: str) -> dict[str, object]:
    template = {"rows": 2, "positions_per_row": 6, "pitch_m": 1.0, "origin_m": [0.5, 1.0]}
    return {"name": name, "width_m": 20, "depth_m": 12, "template": template}


@pytest.fixture(scope="module")
def campus() -> Design:
    """Two buildings of one hall each (2 rows of 6 positions): the tiny fabric's racks."""
    doc = yaml.safe_load(MINIMAL_SPEC)
    doc["site"] = {
        "buildings": [
            {"name": "b1", "halls": [_hall("h1")]},
            {"name": "b2", "x_m": 150, "halls": [_hall("h1")]},
        ]
    }
    return run_design(parse_spec(yaml.safe_dump(doc)), compare=False)


@pytest.fixture(scope="module")
def campus_page(campus: Design) -> str:
    return render_report(campus)


def _section_ids(page: str) -> list[str]:
    return re.findall(r'<section id="([^"]+)"', page)


def test_floor_plan_labels_rows_and_positions_as_text(campus: Design) -> None:
    p = campus.placement
    assert p is not None
    for h in range(p.floor.n_halls):
        svg = hall_svg(p, h)
        rows = np.unique(p.floor.pos_row[p.floor.hall_positions(h)])
        labels = re.findall(r'<text class="row-label"[^>]*>([^<]+)</text>', svg)
        assert labels == [p.floor.row_names[r].rsplit("/", 1)[1] for r in rows]
        written = re.findall(r'<text class="pos"[^>]*>([^<]+)</text>', svg)
        here = p.floor.hall_positions(h)
        assert written == [p.floor.pos_names[q].rsplit("/", 1)[1] for q in here.tolist()]
        for rack in np.flatnonzero(p.floor.pos_hall[p.rack_position] == h).tolist():
            assert f"<title>{p.rack_names[rack]}: " in svg  # the rack's full name


def test_floor_plan_has_a_scale_bar_with_its_length(campus: Design) -> None:
    p = campus.placement
    assert p is not None
    svg = hall_svg(p, 0)
    m = re.search(r'<g class="scale-bar" data-metres="([\d.]+)">(.*?)</g>', svg)
    assert m, "no scale bar"
    metres, bar = float(m.group(1)), m.group(2)
    assert f">{metres:g} m</text>" in bar
    widths = [float(w) for w in re.findall(r'<rect [^>]*?\swidth="([\d.]+)"', bar)]
    # 1 m between the centres of neighbouring positions (pitch_m): the bar's pixels per metre
    xs = p.floor.pos_x[p.floor.hall_positions(0)]  # the first two: neighbours in a row
    px = [float(x) for x in re.findall(r'<text class="pos" x="([\d.]+)"', svg)][:2]
    per_m = (px[1] - px[0]) / float(xs[1] - xs[0])
    assert sum(widths) == pytest.approx(metres * per_m, abs=0.2)


def test_feeds_are_told_apart_by_line_style_not_role_colours(campus: Design) -> None:
    from clusterloom.report.placement import FEED_STYLES, ROLE_COLOURS

    assert not {c for c, _ in FEED_STYLES} & set(ROLE_COLOURS.values())
    assert len({s for s in FEED_STYLES}) == len(FEED_STYLES)


def test_free_positions_count_the_free_positions(campus: Design, campus_page: str) -> None:
    p = campus.placement
    assert p is not None
    f = p.floor
    taken = np.zeros(f.n_positions, dtype=bool)
    taken[p.rack_position] = True
    for h in range(f.n_halls):
        here = f.pos_hall == h
        expected = int(((f.pos_state == FREE) & ~taken & here).sum())
        assert int(p.free_positions[h]) == expected
    table = campus_page.split('id="placement-halls"')[1].split("</table>")[0]
    cells = re.findall(
        r"<tr><td><a [^>]*>([^<]+)</a></td><td[^>]*>([\d,]+)</td><td[^>]*>([\d,]+)", table
    )
    assert len(cells) == f.n_halls
    for h, (name, racks, free) in enumerate(cells):
        assert name == f.hall_names[h]
        assert int(free.replace(",", "")) == int(p.free_positions[h])
        usable = int(((f.pos_state == FREE) & (f.pos_hall == h)).sum())
        assert int(free.replace(",", "")) == usable - int(racks.replace(",", ""))


def test_campus_overview_links_every_drawn_hall(campus: Design, campus_page: str) -> None:
    p = campus.placement
    assert p is not None
    overview = campus_page.split('id="campus-overview"')[1].split("</svg>")[0]
    for name in p.floor.hall_names:
        anchor = "hall-" + name.replace("/", "-")
        assert f'data-hall="{name}" href="#{anchor}">' in overview
        assert f'id="{anchor}"' in campus_page
    assert campus_page.index('id="campus-overview"') < campus_page.index('class="floor"')


@pytest.mark.parametrize(
    ("gap", "status", "quality"),
    [
        (0.0, "feasible", "proven optimal"),
        (0.2, "optimal", "proven optimal"),
        (0.03, "feasible", "tight"),
        (0.2, "feasible", "loose"),
        (0.85, "feasible", "weak"),
    ],
)
def test_bound_quality(gap: float, status: str, quality: str) -> None:
    assert bound_quality(gap, status) == quality
    assert quality in BOUND_NOTES


def test_bound_quality_is_stated_next_to_the_gap(campus: Design, campus_page: str) -> None:
    p = campus.placement
    assert p is not None
    solves = campus_page.split('id="placement-solves"')[1].split("</table>")[0]
    assert "<th>Bound quality</th>" in solves
    for s in p.solves:
        gap = re.escape(f"{s.gap * 100:.2f}%")
        assert re.search(rf"<td[^>]*>{gap}</td><td>{re.escape(s.bound_quality)}</td>", solves)
    assert f"{p.bound_quality} bound: {BOUND_NOTES[p.bound_quality]}" in campus_page


def test_table_of_contents_links_every_section(campus_page: str) -> None:
    nav = campus_page.split('<nav class="toc"')[1].split("</nav>")[0]
    links = re.findall(r'<a href="#([^"]+)">', nav)
    assert links == _section_ids(campus_page)
    assert {"summary", "placement", "cabling", "bom", "findings"} <= set(links)


def test_report_is_deterministic(campus: Design, campus_page: str) -> None:
    assert render_report(campus) == campus_page


def test_traffic_matrix_has_axes_and_a_colour_scale() -> None:
    from test_report_workload import job_spec

    page = render_report(run_design(parse_spec(job_spec())))
    svg = page.split('<svg id="traffic-matrix"')[1].split("</svg>")[0]
    assert '<text class="x-label"' in svg and ">destination rank</text>" in svg
    assert '<text class="y-label"' in svg and ">source rank</text>" in svg
    assert svg.count('class="x-tick"') >= 2 and svg.count('class="y-tick"') >= 2
    scale = svg.split('<g class="colour-scale">')[1]
    assert "bytes / step (log)" in scale and 'fill="url(#traffic-matrix-ramp)"' in scale
    assert len(re.findall(r">[\d.,]+ [kMGT]?i?B</text>", scale)) >= 2


# --- simulation -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stalled() -> tuple[list[Run], tuple[object, ...], tuple[object, ...]]:
    """roce-ecmp, mrc-spray and ideal with a leaf-spine link down for good at 20 µs: roce-ecmp
    waits its assumed 1 s reroute, the others finish within microseconds."""
    topology_ = __import__("clusterloom.fabric.topology", fromlist=["generate"]).generate(
        kport_plan(32, 8, speed_gbps=100)
    )
    router = build_router(topology_)
    traffic = permutation(32, 1_000_000, seed=1)
    link = int(np.flatnonzero(topology_.link_tier == 2)[0])
    failures = (parse_failure(f"link:{link}@20us", topology_),)
    chosen = [transport(n) for n in ("roce-ecmp", "mrc-spray", "ideal")]
    runs = []
    for tr in chosen:
        res = run(
            topology_,
            traffic,
            tr,
            failures,
            router=router,
            watch_links=2 * np.flatnonzero(topology_.link_tier >= 2),
        )
        runs.append(Run(tr.name, traffic, res, router.capacity_bytes()))
    compared = compare([summarize(r.transport, r.result) for r in runs], chosen, failures)
    return runs, failures, compared


def test_simulation_chart_ends_at_the_window_not_at_the_reroute(stalled) -> None:  # type: ignore[no-untyped-def]
    runs, failures, compared = stalled
    assert max(r.result.finish_ps.max() for r in runs) > PS_PER_S  # roce-ecmp's 1 s reroute
    window = window_of(runs, failures)
    assert window.end_ps < PS_PER_S // 100
    assert [name for name, _ in window.beyond] == ["roce-ecmp"]
    page = render_simulation("x", runs, failures, compared=compared)
    end = float(re.search(r'data-x-end-us="([\d.e+]+)"', page).group(1))  # type: ignore[union-attr]
    assert end == pytest.approx(window.end_ps / PS_PER_US, rel=1e-3)
    assert end < 1e6
    assert "roce-ecmp goes on to" in page
    heat = page.split('<svg id="util-heatmap"')[1].split("</svg>")[0]
    assert ">time (µs)</text>" in heat and '<g class="colour-scale">' in heat
    assert ">100%</text>" in heat and ">0%</text>" in heat


def test_simulation_states_the_assumption_next_to_the_number(stalled) -> None:  # type: ignore[no-untyped-def]
    runs, failures, compared = stalled
    page = render_simulation("x", runs, failures, compared=compared)
    row = page.split("<td>roce-ecmp</td>")[1].split("</tr>")[0]
    assert "roce-ecmp.reroute_s=1" in row and "reroutes 1 s after a failure" in row
    assert re.search(r"[\d,.]+\u00d7</td>", row)  # the ratio it drives, in the same row
    nav = page.split('<nav class="toc"')[1].split("</nav>")[0]
    assert re.findall(r'<a href="#([^"]+)">', nav) == _section_ids(page)


def test_terminal_and_page_read_the_same_figures(tmp_path: Path) -> None:
    """One host port down for good: its flows never finish, so neither the terminal nor the
    page may show a completion or a ratio to the ideal for any transport."""
    spec = tmp_path / "tiny.yaml"
    spec.write_text(
        spec_yaml(
            accelerators=32,
            accelerators_per_node=1,
            port_speed_gbps=100,
            switch="kport",
            family="fat-tree",
            catalog_switches={"kport": switch_entry(8, 100)},
        )
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "simulate",
            str(spec),
            "--transport",
            "mrc-spray,ideal",
            "--size",
            "1MB",
            "--fail",
            "link:40@20us",
            "--fail",
            "port:3:0@10us",
            "-o",
            str(out),
        ],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 3, result.output  # flows of host 3 never finish
    page = (out / "simulation.html").read_text()
    for name in ("mrc-spray", "ideal"):
        line = next(x for x in result.output.splitlines() if x.strip("│ ").startswith(name))
        terminal = [c.strip() for c in line.split("│")[1:-1]]
        row = page.split(f"<td>{name}</td>")[1].split("</tr>")[0]
        cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>.*?</td>", row)]
        assert terminal[1:6] == [c.replace("\u2013", "-") for c in cells[:5]]
        assert terminal[6] == cells[5].replace("\u2013", "-").replace("\u00d7", "x")
        assert terminal[2] == "-"  # unfinished: no completion in either


def test_watched_links_heat_map_ranks_links_by_load(stalled) -> None:  # type: ignore[no-untyped-def]
    from clusterloom.report.simulation import _heat_cells
    from clusterloom.sim.flow.results import grid, utilisation

    runs, failures, _ = stalled
    r = runs[0]
    edges = grid(window_of(runs, failures).end_ps, 50)
    u = utilisation(r.result, r.capacity, edges_ps=edges)
    n = u.matrix.shape[1]
    cells, size = _heat_cells(u, rows=n)  # one row per link
    assert size == 1 and cells.shape == (n, 50)
    means = cells.mean(axis=1)
    assert np.all(np.diff(means) <= 1e-12)  # the busiest at the top
    assert means[0] > means[-1]  # a spread, not a block
    # the same cells as the matrix, only reordered
    assert sorted(cells.sum(axis=1).round(9)) == sorted(u.matrix.sum(axis=0).round(9))


def test_fibres_between_buildings_are_labelled_and_to_scale() -> None:
    """Two buildings 200 m apart of one hall of 2 positions each: the tiny fabric's racks
    cannot all stand in one building, so fibres cross the campus."""
    from xml.etree import ElementTree

    from clusterloom.cabling import SEGMENT_KINDS
    from clusterloom.report._svg import standalone
    from clusterloom.report.cabling import campus_svg

    doc = yaml.safe_load(MINIMAL_SPEC)
    small = {"rows": 1, "positions_per_row": 2, "pitch_m": 1.0, "origin_m": [0.5, 1.0]}
    hall = {"name": "h1", "width_m": 10, "depth_m": 6, "template": small}
    doc["site"] = {
        "buildings": [
            {"name": "b1", "halls": [hall]},
            {"name": "b2", "x_m": 200, "halls": [hall]},
        ]
    }
    c = run_design(parse_spec(yaml.safe_dump(doc)), compare=False).cabling
    assert c is not None
    pw = c.pathways
    root = ElementTree.fromstring(standalone(campus_svg(c)))
    ns = "{http://www.w3.org/2000/svg}"
    routes = [e for e in root.iter(f"{ns}line") if e.get("class") == "route"]
    segs = np.flatnonzero(pw.seg_kind == SEGMENT_KINDS.index("campus"))
    assert [int(str(e.get("data-fibres"))) for e in routes] == c.seg_fibers[segs].tolist()
    total = int(c.seg_fibers[segs].sum())
    assert total > 0
    texts = [t.text for t in root.iter(f"{ns}text")]
    assert f"Fibres between buildings: {total:,} over 1 campus route(s)" in texts
    # drawn to the scale bar: the entrances' distance in pixels over the bar's pixels per metre
    bar = next(g for g in root.iter(f"{ns}g") if g.get("class") == "scale-bar")
    metres = float(str(bar.get("data-metres")))
    px = sum(float(str(r.get("width"))) for r in bar.iter(f"{ns}rect"))
    (line,) = routes
    drawn = np.hypot(
        float(str(line.get("x2"))) - float(str(line.get("x1"))),
        float(str(line.get("y2"))) - float(str(line.get("y1"))),
    )
    a, b = pw.node_xy[pw.building_entrance[0]], pw.node_xy[pw.building_entrance[1]]
    assert drawn / (px / metres) == pytest.approx(float(np.hypot(*(b - a))), rel=0.01)
