"""The store is a lifecycle part: only the front ends (the command line, the web explorer and
the MCP server, which reads a run's summary with ``store.summary``) import it; it imports no
command line (read from the source, as ``tests/test_layering.py`` reads it)."""

from __future__ import annotations

from test_layering import GRAPH

USERS = ("clusterloom.store", "clusterloom.cli", "clusterloom.web", "clusterloom.assist.mcp")


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_only_the_front_ends_import_the_store() -> None:
    importers = sorted(
        m
        for m, deps in GRAPH.items()
        if any(_under(d, "clusterloom.store") for d in deps)
        and not any(_under(m, u) for u in USERS)
    )
    assert importers == []
    assert any(_under(d, "clusterloom.store") for d in GRAPH["clusterloom.cli.store"])


def test_the_store_imports_no_command_line() -> None:
    assert not [
        (m, d)
        for m, deps in GRAPH.items()
        if _under(m, "clusterloom.store")
        for d in deps
        if _under(d, "clusterloom.cli") or _under(d, "clusterloom.web")
    ]
