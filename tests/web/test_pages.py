"""The explorer's pages and JSON API on a real store: what each shows agrees with the store
and with the files the design was recorded from (read here with the csv module)."""

from __future__ import annotations

import csv
import hashlib
import html
import re

import pytest
from fastapi.testclient import TestClient
from web_helpers import World

from clusterloom.web.format import figure


@pytest.fixture
def c(reader: TestClient) -> TestClient:
    return reader


def _csv(world: World, design: str, name: str) -> list[dict[str, str]]:
    with (world.root / design / name).open(newline="") as f:
        return list(csv.DictReader(f))


def test_design_list_shows_each_design_and_its_figures(c: TestClient, world: World) -> None:
    page = c.get("/").text
    for d in (world.tight, world.campus):
        assert f'href="/designs/{d.id}"' in page
        for key in ("accelerators", "switches", "cost_usd", "power_w", "racks"):
            assert html.escape(figure(key, d.summary[key])) in page
    assert world.campus.summary["accelerators"] == 64


def test_the_design_page_links_every_hall_of_the_campus_picture(
    c: TestClient, world: World
) -> None:
    d = world.campus.id
    page = c.get(f"/designs/{d}").text
    for hall in ("b1/h1", "b2/h1"):
        assert f'data-hall="{hall}" href="/designs/{d}/halls/{hall}"' in page
        assert c.get(f"/designs/{d}/halls/{hall}").status_code == 200
    assert "fibres" in world.store.pictures(d)  # two buildings
    assert "Fibres between buildings" in page
    assert page.count("<svg") >= 3  # the campus, the tier diagram, the fibres


def test_a_hall_page_links_exactly_the_racks_of_that_hall(c: TestClient, world: World) -> None:
    d = world.tight.id
    racks = _csv(world, "tight", "netbox/racks.csv")
    for hall in ("b1/h1", "b1/h2"):
        page = c.get(f"/designs/{d}/halls/{hall}").text
        linked = set(re.findall(rf'href="/designs/{d}/racks/([^"#]+)"', page))
        expected = {r["name"] for r in racks if r["location"] == hall.replace("/", "-")}
        assert expected and linked == expected


def test_a_rack_page_lists_exactly_its_devices_and_cables(c: TestClient, world: World) -> None:
    d = world.campus.id
    devices = _csv(world, "campus", "netbox/devices.csv")
    cuts = _csv(world, "campus", "cabling/cut_sheet.csv")
    racks = sorted({x["rack"] for x in devices if x["rack"]})
    assert len(racks) >= 2
    cabled = 0
    for rack in racks:
        page = c.get(f"/designs/{d}/racks/{rack}").text
        shown = re.findall(r'<tr id="dev-([^"]+)">', page)
        assert sorted(shown) == sorted(x["name"] for x in devices if x["rack"] == rack)
        section = page[page.index('id="cables"') :] if 'id="cables"' in page else ""
        labels = set(re.findall(r"<tr><td>([^<]+)</td>", section))
        ends = {x["label"] for x in cuts if rack in (x["a_rack"], x["b_rack"])}
        assert labels == ends, rack
        cabled += bool(ends)
        a_end = re.search(r'<a href="([^"]+where=a_rack[^"]+)">A end here</a>', page)
        assert a_end is not None
        listed = c.get(html.unescape(a_end.group(1))).text
        n = sum(1 for x in cuts if x["a_rack"] == rack)
        assert f"<span data-total>{n:,}</span>" in listed
        assert f"{len(ends)} with an end in this rack" in page
        assert re.search(r'<svg [^>]*class="elevation" data-rack="' + re.escape(rack), page)
    assert cabled >= 2


def test_an_unknown_rack_is_not_found(c: TestClient, world: World) -> None:
    assert c.get(f"/designs/{world.campus.id}/racks/no-such-rack").status_code == 404


def _api(c: TestClient, world: World, **query: object) -> dict[str, object]:
    r = c.get(f"/api/designs/{world.campus.id}/tables/cut_sheet", params=query)
    assert r.status_code == 200, r.text
    body: dict[str, object] = r.json()
    return body


def test_the_table_endpoint_pages_cover_every_row_once(c: TestClient, world: World) -> None:
    cuts = _csv(world, "campus", "cabling/cut_sheet.csv")
    seen: list[str] = []
    offset = 0
    while True:
        page = _api(c, world, offset=offset, limit=37, sort="label")
        rows = page["rows"]
        assert isinstance(rows, list) and page["total"] == len(cuts)
        if not rows:
            break
        seen += [r[0] for r in rows]
        offset += 37
    assert seen == sorted(x["label"] for x in cuts)


def test_the_table_endpoint_sorts_as_the_numbers_do(c: TestClient, world: World) -> None:
    cuts = _csv(world, "campus", "cabling/cut_sheet.csv")
    page = _api(c, world, sort="length_m", desc="true", limit=20)
    columns = page["columns"]
    assert isinstance(columns, list)
    i = columns.index("length_m")
    rows = page["rows"]
    assert isinstance(rows, list)
    got = [r[i] for r in rows]
    assert got == sorted((float(x["length_m"]) for x in cuts), reverse=True)[:20]
    store = world.store.table(
        world.campus.id, "cut_sheet", sort="length_m", descending=True, limit=20
    )
    assert [list(r) for r in store.rows] == rows


def test_the_table_endpoint_searches_as_a_substring(c: TestClient, world: World) -> None:
    cuts = _csv(world, "campus", "cabling/cut_sheet.csv")
    rack = cuts[0]["a_rack"]
    page = _api(c, world, q=rack.upper(), limit=500)
    expected = [x for x in cuts if any(rack.lower() in v.lower() for v in x.values())]
    assert page["total"] == len(expected) > 0
    rows = page["rows"]
    assert isinstance(rows, list)
    assert sorted(r[0] for r in rows) == sorted(x["label"] for x in expected)
    nothing = _api(c, world, q="no-such-thing-anywhere")
    assert nothing["total"] == 0 and nothing["rows"] == []


def test_the_table_page_works_as_plain_links(c: TestClient, world: World) -> None:
    d = world.campus.id
    cuts = _csv(world, "campus", "cabling/cut_sheet.csv")
    first = c.get(f"/designs/{d}/tables/cut_sheet").text
    assert f"of {len(cuts):,}" in first
    assert first.count("<tr><td") == min(50, len(cuts))
    nxt = re.search(r'<a rel="next" href="([^"]+)"', first)
    assert nxt is not None
    second = c.get(f"/designs/{d}/tables/cut_sheet" + html.unescape(nxt.group(1))).text
    assert "rows 51" in second
    sort = re.search(r'<th data-col="length_m"><a href="([^"]+)"', first)
    assert sort is not None
    by_length = c.get(f"/designs/{d}/tables/cut_sheet" + html.unescape(sort.group(1))).text
    assert 'aria-sort="ascending"' in by_length
    assert 'src="/static/table.js"' in first


def test_findings_grouped_by_stage_with_links(c: TestClient, world: World) -> None:
    d = world.tight.id
    found = world.store.findings(d)
    assert any(f["severity"] == "error" for f in found)
    page = c.get(f"/designs/{d}/findings").text
    for stage in {f["stage"] for f in found}:
        n = sum(1 for f in found if f["stage"] == stage)
        assert f'id="stage-{stage}">{stage} <small>{n}</small>' in page
    links = re.findall(rf'href="(/designs/{d}/find\?q=[^"]+)"', page)
    assert len(links) == sum(1 for f in found if f["object"])
    targets = {c.get(html.unescape(u), follow_redirects=False).headers["location"] for u in links}
    assert any("/tables/cut_sheet?where=fabric" in t for t in targets)
    for target in targets:
        assert c.get(target).status_code == 200, target


def test_the_run_page_and_its_charts(c: TestClient, world: World) -> None:
    r = world.run.id
    page = c.get(f"/runs/{r}").text
    for transport in world.run.summary:
        assert f"<td>{transport}</td>" in page
    assert 'src="/static/plotly.min.js"' in page
    for kind in ("fct", "utilisation", "links"):
        fig = c.get(f"/api/runs/{r}/charts/{kind}").json()
        assert fig["data"], kind
    heat = c.get(f"/api/runs/{r}/charts/links").json()["data"][0]
    assert all("\u2192" in str(name) for name in heat["y"])  # named from the design's links
    cdf = c.get(f"/api/runs/{r}/charts/fct").json()
    assert {t["name"] for t in cdf["data"]} >= set(world.run.summary)
    js = c.get("/static/plotly.min.js")
    assert js.status_code == 200 and len(js.content) > 1_000_000


def test_comparisons_of_two_designs_and_two_runs(c: TestClient, world: World) -> None:
    a, b = world.tight, world.campus
    page = c.get(f"/compare?a={a.id}&b={b.id}").text
    diff = world.store.diff(a.id, b.id)
    for key, f in diff["summary"].items():
        if f["changed"] and isinstance(f["delta"], int):
            assert f"{'+' if f['delta'] > 0 else ''}{figure(key, f['delta'])}" in page, key
    runs = c.get(f"/compare?a={world.run.id}&b={world.run.id}").text
    assert runs.count("<td>roce-ecmp</td>") == 2
    fig = c.get(f"/api/compare/charts/fct?a={world.run.id}&b={world.run.id}").json()
    assert len(fig["data"]) >= 2 * len(world.run.summary)
    assert c.get(f"/compare?a={a.id}&b={world.run.id}").status_code == 404


def test_the_design_comparison_shows_the_changes_and_blast_radius(
    c: TestClient, world: World
) -> None:
    a, b = world.tight, world.campus
    page = c.get(f"/compare?a={a.id}&b={b.id}").text
    changes = world.store.diff(a.id, b.id)["changes"]
    counts = changes["counts"]
    row = (
        f'<tr><th>links</th><td class="num">{counts["links_added"]}</td>'
        f'<td class="num">{counts["links_removed"]}</td>'
        f'<td class="num">{counts["links_recabled"]} re-cabled</td></tr>'
    )
    assert row in page
    assert changes["blast_radius"]["racks"]
    for rack in changes["blast_radius"]["racks"]:
        assert rack in page
    assert ("Not simulated" in page) == (not changes["performance"])
    assert world.store.diff(b.id, b.id)["changes"]["empty"] is True


@pytest.mark.parametrize("owner", ["design", "run"])
def test_an_artifact_download_is_the_blob_whose_hash_is_recorded(
    c: TestClient, world: World, owner: str
) -> None:
    oid = world.campus.id if owner == "design" else world.run.id
    base = "designs" if owner == "design" else "runs"
    arts = world.store.artifacts(oid)
    assert arts
    for art in arts[:6]:
        r = c.get(f"/{base}/{oid}/artifacts/{art.name}")
        assert r.status_code == 200, art.name
        assert hashlib.sha256(r.content).hexdigest() == art.sha256
        assert len(r.content) == art.size
    missing = c.get(f"/{base}/{oid}/artifacts/not-a-file.csv")
    assert missing.status_code == 404


def test_the_changes_page_offers_decisions_only_to_writers(
    app_client: TestClient, world: World
) -> None:
    from web_helpers import bearer

    read = app_client.get("/changes", headers=bearer(world.read)).text
    write = app_client.get("/changes", headers=bearer(world.write)).text
    assert world.proposal in read
    assert f"/api/proposals/{world.proposal}/approve" not in read
    assert f"/api/proposals/{world.proposal}/approve" in write


def test_designs_json_matches_the_store(c: TestClient, world: World) -> None:
    got = c.get("/api/designs").json()
    assert [d["id"] for d in got] == [d.id for d in world.store.designs()]
    one = c.get(f"/api/designs/{world.campus.id}").json()
    assert one["tables"] == world.store.tables(world.campus.id)
    assert one["pictures"] == world.store.pictures(world.campus.id)


def test_a_picture_is_served_as_svg(c: TestClient, world: World) -> None:
    r = c.get(f"/designs/{world.campus.id}/pictures/campus")
    assert r.status_code == 200 and r.headers["content-type"].startswith("image/svg+xml")
    assert r.text == world.store.picture(world.campus.id, "campus")


def test_static_files_are_only_ours(app_client: TestClient) -> None:
    for name in ("explorer.css", "explorer.js", "table.js", "charts.js"):
        assert app_client.get(f"/static/{name}").status_code == 200
    assert app_client.get("/static/app.py").status_code == 404


def test_the_filter_form_gives_the_rows_equal_to_its_value(c: TestClient, world: World) -> None:
    d = world.campus.id
    cuts = _csv(world, "campus", "cabling/cut_sheet.csv")
    rack = cuts[-1]["b_rack"]
    page = c.get(f"/designs/{d}/tables/cut_sheet", params={"column": "b_rack", "value": rack})
    n = sum(1 for x in cuts if x["b_rack"] == rack)
    assert f"<span data-total>{n:,}</span>" in page.text and f"b_rack:{rack}" in page.text
    api = c.get(f"/api/designs/{d}/tables/cut_sheet", params={"where": f"b_rack:{rack}"})
    assert api.json()["total"] == n
    bad = c.get(f"/designs/{d}/tables/cut_sheet", params={"column": "nope", "value": "x"})
    assert bad.status_code == 400
