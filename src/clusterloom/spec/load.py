"""Reading a cluster spec: YAML text to a checked ``ClusterSpec``, or a ``SpecError`` that lists
every problem with the path of the field and what would fix it."""

from __future__ import annotations

import hashlib
import json
import types
import typing
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from clusterloom.errors import Problem, SpecError
from clusterloom.spec.growth import frozen_problems
from clusterloom.spec.interconnect import interconnect_problems
from clusterloom.spec.job import JobSpec, ScheduleError, plan_of
from clusterloom.spec.limits import MAX_SPEC_BYTES, check_yaml_shape
from clusterloom.spec.models import LINK_TIERS, SWITCH_ROLES, ClusterSpec, FabricSpec
from clusterloom.spec.scenario import scenario_problems
from clusterloom.spec.site import site_problems


class _UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """A safe loader (libyaml's parser where PyYAML has it) that refuses a key given twice in
    one mapping (PyYAML keeps the last)."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                "a key must be a plain value, not a list or mapping",
                key_node.start_mark,
            ) from None
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key '{key}' is given twice", key_node.start_mark
            )
        seen.add(key)
    loader.flatten_mapping(node)
    return dict(loader.construct_pairs(node))


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,
)


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(document)"


def _model_at(
    loc: tuple[int | str, ...], root: type[BaseModel] = ClusterSpec
) -> type[BaseModel] | None:
    """The pydantic model that holds the field at ``loc`` (to list allowed fields)."""
    annotation: Any = root
    for part in loc[:-1]:
        annotation = _pick(annotation)
        if typing.get_origin(annotation) is dict:  # a name in a mapping: step into the values
            annotation = typing.get_args(annotation)[1]
            continue
        if typing.get_origin(annotation) in (list, tuple) and isinstance(part, int):
            annotation = typing.get_args(annotation)[0]  # an item of a list: its model
            continue
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        field = annotation.model_fields.get(str(part))
        if field is None:
            return None
        annotation = field.annotation
    annotation = _pick(annotation)
    return (
        annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    )


def _pick(annotation: Any) -> Any:
    """The model (or mapping) member of an optional or union annotation."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            if typing.get_origin(arg) is dict or (
                isinstance(arg, type) and issubclass(arg, BaseModel)
            ):
                return arg
        return None
    return annotation


def _shown(value: object, limit: int = 60) -> str:
    """A value as a message shows it: its repr, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def problems_from_validation(
    exc: ValidationError, root: type[BaseModel] = ClusterSpec
) -> list[Problem]:
    """pydantic's errors of a document validated as ``root``, one ``Problem`` each with the
    dotted path of the field (an unknown field lists the fields allowed there)."""
    problems: list[Problem] = []
    errors = exc.errors(include_url=False)

    # a value given as a mapping for a field that may also be a plain value (switch: str | {...})
    # fails both members of the union: keep only the errors from inside the mapping
    def explained_deeper(e: Any) -> bool:  # another error inside the same mapping
        parent = tuple(e["loc"][:-1])
        return any(
            o is not e
            and len(o["loc"]) > len(e["loc"])
            and tuple(o["loc"][: len(parent)]) == parent
            for o in errors
        )

    errors = [
        e
        for e in errors
        if not (
            str(e["type"]).endswith("_type")
            and isinstance(e["input"], dict)
            and explained_deeper(e)
        )
    ]
    for err in errors:
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p in {"str", "int"}))
        # union members appear in loc as class names: drop them from the path we show
        loc = tuple(p for p in loc if not (isinstance(p, str) and p[:1].isupper()))
        where = _where(loc)
        kind = err["type"]
        if kind == "extra_forbidden":
            model = _model_at(loc, root)
            allowed = ", ".join(model.model_fields) if model else ""
            msg = "unknown field" + (f"; allowed here: {allowed}" if allowed else "")
        elif kind == "missing":
            msg = "required field is missing"
        else:
            msg = str(err["msg"])
            if msg.startswith("Value error, "):
                msg = msg[len("Value error, ") :]
            if kind not in {"model_type", "dict_type"} and "input" in err:
                msg += f" (got {_shown(err['input'])})"
        if (where, msg) not in {(p.where, p.message) for p in problems}:
            problems.append(Problem(where, msg))
    return problems


def _check_fabric(spec: ClusterSpec, name: str, fabric: FabricSpec) -> list[Problem]:
    """Cross-field checks of one fabric against the compute section and the catalog."""
    catalog = spec.resolved_catalog()
    base = f"fabrics.{name}"
    problems: list[Problem] = []
    if name == "backend":
        ports, speed = spec.compute.nic.scale_out, spec.compute.nic.port_speed_gbps
        ports_field = "compute.nic.scale_out_ports"
    else:
        fnic = spec.compute.frontend_nic
        if fnic is None:
            return [Problem("compute.frontend_nic", "a frontend fabric needs compute.frontend_nic")]
        ports, speed = fnic.ports_per_node, fnic.port_speed_gbps
        ports_field = "compute.frontend_nic.ports_per_node"
    planes = fabric.planes or ports
    if ports % planes:
        problems.append(
            Problem(
                f"{base}.planes",
                f"{ports} host ports ({ports_field}) do not divide over {planes} planes; "
                f"use a divisor of {ports}",
            )
        )
    for role in SWITCH_ROLES:
        model_name = fabric.switch_for(role)
        field = f"{base}.switch" + ("" if isinstance(fabric.switch, str) else f".{role}")
        model = catalog.switches.get(model_name)
        if model is None:
            known = ", ".join(sorted(catalog.switches))
            problem = Problem(field, f"unknown switch '{model_name}'; known: {known}")
            if problem not in problems:
                problems.append(problem)
            continue
        if model.radix(speed) is None:
            offered = ", ".join(f"{s}G" for s in model.speeds_gbps)
            problem = Problem(
                field,
                f"switch '{model_name}' cannot break out to {speed}G host ports; it offers "
                f"{offered}; pick another switch or port speed",
            )
            if problem not in problems:
                problems.append(problem)
    for tier in LINK_TIERS:
        media_name = getattr(fabric.media, tier)
        if media_name is None:
            continue
        media = catalog.media.get(media_name)
        if media is None:
            known = ", ".join(sorted(catalog.media))
            problems.append(
                Problem(f"{base}.media.{tier}", f"unknown media '{media_name}'; known: {known}")
            )
        elif media.speed_gbps != speed:
            problems.append(
                Problem(
                    f"{base}.media.{tier}",
                    f"media '{media_name}' runs at {media.speed_gbps}G but links run at {speed}G",
                )
            )
    if fabric.family == "fat-tree" and fabric.scalable_unit_nodes is not None:
        problems.append(
            Problem(
                f"{base}.scalable_unit_nodes",
                "scalable units apply to rail-optimized fabrics only; remove it or use "
                "family: rail-optimized",
            )
        )
    if fabric.family == "rail-optimized" and fabric.nodes_per_leaf is not None:
        problems.append(
            Problem(
                f"{base}.nodes_per_leaf",
                "nodes_per_leaf applies to fat-tree fabrics; a rail-optimized fabric sets "
                "scalable_unit_nodes instead",
            )
        )
    return problems


def _check_schedule(job: JobSpec, dp: int) -> list[Problem]:
    """The pipeline schedule and recomputation: the layers and micro-batches support them."""
    problems: list[Problem] = []
    per_step = job.batch.micro_batch * dp
    if job.batch.global_batch % per_step:
        return problems  # reported with the batch
    micro = job.batch.global_batch // per_step
    try:
        plan = plan_of(job, micro)
    except ScheduleError as exc:
        return [Problem(f"job.{exc.field}", str(exc))]
    comp = job.compute
    if comp.recompute_layers is not None:
        chunk = min(min(c) for c in plan.layers)
        if comp.recompute != "full":
            problems.append(
                Problem(
                    "job.compute.recompute_layers",
                    f"recompute_layers {comp.recompute_layers} needs recompute: full "
                    f"(recompute is {comp.recompute})",
                )
            )
        elif comp.recompute_layers > chunk:
            problems.append(
                Problem(
                    "job.compute.recompute_layers",
                    f"recompute_layers {comp.recompute_layers} exceeds the {chunk} layers of a "
                    f"model chunk ({job.model.layers} layers, pp {job.parallelism.pp}, "
                    f"virtual_stages {plan.virtual_stages})",
                )
            )
    return problems


def _check_job(spec: ClusterSpec) -> list[Problem]:
    """The job against itself and the compute section: every number that must divide does."""
    assert spec.job is not None
    job, c = spec.job, spec.compute
    par, model = job.parallelism, job.model
    world = c.accelerators
    problems: list[Problem] = []

    def need(ok: bool, where: str, message: str) -> None:
        if not ok:
            problems.append(Problem(f"job.{where}", message))

    inner = par.tp * par.pp * par.cp
    dp = par.dp if par.dp is not None else world // inner
    need(
        (par.dp is None and world % inner == 0) or (par.dp is not None and inner * dp == world),
        "parallelism",
        f"tp {par.tp} x pp {par.pp} x cp {par.cp} x dp {par.dp or '?'} must equal the "
        f"{world} accelerators of compute.accelerators",
    )
    if problems:  # the checks below divide by the data-parallel degree
        return problems
    need(dp % par.ep == 0, "parallelism.ep", f"ep {par.ep} must divide dp {dp}")
    domain = c.scale_up.domain_size
    need(
        par.tp <= domain or par.tp_beyond_scale_up,
        "parallelism.tp",
        f"a TP group of {par.tp} exceeds the scale-up domain of {domain} accelerators; lower tp "
        "or set tp_beyond_scale_up: true to run TP over the scale-out fabric",
    )
    need(
        par.tp > domain or domain % par.tp == 0,
        "parallelism.tp",
        f"TP groups of {par.tp} straddle scale-up domains of {domain}; use a divisor of {domain}",
    )
    need(
        model.heads % par.tp == 0,
        "parallelism.tp",
        f"tp {par.tp} must divide the {model.heads} attention heads",
    )
    problems += _check_schedule(job, dp)
    need(
        model.sequence_length % par.cp == 0,
        "parallelism.cp",
        f"sequence_length {model.sequence_length} does not split over cp {par.cp}",
    )
    per_step = job.batch.micro_batch * dp
    need(
        job.batch.global_batch % per_step == 0,
        "batch.global_batch",
        f"global_batch {job.batch.global_batch} is not a multiple of micro_batch "
        f"{job.batch.micro_batch} x dp {dp} = {per_step}",
    )
    if model.moe is not None:
        need(
            model.moe.experts % par.ep == 0,
            "model.moe.experts",
            f"{model.moe.experts} experts do not divide over ep {par.ep} expert ranks",
        )
    elif par.ep > 1:
        problems.append(Problem("job.parallelism.ep", f"ep {par.ep} needs model.moe"))
    if domain > 1 and c.scale_up.bandwidth_gbps == 0:
        problems.append(
            Problem(
                "compute.scale_up.bandwidth_gbps",
                "a job needs the scale-up bandwidth per accelerator (e.g. 3600 for NVLink 4, "
                "7200 for NVLink 5) to time the collectives inside a domain",
            )
        )
    return problems


def compute_rack_name(spec: ClusterSpec) -> str:
    """The compute rack type: the site's choice, else ``nvl72`` for a scale-up domain of a
    rack (36 accelerators or more), else ``hgx-4``."""
    chosen = spec.site.racks.compute if spec.site is not None else None
    if chosen is not None:
        return chosen
    return "nvl72" if spec.compute.scale_up.domain_size >= 36 else "hgx-4"


def _check_site_racks(spec: ClusterSpec) -> list[Problem]:
    """The site's rack types exist, are of the right kind and hold the compute nodes."""
    assert spec.site is not None
    catalog = spec.resolved_catalog()
    problems: list[Problem] = []
    chosen = {
        "compute": compute_rack_name(spec),
        "network": spec.site.racks.network,
        "patch": spec.site.racks.patch,
    }
    for kind, name in chosen.items():
        rack = catalog.racks.get(name)
        if rack is None:
            known = ", ".join(sorted(n for n, r in catalog.racks.items() if r.kind == kind))
            problems.append(
                Problem(f"site.racks.{kind}", f"unknown rack '{name}'; {kind} racks: {known}")
            )
        elif rack.kind != kind:
            problems.append(
                Problem(f"site.racks.{kind}", f"rack '{name}' is a {rack.kind} rack, not {kind}")
            )
    rack = catalog.racks.get(chosen["compute"])
    c = spec.compute
    if rack is not None and rack.kind == "compute" and not problems:
        domain = c.scale_up.domain_size
        per_rack = rack.servers * c.accelerators_per_node
        if domain > c.accelerators_per_node and per_rack % domain:
            problems.append(
                Problem(
                    "site.racks.compute",
                    f"rack '{chosen['compute']}' holds {rack.servers} nodes = {per_rack} "
                    f"accelerators, not whole scale-up domains of {domain}; pick a rack that does",
                )
            )
    return problems


def check_spec(spec: ClusterSpec) -> list[Problem]:
    """Semantic checks that the schema alone cannot express."""
    c = spec.compute
    problems: list[Problem] = []
    if c.accelerators % c.accelerators_per_node:
        problems.append(
            Problem(
                "compute.accelerators",
                f"{c.accelerators} accelerators do not fill whole nodes of "
                f"{c.accelerators_per_node}; use a multiple of {c.accelerators_per_node}",
            )
        )
    domain = c.scale_up.domain_size
    # domains only once nodes are whole: otherwise both checks would name the same count
    if not problems and domain % c.accelerators_per_node:
        problems.append(
            Problem(
                "compute.scale_up.domain_size",
                f"a scale-up domain of {domain} is not whole nodes of {c.accelerators_per_node} "
                "accelerators; use a multiple of accelerators_per_node",
            )
        )
    elif not problems and c.accelerators % domain:
        problems.append(
            Problem(
                "compute.accelerators",
                f"{c.accelerators} accelerators do not fill whole scale-up domains of {domain}; "
                f"use a multiple of {domain}",
            )
        )
    if spec.job is not None:
        problems += _check_job(spec)
    problems += _check_fabric(spec, "backend", spec.fabrics.backend)
    if spec.fabrics.frontend is not None:
        problems += _check_fabric(spec, "frontend", spec.fabrics.frontend)
    if spec.site is not None:
        problems += site_problems(spec.site)
        problems += _check_site_racks(spec)
    problems += frozen_problems(spec)
    if spec.scenario is not None:
        problems += scenario_problems(spec.scenario)
        if spec.scenario.traffic == "step" and spec.job is None:
            problems.append(Problem("scenario.traffic", "step traffic needs a job section"))
    if spec.interconnect is not None:
        problems += interconnect_problems(spec.interconnect)
    return problems


def read_yaml(text: str, source: str) -> Any:
    """YAML text held to the document limits of :mod:`clusterloom.spec.limits`, parsed safely
    (a key given twice refused); ``SpecError`` naming the line of a YAML error."""
    check_yaml_shape(text, source)
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source} line {mark.line + 1}, column {mark.column + 1}" if mark else source
        raise SpecError([Problem(where, f"not valid YAML: {exc.problem or exc}")]) from exc
    except yaml.YAMLError as exc:
        reason = " ".join(str(exc).split())  # one line: PyYAML's reader errors span two
        raise SpecError([Problem(source, f"not valid YAML: {reason}")]) from exc
    return data


def parse_spec(text: str, source: str = "<spec>") -> ClusterSpec:
    """Parse and check a spec given as YAML text; raise ``SpecError`` listing every problem.

    The text is held to the document limits of :mod:`clusterloom.spec.limits` before anything
    is built from it."""
    data = read_yaml(text, source)
    if not isinstance(data, dict):
        raise SpecError([Problem(source, "a spec is a YAML mapping with version, name, ...")])
    if data.get("version") != 1:
        raise SpecError(
            [
                Problem(
                    "version",
                    f"this clusterloom reads spec version 1, got {_shown(data.get('version'))}",
                )
            ]
        )
    try:
        spec = ClusterSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(problems_from_validation(exc)) from exc
    problems = check_spec(spec)
    if problems:
        raise SpecError(problems)
    return spec


def read_document(path: str | Path) -> str:
    """The UTF-8 text of an input document at ``path``, at most ``MAX_SPEC_BYTES``; a file
    that cannot be read is a ``SpecError`` naming it."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            data = fh.read(MAX_SPEC_BYTES + 1)
        if len(data) > MAX_SPEC_BYTES:
            raise SpecError(
                [Problem(str(p), f"larger than the {MAX_SPEC_BYTES:,} bytes a spec may have")]
            )
        text = data.decode("utf-8")
    except OSError as exc:
        raise SpecError([Problem(str(p), f"cannot read: {exc.strerror or exc}")]) from exc
    except UnicodeDecodeError as exc:
        raise SpecError([Problem(str(p), "not UTF-8 text")]) from exc
    return text


def load_spec(path: str | Path) -> ClusterSpec:
    """Read and check the spec at ``path``."""
    p = Path(path)
    text = read_document(p)
    return parse_spec(text, source=str(p))


def spec_hash(spec: ClusterSpec) -> str:
    """SHA-256 of the spec's canonical JSON form (key order and formatting do not matter)."""
    canonical = json.dumps(spec.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()
