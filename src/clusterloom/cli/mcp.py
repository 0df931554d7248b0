"""``clusterloom mcp``: the MCP server for agents (``clusterloom.assist.mcp``), on stdio by
default (what an MCP client launches), or on the SDK's streamable HTTP transport with
``--http HOST:PORT``: loopback only unless ``--public``, as ``clusterloom serve``. Tools read
and write only under ``--root``. Registered from ``main.py`` with one call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.console import Console


def _address(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) of ``--http``; ``SpecError`` naming it."""
    from clusterloom.errors import Problem, SpecError

    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise SpecError([Problem("--http", f"{value!r}: give HOST:PORT, e.g. 127.0.0.1:8766")])
    return host, int(port)


def _sdk() -> None:
    from clusterloom.errors import ClusterloomError

    try:
        import mcp.server.lowlevel  # noqa: F401
    except ImportError as exc:
        raise ClusterloomError(
            "the MCP server needs the mcp SDK: pip install 'clusterloom[mcp]' (or pip install "
            "'mcp>=2.3,<3')"
        ) from exc


def register(app: typer.Typer, guard: Callable[[Callable[[], Any]], Any], out: Console) -> None:
    """Add ``mcp`` to ``app``."""

    @app.command("mcp")
    def mcp_command(
        root: Annotated[
            str,
            typer.Option(
                "--root",
                help="the directory the tools may read and write (paths are relative to it)",
            ),
        ] = ".",
        http: Annotated[
            str | None,
            typer.Option(
                "--http",
                help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio",
                show_default=False,
            ),
        ] = None,
        public: Annotated[
            bool,
            typer.Option(
                "--public",
                help="with --http, allow an address other than loopback (the network can reach it)",
            ),
        ] = False,
    ) -> None:
        """Serve validate, size, place, cable, simulate, diff, propose and plan as MCP tools
        for agents (docs/mcp.md); stdio by default. No language model runs inside clusterloom."""

        def prepare() -> tuple[Any, tuple[str, int] | None]:
            from clusterloom.errors import ClusterloomError

            where = None if http is None else _address(http)
            if where is not None:
                from clusterloom.cli.serve import _can_bind, is_loopback

                if not is_loopback(where[0]) and not public:
                    raise ClusterloomError(
                        f"--http {http}: not a loopback address; add --public to serve it to "
                        "the network (anyone who reaches the port can run the tools), or use "
                        "127.0.0.1"
                    )
                _can_bind(*where)
            _sdk()
            from clusterloom.assist.mcp.server import create_server

            return create_server(root), where

        server, where = guard(prepare)
        from clusterloom.assist.mcp.server import run_http, run_stdio

        if where is None:
            guard(lambda: run_stdio(server))
            return
        host, port = where
        shown = f"[{host}]" if ":" in host else host
        err = Console(stderr=True, highlight=False, markup=False)
        err.print(f"clusterloom MCP server on http://{shown}:{port}/mcp (Ctrl-C stops it)")
        guard(lambda: run_http(server, host, port))
