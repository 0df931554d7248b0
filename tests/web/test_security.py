"""Access and the protections: tokens and roles, the session cookie and its CSRF token, the
body limit, the security headers, and path parameters that never reach the file system."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from web_helpers import World, asgi_request, bearer, fresh_proposal

from clusterloom.store import Store
from clusterloom.web import create_app
from clusterloom.web.security import HEADERS, SESSION_COOKIE

PUBLIC = {"/login", "/static/{name}"}


def _concrete(path: str, world: World) -> str:
    """A route's path with real values in its parameters."""
    values = {
        "design": world.campus.id,
        "run": world.run.id,
        "name": "cut_sheet" if "/tables/" in path else "design.json",
        "hall": "b1/h1",
        "rack": "b1-h1-r01-p01",
        "proposal": world.proposal,
        "kind": "fct",
        "incident": "inc-0123456789ab",  # refused for want of a token before any lookup
    }
    out = re.sub(r"\{(\w+)(:path)?\}", lambda m: values[m.group(1)], path)
    if "/runs/" in path and "/artifacts/" in path:
        out = out.replace("design.json", "scenario.json")
    return out


def _routes(client: TestClient) -> list[tuple[str, str]]:
    """Every route of the app (as its OpenAPI schema lists them, included routers too)."""
    app: Any = client.app
    return sorted(
        (method.upper(), path) for path, item in app.openapi()["paths"].items() for method in item
    )


def test_every_route_but_login_and_static_needs_a_token(
    app_client: TestClient, world: World
) -> None:
    routes = _routes(app_client)
    assert len(routes) > 25
    for method, path in routes:
        url = _concrete(path, world)
        plain = app_client.request(method, url, headers={"Accept": "application/json"})
        if path in PUBLIC:
            assert plain.status_code != 401, url
            continue
        assert plain.status_code == 401, (method, url, plain.status_code)
        wrong = app_client.request(method, url, headers=bearer("not-a-token"))
        assert wrong.status_code == 401, url
        page = app_client.request(method, url, headers={"Accept": "text/html"})
        assert page.status_code == 401 and 'action="/login"' in page.text, url


def test_a_read_token_reads_but_cannot_write(app_client: TestClient, world: World) -> None:
    h = bearer(world.read)
    assert app_client.get(f"/designs/{world.campus.id}", headers=h).status_code == 200
    before = len(world.store.records(kind="approval"))
    for action in ("approve", "reject", "decisions"):
        r = app_client.post(
            f"/api/proposals/{world.proposal}/{action}",
            json={"reason": "looks fine", "chosen": "a"},
            headers=h,
        )
        assert r.status_code == 403, action
        assert "read role" in r.json()["detail"]
    assert len(world.store.records(kind="approval")) == before


def test_a_write_token_approves_and_the_store_keeps_who_and_why(
    app_client: TestClient, world: World
) -> None:
    proposal = fresh_proposal(world.store, "prop-web-approve")
    r = app_client.post(
        f"/api/proposals/{proposal}/approve",
        json={"reason": "drain window agreed"},
        headers=bearer(world.write),
    )
    assert r.status_code == 200, r.text
    record = next(x for x in world.store.records(kind="approval") if x["id"] == r.json()["id"])
    assert record["record"]["approver"] == "walt"
    assert record["record"]["note"] == "drain window agreed"
    assert record["record"]["approved"] is True
    assert record["proposal"] == proposal
    missing = app_client.post(
        f"/api/proposals/{world.proposal}/approve", json={}, headers=bearer(world.write)
    )
    assert missing.status_code == 400 and "reason" in missing.json()["detail"]
    again = app_client.post(
        f"/api/proposals/{proposal}/reject",
        json={"reason": "changed my mind"},
        headers=bearer(world.write),
    )
    assert again.status_code == 409 and "approved already" in again.json()["detail"]


def test_an_approval_of_a_superseded_proposal_is_refused_and_the_page_says_so(
    app_client: TestClient, world: World
) -> None:
    old = fresh_proposal(world.store, "prop-web-old")
    new = fresh_proposal(world.store, "prop-web-new", supersedes=old)
    before = len(world.store.records(kind="approval"))
    r = app_client.post(
        f"/api/proposals/{old}/approve", json={"reason": "ok"}, headers=bearer(world.write)
    )
    assert r.status_code == 409 and f"superseded by '{new}'" in r.json()["detail"]
    assert len(world.store.records(kind="approval")) == before
    page = app_client.get("/changes", headers=bearer(world.write)).text
    assert "status: <strong>SUPERSEDED</strong>" in page
    assert f"/api/proposals/{old}/approve" not in page  # no form for a superseded one
    assert f"/api/proposals/{new}/approve" in page


def _login(client: TestClient, secret: str) -> str:
    """Sign in through the form as a browser does; the session's CSRF token."""
    form = client.get("/login")
    nonce = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert nonce is not None
    r = client.post(
        "/login",
        data={"token": secret, "csrf": nonce.group(1), "next": "/changes"},
        follow_redirects=False,
    )
    assert r.status_code == 303 and r.headers["location"] == "/changes"
    cookie = r.headers["set-cookie"]
    assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()
    page = client.get("/changes")
    token = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert page.status_code == 200 and token is not None
    return token.group(1)


@pytest.fixture
def browser(world: World) -> Iterator[TestClient]:
    with TestClient(create_app(world.store)) as client:
        yield client


def test_a_session_needs_its_csrf_token_on_every_unsafe_method(
    browser: TestClient, world: World
) -> None:
    csrf = _login(browser, world.write)
    url = f"/api/proposals/{fresh_proposal(world.store, 'prop-web-form')}/approve"
    before = len(world.store.records(kind="approval"))
    for data in ({"reason": "x"}, {"reason": "x", "csrf": "wrong"}, {"reason": "x", "csrf": ""}):
        assert browser.post(url, data=data, follow_redirects=False).status_code == 403
    assert browser.post(url, json={"reason": "x"}).status_code == 403
    header = browser.post(url, json={"reason": "x"}, headers={"X-CSRF-Token": "nope"})
    assert header.status_code == 403
    assert browser.post("/logout", follow_redirects=False).status_code == 403
    assert len(world.store.records(kind="approval")) == before
    ok = browser.post(url, data={"reason": "by form", "csrf": csrf}, follow_redirects=False)
    assert ok.status_code == 303
    url = f"/api/proposals/{fresh_proposal(world.store, 'prop-web-script')}/approve"
    by_header = browser.post(url, json={"reason": "by script"}, headers={"X-CSRF-Token": csrf})
    assert by_header.status_code == 200
    notes = {x["record"]["note"] for x in world.store.records(kind="approval")}
    assert {"by form", "by script"} <= notes


def test_a_read_session_cannot_write_even_with_its_csrf_token(
    browser: TestClient, world: World
) -> None:
    csrf = _login(browser, world.read)
    r = browser.post(f"/api/proposals/{world.proposal}/approve", data={"reason": "x", "csrf": csrf})
    assert r.status_code == 403


def test_the_login_form_refuses_a_post_not_from_it_and_a_bad_token(
    browser: TestClient, world: World
) -> None:
    forged = browser.post("/login", data={"token": world.write, "csrf": "x"})
    assert forged.status_code == 403
    assert SESSION_COOKIE not in browser.cookies
    form = browser.get("/login")
    nonce = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert nonce is not None
    bad = browser.post("/login", data={"token": "wrong", "csrf": nonce.group(1)})
    assert bad.status_code == 401 and "token not accepted" in bad.text
    assert browser.get("/", headers={"Accept": "application/json"}).status_code == 401


def test_login_goes_back_only_to_a_path_of_this_site(browser: TestClient, world: World) -> None:
    for target, expected in (
        ("//evil.example/x", "/"),
        ("https://evil.example", "/"),
        ("/runs", "/runs"),
    ):
        nonce = re.search(r'name="csrf" value="([^"]+)"', browser.get("/login").text)
        assert nonce is not None
        r = browser.post(
            "/login",
            data={"token": world.read, "csrf": nonce.group(1), "next": target},
            follow_redirects=False,
        )
        assert r.headers["location"] == expected


def test_a_revoked_token_ends_its_sessions_and_bearer_use(
    browser: TestClient, world: World
) -> None:
    token_id, secret = world.store.add_token("temp", "read")
    _login(browser, secret)
    assert browser.get("/").status_code == 200
    world.store.revoke_token(token_id)
    assert browser.get("/", headers={"Accept": "application/json"}).status_code == 401
    assert browser.get("/", headers=bearer(secret)).status_code == 401


def test_an_altered_session_cookie_is_refused(browser: TestClient, world: World) -> None:
    _login(browser, world.read)
    value = browser.cookies[SESSION_COOKIE]
    body, mac = value.split(".")
    browser.cookies.clear()
    # the payload changed to the write role, the signature kept
    import base64
    import json

    data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    data["r"] = "write"
    forged = base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()
    browser.cookies.set(SESSION_COOKIE, f"{forged}.{mac}")
    assert browser.get("/", headers={"Accept": "application/json"}).status_code == 401


# --- body limit --------------------------------------------------------------------------


def test_a_body_over_the_limit_is_refused_by_its_length(
    app_client: TestClient, world: World
) -> None:
    url = f"/api/proposals/{fresh_proposal(world.store, 'prop-web-big')}/approve"
    big = {"reason": "x" * 5000}  # the fixture's app takes 4,096 bytes
    r = app_client.post(url, json=big, headers=bearer(world.write))
    assert r.status_code == 413
    assert app_client.post("/login", data={"token": "x" * 5000}).status_code == 413
    small = app_client.post(url, json={"reason": "fits"}, headers=bearer(world.write))
    assert small.status_code == 200


def test_a_streamed_body_over_the_limit_is_refused_without_a_length(
    app_client: TestClient, world: World
) -> None:
    app = app_client.app
    url = f"/api/proposals/{fresh_proposal(world.store, 'prop-web-streamed')}/approve"
    h = {**bearer(world.write), "content-type": "application/json"}
    body = b'{"reason": "' + b"y" * 6000 + b'"}'
    raw = asgi_request(app, "POST", url, headers=h, body=body, chunks=8)
    assert raw.status == 413
    lying = asgi_request(app, "POST", url, headers={**h, "content-length": "10"}, body=body)
    assert lying.status == 413
    fits = asgi_request(app, "POST", url, headers=h, body=b'{"reason": "ok"}', chunks=3)
    assert fits.status == 200


# --- headers -----------------------------------------------------------------------------


def test_security_headers_on_every_response(app_client: TestClient, world: World) -> None:
    d = world.campus.id
    responses = [
        app_client.get("/login"),
        app_client.get("/static/explorer.css"),
        app_client.get("/"),
        app_client.get(f"/designs/{d}", headers=bearer(world.read)),
        app_client.get("/designs/000000000000", headers=bearer(world.read)),
        app_client.get(f"/designs/{d}/artifacts/design.json", headers=bearer(world.read)),
        app_client.post("/login", content=b"x" * 5000),
    ]
    assert sorted(r.status_code for r in responses) == [200, 200, 200, 200, 401, 404, 413]
    for r in responses:
        for name, value in HEADERS:
            if name == b"cache-control" and r.url.path.startswith("/static/"):
                assert r.headers["cache-control"] == "private, max-age=3600"
                continue
            assert r.headers[name.decode()] == value.decode()
    csp = responses[0].headers["content-security-policy"]
    script = next(p for p in csp.split(";") if p.strip().startswith("script-src"))
    assert "unsafe-inline" not in script and "unsafe-eval" not in script


def test_pages_carry_no_inline_script(app_client: TestClient, world: World) -> None:
    h = bearer(world.read)
    for url in (
        "/",
        f"/designs/{world.tight.id}",
        f"/runs/{world.run.id}",
        "/login",
        f"/designs/{world.campus.id}/halls/b1/h1",
    ):
        page = app_client.get(url, headers=h).text
        assert re.search(r"<script(?![^>]*\bsrc=)[^>]*>", page) is None, url
        assert re.search(r"\son[a-z]+=", page) is None, url


# --- path parameters ---------------------------------------------------------------------

#: decoded as a server hands them to the app
PAYLOADS = [
    "../../../../etc/passwd",
    "..",
    "/etc/passwd",
    "design.json\x00",
    "..\\..\\etc\\passwd",
    "cut_sheet/../../../../etc/passwd",
    "%2e%2e/%2e%2e/etc/passwd",
    "b1/../../etc",
]
#: a route with ``{X}`` where the payload goes
TARGETS = [
    "/designs/{X}",
    "/designs/{X}/tables/cut_sheet",
    "/designs/{X}/artifacts/design.json",
    "/designs/{D}/halls/{X}",
    "/designs/{D}/racks/{X}",
    "/designs/{D}/tables/{X}",
    "/designs/{D}/artifacts/{X}",
    "/designs/{D}/pictures/{X}",
    "/designs/{D}/findings/{X}",
    "/runs/{X}",
    "/runs/{R}/tables/{X}",
    "/runs/{R}/artifacts/{X}",
    "/api/designs/{X}",
    "/api/designs/{X}/findings",
    "/api/designs/{D}/tables/{X}",
    "/api/runs/{X}",
    "/api/runs/{R}/tables/{X}",
    "/api/runs/{R}/charts/{X}",
    "/static/{X}",
]


class Spy:
    """The store, with every call's string arguments written down."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            texts = [a for a in (*args, *kwargs.values()) if isinstance(a, str)]
            self.calls.append((name, tuple(texts)))
            return attr(*args, **kwargs)

        return call


@pytest.fixture(scope="module")
def spied(world: World) -> tuple[Any, Spy]:
    spy = Spy(world.store)
    return create_app(spy), spy  # type: ignore[arg-type]


@pytest.mark.parametrize("payload", PAYLOADS)
@pytest.mark.parametrize("target", TARGETS)
def test_traversal_in_a_path_parameter_is_refused_before_the_store(
    spied: tuple[Any, Spy], world: World, target: str, payload: str
) -> None:
    app, spy = spied
    spy.calls.clear()
    path = target.replace("{D}", world.campus.id).replace("{R}", world.run.id)
    path = path.replace("{X}", payload)
    raw = asgi_request(app, "GET", path, headers=bearer(world.read))
    assert raw.status in (400, 404), (path, raw.status)
    assert b"root:" not in raw.body
    for name, texts in spy.calls:
        for text in texts:
            assert ".." not in text and "\x00" not in text and "/etc" not in text, (name, text)


@pytest.mark.parametrize("payload", ["..%2F..%2Fetc%2Fpasswd", "%2e%2e", "x%00", "%2Fetc%2Fpasswd"])
def test_encoded_traversal_through_the_client_is_refused(
    app_client: TestClient, world: World, payload: str
) -> None:
    h = bearer(world.write)
    d, r = world.campus.id, world.run.id
    for url in (
        f"/designs/{d}/artifacts/{payload}",
        f"/designs/{d}/tables/{payload}",
        f"/runs/{r}/artifacts/{payload}",
        f"/designs/{payload}",
        f"/designs/{d}/racks/{payload}",
        f"/designs/{d}/halls/{payload}",
    ):
        assert app_client.get(url, headers=h).status_code in (400, 404), url
    approve = app_client.post(f"/api/proposals/{payload}/approve", json={"reason": "x"}, headers=h)
    assert approve.status_code in (400, 404)


def test_query_parameters_are_checked(app_client: TestClient, world: World) -> None:
    h = bearer(world.read)
    base = f"/api/designs/{world.campus.id}/tables/cut_sheet"
    assert app_client.get(base + "?sort=no_such_column", headers=h).status_code == 400
    assert app_client.get(base + "?sort=a;drop", headers=h).status_code == 400
    assert app_client.get(base + "?limit=100000", headers=h).status_code == 400
    assert app_client.get(base + "?offset=-1", headers=h).status_code == 400
    assert app_client.get(base + "?where=nocolon", headers=h).status_code == 400
    assert app_client.get(base + "?where=no_such:1", headers=h).status_code == 400
    assert app_client.get("/changes?design=../x", headers=h).status_code == 404
    assert app_client.get("/compare?a=..&b=..", headers=h).status_code == 404
