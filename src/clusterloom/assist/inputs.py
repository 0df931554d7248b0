"""What ``clusterloom diff A B`` accepts as A and B, each turned into a design's files:

- a run directory (what ``design -o`` wrote: holds ``design.json``): read where it is;
- a spec file (YAML): the design stages run in memory and the files written into a temporary
  directory, as ``design -o`` writes them (no simulation unless ``predict``: then the spec's
  scenario, or the standard one, through the flow engine, into ``simulation/``);
- a store reference (``name@version``, an id or a prefix of 6 or more hex digits, a name):
  the design's artifacts copied by name from the store (``Store.artifact_path``) into a
  temporary directory.

A path that exists is a path; anything else is looked up in the store, which the caller opens
(the command line: ``--store URL``, else the default store when it exists), so this part
imports no store. A name that is both a
path and, with ``--store`` given, a design of the store is refused as ambiguous; a name that is
neither is refused. Either way one line naming the argument and the fix (``SpecError``).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from tempfile import mkdtemp
from typing import TYPE_CHECKING

from clusterloom.errors import Problem, SpecError, StoreError

if TYPE_CHECKING:
    from clusterloom.spec import ClusterSpec
    from clusterloom.store import Store

__all__ = ["DesignInputs", "design_spec"]


def _spec_run(path: Path, into: Path, predict: bool) -> Path:
    """The spec at ``path`` designed into ``into`` (:func:`design_spec`)."""
    from clusterloom.spec import load_spec

    return design_spec(load_spec(path), into, predict)


def design_spec(spec: ClusterSpec, into: Path, predict: bool = False) -> Path:
    """The spec designed as ``clusterloom design`` designs it, written into ``into``; with
    ``predict``, its scenario (the standard one, a permutation of the engine's transports, when
    it has none) predicted by the flow engine and written to ``simulation/``."""
    from clusterloom.pipeline import run_design
    from clusterloom.spec.scenario import ScenarioSpec
    from clusterloom.write import write_design

    if predict and spec.scenario is None:
        spec = spec.model_copy(update={"scenario": ScenarioSpec()})
    design = run_design(spec, compare=False, predict=predict)
    write_design(design, into)
    return into


def _store_run(store: Store, ref: str, into: Path) -> tuple[Path, str]:
    from clusterloom.assist.diff import reads

    record = store.materialize(ref, into, keep=reads)
    return into, f"store {record.ref} ({record.id})"


class DesignInputs:
    """Resolves A and B into run directories, temporary ones removed on :meth:`close` (a
    context manager). The store is opened only when an argument needs it."""

    def __init__(
        self,
        open_store: Callable[[], Store] | None = None,
        *,
        store_given: bool = False,
        predict: bool = False,
    ) -> None:
        """``open_store`` opens the store a reference is looked up in (None: there is none);
        ``store_given``: the user named it (``--store``), so a path that is also one of its
        designs is ambiguous; ``predict``: a spec's design is also predicted (``_spec_run``)."""
        self._predict = predict
        self._opener = open_store
        self._given = store_given
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
            assert self._opener is not None
            self._store = self._opener()
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
            if self._given and self._opener is not None and self._in_store(arg):
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
            if path.name == "design.json":
                raise SpecError(
                    [Problem(label, f"{arg}: give the run directory that holds it, not the file")]
                )
            return _spec_run(path, self._temp(), self._predict), f"spec {path}"
        if self._opener is None:
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
