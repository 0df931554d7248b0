"""The one executor interface (``docs/exec.md``): where work runs, a local process pool (the
default) or Ray, is known here and nowhere else.

    with open_executor("local") as ex:          # or "ray", "ray://HOST:PORT"
        for outcome in ex.run(tasks):            # Task("module:function", {...inputs})
            outcome.table                        # a pyarrow.Table, or outcome.error

Infrastructure, not a stage: any stage may use it, it imports no stage.
"""

from __future__ import annotations

from clusterloom.errors import Problem, SpecError
from clusterloom.exec.executor import (
    DEFAULT_RETRIES,
    Executor,
    LocalExecutor,
    Outcome,
    machine_workers,
)
from clusterloom.exec.shared import read_shared, write_shared
from clusterloom.exec.task import Task, canonical_json, task_key

__all__ = [
    "DEFAULT_RETRIES",
    "Executor",
    "LocalExecutor",
    "Outcome",
    "Task",
    "canonical_json",
    "machine_workers",
    "open_executor",
    "read_shared",
    "task_key",
    "write_shared",
]


def open_executor(which: str = "local", workers: int | None = None) -> Executor:
    """``local`` (a process pool of ``workers``, default every CPU; serial with 1), ``ray``
    (``RAY_ADDRESS`` or a local Ray) or ``ray://HOST:PORT`` (an existing cluster). A bad name or
    an address nothing answers on: ``SpecError`` naming ``--executor``, nothing started."""
    if which == "local":
        return LocalExecutor(workers)
    if which == "ray" or which.startswith("ray://"):
        from clusterloom.exec.ray import RayExecutor

        return RayExecutor(None if which == "ray" else which, workers)
    raise SpecError(
        [Problem("--executor", f"'{which}' is not an executor; use local, ray or ray://HOST:PORT")]
    )
