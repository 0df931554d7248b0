"""``propose``'s front as change records (``clusterloom.changes``): one ``Proposal`` per front
member, its plan a greenfield ``ChangePlan`` with no steps whose target is the member's spec
hash. A re-run of the same goal (by name) supersedes the previous run's proposals: each new
proposal replaces the previous one of the same candidate, else the next one not yet replaced,
in the order they were recorded. Pure: the caller reads and writes the store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from clusterloom.assist.propose import Candidate, ProposeResult
from clusterloom.changes import ChangePlan, Proposal

__all__ = ["AUTHOR", "previous_run", "proposal_id", "proposals_of"]

AUTHOR = "clusterloom propose"


def proposal_id(goal: str, run_id: str, candidate: str) -> str:
    """``propose:GOAL:RUN:CANDIDATE`` (the run id's first 12 hex digits)."""
    return f"propose:{goal}:{run_id[:12]}:{candidate}"


def previous_run(records: Sequence[Mapping[str, Any]], goal: str, run_id: str) -> list[str]:
    """The ids of the latest earlier run's proposals for ``goal``, in the order recorded, from
    the store's records (``Store.records(kind="proposal")``, oldest first)."""
    prefix = f"propose:{goal}:"
    runs: dict[str, list[str]] = {}
    for r in records:
        rid = str(r["id"])
        if r.get("kind", "proposal") == "proposal" and rid.startswith(prefix):
            run = rid[len(prefix) :].split(":", 1)[0]
            runs.setdefault(run, []).append(rid)
    earlier = [run for run in runs if run != run_id[:12]]
    return runs[earlier[-1]] if earlier else []


def _reasons(c: Candidate) -> tuple[str, ...]:
    m = c.metrics
    out = [
        f"cost ${m.cost_cents / 100:,.0f}, network power {m.power_mw / 1e6:,.1f} kW",
        f"{m.failure_kept:.1%} of the bisection kept through the goal's failure",
    ]
    if m.fct_p99_ps is not None:
        out.append(f"p99 FCT of the standard traffic {m.fct_p99_ps / 1e6:,.1f} us")
    if m.step_time_ps is not None:
        out.append(f"predicted step {m.step_time_ps / 1e12:,.3f} s")
    return (", ".join(f"{k}={v}" for k, v in sorted(c.choice.items())), *out)


def proposals_of(result: ProposeResult, previous: Sequence[str] = ()) -> tuple[Proposal, ...]:
    """The front as proposals (module docstring); ``previous`` the ids :func:`previous_run`
    gives, which they supersede."""
    from clusterloom.spec import spec_hash

    run_id = result.run_id()
    goal = result.goal.name
    by_candidate = {p.rsplit(":", 1)[1]: p for p in previous}
    free = list(previous)
    out = []
    paired: dict[str, str] = {}
    for c in result.front:  # same candidate first
        if c.id in by_candidate:
            paired[c.id] = by_candidate[c.id]
            free.remove(by_candidate[c.id])
    for c in result.front:
        if c.id not in paired and free:
            paired[c.id] = free.pop(0)
    for c in result.front:
        pid = proposal_id(goal, run_id, c.id)
        plan = ChangePlan(
            id=f"plan:{pid}", baseline="greenfield", target=spec_hash(c.spec), steps=()
        )
        out.append(Proposal(pid, plan, AUTHOR, _reasons(c), supersedes=paired.get(c.id, "")))
    return tuple(out)
