"""What ``clusterloom diff A B`` accepts as A and B, each turned into a design's files:

- a run directory (what ``design -o`` wrote: holds ``design.json``): read where it is;
- a spec file (YAML): the design stages run in memory (no simulation) and the files written
  into a temporary directory, as ``design -o`` writes them;
- a store reference (``name@version``, an id or a prefix of 6 or more hex digits, a name):
  the design's artifacts copied by name from the store (``Store.artifact_path``) into a
  temporary directory.

A path that exists is a path; anything else is looked up in the store. A name that is both a
path and, with ``--store`` given, a design of the store is refused as ambiguous; a name that is
neither is refused. Either way one line naming the argument and the fix (``SpecError``).
"""

from __future__ import annotations

import os
import shutil
from contextlib import ExitStack
from pathlib import Path, PurePosixPath
from tempfile import mkdtemp
from typing import TYPE_CHECKING

from clusterloom.errors import Problem, SpecError, StoreError

if TYPE_CHECKING:
    from clusterloom.store import Store

__all__ = ["DesignInputs"]


def _spec_run(path: Path, into: Path) -> Path:
    from clusterloom.pipeline import run_design
    from clusterloom.spec import load_spec
    from clusterloom.write import write_design

    design = run_design(load_spec(path), compare=False)
    write_design(design, into)
    return into


def _safe_name(name: str) -> PurePosixPath | None:
    p = PurePosixPath(name)
    if p.is_absolute() or not p.parts or any(part in ("", ".", "..") for part in p.parts):
        return None
    return p


def _store_run(store: Store, ref: str, into: Path) -> tuple[Path, str]:
    record = store.design(ref)
    for artifact in store.artifacts(record.id):
        name = _safe_name(artifact.name)
        if name is None:
            raise StoreError(f"design {record.ref}: artifact {artifact.name[:80]!r} is no path")
        target = into.joinpath(*name.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(store.artifact_path(record.id, artifact.name), target)
    return into, f"store {record.ref} ({record.id})"


class DesignInputs:
    """Resolves A and B into run directories, temporary ones removed on :meth:`close` (a
    context manager). The store is opened only when an argument needs it."""

    def __init__(self, store_url: str | None = None) -> None:
        self._url = store_url
        self._store: Store | None = None
        self._stack = ExitStack()

    def __enter__(self) -> DesignInputs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stack.close()
        if self._store is not None:
            self._store.close()
            self._store = None

    def _temp(self) -> Path:
        path = Path(mkdtemp(prefix="clusterloom-diff-"))
        self._stack.callback(shutil.rmtree, path, True)
        return path

    def _open(self) -> Store:
        if self._store is None:
            from clusterloom.store import open_store

            self._store = open_store(self._url)
        return self._store

    def _in_store(self, arg: str) -> bool:
        try:
            self._open().design(arg)
        except StoreError:
            return False
        return True

    def resolve(self, label: str, arg: str) -> tuple[Path, str]:
        """The run directory of argument ``label`` (``A`` or ``B``) and how to name it."""
        path = Path(arg)
        if path.exists():
            if self._url is not None and self._in_store(arg):
                raise SpecError(
                    [
                        Problem(
                            label,
                            f"{arg!r} is both a path and a design in the store: write "
                            f"./{arg} for the path or give the design's id",
                        )
                    ]
                )
            if path.is_dir():
                return path, str(path)
            return _spec_run(path, self._temp()), f"spec {path}"
        if self._url is None and not _default_store_exists():
            raise SpecError(
                [
                    Problem(
                        label,
                        f"{arg!r}: no such run directory or spec file, and no store to look "
                        "it up in (give --store URL)",
                    )
                ]
            )
        try:
            return _store_run(self._open(), arg, self._temp())
        except StoreError as exc:
            raise SpecError(
                [Problem(label, f"{arg!r}: no such run directory or spec file; {exc}")]
            ) from exc


def _default_store_exists() -> bool:
    """Whether the default store is worth opening: one named by ``$CLUSTERLOOM_STORE``, or the
    default SQLite file when it exists (a typo never creates ``~/.clusterloom/store.db``)."""
    from clusterloom.store import default_url

    if os.environ.get("CLUSTERLOOM_STORE"):
        return True
    return Path(default_url().removeprefix("sqlite:///")).expanduser().is_file()
