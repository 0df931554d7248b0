"""``clusterloom serve``: the web explorer over a store (``clusterloom.web``), on uvicorn.

Bound to 127.0.0.1 by default; any other address needs ``--public`` (exit 2 otherwise), since
the explorer then answers whoever reaches the port (each still needs a token). Registered from
``main.py`` with one call."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.console import Console


def is_loopback(host: str) -> bool:
    """Whether ``host`` is an address of this machine only (``localhost`` or 127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _can_bind(host: str, port: int) -> None:
    """Refuse (exit 2) an address this machine cannot listen on before the store is opened."""
    import socket

    from clusterloom.errors import ClusterloomError

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family, kind, proto, _, address = infos[0]
        with socket.socket(family, kind, proto) as probe:
            probe.bind(address)
    except OSError as exc:
        raise ClusterloomError(
            f"--host {host} --port {port}: cannot listen there ({exc.strerror or exc}); "
            "choose another --port"
        ) from exc


def register(app: typer.Typer, guard: Callable[[Callable[[], Any]], Any], out: Console) -> None:
    """Add ``serve`` to ``app``."""

    @app.command()
    def serve(
        store: Annotated[
            str | None,
            typer.Option(
                "--store",
                help="the store's URL (sqlite:///PATH or postgresql+psycopg://...) "
                "[default: $CLUSTERLOOM_STORE, else ~/.clusterloom/store.db]",
                show_default=False,
            ),
        ] = None,
        host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
        port: Annotated[int, typer.Option(min=1, max=65535, help="port to listen on")] = 8765,
        public: Annotated[
            bool,
            typer.Option(
                "--public", help="allow an address other than loopback (the network can reach it)"
            ),
        ] = False,
        max_body: Annotated[
            int, typer.Option(min=1024, max=1 << 30, help="largest request body, in bytes")
        ] = 1 << 20,
    ) -> None:
        """Serve the web explorer of a store's designs, runs and decisions (needs a token)."""

        def prepare() -> Any:
            from clusterloom.errors import ClusterloomError

            if not is_loopback(host) and not public:
                raise ClusterloomError(
                    f"--host {host}: not a loopback address; add --public to serve it to the "
                    "network (every request still needs a token), or use 127.0.0.1"
                )
            _can_bind(host, port)
            from clusterloom.store import open_store
            from clusterloom.web import create_app

            return create_app(open_store(store), max_body=max_body)

        web = guard(prepare)
        shown = f"[{host}]" if ":" in host else host
        out.print(f"clusterloom explorer on http://{shown}:{port}/ (Ctrl-C stops it)")
        out.print(
            "sign in with a token: clusterloom store token add USER --role read "
            "(--role write to approve proposals)" + (f" --store {store}" if store else "")
        )
        import uvicorn

        guard(lambda: uvicorn.run(web, host=host, port=port, log_level="info", server_header=False))
