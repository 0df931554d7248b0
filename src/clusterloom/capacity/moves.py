"""The move catalogue (``docs/capacity.md``): each kind of move the planner can make now,
the first-stage variables it is made of and what it changes in the recourse.

=================  ========================================  ==================================
kind               first-stage variables (period 0)          what it changes
=================  ========================================  ==================================
``order``          ``buy[n, p]`` units of part p for site n  units arrive at the scenario's lead
                   (a leaf switch, an optic ...)             time; price of period 0; cap of
                                                             period 0 shared by all sites
``pre-build``      ``buy[n, p]`` of a spine or core part     the same, for the tiers that grow
                                                             with the whole site, not a rack
``pre-pull``       ``buy[n, p]`` of backbone fibre           the same, for trunks between
                                                             buildings
``tier``           ``z[n, c]`` binary, one choice per site   the curve of parts, power and
                   (greenfield sites only)                   positions; the size beyond which
                                                             the site is reworked
``land-elsewhere`` ``f[m, n]`` in [0, 1]: the share of site  that share of m's wanted
                   m's demand (and its deliveries) landed    accelerators runs at n (its parts,
                   at site n                                 power and positions)
``reserve``        ``res[n, q]`` kW (q = 0) or rack          contracted capacity available from
                   positions (q = 1) reserved at site n,     the reservation's lead, paid each
                   at sites whose plan states a reservation  period from then, used or not
``defer``          ``buy[n, p] = 0`` (or ``f[m, n] = 0``,    the need is met by recourse orders
                   ``res[n, q] = 0``): nothing now           (or unreserved capacity, later and
                                                             dearer) once more is known
=================  ========================================  ==================================

Which kind an order is follows from the part's name (``part_kind``): the catalogue of parts
is the problem's (``Curves.parts``), not ours.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["MoveKind", "part_kind"]


class MoveKind(StrEnum):
    """The kinds of move on the menu."""

    ORDER = "order"
    PRE_BUILD = "pre-build"
    PRE_PULL = "pre-pull"
    TIER = "tier"
    LAND_ELSEWHERE = "land-elsewhere"
    RESERVE = "reserve"
    DEFER = "defer"


#: words in a part's name that make ordering it now a pre-build or a pre-pull
_PRE_BUILD = ("spine", "core", "super-spine", "superspine")
_PRE_PULL = ("fibre", "fiber", "backbone", "trunk", "duct")


def part_kind(part: str) -> MoveKind:
    """The kind of an order of ``part`` now: pre-pull for backbone fibre between buildings,
    pre-build for spine and core capacity, an order otherwise."""
    name = part.lower()
    if any(w in name for w in _PRE_PULL):
        return MoveKind.PRE_PULL
    if any(w in name for w in _PRE_BUILD):
        return MoveKind.PRE_BUILD
    return MoveKind.ORDER
