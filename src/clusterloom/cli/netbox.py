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
        delete_removed: Annotated[
            bool,
            typer.Option(
                "--delete-removed",
                help="delete the clusterloom devices, racks and cables of the site the design "
                "no longer has (default: tag them clusterloom-removed and leave them)",
            ),
        ] = False,
    ) -> None:
        """Create or update the design's NetBox objects (idempotent: a second push changes
        nothing); a grown design updates them in place (moved cables re-terminated, removed
        objects tagged or, with --delete-removed, deleted). Prints, per object type, how many
        were created, updated, unchanged, tagged and deleted."""

        def run() -> None:
            from clusterloom.export.netbox_push import push as push_design

            report = push_design(outdir, url, token, delete_removed=delete_removed)
            table = Table(title=f"NetBox {url}")
            for col in ("objects", "created", "updated", "unchanged", "tagged", "deleted"):
                table.add_column(col, justify="left" if col == "objects" else "right")
            for kind, t in report.items():
                counts = (t.created, t.updated, t.unchanged, t.tagged, t.deleted)
                table.add_row(kind, *map(str, counts))
            out.print(table)

        guard(run)
