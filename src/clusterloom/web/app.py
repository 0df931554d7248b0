"""The explorer's app factory: ``create_app(store)`` wires the pages, the JSON API, the login,
the static files and the protections (``security.py``) around one ``Store``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.exceptions import HTTPException, RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from clusterloom.store import Store, StoreError
from clusterloom.web import api, auth, pages
from clusterloom.web.render import Renderer, wants_html
from clusterloom.web.security import BodyLimit, SecurityHeaders, Signer


def create_app(store: Store, *, max_body: int = 1 << 20, key: bytes | None = None) -> FastAPI:
    """The explorer over ``store``: every route but ``/login`` and ``/static/`` needs a token
    (bearer header or the login's session cookie); writes need the write role and, from a
    browser session, its CSRF token; request bodies over ``max_body`` bytes are refused (413).
    ``key`` signs the session cookies (a fresh random key when None: a restart signs
    everyone out)."""
    app = FastAPI(
        title="clusterloom explorer",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.store = store
    app.state.signer = Signer(key)
    app.state.renderer = Renderer()
    app.include_router(auth.public)
    protected = APIRouter(dependencies=[Depends(auth.authenticate)])
    protected.include_router(auth.session)
    protected.include_router(pages.router)
    protected.include_router(api.router)
    app.include_router(protected)
    _handlers(app)
    app.add_middleware(BodyLimit, max_body=max_body)
    app.add_middleware(SecurityHeaders)
    return app


def _handlers(app: FastAPI) -> None:
    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        renderer: Renderer = request.app.state.renderer
        if exc.status_code == 401:
            return auth.login_page(request, status=401, message=str(exc.detail))
        headers: dict[str, Any] = dict(getattr(exc, "headers", None) or {})
        if wants_html(request):
            return renderer.page(
                request,
                "error.html",
                status=exc.status_code,
                title=f"{exc.status_code}",
                message=str(exc.detail),
            )
        return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=headers)

    async def store_error(request: Request, exc: Exception) -> Response:
        return await http_error(request, HTTPException(404, str(exc)))

    async def bad_request(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        lines = [
            f"{'.'.join(str(p) for p in e.get('loc', ())[1:]) or 'request'}: {e.get('msg', '')}"
            for e in exc.errors()
        ]
        return await http_error(request, HTTPException(400, "; ".join(lines)))

    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(StoreError, store_error)
    app.add_exception_handler(RequestValidationError, bad_request)
