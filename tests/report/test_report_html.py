"""The HTML report: self-contained (nothing fetched), well formed, deterministic, escaped, and
holding the diagram, the BOM, the options and every finding."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

import clusterloom.report as report
from clusterloom import Design
from clusterloom.report import render_report, tier_diagram
from helpers import TWO_FABRIC_SPEC, design_of

VOID = {"meta", "br", "img", "hr", "input", "link", "col", "wbr", "source"}
SVG_EMPTY_OK = {"rect", "line", "path", "circle", "polyline", "polygon"}


class TagChecker(HTMLParser):
    """Records start tags and attributes and checks that every element is closed in order."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str, str | None]] = []
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += [(tag, k, v) for k, v in attrs]
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += [(tag, k, v) for k, v in attrs]
        if tag not in VOID | SVG_EMPTY_OK:
            self.problems.append(f"self-closed <{tag}/>")

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()


def parsed(page: str) -> TagChecker:
    checker = TagChecker()
    checker.feed(page)
    checker.close()
    return checker


@pytest.fixture(scope="module")
def page(two_fabrics: Design) -> str:
    return render_report(two_fabrics)


def test_well_formed(page: str) -> None:
    checker = parsed(page)
    assert checker.problems == []
    assert checker.stack == []
    assert page.startswith("<!DOCTYPE html>")


def test_self_contained(page: str) -> None:
    checker = parsed(page)
    assert not {"script", "link", "img", "iframe", "object", "embed"} & set(checker.tags)
    for tag, attr, value in checker.attrs:
        assert attr != "src", f"<{tag} src=...>"
        if attr in ("href", "xlink:href"):
            assert (value or "").startswith("#"), f"<{tag} {attr}={value}>"
    assert not re.search(r"https?:", page)
    assert "@import" not in page and "url(" not in page


def test_contents(two_fabrics: Design, page: str) -> None:
    prov = two_fabrics.provenance
    for text in (prov.spec_name, prov.spec_hash, prov.clusterloom_version):
        assert text in page
    assert page.count("<svg") == 2  # one tier diagram per fabric
    for fabric in ("backend", "frontend"):
        assert f'id="bom-{fabric}"' in page
        assert f'id="options-{fabric}"' in page
    assert 'id="findings-table"' in page
    for finding in two_fabrics.findings:
        assert f"<code>{finding.code}</code>" in page
    assert "1,024" in page  # accelerators
    assert "sn5600" in page and "tomahawk4-64x400g" in page
    assert '<tr class="chosen">' in page


def test_tier_diagram_shows_counts_models_and_planes(two_fabrics: Design) -> None:
    svg = tier_diagram(two_fabrics.fabric("frontend"))
    plan = two_fabrics.fabric("frontend").plan
    assert f"Leaf \u00d7 {plan.tier('leaf').count}" in svg
    assert "tomahawk4-64x400g" in svg
    assert f"\u00d7 {plan.planes} identical planes" in svg
    assert "<line" in svg and "node00000" in svg
    backend = two_fabrics.fabric("backend")
    svg = tier_diagram(backend)
    assert "one plane" in svg
    for media, count in zip(backend.plan.media, backend.plan.links_per_tier, strict=True):
        assert f"{count:,} links · {media}" in svg


def test_deterministic(page: str) -> None:
    assert render_report(design_of(TWO_FABRIC_SPEC)) == page


def test_escapes_spec_and_catalog_text(hostile: Design) -> None:
    page = render_report(hostile)
    checker = parsed(page)
    assert checker.problems == []
    assert not {"script", "img"} & set(checker.tags)
    assert not [a for a in checker.attrs if a[1] == "src"]
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page  # shown, not run
    assert "&lt;b&gt;sw&lt;/b&gt;" in page  # the switch model, in the BOM and the diagram


def test_warnings_are_coloured(hostile: Design) -> None:
    page = render_report(hostile)
    assert any(f.severity.value == "warning" for f in hostile.findings)
    assert '<span class="sev warning">warning</span>' in page
    assert '<span class="sev info">info</span>' in page


def test_infeasible_options_show_their_reason(options_design: Design) -> None:
    page = render_report(options_design)
    infeasible = [o for o in options_design.fabrics[0].options if o.infeasible]
    assert infeasible
    for o in infeasible:
        assert o.infeasible in page or o.infeasible.replace("'", "&#x27;") in page
    assert page.count('class="infeasible"') == len(infeasible)


def test_public_surface() -> None:
    assert sorted(report.__all__) == report.__all__
    for name in report.__all__:
        assert hasattr(report, name)
