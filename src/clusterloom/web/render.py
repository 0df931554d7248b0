"""Server-rendered pages: Jinja2 templates shipped in the package (``templates/``), escaped by
default, with the number formats of ``format.py`` as filters."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from clusterloom.web import format as fmt


def wants_html(request: Request) -> bool:
    """A browser's request: it accepts HTML, and is not one of the JSON API's."""
    accept = request.headers.get("accept", "")
    return "text/html" in accept and not request.url.path.startswith("/api/")


def _query(base: dict[str, Any], **changes: Any) -> str:
    merged = {**base, **changes}
    return "?" + urlencode(
        {k: v for k, v in merged.items() if v not in (None, "", False)}, doseq=True
    )


class Renderer:
    def __init__(self) -> None:
        self.env = Environment(
            loader=PackageLoader("clusterloom.web", "templates"),
            autoescape=select_autoescape(["html"]),
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters["figure"] = lambda value, key: fmt.figure(key, value)
        self.env.filters["cell"] = fmt.cell
        self.env.filters["label"] = fmt.label
        self.env.filters["number"] = fmt.number
        self.env.filters["utc"] = fmt.utc_ms
        self.env.globals["query"] = _query
        self.env.globals["zip"] = zip

    def page(
        self, request: Request, template: str, *, status: int = 200, **ctx: Any
    ) -> HTMLResponse:
        principal = getattr(request.state, "principal", None)
        html = self.env.get_template(template).render(
            principal=principal, path=request.url.path, **ctx
        )
        return HTMLResponse(html, status_code=status)


def svg(text: str) -> Markup:
    """A stored picture, inlined: the store's own SVG (written by ``report``, names escaped
    there); the page's Content-Security-Policy forbids inline script whatever it holds."""
    return Markup(text)
