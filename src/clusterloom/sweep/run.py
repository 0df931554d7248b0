"""Running a sweep: its runs as tasks on an executor, results streamed into the dataset.

:func:`sweep_tasks` turns a checked sweep file into tasks (each variant's spec validated
first, its errors named ``variants.NAME.FIELD``); :func:`run_sweep` skips the keys the dataset
already holds, runs the rest through the executor (bounded retries), writes each part as it
finishes and reports progress as ``Step("sweep", done, total)``. The result is every row (the
kept and the new) by key, and the tasks that failed after their retries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

from clusterloom.errors import Problem, SpecError
from clusterloom.exec import DEFAULT_RETRIES, Executor, Task
from clusterloom.sim.predict import Step
from clusterloom.sweep.dataset import Dataset
from clusterloom.sweep.file import Run, SweepFile, expand

if TYPE_CHECKING:
    from clusterloom.spec import ClusterSpec

__all__ = ["Failed", "SweepResult", "run_sweep", "sweep_tasks", "variant_specs"]

TASK_FN = "clusterloom.sweep.task:run_point"
#: the columns a part is stored under (hive partitioning)
PARTITION = ("variant", "transport")


@dataclass(frozen=True)
class Failed:
    """A task that failed after its retries: its key, what it ran, the last error."""

    key: str
    run: Mapping[str, Any]
    error: str
    attempts: int


@dataclass(frozen=True)
class SweepResult:
    """Every row of the sweep that finished (``table``, by key; None if none), how many were
    kept from an earlier run, and the tasks that failed."""

    table: Any
    kept: int
    ran: int
    failed: tuple[Failed, ...]


def _set(doc: dict[str, Any], dotted: str, value: Any) -> bool:
    node: Any = doc
    *parents, last = dotted.split(".")
    for p in parents:
        if not isinstance(node, dict) or p not in node:
            return False
        node = node[p]
    if not isinstance(node, dict) or last not in node:
        return False
    node[last] = value
    return True


def variant_specs(spec: ClusterSpec, variants: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Each variant's spec document (JSON values): ``spec`` with the variant's dotted fields
    set, checked as a spec is. A field the spec has not, or a value it refuses, is a problem
    named ``variants.NAME.FIELD``."""
    from clusterloom.spec import parse_spec

    out: dict[str, Any] = {}
    problems: list[Problem] = []
    for name, changes in variants.items():
        doc = spec.model_dump(mode="json")
        missing = [f for f, v in changes.items() if not _set(doc, f, v)]
        problems += [
            Problem(f"variants.{name}.{f}", "not a field of the spec; name one it has")
            for f in missing
        ]
        if missing:
            continue
        try:
            checked = parse_spec(yaml.safe_dump({"version": 1, **doc}), f"variant {name}")
        except SpecError as exc:
            problems += [Problem(f"variants.{name}.{p.where}", p.message) for p in exc.problems]
            continue
        out[name] = checked.model_dump(mode="json")
    if problems:
        raise SpecError(problems)
    return out


def _spec(sf: SweepFile) -> ClusterSpec:
    from clusterloom.examples import example_text
    from clusterloom.spec import load_spec, parse_spec

    if (sf.spec is None) == (sf.example is None):
        raise SpecError([Problem("spec", "give spec: PATH or example: NAME (one of the two)")])
    if sf.example is not None:
        return parse_spec(example_text(sf.example), f"example {sf.example}")
    assert sf.spec is not None
    return load_spec(sf.spec)


def sweep_tasks(sf: SweepFile, *, yes: bool = False) -> list[tuple[Task, Run]]:
    """Every run of ``sf`` as a task, in file order (refuses a bad file: ``SpecError``)."""
    runs = expand(sf, yes=yes)
    specs = variant_specs(_spec(sf), sf.variants)
    return runs_as_tasks(runs, specs, sf.engine)


def runs_as_tasks(
    runs: Iterable[Run], specs: Mapping[str, Any], engine: str
) -> list[tuple[Task, Run]]:
    """``runs`` (variant, transport, seed, scenario fields) as tasks on ``specs`` by variant."""
    out = []
    for r in runs:
        if "transport" not in r:
            raise SpecError([Problem("grid.transport", "every run needs a transport")])
        out.append((Task(TASK_FN, {**r, "engine": engine, "spec": specs[r["variant"]]}), r))
    return out


def run_sweep(
    tasks: Sequence[tuple[Task, Run]],
    executor: Executor,
    dataset: Dataset | None = None,
    *,
    retries: int = DEFAULT_RETRIES,
    progress: Callable[[Step], None] | None = None,
) -> SweepResult:
    """Run ``tasks`` (module docstring); without a dataset, rows are kept in memory only."""
    import pyarrow as pa

    from clusterloom.sweep.dataset import read_parts
    from clusterloom.sweep.task import schema

    say = progress or (lambda _s: None)
    by_key = {t.key: (t, r) for t, r in tasks}
    done = dataset.done & by_key.keys() if dataset is not None else frozenset()
    todo = [t for k, (t, _) in by_key.items() if k not in done]
    rows: list[Any] = []
    failed: list[Failed] = []
    total, n = len(by_key), len(done)
    say(Step("sweep", n, total, f"{n:,} of {total:,} runs ({len(done):,} kept)"))
    on_start = (lambda t, a: dataset.log("start", t.key, a)) if dataset is not None else None
    for o in executor.run(todo, retries=retries, on_start=on_start):
        run = by_key[o.task.key][1]
        if o.ok:
            table = o.table.add_column(0, "key", pa.array([o.task.key])).cast(schema())
            if dataset is not None:
                dataset.add(o.task.key, {c: str(run.get(c, "")) for c in PARTITION}, table)
                dataset.log("done", o.task.key, o.attempts)
            rows.append(table)
        else:
            failed.append(Failed(o.task.key, run, o.error, o.attempts))
            if dataset is not None:
                dataset.log("failed", o.task.key, o.attempts, o.error)
        n += 1
        note = f"{n:,} of {total:,} runs" + (f", {len(failed)} failed" if failed else "")
        say(Step("sweep", n, total, note))
    if dataset is not None:
        dataset.fail([{"key": f.key, "run": _shown(f.run), "error": f.error} for f in failed])
        table = read_parts(dataset.root)
        if table is not None:
            table = table.filter(pa.compute.is_in(table["key"], pa.array(sorted(by_key))))
    else:
        table = pa.concat_tables(rows).sort_by("key") if rows else None
    return SweepResult(table, len(done), total - len(done), tuple(failed))


def _shown(run: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in run.items() if k != "spec"}
