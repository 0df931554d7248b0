"""The design assistant (``docs/assist.md``), a lifecycle part: it reads designs (their
written files, specs run through the stages, the store's copies); no stage imports it.
``diff_designs`` compares two designs."""

from clusterloom.assist.diff import DesignDiff, RunFiles, diff_designs, read_run, reads
from clusterloom.assist.inputs import DesignInputs

__all__ = ["DesignDiff", "DesignInputs", "RunFiles", "diff_designs", "read_run", "reads"]
