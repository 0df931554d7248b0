"""``clusterloom netbox push``: the thin command over :mod:`clusterloom.export.netbox_push`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table


def register(app: typer.Typer, guard: Callable[[Callable[[], Any]], Any], out: Console) -> None:
    """Add the ``netbox`` command group (``netbox push``) to ``app``."""
    group = typer.Typer(help="Work with a NetBox: push a design's objects through its API.")
    app.add_typer(group, name="netbox")

    @group.command()
    def push(
        outdir: Annotated[Path, typer.Argument(help="a directory `clusterloom design -o` wrote")],
        url: Annotated[str, typer.Option("--url", help="NetBox's URL, e.g. https://netbox")],
        token: Annotated[
            str,
            typer.Option("--token", envvar="NETBOX_TOKEN", help="API token (or NETBOX_TOKEN)"),
        ],
    ) -> None:
        """Create or update the design's NetBox objects (idempotent: a second push changes
        nothing) and print, per object type, how many were created, updated and unchanged."""

        def run() -> None:
            from clusterloom.export.netbox_push import push as push_design

            report = push_design(outdir, url, token)
            table = Table(title=f"NetBox {url}")
            for col in ("objects", "created", "updated", "unchanged"):
                table.add_column(col, justify="left" if col == "objects" else "right")
            for kind, t in report.items():
                table.add_row(kind, str(t.created), str(t.updated), str(t.unchanged))
            out.print(table)

        guard(run)
