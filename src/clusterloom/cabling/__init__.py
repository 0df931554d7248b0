"""Fibre and cable design: pathways, per-link media and routes, structured cabling, cut sheets.

``cable(spec, fabrics, placement)`` realizes every logical link of every fabric on the floor a
placement chose (see ``docs/cabling.md``); ``build_pathways`` gives the tray graph of a floor.
"""

from clusterloom.cabling.artifact import Cabling, CablingTotals, MediumTable, order_length
from clusterloom.cabling.change import Change, plan_change
from clusterloom.cabling.pathways import SEGMENT_KINDS, TRAYS, Pathways, Tray, build_pathways
from clusterloom.cabling.stage import cable
from clusterloom.cabling.validate import cable_label, validate_cabling

__all__ = [
    "SEGMENT_KINDS",
    "TRAYS",
    "Cabling",
    "CablingTotals",
    "Change",
    "MediumTable",
    "Pathways",
    "Tray",
    "build_pathways",
    "cable",
    "cable_label",
    "order_length",
    "plan_change",
    "validate_cabling",
]
