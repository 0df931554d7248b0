"""One model for changes and decisions (DESIGN.md, "Contracts"): change plans, proposals,
approvals and decisions, defined once for every part that records them (growth, the
assistant, capacity, ops). Before the design store exists they are appended to a JSON-lines
log (:func:`append_record`), one record a line, which the store later imports as is.

A :class:`ChangePlan` is ordered :class:`Step` s; each step names its action, the objects it
touches, what must be drained before it and what stays live, and carries the state validated
after it (``checks``: findings' codes and counts, ``valid``). A :class:`Proposal` wraps a plan
with its author and reasons; an :class:`Approval` and a :class:`Decision` (with its context and
later outcome) refer to a proposal by id.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from clusterloom.atomic import atomic_write

__all__ = [
    "Approval",
    "ChangePlan",
    "Decision",
    "Proposal",
    "Step",
    "append_record",
    "apply_plan",
    "apply_racks",
    "read_records",
]

Action = Literal["install", "pull", "drain", "re-pull", "restore", "remove", "move-rack"]


@dataclass(frozen=True)
class Step:
    """One step of a change plan, in the order a crew does it."""

    order: int
    action: Action
    #: what the step touches: cut-sheet labels, rack names or device names
    objects: tuple[str, ...]
    reason: str
    #: links that must carry no traffic before the step (drained), by label
    drain: tuple[str, ...] = ()
    #: how many installed links stay live through the step
    live_links: int = 0
    #: the state validated after the step: check code -> count of errors (empty: none ran),
    #: or a figure (``growth.drained``: capacity left while links are drained, as a fraction,
    #: and the leaf that has the least)
    checks: dict[str, int | float | str] = field(default_factory=dict)
    valid: bool = True
    #: the wave of the change plan the step belongs to (``growth.waves``; 0: before any drain)
    wave: int = 0


#: how an ``install`` step names a new rack and a ``move-rack`` step a moved one:
#: ``label -> position`` and ``label old-position -> position``
RACK_TO = " -> "


@dataclass(frozen=True)
class ChangePlan:
    """Ordered steps from an installed baseline to a design, with what the change costs."""

    id: str
    baseline: str  #: the baseline's spec hash (or directory)
    target: str  #: the new design's spec hash
    steps: tuple[Step, ...]
    summary: dict[str, int] = field(default_factory=dict)
    kind: Literal["change-plan"] = "change-plan"


def apply_plan(installed: Iterable[str], plan: ChangePlan) -> set[str]:
    """The links after every step of ``plan`` on the ``installed`` links (by name,
    ``device:interface~device:interface``): a ``remove`` takes its links off, a ``pull`` adds
    them; drain, re-pull (the same ends pulled again) and restore leave the set as it is."""
    links = set(installed)
    for step in plan.steps:
        if step.action == "remove":
            links -= set(step.objects)
        elif step.action == "pull":
            links |= set(step.objects)
    return links


def apply_racks(installed: Mapping[str, str], plan: ChangePlan) -> dict[str, str]:
    """Rack label -> position after every step of ``plan`` on the ``installed`` racks: an
    ``install`` puts each new rack on its position, a ``move-rack`` moves an installed one
    (ValueError when it names a rack that is not where the plan says)."""
    racks = dict(installed)
    for step in plan.steps:
        if step.action not in ("install", "move-rack"):
            continue
        for obj in step.objects:
            head, to = obj.rsplit(RACK_TO, 1)
            label, _, at = head.partition(" ")
            if step.action == "move-rack" and racks.get(label) != at:
                raise ValueError(f"step {step.order}: {label} is not on {at}")
            if step.action == "install" and label in racks:
                raise ValueError(f"step {step.order}: {label} is installed already")
            racks[label] = to
    return racks


@dataclass(frozen=True)
class Proposal:
    id: str
    plan: ChangePlan
    author: str
    reasons: tuple[str, ...] = ()
    #: the id of the proposal this one replaces (empty: none); an approval of a superseded
    #: proposal is refused
    supersedes: str = ""
    kind: Literal["proposal"] = "proposal"


@dataclass(frozen=True)
class Approval:
    proposal: str
    approver: str
    approved: bool
    note: str = ""
    kind: Literal["approval"] = "approval"


@dataclass(frozen=True)
class Decision:
    proposal: str
    context: dict[str, Any]
    chosen: str
    outcome: str = ""  #: filled in later, when the outcome is known
    kind: Literal["decision"] = "decision"


Record = ChangePlan | Proposal | Approval | Decision


def to_json(record: Record) -> str:
    """One line of the log: the record's fields, ``kind`` naming its type."""
    return json.dumps(asdict(record), sort_keys=True, separators=(",", ":"))


def append_record(path: str | Path, record: Record) -> Path:
    """Append ``record`` to the JSON-lines log at ``path`` (the whole file rewritten
    atomically, so a crash never leaves half a line)."""
    p = Path(path)
    before = p.read_text() if p.exists() else ""
    return atomic_write(p, before + to_json(record) + "\n")


def _step(d: dict[str, Any]) -> Step:
    return Step(**{**d, "objects": tuple(d["objects"]), "drain": tuple(d["drain"])})


def from_json(line: str) -> Record:
    d = json.loads(line)
    kind = d.get("kind")
    if kind == "change-plan":
        return ChangePlan(**{**d, "steps": tuple(_step(s) for s in d["steps"])})
    if kind == "proposal":
        plan = d["plan"]
        return Proposal(
            **{
                **d,
                "plan": ChangePlan(**{**plan, "steps": tuple(_step(s) for s in plan["steps"])}),
                "reasons": tuple(d["reasons"]),
            }
        )
    if kind == "approval":
        return Approval(**d)
    if kind == "decision":
        return Decision(**d)
    raise ValueError(f"not a change record: kind {kind!r}")


def read_records(path: str | Path) -> list[Record]:
    return [from_json(line) for line in Path(path).read_text().splitlines() if line.strip()]
