"""``clusterloom ops``: runtime operations (``clusterloom.ops``, ``docs/ops.md``). This module
makes the group; each part's commands live in a module of their own (``cli/ops_*.py``), added
here with one line each. Exit codes as in ``main.py``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer
from rich.console import Console

Guard = Callable[[Callable[[], Any]], Any]


def register(app: typer.Typer, guard: Guard, out: Console) -> None:
    """Add the ``ops`` command group to ``app``."""
    group = typer.Typer(
        help="Runtime operations: telemetry in, faults found and localised, mitigations "
        "checked in the simulator before they are proposed."
    )
    app.add_typer(group, name="ops")
    # one line per part: ``from clusterloom.cli import ops_X; ops_X.register(group, guard, out)``
    from clusterloom.cli import ops_ingest, ops_localise, ops_mitigate, ops_probe, ops_synth

    ops_ingest.register(group, guard, out)
    ops_synth.register(group, guard, out)
    ops_localise.register(group, guard, out)
    ops_mitigate.register(group, guard, out)
    ops_probe.register(group, guard, out)
