"""Tasks: pure functions of their inputs, named by a content-addressed key.

A :class:`Task` names its function by qualified name (``"package.module:function"``, importable
on every worker) and holds its inputs as plain JSON values. Its key is the SHA-256 of the
canonical JSON (sorted keys, no spaces) of the function's name, the inputs and the clusterloom
version, so the same work has the same key on every machine and a finished result can be found
again by it (a rerun of a sweep skips the keys it has).

A task function takes the inputs (a ``dict``) and returns a ``pyarrow.Table``. What crosses the
process boundary is :func:`call`'s output, the table as Arrow IPC bytes: never a pickled object
of the caller.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from clusterloom._version import __version__

__all__ = ["Task", "call", "canonical_json", "from_ipc", "ping", "task_key", "to_ipc"]


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON: sorted keys, no whitespace, no NaN (refused)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def task_key(fn: str, inputs: Mapping[str, Any], version: str = __version__) -> str:
    """The content-addressed key of running ``fn`` on ``inputs`` with clusterloom ``version``."""
    text = canonical_json({"fn": fn, "inputs": dict(inputs), "version": version})
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Task:
    """One unit of work: ``fn`` (``"module:function"``) applied to ``inputs`` (JSON values).
    ``key`` is computed from both (:func:`task_key`)."""

    fn: str
    inputs: Mapping[str, Any]
    key: str = field(init=False)

    def __post_init__(self) -> None:
        if ":" not in self.fn:
            raise ValueError(f"a task names its function as 'module:function', not {self.fn!r}")
        object.__setattr__(self, "key", task_key(self.fn, self.inputs))


def _function(fn: str) -> Callable[[dict[str, Any]], Any]:
    module, _, name = fn.partition(":")
    found: Callable[[dict[str, Any]], Any] = getattr(importlib.import_module(module), name)
    return found


def to_ipc(table: Any) -> bytes:
    """A ``pyarrow.Table`` as Arrow IPC stream bytes."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def from_ipc(data: bytes) -> Any:
    """The ``pyarrow.Table`` of Arrow IPC stream bytes."""
    import pyarrow as pa

    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


def call(fn: str, inputs: dict[str, Any]) -> bytes:
    """What a worker runs: ``fn(inputs)``, its table returned as Arrow IPC bytes."""
    import pyarrow as pa

    table = _function(fn)(inputs)
    if not isinstance(table, pa.Table):
        raise TypeError(f"task {fn} returned {type(table).__name__}, not a pyarrow.Table")
    return to_ipc(table)


def ping(inputs: dict[str, Any]) -> Any:
    """A task that does nothing but return its inputs' ``n`` and the worker's process id (a
    one-row table): what an executor costs per task, and whether its workers answer."""
    import os

    import pyarrow as pa

    return pa.table({"n": [int(inputs.get("n", 0))], "pid": [os.getpid()]})
