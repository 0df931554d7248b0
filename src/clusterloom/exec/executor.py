"""The executor interface and the local one: a process pool sized to the machine, or serial.

:meth:`Executor.run` takes tasks and yields an :class:`Outcome` for each as it finishes (in
completion order, not submission order): its table, or the last error after ``retries`` more
attempts. At most :attr:`Executor.window` tasks are in flight at once, so a long sweep is
streamed rather than queued whole. ``on_start(task, attempt)`` is called as each attempt is
submitted (a caller records it, e.g. the sweep's journal).

A subclass only submits one task, waits for some to finish and reads one result; the loop,
the bounded retries and the window are here, once, for every executor.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from clusterloom.errors import Problem, SpecError
from clusterloom.exec.task import Task, call, from_ipc

__all__ = ["DEFAULT_RETRIES", "Executor", "LocalExecutor", "Outcome", "machine_workers"]

#: attempts after the first before a task is reported as failed
DEFAULT_RETRIES = 2

OnStart = Callable[[Task, int], None]


def machine_workers() -> int:
    """The CPUs this process may use (its affinity mask, else ``os.cpu_count()``)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class Outcome:
    """A finished task: ``table`` (a ``pyarrow.Table``) when it succeeded, else ``None`` and
    ``error`` (the last attempt's ``Type: message``); ``attempts`` it took."""

    task: Task
    table: Any
    error: str
    attempts: int

    @property
    def ok(self) -> bool:
        return self.table is not None


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


class Executor(ABC):
    """Runs tasks somewhere (module docstring). Use as a context manager; ``close`` releases
    what it started."""

    name: str = "executor"

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise SpecError([Problem("--workers", f"must be >= 1, got {workers}")])
        self.workers = workers

    @property
    def window(self) -> int:
        """Tasks in flight at once: two per worker, so none waits for the driver."""
        return 2 * self.workers

    @abstractmethod
    def _submit(self, task: Task) -> Any:
        """Start ``task``; a handle to wait on."""

    @abstractmethod
    def _wait(self, handles: list[Any]) -> list[Any]:
        """Block until at least one of ``handles`` is done; the done ones."""

    @abstractmethod
    def _result(self, handle: Any) -> bytes:
        """The Arrow IPC bytes of a done handle, or raise the task's error."""

    def close(self) -> None:  # noqa: B027 - an executor with nothing to release keeps it
        """Release workers (and a Ray this executor started)."""

    def describe(self) -> str:
        return f"{self.name} ({self.workers} worker{'s' if self.workers != 1 else ''})"

    def __enter__(self) -> Executor:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def run(
        self,
        tasks: Iterable[Task],
        *,
        retries: int = DEFAULT_RETRIES,
        on_start: OnStart | None = None,
    ) -> Iterator[Outcome]:
        """Each task's :class:`Outcome` as it finishes (module docstring)."""
        if retries < 0:
            raise SpecError([Problem("--retries", f"must be >= 0, got {retries}")])
        todo: deque[tuple[Task, int]] = deque((t, 1) for t in tasks)
        flying: dict[Any, tuple[Task, int]] = {}
        while todo or flying:
            while todo and len(flying) < self.window:
                task, attempt = todo.popleft()
                if on_start is not None:
                    on_start(task, attempt)
                flying[self._submit(task)] = (task, attempt)
            for handle in self._wait(list(flying)):
                task, attempt = flying.pop(handle)
                try:
                    data = self._result(handle)
                except Exception as exc:
                    if attempt <= retries:
                        todo.append((task, attempt + 1))
                    else:
                        yield Outcome(task, None, _describe(exc), attempt)
                    continue
                yield Outcome(task, from_ipc(data), "", attempt)


class _Done:
    """A serial run's handle: the task already ran."""

    def __init__(self, task: Task) -> None:
        self.data: bytes | None = None
        self.error: Exception | None = None
        try:
            self.data = call(task.fn, dict(task.inputs))
        except Exception as exc:
            self.error = exc


class LocalExecutor(Executor):
    """A process pool on this machine (``workers`` processes, default every CPU this process
    may use); with one worker, tasks run serially in this process, one at a time."""

    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        super().__init__(machine_workers() if workers is None else workers)
        self._pool: ProcessPoolExecutor | None = None

    @property
    def window(self) -> int:
        return 1 if self.workers == 1 else super().window

    def _ensure_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=self.workers)
        return self._pool

    def _submit(self, task: Task) -> Any:
        if self.workers == 1:
            return _Done(task)
        try:
            return self._ensure_pool().submit(call, task.fn, dict(task.inputs))
        except BrokenProcessPool:  # a worker died (killed, out of memory): a fresh pool
            self._pool = None
            return self._ensure_pool().submit(call, task.fn, dict(task.inputs))

    def _wait(self, handles: list[Any]) -> list[Any]:
        if self.workers == 1:
            return handles
        done, _ = wait(handles, return_when=FIRST_COMPLETED)
        return [h for h in handles if h in done]

    def _result(self, handle: Any) -> bytes:
        if isinstance(handle, _Done):
            if handle.error is not None:
                raise handle.error
            assert handle.data is not None
            return handle.data
        assert isinstance(handle, Future)
        data: bytes = handle.result()
        return data

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
