"""Access control and the protections every response carries.

- ``Principal``: who a request is (user, role, token id) and, for a browser session, its CSRF
  token. A request is authenticated by ``Authorization: Bearer <secret>`` (checked with
  ``Store.check_token``) or by the session cookie that ``POST /login`` sets.
- ``Signer``: the session cookie's value, ``base64url(json).hmac-sha256``, under a key made
  per app (``secrets.token_bytes``): a restart signs everyone out, a cookie cannot be forged
  without the key, and it holds no secret (the token's id, user, role, CSRF token, expiry).
- ``SecurityHeaders`` and ``BodyLimit``: pure ASGI middleware, so that every response, also a
  401, a 404 or a 413, carries the headers, and no handler ever sees a body over the limit.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, Literal

Role = Literal["read", "write"]
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SESSION_COOKIE = "clusterloom_session"
LOGIN_COOKIE = "clusterloom_login"
#: how long a browser session lasts
SESSION_SECONDS = 8 * 3600
#: how long a login form stays usable
LOGIN_SECONDS = 900

#: sent on every response. Scripts only from this origin (no inline script, no eval); styles
#: also inline, since the stored SVG pictures and plotly set style attributes.
HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        b"img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; "
        b"frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
)


@dataclass(frozen=True)
class Principal:
    """An authenticated request: ``csrf`` is the session's CSRF token, empty for a bearer
    token (a browser never sends an ``Authorization`` header on its own, so a bearer request
    cannot be forged across sites)."""

    user: str
    role: Role
    token_id: str
    csrf: str = ""

    @property
    def can_write(self) -> bool:
        return self.role == "write"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Signer:
    """HMAC-SHA256 signed, expiring JSON values (the session and login cookies)."""

    def __init__(self, key: bytes | None = None) -> None:
        self._key = key if key is not None else secrets.token_bytes(32)

    def _mac(self, purpose: str, body: str) -> str:
        return hmac.new(self._key, f"{purpose}.{body}".encode(), hashlib.sha256).hexdigest()

    def sign(self, purpose: str, payload: dict[str, Any], seconds: int) -> str:
        data = {**payload, "exp": int(time.time()) + seconds}
        body = _b64(json.dumps(data, sort_keys=True, separators=(",", ":")).encode())
        return f"{body}.{self._mac(purpose, body)}"

    def unsign(self, purpose: str, value: str | None) -> dict[str, Any] | None:
        """The payload, or None if ``value`` is missing, altered, for another purpose or
        expired."""
        if not value or value.count(".") != 1 or len(value) > 4096:
            return None
        body, mac = value.split(".")
        if not hmac.compare_digest(mac, self._mac(purpose, body)):
            return None
        try:
            data = json.loads(_unb64(body))
        except ValueError:
            return None
        if not isinstance(data, dict) or int(data.get("exp", 0)) < time.time():
            return None
        return data


def same_token(a: str, b: str) -> bool:
    """Whether two CSRF tokens agree (constant time; an empty one never does)."""
    return bool(a) and bool(b) and hmac.compare_digest(a.encode(), b.encode())


def new_token() -> str:
    return secrets.token_urlsafe(32)


class SecurityHeaders:
    """Adds ``HEADERS`` to every HTTP response (ASGI middleware)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [
                    *message.get("headers", []),
                    *((k, v) for k, v in HEADERS if k not in names),
                ]
            await send(message)

        await self.app(scope, receive, with_headers)


async def _plain(send: Send, status: int, text: str) -> None:
    body = json.dumps({"detail": text}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """Refuses a request body over ``max_body`` bytes with 413: at once when its
    ``Content-Length`` says so, else while it streams in (the body is read, up to the limit,
    before the app runs, so no handler ever sees part of an oversized body)."""

    def __init__(self, app: ASGIApp, max_body: int) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_big = f"request body over {self.max_body:,} bytes; send less"
        for name, value in scope.get("headers", []):
            if name.lower() == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await _plain(send, 400, "Content-Length is not a number")
                    return
                if declared > self.max_body:
                    await _plain(send, 413, too_big)
                    return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                await _plain(send, 413, too_big)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)
