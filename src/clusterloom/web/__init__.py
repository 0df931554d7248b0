"""The web explorer (``clusterloom serve``): ``create_app(open_store())`` is a FastAPI app
over a ``Store`` (pages, JSON API, access control); see docs/web.md."""

from __future__ import annotations

from clusterloom.web.app import create_app

__all__ = ["create_app"]
