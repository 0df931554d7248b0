"""Who may do what: the login form, the bearer token or session cookie on every other route,
the write role and the CSRF token on every unsafe method, and the static files (the only
route besides ``/login`` open without a token: our style sheet and scripts, and plotly)."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Form, HTTPException, Request
from fastapi.responses import FileResponse, RedirectResponse, Response

from clusterloom.store import Store
from clusterloom.web.render import Renderer
from clusterloom.web.security import (
    LOGIN_COOKIE,
    LOGIN_SECONDS,
    SESSION_COOKIE,
    SESSION_SECONDS,
    Principal,
    Role,
    Signer,
    new_token,
    same_token,
)

public = APIRouter()
session = APIRouter()

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
STATIC = Path(__file__).parent / "static"
#: the static files served, by name (nothing else under /static/ exists)
STATIC_FILES = {
    "explorer.css": "text/css",
    "explorer.js": "text/javascript",
    "table.js": "text/javascript",
    "charts.js": "text/javascript",
    "favicon.svg": "image/svg+xml",
}


#: static files may be kept an hour (every other response: no-store)
CACHE = {"cache-control": "private, max-age=3600"}


def _signer(request: Request) -> Signer:
    signer: Signer = request.app.state.signer
    return signer


def _cookie(response: Response, request: Request, name: str, value: str, seconds: int) -> None:
    response.set_cookie(
        name,
        value,
        max_age=seconds,
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def _next(value: str | None) -> str:
    """Where to go after logging in: a path on this site only (no ``//host``, no scheme)."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    return value


def login_page(request: Request, *, status: int = 200, message: str = "") -> Response:
    """The login form, with a fresh login CSRF token in a cookie and a hidden field."""
    nonce = new_token()
    renderer: Renderer = request.app.state.renderer
    wanted = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    target = request.query_params.get("next") if request.url.path == "/login" else wanted
    response = renderer.page(
        request,
        "login.html",
        status=status,
        title="sign in",
        message=message,
        csrf=nonce,
        next=_next(target),
    )
    value = _signer(request).sign("login", {"n": nonce}, LOGIN_SECONDS)
    _cookie(response, request, LOGIN_COOKIE, value, LOGIN_SECONDS)
    if status == 401:
        response.headers["www-authenticate"] = "Bearer"
    return response


@public.get("/login")
def login_form(request: Request) -> Response:
    return login_page(request)


@public.post("/login")
def login(
    request: Request,
    token: str = Form("", max_length=512),
    csrf: str = Form("", max_length=128),
    next: str = Form("/", max_length=2048),
) -> Response:
    form = _signer(request).unsign("login", request.cookies.get(LOGIN_COOKIE))
    if form is None or not same_token(str(form.get("n", "")), csrf):
        raise HTTPException(403, "login form expired or not from this site; reload the page")
    store: Store = request.app.state.store
    record = store.check_token(token.strip()) if token.strip() else None
    if record is None or record.revoked:
        return login_page(request, status=401, message="token not accepted")
    value = _signer(request).sign(
        "session",
        {"t": record.id, "u": record.user, "r": record.role, "c": new_token()},
        SESSION_SECONDS,
    )
    response = RedirectResponse(_next(next), status_code=303)
    _cookie(response, request, SESSION_COOKIE, value, SESSION_SECONDS)
    response.delete_cookie(LOGIN_COOKIE, path="/")
    return response


@public.get("/static/{name}")
def static(name: str) -> Response:
    if name == "plotly.min.js":
        from clusterloom.web.charts import plotly_js_path

        return FileResponse(plotly_js_path(), media_type="text/javascript", headers=CACHE)
    if name not in STATIC_FILES:
        raise HTTPException(404, "no such file")
    return FileResponse(STATIC / name, media_type=STATIC_FILES[name], headers=CACHE)


def _principal(request: Request) -> Principal:
    store: Store = request.app.state.store
    header = request.headers.get("authorization")
    if header is not None:
        scheme, _, secret = header.partition(" ")
        record = store.check_token(secret.strip()) if scheme.lower() == "bearer" else None
        if record is None or record.revoked:
            raise HTTPException(401, "token not accepted")
        return Principal(record.user, record.role, record.id)
    data = _signer(request).unsign("session", request.cookies.get(SESSION_COOKIE))
    if data is None:
        raise HTTPException(401, "sign in with a token")
    if not _live(store, str(data["t"])):
        raise HTTPException(401, "token revoked; sign in again")
    role: Role = "write" if data.get("r") == "write" else "read"
    return Principal(str(data["u"]), role, str(data["t"]), str(data["c"]))


def _live(store: Store, token_id: str) -> bool:
    """Whether the session's token is still unrevoked (a revoked token ends its sessions)."""
    return any(t.id == token_id and not t.revoked for t in store.tokens())


async def _csrf(request: Request) -> str:
    sent = request.headers.get("x-csrf-token", "")
    if sent:
        return sent
    kind = request.headers.get("content-type", "")
    if kind.startswith(("application/x-www-form-urlencoded", "multipart/form-data")):
        value = (await request.form()).get("csrf", "")
        return value if isinstance(value, str) else ""
    return ""


async def authenticate(request: Request) -> Principal:
    """Every protected route's dependency: the request's principal (401 without one); an
    unsafe method from a browser session also needs the session's CSRF token (403)."""
    principal = _principal(request)
    unsafe = request.method not in SAFE_METHODS
    if unsafe and principal.csrf and not same_token(principal.csrf, await _csrf(request)):
        raise HTTPException(403, "CSRF token missing or wrong; reload the page and retry")
    request.state.principal = principal
    return principal


def require_write(request: Request) -> Principal:
    principal: Principal = request.state.principal
    if not principal.can_write:
        raise HTTPException(403, f"{principal.user} has the read role; this needs write")
    return principal


@session.post("/logout")
def logout(request: Request) -> Response:
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response
