"""The design assistant (``docs/assist.md``), a lifecycle part: it reads designs (their
written files, specs run through the stages, the store's copies); no stage imports it.
``diff_designs`` compares two designs; ``propose`` finds the designs that meet a goal;
``plan_change`` plans a change step by step, every intermediate state held to the floors
(``Floors``)."""

from clusterloom.assist.diff import DesignDiff, RunFiles, diff_designs, read_run, reads
from clusterloom.assist.floors import Floors
from clusterloom.assist.goal import Goal, goal_from_dict, load_goal, parse_goal
from clusterloom.assist.inputs import DesignInputs
from clusterloom.assist.plan import PlanResult, plan_change
from clusterloom.assist.propose import Candidate, Metrics, ProposeResult, Rejected, propose

__all__ = [
    "Candidate",
    "DesignDiff",
    "DesignInputs",
    "Floors",
    "Goal",
    "Metrics",
    "PlanResult",
    "ProposeResult",
    "Rejected",
    "RunFiles",
    "diff_designs",
    "goal_from_dict",
    "load_goal",
    "parse_goal",
    "plan_change",
    "propose",
    "read_run",
    "reads",
]
