"""The floors a change must keep (issue 21): what every intermediate state of a change plan
and every proposed candidate's failure case is held to. One model, read by ``propose`` (a goal's
failure tolerance) and by change plans (each step's validated state).

Bisection of a multi-plane fabric is the sum over planes of each plane's min-cut between two
halves of its hosts (``FabricPlan.bisection_bps`` from tier capacities; a max-flow over the live
links of a drained state); a floor is a fraction of the target design's figure.
"""

from __future__ import annotations

from pydantic import Field

from clusterloom.spec._base import SpecModel

__all__ = ["Floors"]


class Floors(SpecModel):
    """Fractions of the target design's capacity that must stay live (0: no floor)."""

    bisection: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="the fabric's bisection (sum over planes) kept, as a fraction of the target's",
    )
    plane: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="each plane's own bisection kept, as a fraction of that plane's in the target",
    )
