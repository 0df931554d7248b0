"""What the explorer's tests share besides fixtures (a module of its own: a module named
``conftest`` is not reliably importable beside ``tests/conftest.py`` in a whole run)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusterloom.store import DesignRecord, RunRecord, Store


@dataclass(frozen=True)
class World:
    store: Store
    tight: DesignRecord
    campus: DesignRecord
    run: RunRecord
    read: str  #: a read token's secret
    write: str  #: a write token's secret
    proposal: str  #: a recorded proposal's id
    root: Path


def fresh_proposal(store: Store, name: str, supersedes: str = "") -> str:
    """A new proposal (undecided) for a test that decides on one: a decision is made once."""
    from clusterloom.changes import ChangePlan, Proposal

    plan = ChangePlan(id=f"plan-{name}", baseline="a", target="b", steps=())
    return store.record(Proposal(id=name, plan=plan, author="ann", supersedes=supersedes))


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


@dataclass(frozen=True)
class Raw:
    status: int
    headers: dict[str, str]
    body: bytes


def asgi_request(
    app: Any,
    method: str,
    path: str,
    *,
    headers: dict[str, str] | None = None,
    body: bytes = b"",
    chunks: int = 1,
) -> Raw:
    """One request straight into the ASGI app, the path as given (decoded, as a server hands
    it over; an HTTP client would normalise ``../`` away before sending), the body in
    ``chunks`` messages, no Content-Length unless ``headers`` has one."""
    import anyio

    step = -(-len(body) // chunks) or 1
    parts = [body[i : i + step] for i in range(0, len(body), step)] or [b""]
    sent: list[dict[str, Any]] = []

    async def run() -> None:
        queue = list(parts)

        async def receive() -> dict[str, Any]:
            if not queue:
                return {"type": "http.disconnect"}
            chunk = queue.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(queue)}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode("utf-8", "surrogateescape"),
            "query_string": b"",
            "root_path": "",
            "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
            "client": ("127.0.0.1", 40000),
            "server": ("testserver", 80),
        }
        await app(scope, receive, send)

    anyio.run(run)
    start = next(m for m in sent if m["type"] == "http.response.start")
    return Raw(
        status=start["status"],
        headers={k.decode().lower(): v.decode() for k, v in start["headers"]},
        body=b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"),
    )
