"""The web explorer (``clusterloom serve``): a FastAPI app over a ``Store``; see docs/web.md.

    from clusterloom.store import open_store
    from clusterloom.web import create_app
    app = create_app(open_store())
"""

from __future__ import annotations

from clusterloom.web.app import create_app

__all__ = ["create_app"]
