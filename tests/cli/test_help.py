"""Every command's ``--help`` renders: help texts are Rich markup, so a stray ``[/...]`` in one
(as ``--installed``'s ``https://netbox[/?site=NAME]`` once was) crashes ``--help`` with a
traceback instead of printing it."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from clusterloom.cli.main import app


def _paths(command: object, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [prefix]
    subcommands = getattr(command, "commands", None)  # a group (typer ships its own click)
    if subcommands:
        for name, sub in sorted(subcommands.items()):
            paths += _paths(sub, (*prefix, name))
    return paths


COMMANDS = _paths(typer.main.get_command(app))


def test_every_command_is_listed() -> None:
    # the walk reaches the nested groups (netbox push, srv6 plan ...), not only the top level
    assert ("design",) in COMMANDS and any(len(p) >= 2 for p in COMMANDS)


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "clusterloom")
def test_help_renders(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output
