"""Import layering, read from the source (no import is run): stages never import later stages
or the command line; the two engines never import each other; stages and engines import no
writer or page (atomic file output is the base module ``clusterloom.atomic``); the modules of
the simulation stage and its commands have no import cycle, nor has the whole package.

Every import counts, also one inside a function, except those under ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = SRC / "clusterloom"


def _module(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module(p): p for p in ROOT.rglob("*.py")}


def _type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def _imports(name: str) -> set[str]:
    """The clusterloom modules ``name`` imports at run time."""
    tree = ast.parse(MODULES[name].read_text())
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _type_checking(node):
            skip |= {id(n) for child in node.body for n in ast.walk(child)}
    out: set[str] = set()
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            for a in node.names:
                full = f"{base}.{a.name}"
                out.add(full if full in MODULES else base)
    return {m for m in out if m.split(".")[0] == "clusterloom"}


GRAPH = {name: _imports(name) for name in MODULES}


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _offenders(importer: str, imported: str, allowed: frozenset[str] = frozenset()) -> list[str]:
    return sorted(
        f"{m} imports {i}"
        for m, deps in GRAPH.items()
        if _under(m, importer) and m not in allowed
        for i in deps
        if _under(i, imported)
    )


#: the stages in order; an earlier one never imports a later one
STAGES = [
    "clusterloom.workload",
    "clusterloom.fabric",
    "clusterloom.placement",
    "clusterloom.cabling",
    "clusterloom.sim",
]
#: the spec's ``scenario`` checks use the simulator's vocabulary (failure syntax, transport
#: names and options) inside its functions; it is the one module of an earlier stage that may
EXEMPT = frozenset({"clusterloom.spec.scenario"})


@pytest.mark.parametrize(
    ("earlier", "later"),
    [(a, b) for i, a in enumerate(STAGES) for b in [*STAGES[i + 1 :], "clusterloom.pipeline"]],
)
def test_a_stage_never_imports_a_later_one(earlier: str, later: str) -> None:
    assert _offenders(earlier, later) == []


def test_the_spec_imports_no_stage_but_its_scenario_checks() -> None:
    for stage in [*STAGES, "clusterloom.pipeline"]:
        assert _offenders("clusterloom.spec", stage, EXEMPT) == []


#: lifecycle parts: they read designs; no stage, the pipeline, the spec, a writer or a page
#: imports them (their pages take plain data)
LIFECYCLE = ["clusterloom.srv6", "clusterloom.assist", "clusterloom.capacity", "clusterloom.ops"]


@pytest.mark.parametrize("part", LIFECYCLE)
def test_designs_never_import_a_lifecycle_part(part: str) -> None:
    for earlier in [
        *STAGES,
        "clusterloom.pipeline",
        "clusterloom.spec",
        "clusterloom.export",
        "clusterloom.report",
        "clusterloom.write",
    ]:
        assert _offenders(earlier, part) == []


def test_nothing_but_the_command_line_imports_it() -> None:
    found = [
        f"{m} imports {i}"
        for m, deps in GRAPH.items()
        if not _under(m, "clusterloom.cli")
        for i in deps
        if _under(i, "clusterloom.cli")
    ]
    assert found == []


def test_the_engines_do_not_import_each_other() -> None:
    assert _offenders("clusterloom.sim.flow", "clusterloom.sim.packet") == []
    assert _offenders("clusterloom.sim.packet", "clusterloom.sim.flow") == []


#: the simulator's own writers (Parquet results, htsim files): they may write files (through
#: the base ``clusterloom.atomic``), and no engine may depend on them
SIM_WRITERS = frozenset({"clusterloom.sim.flow.results", "clusterloom.sim.htsim"})


@pytest.mark.parametrize("writer", ["clusterloom.export", "clusterloom.report"])
def test_the_simulator_imports_no_writer_or_page(writer: str) -> None:
    assert _offenders("clusterloom.sim", writer) == []


def test_engines_and_stages_import_neither_the_simulators_writers_nor_exports() -> None:
    engines = [m for m in GRAPH if _under(m, "clusterloom.sim") and m not in SIM_WRITERS]
    assert not [m for m in engines if GRAPH[m] & SIM_WRITERS - {"clusterloom.sim.htsim"}]
    for stage in [s for s in STAGES if s != "clusterloom.sim"]:
        assert _offenders(stage, "clusterloom.export") == []
        assert _offenders(stage, "clusterloom.report") == []


def test_the_writers_and_the_pages_do_not_import_each_other() -> None:
    """``export`` writes data files, ``report`` renders pages; ``clusterloom.write`` composes
    them into a run."""
    assert _offenders("clusterloom.export", "clusterloom.report") == []
    assert _offenders("clusterloom.report", "clusterloom.export") == []
    assert _offenders("clusterloom.export", "clusterloom.write") == []
    assert _offenders("clusterloom.report", "clusterloom.write") == []


def _cycle(nodes: set[str]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for d in sorted(GRAPH[n] & nodes):
            if state.get(d) == 1:
                return [*stack[stack.index(d) :], d]
            if d not in state and (found := visit(d)):
                return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(nodes):
        if n not in state and (found := visit(n)):
            return found
    return None


def test_no_cycles_among_the_simulation_modules_and_commands() -> None:
    nodes = {
        m
        for m in GRAPH
        if _under(m, "clusterloom.sim")
        or _under(m, "clusterloom.cli")
        or m in {"clusterloom.spec.scenario", "clusterloom.export.prediction"}
    }
    assert _cycle(nodes) is None


def test_no_import_cycle_in_the_whole_package() -> None:
    """Shared helpers live in a module of their own (``report/_html.py``, an artifact beside its
    stage and validators), so no two modules import each other, directly or around a loop."""
    assert _cycle(set(GRAPH)) is None


def test_the_cycle_check_finds_a_cycle() -> None:
    """The check itself: a loop added to the graph is found."""
    a, b = "clusterloom.placement.stage", "clusterloom.placement.validate"
    GRAPH[b].add(a)
    try:
        assert _cycle(set(GRAPH)) in ([a, b, a], [b, a, b])
    finally:
        GRAPH[b].discard(a)


@pytest.mark.parametrize(
    "later",
    [
        *STAGES,
        "clusterloom.pipeline",
        "clusterloom.sweep",
        "clusterloom.export",
        "clusterloom.report",
        "clusterloom.write",
        "clusterloom.spec",
    ],
)
def test_the_executor_is_infrastructure_and_imports_no_stage(later: str) -> None:
    """``clusterloom.exec`` is below every stage: any stage may use it (placement's hall
    models do), so it imports none of them, nor anything that reads them."""
    assert _offenders("clusterloom.exec", later) == []


@pytest.mark.parametrize("stage", [*STAGES, "clusterloom.pipeline", "clusterloom.exec"])
def test_no_stage_imports_the_sweeps(stage: str) -> None:
    """A sweep reads the stages (``sim.predict``); no stage reads a sweep."""
    assert _offenders(stage, "clusterloom.sweep") == []
