"""The exit codes every command keeps (``DESIGN.md``, "Contracts") and the one check shared by
the simulation commands: a run whose flows did not all finish did not complete (exit 3)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from rich.console import Console
from rich.text import Text

#: 0 done; 1 checks found errors; 2 bad input; 3 the run did not complete; 70 a bug;
#: 130 interrupted; 141 stdout closed
EXIT_INCOMPLETE, EXIT_BUG, EXIT_INTERRUPTED, EXIT_CLOSED_PIPE = 3, 70, 130, 141


def say(console: Console, label: str, style: str, message: object) -> None:
    """One line on ``console``: ``label: message``, the message as text on one line."""
    one_line = " ".join(str(message).split())
    console.print(Text.assemble((label, style), f": {one_line}"), soft_wrap=True)


def incomplete(
    console: Console,
    runs: Iterable[tuple[str, int, int]],
    why: Mapping[str, Sequence[str]] | None = None,
) -> int:
    """Say which runs (transport, finished, flows) left flows unfinished and why (``why``:
    the engine's lines per transport, else the flow engine's one cause); return
    ``EXIT_INCOMPLETE`` when any did, else 0."""
    code = 0
    for name, finished, flows in runs:
        if finished < flows:
            lines = list((why or {}).get(name, ()))
            cause = (
                "; their figures are shown as '-'"
                if lines
                else " (a failure left them without a path for the rest of the run); their "
                "figures are shown as '-'"
            )
            say(
                console,
                "incomplete",
                "bold yellow",
                f"{name}: {flows - finished:,} of {flows:,} flows did not finish{cause}",
            )
            for line in lines:
                say(console, f"  {name}", "yellow", line)
            code = EXIT_INCOMPLETE
    return code
