"""``clusterloom mcp`` as an MCP client launches it: over stdio through the SDK's stdio client
(a real subprocess, ``python -m clusterloom.cli.main mcp --root DIR``), and over the SDK's
streamable HTTP transport; the command's refusals (exit 2, one line)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from typer.testing import CliRunner

from clusterloom.assist.mcp import TOOLS
from clusterloom.cli.main import app

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _command(root: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "clusterloom.cli.main", "mcp", "--root", str(root), *extra]


async def _session(server: Any) -> tuple[list[str], dict[str, Any]]:
    async with Client(server) as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        bad = await client.call_tool("validate", {"path": "../x.yaml"})
        assert bad.structured_content is not None
        return tools, bad.structured_content


def test_stdio_through_the_sdks_client(tmp_path: Path) -> None:
    command, *args = _command(tmp_path)
    params = StdioServerParameters(command=command, args=args, env=_env(), cwd=str(tmp_path))
    tools, bad = anyio.run(_session, params)
    assert sorted(tools) == sorted(TOOLS)
    assert bad["ok"] is False and bad["findings"][0]["where"] == "path"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_streamable_http(tmp_path: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        _command(tmp_path, "--http", f"127.0.0.1:{port}"),
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "the server did not start listening"
                time.sleep(0.1)
        tools, bad = anyio.run(_session, f"http://127.0.0.1:{port}/mcp")
        assert sorted(tools) == sorted(TOOLS)
        assert bad["findings"][0]["code"] == "bad-input"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--http", "0.0.0.0:8766"], "not a loopback address; add --public"),
        (["--http", "localhost"], "give HOST:PORT"),
        (["--http", "127.0.0.1:99999"], "give HOST:PORT"),
        (["--root", "/nonexistent/dir"], "--root: /nonexistent/dir: not a directory"),
    ],
)
def test_refusals_are_one_line_and_exit_2(args: list[str], says: str) -> None:
    result = CliRunner().invoke(app, ["mcp", *args])
    assert result.exit_code == 2, result.output
    assert says in result.output
    assert "Traceback" not in result.output


def test_without_the_sdk_it_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp.server.lowlevel", None)  # import raises ImportError
    result = CliRunner().invoke(app, ["mcp"])
    assert result.exit_code == 2, result.output
    assert "pip install 'clusterloom[mcp]'" in result.output
