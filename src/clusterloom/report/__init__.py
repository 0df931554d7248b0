"""Human-readable reports of a design: one self-contained HTML page."""

from clusterloom.report.html import render_report, tier_diagram

__all__ = ["render_report", "tier_diagram"]
