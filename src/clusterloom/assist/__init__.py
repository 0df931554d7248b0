"""The design assistant (``docs/assist.md``), a lifecycle part: it reads designs (their
written files, specs run through the stages, the store's copies); no stage imports it.
``diff_designs`` compares two designs; ``propose`` finds the designs that meet a goal."""

from clusterloom.assist.diff import DesignDiff, RunFiles, diff_designs, read_run, reads
from clusterloom.assist.goal import Goal, goal_from_dict, load_goal, parse_goal
from clusterloom.assist.inputs import DesignInputs
from clusterloom.assist.propose import Candidate, Metrics, ProposeResult, Rejected, propose

__all__ = [
    "Candidate",
    "DesignDiff",
    "DesignInputs",
    "Goal",
    "Metrics",
    "ProposeResult",
    "Rejected",
    "RunFiles",
    "diff_designs",
    "goal_from_dict",
    "load_goal",
    "parse_goal",
    "propose",
    "read_run",
    "reads",
]
