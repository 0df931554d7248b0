"""Progress of long simulations (``simulate``, ``packetsim``) on stderr, so that stdout stays the
result: a Rich bar with an ETA on a terminal; plain lines when stderr is not one (piped, a CI
log), such as ``progress: roce-ecmp 40% (12.3 s elapsed, ~18 s left)``, at most one every
:data:`PLAIN_EVERY_S` seconds and none for a task shorter than that; nothing with
``--no-progress``.

The library reports work through ``predict(progress=...)`` as ``sim.predict.Step``s: the bytes
delivered so far of the bytes of every flow (the flow engine counts them every few events, the
packet engine every few thousand). A plain line's estimate of the time left is the work left
over the average rate since the task's first measure (so that set-up before it, such as building
routes or compiling the packet engine, does not slow the estimate); the bar's is Rich's (the
recent rate).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Literal

from rich.console import Console

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from clusterloom.sim.predict import Step

__all__ = ["PLAIN_EVERY_S", "Reporter", "reporter"]

#: Seconds between two plain progress lines of a task (and before its first one).
PLAIN_EVERY_S = 5.0

Mode = Literal["bar", "lines", "off"]


def _seconds(s: float) -> str:
    return f"{s:.1f} s" if s < 10 else f"{s:,.0f} s"


class Reporter:
    """A ``predict`` progress callback drawing on ``console`` in ``mode`` (module docstring);
    a context manager (the bar is removed when it ends). ``clock`` is for tests."""

    def __init__(
        self, console: Console, mode: Mode, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.console, self.mode, self.clock = console, mode, clock
        self._bar: Progress | None = None
        self._ids: dict[str, TaskID] = {}
        self._task = ""
        self._t0 = self._last = 0.0
        self._fraction = 0.0
        self._first: tuple[float, float] | None = None  # (time, fraction) of the first measure

    def __enter__(self) -> Reporter:
        if self.mode == "bar":
            self._bar = _bar(self.console)
            self._bar.__enter__()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.__exit__(kind, exc, tb)

    def __call__(self, step: Step) -> None:
        if self.mode == "bar":
            self._draw(step)
        elif self.mode == "lines":
            self._line(step)

    def _draw(self, step: Step) -> None:
        assert self._bar is not None
        task = self._ids.get(step.task)
        if task is None:
            task = self._ids[step.task] = self._bar.add_task(str(step), total=None)
        if step.fraction is not None:
            self._bar.update(task, total=1.0, completed=step.fraction)
            if step.note:  # a count that changes as it goes (a sweep's runs)
                self._bar.update(task, description=str(step))

    def _line(self, step: Step) -> None:
        now = self.clock()
        if step.task != self._task:
            self._task, self._t0, self._last, self._fraction = step.task, now, now, 0.0
            self._first = None
        if step.fraction is None:
            return
        self._fraction = f = max(self._fraction, step.fraction)
        if self._first is None:
            self._first = (now, f)
        if now - self._last < PLAIN_EVERY_S:
            return
        self._last = now
        (t1, f1), elapsed = self._first, now - self._t0
        rate = (f - f1) / (now - t1) if now > t1 else 0.0
        left = f"~{_seconds((1 - f) / rate)} left" if rate > 0 else "time left unknown"
        self.console.print(
            f"progress: {step.task} {f:.0%}{f' {step.note}' if step.note else ''} "
            f"({_seconds(elapsed)} elapsed, {left})",
            soft_wrap=True,
        )


def _bar(console: Console) -> Progress:
    from rich.progress import (
        BarColumn,
        Progress,
        SpinnerColumn,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )


def reporter(console: Console, enabled: bool = True) -> Reporter:
    """The reporter for ``console``: a bar on a terminal, plain lines otherwise, nothing when
    not ``enabled``."""
    mode: Mode = "off" if not enabled else "bar" if console.is_terminal else "lines"
    return Reporter(console, mode)
