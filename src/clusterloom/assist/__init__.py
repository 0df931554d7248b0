"""The design assistant (``docs/assist.md``), a lifecycle part: it reads designs (their
written files, specs run through the stages, the store's copies); no stage imports it.
``diff_designs`` compares two designs; ``plan_change`` plans a change step by step, every
intermediate state held to the floors (``Floors``)."""

from clusterloom.assist.diff import DesignDiff, RunFiles, diff_designs, read_run, reads
from clusterloom.assist.floors import Floors
from clusterloom.assist.inputs import DesignInputs
from clusterloom.assist.plan import PlanResult, plan_change

__all__ = [
    "DesignDiff",
    "DesignInputs",
    "Floors",
    "PlanResult",
    "RunFiles",
    "diff_designs",
    "plan_change",
    "read_run",
    "reads",
]
