"""Inputs many tasks share, too large for JSON: one file, named by its SHA-256.

A caller pickles what its tasks share once (:func:`write_shared`) into a directory the workers
see and gives each task the file's path and digest as JSON inputs; a task reads it back with
:func:`read_shared`, which refuses a file whose bytes are not the ones the task was made for.
So the task stays a function of its inputs (the digest is part of its key) and nothing of the
caller crosses but the file it chose to write.
"""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path
from typing import Any

from clusterloom.atomic import atomic_write

__all__ = ["read_shared", "write_shared"]


def write_shared(directory: Path | str, value: Any) -> dict[str, str]:
    """``value`` pickled into ``directory`` (atomically, named by its digest); the task inputs
    that name it: ``{"shared": path, "sha256": digest}``."""
    blob = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    digest = hashlib.sha256(blob).hexdigest()
    path = atomic_write(Path(directory) / f"{digest}.pickle", blob)
    return {"shared": str(path), "sha256": digest}


def read_shared(inputs: dict[str, Any]) -> Any:
    """What :func:`write_shared` stored, from a task's ``shared`` and ``sha256`` inputs;
    ``ValueError`` when the file's bytes differ from the digest."""
    path = inputs["shared"]
    data = Path(path).read_bytes()
    if hashlib.sha256(data).hexdigest() != inputs["sha256"]:
        raise ValueError(f"{path}: not the inputs this task was made for (SHA-256 differs)")
    return pickle.loads(data)
