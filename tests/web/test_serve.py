"""``clusterloom serve``: loopback by default, another address only with --public, and the real
server (uvicorn in a subprocess) answering over HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import httpx
import pytest
from typer.testing import CliRunner
from web_helpers import World, bearer

from clusterloom.cli.main import app
from clusterloom.cli.serve import is_loopback


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.1", False),
        ("example.org", False),
    ],
)
def test_loopback_addresses(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_a_public_address_needs_public(tmp_path: object) -> None:
    result = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "--port", "1"])
    assert result.exit_code == 2
    lines = [x for x in result.output.splitlines() if x.strip()]
    assert len(lines) == 1 and "--public" in lines[0] and "Traceback" not in result.output


def test_a_port_in_use_is_refused_in_one_line(world: World) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        store = f"sqlite:///{world.root / 'store.db'}"
        result = CliRunner().invoke(app, ["serve", "--store", store, "--port", str(port)])
    assert result.exit_code == 2
    assert "cannot listen" in result.output and "Traceback" not in result.output


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_the_server_answers_over_http(world: World) -> None:
    port = _free_port()
    store = f"sqlite:///{world.root / 'store.db'}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "clusterloom.cli.main",
            "serve",
            "--store",
            store,
            "--port",
            str(port),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                login = httpx.get(f"{base}/login", timeout=2)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
                assert time.monotonic() < deadline, "the server did not start in 60 s"
                time.sleep(0.3)
        assert login.status_code == 200 and 'action="/login"' in login.text
        assert login.headers["x-frame-options"] == "DENY"
        assert httpx.get(f"{base}/api/designs").status_code == 401
        designs = httpx.get(f"{base}/api/designs", headers=bearer(world.read))
        assert {d["id"] for d in designs.json()} >= {world.campus.id, world.tight.id}
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert f"http://127.0.0.1:{port}/" in out
    assert "clusterloom store token add USER --role read" in out
