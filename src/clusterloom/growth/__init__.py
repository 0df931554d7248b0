"""Growth without rework: an installed baseline, the rework a grown design costs, and the
change plan from one to the other (``docs/growth.md``)."""

from clusterloom.changes import apply_plan, apply_racks
from clusterloom.growth.installed import Installed, check_installed, read_installed
from clusterloom.growth.rework import Rework, change_plan, link_names

__all__ = [
    "Installed",
    "Rework",
    "apply_plan",
    "apply_racks",
    "change_plan",
    "check_installed",
    "link_names",
    "read_installed",
]
