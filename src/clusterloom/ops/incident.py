"""An incident's record (issue 23, item 5): its symptoms, the suspects over time (each
localisation at its time), the mitigations checked, the one chosen and its predicted and
measured effect. ``ops page`` draws it (:mod:`clusterloom.ops.page`); ``ops mitigate
--incident`` writes one, ``ops approve`` and ``ops outcome`` add to it.

An incident is plain data, written as JSON (``incident_json``, keys sorted, so the same incident
is the same bytes) and read back with every field checked (``read_incident``: a bad file is a
``SpecError`` naming the field).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clusterloom.errors import Problem, SpecError
from clusterloom.ops.model import FaultKind, Suspect, SuspectKind

if TYPE_CHECKING:
    from clusterloom.changes import Proposal
    from clusterloom.ops.mitigate import Checked

__all__ = [
    "CheckedFigure",
    "Chosen",
    "Incident",
    "Observation",
    "Symptom",
    "incident_from",
    "incident_from_dict",
    "incident_json",
    "read_incident",
    "read_suspects",
    "suspect_from_dict",
    "with_decision",
    "with_mitigation",
    "with_outcome",
]

SCHEMA = "clusterloom.ops.incident"


@dataclass(frozen=True)
class Symptom:
    """One anomaly seen: when, what kind (a counter's, a probe's, a straggler), on which object
    (the design's names), its size in its kind's unit (a z-score, a loss rate, a delay)."""

    ts_ms: int
    kind: str
    target: str
    value: float = 0.0
    note: str = ""


@dataclass(frozen=True)
class Observation:
    """One localisation at ``ts_ms``: its suspects (highest confidence first) and whether it
    called the symptoms congestion."""

    ts_ms: int
    suspects: tuple[Suspect, ...]
    congestion: bool = False


@dataclass(frozen=True)
class CheckedFigure:
    """One checked mitigation's figures (``ops.mitigate.Checked`` as the incident keeps it)."""

    mitigation: str
    verdict: str
    reason: str
    nothing_ps: int
    predicted_ps: int | None = None


@dataclass(frozen=True)
class Chosen:
    """The mitigation proposed, its decision and its effect: predicted (against doing
    nothing) and, once known, measured."""

    mitigation: str
    proposal: str
    proposed_ms: int
    nothing_ps: int
    predicted_ps: int
    status: str = "proposed"  #: proposed, approved, rejected
    decided_by: str = ""
    decided_ms: int | None = None
    measured_ps: int | None = None
    measured_ms: int | None = None

    @property
    def error(self) -> float | None:
        """The measured time against the predicted, as a share (positive: slower)."""
        if self.measured_ps is None or self.predicted_ps <= 0:
            return None
        return self.measured_ps / self.predicted_ps - 1.0


@dataclass(frozen=True)
class Incident:
    id: str
    design: str  #: the design's spec hash or source
    opened_ms: int
    symptoms: tuple[Symptom, ...] = ()
    observations: tuple[Observation, ...] = ()
    checked: tuple[CheckedFigure, ...] = ()
    chosen: Chosen | None = None
    note: str = ""
    tags: tuple[str, ...] = field(default_factory=tuple)

    @property
    def last_ms(self) -> int:
        times = [self.opened_ms, *(s.ts_ms for s in self.symptoms)]
        times += [o.ts_ms for o in self.observations]
        c = self.chosen
        if c is not None:
            times += [t for t in (c.proposed_ms, c.decided_ms, c.measured_ms) if t is not None]
        return max(times)


def _get(obj: Any, *names: str, default: Any = None) -> Any:
    for n in names:
        if isinstance(obj, Mapping) and n in obj:
            return obj[n]
        if hasattr(obj, n):
            return getattr(obj, n)
    return default


def _symptom(anomaly: Any, ts_ms: int) -> Symptom:
    """A symptom from a localisation's anomaly, whatever its record type: the fields it has
    of time, kind, target and size."""
    kind = _get(anomaly, "kind", "signal", "metric", default="anomaly")
    target = _get(anomaly, "target", "where", "device", "object", default="")
    value = _get(anomaly, "value", "score", "z", "severity", default=0.0)
    note = _get(anomaly, "note", "message", "evidence", default="")
    at = _get(anomaly, "ts_ms", "start_ms", "first_ms", default=ts_ms)
    return Symptom(
        ts_ms=int(at if at is not None else ts_ms),
        kind=str(getattr(kind, "value", kind)),
        target=str(target),
        value=float(value) if isinstance(value, int | float) else 0.0,
        note=str(note) if not isinstance(note, tuple | list) else "; ".join(map(str, note)),
    )


def incident_from(
    design: str,
    localisations: Sequence[tuple[int, Any]],
    *,
    incident_id: str | None = None,
    note: str = "",
) -> Incident:
    """An incident from localisation results at successive times (``(ts_ms, Localisation)``
    pairs, any order): their suspects as observations, their anomalies as symptoms (each
    once). The id is a hash of the content unless given."""
    obs, symptoms = [], []
    for ts, loc in sorted(localisations, key=lambda x: x[0]):
        suspects = tuple(_get(loc, "suspects", default=()) or ())
        congestion = bool(_get(loc, "congestion", default=False))
        obs.append(Observation(int(ts), tuple(suspects), congestion))
        for a in _get(loc, "anomalies", default=()) or ():
            symptoms.append(_symptom(a, int(ts)))
    unique = tuple(sorted(set(symptoms), key=lambda s: (s.ts_ms, s.kind, s.target, s.value)))
    opened = min([o.ts_ms for o in obs] + [s.ts_ms for s in unique], default=0)
    body = Incident("", design, opened, unique, tuple(obs), note=note)
    return replace(body, id=incident_id or _id(body))


def _id(inc: Incident) -> str:
    text = json.dumps(_to_dict(inc), sort_keys=True)
    return "inc-" + hashlib.sha256(text.encode()).hexdigest()[:12]


def with_mitigation(
    inc: Incident, checked: Sequence[Checked], proposal: Proposal | None, at_ms: int
) -> Incident:
    """``inc`` with the mitigations checked at ``at_ms`` and the one proposed (the first
    proposable; none when ``proposal`` is None)."""
    figures = tuple(
        CheckedFigure(c.mitigation.id, c.verdict.value, c.reason, c.nothing_ps, c.predicted_ps)
        for c in checked
    )
    chosen = None
    if proposal is not None:
        best = next((c for c in checked if c.proposable), None)
        if best is None or best.predicted_ps is None:
            raise SpecError(
                [Problem(f"incident {inc.id}", "a proposal needs a mitigation predicted better")]
            )
        chosen = Chosen(
            mitigation=best.mitigation.id,
            proposal=proposal.id,
            proposed_ms=at_ms,
            nothing_ps=best.nothing_ps,
            predicted_ps=best.predicted_ps,
        )
    return replace(inc, checked=figures, chosen=chosen)


def _check_proposal(inc: Incident, proposal: str | None) -> None:
    if inc.chosen is not None and proposal is not None and inc.chosen.proposal != proposal:
        raise SpecError(
            [
                Problem(
                    f"incident {inc.id}",
                    f"its mitigation is proposal {inc.chosen.proposal}, not {proposal}",
                )
            ]
        )


def with_decision(
    inc: Incident, *, approved: bool, by: str, at_ms: int, proposal: str | None = None
) -> Incident:
    """``inc`` with its mitigation approved or rejected (``proposal``, when given, must be
    the incident's)."""
    if inc.chosen is None:
        raise SpecError([Problem(f"incident {inc.id}", "no mitigation was proposed to decide")])
    _check_proposal(inc, proposal)
    status = "approved" if approved else "rejected"
    return replace(inc, chosen=replace(inc.chosen, status=status, decided_by=by, decided_ms=at_ms))


def with_outcome(
    inc: Incident, *, measured_ps: int, at_ms: int, proposal: str | None = None
) -> Incident:
    """``inc`` with its approved mitigation's measured effect."""
    if inc.chosen is None or inc.chosen.status != "approved":
        raise SpecError(
            [Problem(f"incident {inc.id}", "an outcome is measured for an approved mitigation")]
        )
    _check_proposal(inc, proposal)
    return replace(inc, chosen=replace(inc.chosen, measured_ps=measured_ps, measured_ms=at_ms))


# --- JSON ----------------------------------------------------------------------------------


def _to_dict(inc: Incident) -> dict[str, Any]:
    d = asdict(inc)
    for o in d["observations"]:
        for s in o["suspects"]:
            s["kind"] = str(s["kind"])
            s["fault"] = None if s["fault"] is None else str(s["fault"])
    return d


def incident_json(inc: Incident) -> str:
    return json.dumps({"schema": SCHEMA, **_to_dict(inc)}, indent=1, sort_keys=True) + "\n"


def suspect_from_dict(d: Any, where: str) -> Suspect:
    """A ``Suspect`` from its JSON form (the dataclass's fields), every field checked."""
    if not isinstance(d, Mapping):
        raise SpecError([Problem(where, "a suspect is an object with kind, target, confidence")])
    try:
        kind = SuspectKind(d["kind"])
        fault = None if d.get("fault") in (None, "") else FaultKind(d["fault"])
        conf = float(d["confidence"])
        target = d["target"]
        if not isinstance(target, str) or not target:
            raise ValueError("target: a name is a non-empty string")
        if not 0.0 <= conf <= 1.0:
            raise ValueError(f"confidence {conf} is not in [0, 1]")
        return Suspect(
            kind=kind,
            target=target,
            confidence=conf,
            fault=fault,
            explained=int(d.get("explained", 0)),
            unexplained=int(d.get("unexplained", 0)),
            first_ms=None if d.get("first_ms") is None else int(d["first_ms"]),
            last_ms=None if d.get("last_ms") is None else int(d["last_ms"]),
            evidence=tuple(str(e) for e in d.get("evidence", ())),
        )
    except KeyError as exc:
        raise SpecError([Problem(where, f"missing field {exc}")]) from None
    except (ValueError, TypeError) as exc:
        raise SpecError([Problem(where, str(exc))]) from None


def _list(d: Mapping[str, Any], key: str, where: str) -> list[Any]:
    v = d.get(key, [])
    if not isinstance(v, list):
        raise SpecError([Problem(f"{where}.{key}", "a list")])
    return v


def _build(cls: Any, d: Any, where: str) -> Any:
    if not isinstance(d, Mapping):
        raise SpecError([Problem(where, f"an object ({cls.__name__})")])
    try:
        return cls(**d)
    except TypeError as exc:
        raise SpecError([Problem(where, str(exc))]) from None


def read_incident(path: str | Path) -> Incident:
    """An incident from its JSON file; ``SpecError`` naming the file and field otherwise."""
    p = Path(path)
    try:
        d = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise SpecError([Problem(str(p), f"not a readable incident file: {exc}")]) from None
    return incident_from_dict(d, str(p))


def incident_from_dict(d: Any, where: str) -> Incident:
    """An incident from its JSON form (``incident_json`` parsed; the store's copy), every
    field checked; ``SpecError`` naming ``where`` and the field otherwise."""
    if not isinstance(d, dict) or d.get("schema") != SCHEMA:
        raise SpecError([Problem(where, f"not an incident (schema {SCHEMA} expected)")])
    w = where
    try:
        obs = tuple(
            Observation(
                ts_ms=int(o["ts_ms"]),
                suspects=tuple(
                    suspect_from_dict(s, f"{w}: observations[{i}].suspects[{j}]")
                    for j, s in enumerate(_list(o, "suspects", f"{w}: observations[{i}]"))
                ),
                congestion=bool(o.get("congestion", False)),
            )
            for i, o in enumerate(_list(d, "observations", w))
        )
        inc = Incident(
            id=str(d["id"]),
            design=str(d["design"]),
            opened_ms=int(d["opened_ms"]),
            symptoms=tuple(
                _build(Symptom, s, f"{w}: symptoms[{i}]")
                for i, s in enumerate(_list(d, "symptoms", w))
            ),
            observations=obs,
            checked=tuple(
                _build(CheckedFigure, c, f"{w}: checked[{i}]")
                for i, c in enumerate(_list(d, "checked", w))
            ),
            chosen=None if d.get("chosen") is None else _build(Chosen, d["chosen"], f"{w}: chosen"),
            note=str(d.get("note", "")),
            tags=tuple(str(t) for t in d.get("tags", ())),
        )
    except KeyError as exc:
        raise SpecError([Problem(w, f"missing field {exc}")]) from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise SpecError([Problem(w, str(exc))]) from None
    return inc


def read_suspects(
    path: str | Path,
) -> list[tuple[int, tuple[Suspect, ...], bool, tuple[Mapping[str, Any], ...]]]:
    """Suspects from a file: a list of suspects, one localisation (``{"suspects": [...],
    "anomalies": [...], "congestion": ...}``, as ``ops localise --json`` prints it) or several
    (``{"localisations": [{"ts_ms": ..., "suspects": [...]}, ...]}``); per localisation
    ``(ts_ms, suspects, congestion, anomalies)``, its time the ``ts_ms`` given, else the last
    time its suspects and anomalies name (0 when none does)."""
    p = Path(path)
    try:
        d = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise SpecError([Problem(str(p), f"not a readable suspects file: {exc}")]) from None
    groups: Iterable[Any]
    if isinstance(d, list):
        groups = [{"ts_ms": 0, "suspects": d}]
    elif isinstance(d, dict) and isinstance(d.get("localisations"), list):
        groups = d["localisations"]
    elif isinstance(d, dict) and isinstance(d.get("suspects"), list):
        groups = [d]
    else:
        raise SpecError(
            [Problem(str(p), "expected a list of suspects, {suspects: [...]} or {localisations}")]
        )
    out = []
    for i, g in enumerate(groups):
        if not isinstance(g, Mapping):
            raise SpecError([Problem(f"{p}: localisations[{i}]", "an object")])
        sus = tuple(
            suspect_from_dict(s, f"{p}: localisations[{i}].suspects[{j}]")
            for j, s in enumerate(_list(g, "suspects", f"{p}: localisations[{i}]"))
        )
        anomalies = tuple(a for a in _list(g, "anomalies", f"{p}: localisations[{i}]"))
        if not all(isinstance(a, Mapping) for a in anomalies):
            raise SpecError([Problem(f"{p}: localisations[{i}].anomalies", "objects")])
        ts = g.get("ts_ms")
        if ts is None:
            seen = [s.last_ms for s in sus if s.last_ms is not None]
            seen += [a["last_ms"] for a in anomalies if isinstance(a.get("last_ms"), int)]
            ts = max(seen, default=0)
        if not isinstance(ts, int):
            raise SpecError([Problem(f"{p}: localisations[{i}].ts_ms", "ms since the epoch")])
        out.append((ts, sus, bool(g.get("congestion", False)), anomalies))
    if not any(x[1] for x in out):
        raise SpecError([Problem(str(p), "no suspects in the file")])
    return out
