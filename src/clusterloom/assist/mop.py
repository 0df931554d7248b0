"""The method of procedure of a change plan as a crew reads it (``mop.csv``): one row per
step in order, with its wave, action, objects, what must be drained first, the state
validated after it, the predicted impact, and the plan's approval status.

The status is what the store says (``Store.proposal_status``): ``APPROVED`` only for a
proposal someone approved and nobody superseded; otherwise ``PROPOSED``, ``REJECTED`` or
``SUPERSEDED``. A plan written before it was recorded is ``PROPOSED``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping

from clusterloom.changes import ChangePlan, Step

__all__ = ["MOP_COLUMNS", "OBJECTS_SEP", "STATUSES", "impact_note", "mop_csv"]

MOP_COLUMNS = (
    "order",
    "wave",
    "action",
    "objects",
    "drain",
    "checks",
    "valid",
    "predicted_impact",
    "status",
    "approver",
    "reason",
)
#: between a step's objects in a cell (a rack move's object holds spaces: ``label a -> b``)
OBJECTS_SEP = "; "
#: a proposal's statuses, as the store computes them
STATUSES = ("proposed", "approved", "rejected", "superseded")
_PREDICTED = "predicted-"


def impact_note(checks: Mapping[str, int | float | str]) -> str:
    """A step's predicted impact in words (``backend: completion 327.7 us (x1.00), p99 FCT
    327.7 us, 0 flows unfinished``), empty when the step was not simulated."""
    parts = []
    for key, value in checks.items():
        fabric, _, what = key.partition(":")
        if what != "predicted-completion-us":
            continue
        parts.append(
            f"{fabric}: completion {float(value):,.1f} us "
            f"(x{float(checks[f'{fabric}:predicted-slowdown']):.2f} of the undrained), p99 FCT "
            f"{float(checks[f'{fabric}:predicted-fct-p99-us']):,.1f} us, "
            f"{checks[f'{fabric}:flows-unfinished']} flows unfinished"
        )
    return "; ".join(parts)


def _checks(step: Step) -> str:
    shown = [
        f"{k}={v}"
        for k, v in step.checks.items()
        if _PREDICTED not in k and not k.endswith(":flows-unfinished")
    ]
    return "; ".join(shown)


def mop_csv(
    plan: ChangePlan, status: str = "proposed", approver: str = "", reason: str = ""
) -> str:
    """``plan`` as ``mop.csv`` text; ``status`` one of :data:`STATUSES` (ValueError else)."""
    if status not in STATUSES:
        raise ValueError(f"status {status!r}: one of {', '.join(STATUSES)}")
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(MOP_COLUMNS)
    for s in plan.steps:
        w.writerow(
            [
                s.order,
                s.wave,
                s.action,
                OBJECTS_SEP.join(s.objects),
                OBJECTS_SEP.join(s.drain),
                _checks(s),
                "yes" if s.valid else "no",
                impact_note(s.checks),
                status.upper(),
                approver,
                reason,
            ]
        )
    return buf.getvalue()
