"""The MCP tools as plain functions of a typed input (``models.py``), independent of the SDK:
``call_tool(name, arguments, call)`` checks the arguments against the tool's input model, runs
it and returns its output model. It never raises for what a caller sent:

- arguments that do not fit the input model: one ``bad-argument`` finding per field, naming it;
- a spec or an argument the library refuses (``SpecError``, a path outside the root, a
  directory that is not a run): one ``bad-input`` finding per problem, naming the field or line;
- a design whose checks find errors: ``ok`` false, the findings, and no design figures;
- a bug (any other exception): one ``internal-error`` finding saying so, the traceback logged.

Each tool is the library call the matching command makes (``validate``, ``fabric``, ``place``,
``cable``, ``simulate``, ``diff``), so its figures are the command's. Progress goes to
``Call.progress`` as ``(done, total, message)`` with ``done`` increasing.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from tempfile import mkdtemp
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from clusterloom.assist.mcp.models import (
    BetweenOut,
    CableInput,
    CableOutput,
    CablingOut,
    DesignRef,
    DiffInput,
    DiffOutput,
    FabricSize,
    MediumOut,
    PlaceInput,
    PlaceOutput,
    PlanInput,
    PlanOutput,
    ProposeInput,
    ProposeOutput,
    SimulateInput,
    SimulateOutput,
    SizeInput,
    SizeOutput,
    SpecSource,
    ToolOutput,
    TransportOut,
    ValidateInput,
    ValidateOutput,
)
from clusterloom.assist.mcp.root import Root
from clusterloom.errors import ClusterloomError, Problem, SpecError
from clusterloom.export.design_json import DesignBomTotalsDoc, FindingDoc
from clusterloom.findings import Finding

if TYPE_CHECKING:
    from clusterloom.assist.diff import RunFiles
    from clusterloom.assist.goal import Goal
    from clusterloom.pipeline import Design
    from clusterloom.spec import ClusterSpec

__all__ = ["REFUSED", "TOOLS", "Call", "Tool", "call_tool", "refused"]

log = logging.getLogger(__name__)

#: finding codes of a call that could not be carried out (not a design's own findings)
REFUSED = frozenset({"bad-argument", "bad-input", "refused", "internal-error"})

Out = TypeVar("Out", bound=ToolOutput)
#: ``(done, total, message)``: ``done`` increases from call to call; ``total`` None if unknown
Report = Callable[[float, float | None, str], None]


def _quiet(done: float, total: float | None, message: str) -> None:
    return None


@dataclass(frozen=True)
class Call:
    """What a tool call runs against: the root it is confined to and where progress goes."""

    root: Root
    progress: Report = field(default=_quiet)


# -- findings --------------------------------------------------------------------------------


def _doc(f: Finding) -> FindingDoc:
    return FindingDoc(severity=f.severity.value, code=f.code, message=f.message, where=f.where)


def _problem(code: str, p: Problem) -> FindingDoc:
    return FindingDoc(severity="error", code=code, message=p.message, where=p.where)


def refused(kind: type[Out], findings: list[FindingDoc]) -> Out:
    """An output of type ``kind`` that carries only ``findings`` (``ok`` false unless none is
    an error; every design field null)."""
    empty = {k: None for k in kind.model_fields if k not in ToolOutput.model_fields}
    return kind.model_validate({**_verdict(findings), **empty})


def _verdict(findings: list[FindingDoc]) -> dict[str, Any]:
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = sum(1 for f in findings if f.severity == "warning")
    return {"ok": errors == 0, "errors": errors, "warnings": warnings, "findings": findings}


def _argument_findings(exc: ValidationError, model: type[BaseModel]) -> list[FindingDoc]:
    """One ``bad-argument`` finding per field of ``model`` the arguments get wrong, named by
    its dotted path (``spec.load.validation_problems``, as a spec's fields are named)."""
    from clusterloom.spec.load import validation_problems

    return [_problem("bad-argument", p) for p in validation_problems(exc, model)]


# -- inputs ----------------------------------------------------------------------------------


def _confined(spec: ClusterSpec, root: Root, where: str) -> ClusterSpec:
    """``spec`` with the one file it names (``scenario.htsim_file``) resolved under the root
    (relative to it), refused when it lies outside."""
    sc = spec.scenario
    if sc is None or sc.htsim_file is None:
        return spec
    path = root.existing(f"{where}scenario.htsim_file", sc.htsim_file)
    return spec.model_copy(update={"scenario": sc.model_copy(update={"htsim_file": str(path)})})


def _spec(src: SpecSource, root: Root, prefix: str = "") -> ClusterSpec:
    """The one spec ``src`` gives (text, a file under the root, or a built-in example);
    ``prefix`` names the argument that holds it (``target.``)."""
    from clusterloom.spec import load_spec, parse_spec

    given = [k for k in ("spec", "path", "example") if getattr(src, k) is not None]
    if len(given) != 1:
        raise SpecError(
            [
                Problem(
                    f"{prefix}spec" if not given else ", ".join(prefix + k for k in given),
                    "give exactly one of spec (YAML text), path (a spec file under the root) "
                    "or example (a built-in example's name)",
                )
            ]
        )
    if src.spec is not None:
        spec = parse_spec(src.spec, source=f"{prefix}spec")
    elif src.path is not None:
        path = root.existing(f"{prefix}path", src.path)
        if not path.is_file():
            raise SpecError([Problem(f"{prefix}path", f"{src.path!r} is not a file")])
        spec = load_spec(path)
    else:
        from clusterloom.examples import example_names, example_text

        assert src.example is not None
        if src.example not in example_names():
            known = ", ".join(example_names())
            raise SpecError(
                [Problem(f"{prefix}example", f"no example {src.example!r}; known: {known}")]
            )
        spec = parse_spec(example_text(src.example), source=f"example {src.example}")
    return _confined(spec, root, prefix)


def _stages(
    call: Call, spec: ClusterSpec, place: bool = True, cable: bool = True
) -> Callable[[str], None]:
    """``run_design``'s progress (a stage's name as it starts) as ``(done, total, stage)``."""
    from clusterloom.pipeline import stage_names

    total = len(stage_names(spec, place=place, cable=cable))
    seen = [0]

    def stage(name: str) -> None:
        call.progress(seen[0], total, name)
        seen[0] += 1

    return stage


def _design(call: Call, spec: ClusterSpec, place: bool = True, cable: bool = True) -> Design:
    from clusterloom.pipeline import run_design

    stages = _stages(call, spec, place, cable)
    return run_design(spec, compare=False, place=place, cable=cable, progress=stages)


def _bom(design: Design) -> DesignBomTotalsDoc:
    from clusterloom.units import to_usd, to_watts

    bom = design.bom
    return DesignBomTotalsDoc(
        power_w=to_watts(bom.power_mw),
        cost_usd=to_usd(bom.cost_cents),
        switches=bom.switches,
        transceivers=bom.transceivers,
    )


def _has_errors(findings: list[FindingDoc]) -> bool:
    return any(f.severity == "error" for f in findings)


def _needs_site(spec: ClusterSpec, what: str) -> None:
    if spec.site is None:
        raise SpecError([Problem("site", f"this spec has no site section to {what}")])


@contextmanager
def _writing(call: Call, output: str | None, spec: ClusterSpec) -> Iterator[Path | None]:
    """The run directory ``output`` under the root as a transaction (``export.outdir``): the
    block writes into the yielded staging directory (None: nothing is written)."""
    if output is None:
        yield None
        return
    from clusterloom._version import __version__
    from clusterloom.export.outdir import output_run
    from clusterloom.spec import spec_hash

    target = call.root.output("output", output)
    with output_run(target, spec_hash=spec_hash(spec), version=__version__) as run:
        yield run.staging


# -- the tools -------------------------------------------------------------------------------


def validate(inp: ValidateInput, call: Call) -> ValidateOutput:
    """Check a spec and the fabrics it asks for (with ``place``, also place and cable the
    racks); every finding of every stage that ran."""
    from clusterloom.spec import spec_hash

    spec = _spec(inp, call.root)
    design = _design(call, spec, place=inp.place)
    findings = [_doc(f) for f in design.findings]
    if spec.site is not None and not inp.place:
        from clusterloom.placement import check_site

        try:
            check_site(spec, design.fabrics)
        except SpecError as exc:
            findings += [_problem("site", p) for p in exc.problems]
    return ValidateOutput(**_verdict(findings), spec_hash=spec_hash(spec))


def size(inp: SizeInput, call: Call) -> SizeOutput:
    """Size every fabric of a spec: the plan of each, its BOM and the options compared."""
    from clusterloom.export.design_json import design_model
    from clusterloom.pipeline import run_design

    spec = _spec(inp, call.root)
    design = run_design(spec, place=False, progress=_stages(call, spec, place=False))
    findings = [_doc(f) for f in design.findings]
    if _has_errors(findings):
        return refused(SizeOutput, findings)
    docs = design_model(design).fabrics
    fabrics = [
        FabricSize(
            plan=doc,
            oversubscription_leaf=fd.plan.oversubscription[0],
            oversubscription_spine=fd.plan.oversubscription[1],
            bisection_bps_total=doc.bisection_bps_per_plane * doc.planes,
        )
        for fd, doc in zip(design.fabrics, docs, strict=True)
    ]
    return SizeOutput(**_verdict(findings), fabrics=fabrics, bom=_bom(design))


def place(inp: PlaceInput, call: Call) -> PlaceOutput:
    """Place the racks of every fabric on the spec's site: halls, racks, power, lengths."""
    from clusterloom.export.design_json import design_model

    spec = _spec(inp, call.root)
    _needs_site(spec, "place racks on")
    design = _design(call, spec, cable=False)
    findings = [_doc(f) for f in design.findings]
    if _has_errors(findings):
        return refused(PlaceOutput, findings)
    return PlaceOutput(
        **_verdict(findings), placement=design_model(design).placement, bom=_bom(design)
    )


def _cabling(design: Design) -> CablingOut:
    c = design.cabling
    assert c is not None
    by, n = c.by_medium, c.totals

    def between(pairs: dict[tuple[str, str], tuple[int, int]]) -> list[BetweenOut]:
        return [
            BetweenOut(a=a, b=b, cables=t, fibres=f) for (a, b), (t, f) in sorted(pairs.items())
        ]

    return CablingOut(
        links=c.n_links,
        realized=n.realized,
        trunks=n.trunks,
        backbones=n.backbones,
        panels=n.panels,
        by_medium=[
            MediumOut(medium=m, links=k, structured=s, metres=round(metres, 3), longest_m=top)
            for m, k, s, metres, top in zip(
                by.names, by.links, by.structured, by.metres, by.longest, strict=True
            )
        ],
        between_halls=between(c.between_halls),
        between_buildings=between(c.between_buildings),
    )


def cable(inp: CableInput, call: Call) -> CableOutput:
    """Place and cable: media, lengths, trunks and panels; with ``output`` the whole design
    written under the root as ``clusterloom design -o`` writes it."""
    from clusterloom.export.design_json import design_model
    from clusterloom.write import write_design

    spec = _spec(inp, call.root)
    _needs_site(spec, "cable")
    if inp.output is not None:
        call.root.output("output", inp.output)  # refused before any work
    design = _design(call, spec)
    findings = [_doc(f) for f in design.findings]
    if _has_errors(findings):
        return refused(CableOutput, findings)
    with _writing(call, inp.output, spec) as staging:
        if staging is not None:
            call.progress(len(design.timings_s), None, f"writing {inp.output}")
            write_design(design, staging)
    written = (
        None if inp.output is None else call.root.shown(call.root.output("output", inp.output))
    )
    return CableOutput(
        **_verdict(findings),
        placement=design_model(design).placement,
        cabling=_cabling(design),
        bom=_bom(design),
        written=written,
    )


def _written(call: Call, output: str | None) -> str | None:
    return None if output is None else call.root.shown(call.root.output("output", output))


def _us(ps: float | None) -> float | None:
    import math

    from clusterloom.units import to_us

    return None if ps is None or math.isnan(ps) else round(to_us(ps), 6)


class _Steps:
    """The steps of ``predict`` or ``propose`` as strictly increasing progress: one unit per
    task, its fraction within (at most 0.99, so the next task starts above it); a step is
    reported when its task changes or its fraction moves by 5 % or more."""

    def __init__(self, call: Call, tasks: int | None) -> None:
        self.call, self.tasks = call, tasks
        self.task, self.index, self.shown = "", -1, -1.0

    def __call__(self, step: Any) -> None:
        if step.task != self.task:
            self.task, self.index, self.shown = step.task, self.index + 1, -1.0
        fraction = min(step.fraction or 0.0, 0.99)  # below the next task's start
        if fraction - self.shown < 0.05 and self.shown >= 0:
            return
        self.shown = fraction
        total = None if self.tasks is None else max(self.tasks, self.index + 1)
        self.call.progress(self.index + fraction, total, str(step))


def _htsim(traffic: str | None, root: Root) -> str | None:
    if traffic is None or not traffic.startswith("htsim:"):
        return traffic
    return f"htsim:{root.existing('traffic', traffic.removeprefix('htsim:'))}"


def simulate(inp: SimulateInput, call: Call) -> SimulateOutput:
    """The spec's scenario, with the overrides given, on the backend fabric (flow engine):
    each transport's completion and flow completion times next to the ideal bound."""
    from clusterloom.fabric import design_fabric
    from clusterloom.sim.predict import FlowPrediction, predict, upward_links
    from clusterloom.sim.scenario import resolve_scenario
    from clusterloom.write import write_prediction

    spec = _spec(inp, call.root)
    backend = design_fabric(spec, "backend", compare=False)
    findings = [_doc(f) for f in backend.findings]
    if _has_errors(findings):
        return refused(SimulateOutput, findings)
    topology = backend.topology
    scenario = resolve_scenario(
        spec,
        topology,
        engine="flow",
        traffic=_htsim(inp.traffic, call.root),
        size=inp.size,
        transports=inp.transports,
        options=inp.options,
        failures=inp.failures,
        hosts=inp.hosts,
        seed=inp.seed,
        rtol=inp.rtol,
    )
    with _writing(call, inp.output, spec) as staging:
        result = predict(
            topology,
            scenario,
            progress=_Steps(call, len(scenario.transports) + 1),
            keep_runs=staging is not None,
            watch_links=upward_links(topology) if staging is not None else None,
        )
        if staging is not None and result.runs:
            write_prediction(result, staging, spec.name)
    assert isinstance(result, FlowPrediction)
    transports = []
    for c in result.compared:
        s = c.summary
        if s.finished < s.flows:
            findings.append(
                FindingDoc(
                    severity="warning",
                    code="incomplete",
                    message=f"{s.flows - s.finished:,} of {s.flows:,} flows did not finish "
                    "(a failure left them without a path for the rest of the run)",
                    where=s.transport,
                )
            )
        transports.append(
            TransportOut(
                transport=s.transport,
                flows=s.flows,
                finished=s.finished,
                completion_us=_us(c.completion_ps),
                fct_p50_us=_us(s.fct_p50_ps),
                fct_p99_us=_us(s.fct_p99_ps),
                fct_max_us=_us(s.fct_max_ps),
                vs_ideal=None if c.vs_ideal is None else round(c.vs_ideal, 9),
                assumption=c.assumption,
            )
        )
    written = (
        None if inp.output is None else call.root.shown(call.root.output("output", inp.output))
    )
    return SimulateOutput(
        **_verdict(findings),
        scenario=scenario.to_dict(),
        transports=transports,
        written=written,
    )


def _side(label: str, ref: DesignRef, call: Call, predict: bool, temp: Path) -> RunFiles:
    """One side of a diff read as a design's files (a run directory as it is; a spec designed
    into ``temp`` first), named as the caller gave it."""
    from clusterloom.assist.diff import read_run
    from clusterloom.assist.inputs import design_spec
    from clusterloom.spec import load_spec, parse_spec
    from clusterloom.store.summary import run_summary

    if (ref.path is None) == (ref.spec is None):
        raise SpecError(
            [Problem(label, "give exactly one of path (a run directory or spec file) or spec")]
        )
    if ref.spec is not None:
        spec = _confined(parse_spec(ref.spec, source=f"{label}.spec"), call.root, f"{label}.")
        run, name = design_spec(spec, temp / label, predict), f"{label}: spec text"
    else:
        assert ref.path is not None
        path = call.root.existing(f"{label}.path", ref.path)
        name = f"{label}: {call.root.shown(path)}"
        if path.is_dir():
            run = path
        elif path.name == "design.json":
            raise SpecError([Problem(f"{label}.path", "give the run directory that holds it")])
        else:
            spec = _confined(load_spec(path), call.root, f"{label}.")
            run = design_spec(spec, temp / label, predict)
    try:
        return read_run(run, name, run_summary)
    except SpecError as exc:
        shown = call.root.shown(run) if run.is_relative_to(call.root.path) else name
        raise SpecError(
            [Problem(f"{label}.path", f"{shown}: {p.message}") for p in exc.problems]
        ) from exc


def diff(inp: DiffInput, call: Call) -> DiffOutput:
    """Two designs compared, b - a (``assist.diff_designs``); ``ok`` false when b has error
    findings that a had not (the findings are those b adds)."""
    from clusterloom.assist.diff import diff_designs

    temp = Path(mkdtemp(prefix="clusterloom-mcp-diff-"))
    try:
        call.progress(0, 2, "a")
        a = _side("a", inp.a, call, inp.predict, temp)
        call.progress(1, 2, "b")
        b = _side("b", inp.b, call, inp.predict, temp)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    result = diff_designs(a, b)
    findings = [
        FindingDoc.model_validate(
            {"severity": f.severity, "code": f.code, "message": f.message, "where": f.where}
        )
        for f in result.findings_appear
    ]
    return DiffOutput(**_verdict(findings), diff=result.to_dict())


def _goal(inp: ProposeInput, root: Root) -> Goal:
    """The one goal ``inp`` gives (an object, YAML text, a file under the root, an example)."""
    from clusterloom.assist.goal import (
        example_goal_names,
        example_goal_text,
        goal_from_dict,
        load_goal,
        parse_goal,
    )

    given = [k for k in ("goal", "text", "path", "example") if getattr(inp, k) is not None]
    if len(given) != 1:
        raise SpecError(
            [
                Problem(
                    "goal" if not given else ", ".join(given),
                    "give exactly one of goal (an object), text (its YAML), path (a goal file "
                    "under the root) or example (a built-in example goal's name)",
                )
            ]
        )
    if inp.goal is not None:
        try:
            return goal_from_dict(inp.goal.model_dump(mode="json"), source="goal")
        except SpecError as exc:  # the checks beyond the schema: name the argument's field
            raise SpecError([Problem(f"goal.{p.where}", p.message) for p in exc.problems]) from exc
    if inp.text is not None:
        return parse_goal(inp.text, source="text")
    if inp.path is not None:
        path = root.existing("path", inp.path)
        if not path.is_file():
            raise SpecError([Problem("path", f"{inp.path!r} is not a file")])
        return load_goal(path)
    assert inp.example is not None
    if inp.example not in example_goal_names():
        known = ", ".join(example_goal_names())
        raise SpecError([Problem("example", f"no example goal {inp.example!r}; known: {known}")])
    return parse_goal(example_goal_text(inp.example), source=f"example {inp.example}")


def propose(inp: ProposeInput, call: Call) -> ProposeOutput:
    """Propose the designs that meet a goal (``assist.propose``): the candidates its space
    allows, pruned by the sizing rules and the budget, simulated once per fabric shape, the
    Pareto front designed and validated; every other candidate with the reason it lost. No
    candidate meeting the goal is a warning (``goal-unmet``) naming the binding constraint."""
    from clusterloom.assist.propose import propose as run_propose

    goal = _goal(inp, call.root)
    result = run_propose(goal, progress=_Steps(call, None))
    findings = [_doc(f) for f in result.findings]
    if _has_errors(findings):
        return refused(ProposeOutput, findings)
    return ProposeOutput(**_verdict(findings), proposal=result.to_dict())


def plan(inp: PlanInput, call: Call) -> PlanOutput:
    """Plan the change from an installed design (a run directory under the root) to a target
    spec (``assist.plan_change``): the growth path's steps in waves, every intermediate state
    held to the floors (connectivity, job paths, bisection, planes) and, with ``simulate``,
    its predicted impact; ``ok`` false when a step cannot keep a floor (the findings name the
    floor and the step)."""
    from clusterloom.assist.plan import plan_change

    baseline = call.root.existing("baseline", inp.baseline)
    if not baseline.is_dir():
        raise SpecError([Problem("baseline", f"{inp.baseline!r}: give a run directory")])
    target = _spec(inp.target, call.root, "target.")
    call.progress(0, 1, "planning the change")
    result = plan_change(baseline, target, inp.floors, simulate=inp.simulate)
    call.progress(1, 1, "planned")
    findings = [_doc(f) for f in result.findings]
    if _has_errors(findings):
        return refused(PlanOutput, findings)
    return PlanOutput(**_verdict(findings), plan=result.to_dict())


# -- the registry ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Tool:
    """One tool: its name, what it does, its input and output models and its function."""

    name: str
    title: str
    inputs: type[BaseModel]
    outputs: type[ToolOutput]
    run: Callable[[Any, Call], ToolOutput]
    #: whether it may write under the root (``output``)
    writes: bool = False

    @property
    def description(self) -> str:
        doc = self.run.__doc__ or ""
        return " ".join(doc.split())


TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        Tool("validate", "Validate a cluster spec", ValidateInput, ValidateOutput, validate),
        Tool("size", "Size the fabrics", SizeInput, SizeOutput, size),
        Tool("place", "Place the racks", PlaceInput, PlaceOutput, place),
        Tool("cable", "Place and cable", CableInput, CableOutput, cable, writes=True),
        Tool("simulate", "Simulate traffic", SimulateInput, SimulateOutput, simulate, True),
        Tool("diff", "Compare two designs", DiffInput, DiffOutput, diff),
        Tool("propose", "Propose designs for a goal", ProposeInput, ProposeOutput, propose),
        Tool("plan", "Plan a change", PlanInput, PlanOutput, plan),
    )
}


def call_tool(name: str, arguments: dict[str, Any] | None, call: Call) -> ToolOutput:
    """Run tool ``name`` on ``arguments``; never raises for what the caller sent (module
    docstring)."""
    tool = TOOLS.get(name)
    if tool is None:
        problem = Problem("name", f"no tool {name!r}; the tools are: {', '.join(TOOLS)}")
        return refused(ToolOutput, [_problem("bad-argument", problem)])
    try:
        inp = tool.inputs.model_validate(arguments or {})
    except ValidationError as exc:
        return refused(tool.outputs, _argument_findings(exc, tool.inputs))
    try:
        return tool.run(inp, call)
    except SpecError as exc:
        return refused(tool.outputs, [_problem("bad-input", p) for p in exc.problems])
    except ClusterloomError as exc:
        return refused(
            tool.outputs, [_problem("refused", Problem(name, " ".join(str(exc).split())))]
        )
    except Exception as exc:  # a bug: said as such, never raised through the protocol
        log.exception("tool %s failed", name)
        bug = Problem(name, f"internal error (a bug in clusterloom): {type(exc).__name__}: {exc}")
        return refused(tool.outputs, [_problem("internal-error", bug)])
