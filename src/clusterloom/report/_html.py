"""HTML pieces the report's page (``html.py``) and its sections (``workload.py``,
``placement.py``, ``cabling.py``, ``simulation.py``) share: escaping, the style sheet, tables
and the table of contents. Nothing here imports a page or a section."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

__all__ = ["CSS", "DASH", "esc", "table", "td", "toc"]

DASH = "\u2013"  # en dash


def esc(value: object) -> str:
    """HTML-escape ``value`` for text and attribute values alike."""
    return html.escape(str(value), quote=True)


CSS = """
:root { --ink: #0f172a; --muted: #64748b; --line: #e2e8f0; --soft: #f8fafc; --accent: #2563eb; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
    sans-serif; }
main { max-width: 1200px; margin: 0 auto; padding: 28px 32px 48px; }
header { border-bottom: 2px solid var(--ink); padding-bottom: 14px; margin-bottom: 22px; }
h1 { font-size: 26px; margin: 0 0 4px; letter-spacing: -0.01em; }
h1 small { font-size: 14px; font-weight: 500; color: var(--muted); margin-left: 8px; }
h2 { font-size: 20px; margin: 34px 0 12px; padding-bottom: 6px;
  border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 22px 0 8px; color: #334155; }
p.lead { margin: 4px 0 10px; color: #334155; }
dl.prov { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 8px 0 0;
  font-size: 12.5px; color: var(--muted); }
dl.prov dt { font-weight: 600; }
dl.prov dd { margin: 0; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(160px, 1fr)); gap: 10px;
  margin: 0 0 16px; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px;
  background: var(--soft); }
.card b { display: block; font-size: 20px; font-variant-numeric: tabular-nums; }
.card span { color: var(--muted); font-size: 12px; text-transform: uppercase;
  letter-spacing: .04em; }
table { border-collapse: collapse; width: 100%; margin: 4px 0 8px; font-size: 13px; }
th, td { padding: 6px 8px; border-bottom: 1px solid var(--line); text-align: left;
  vertical-align: top; }
th { background: #f1f5f9; font-weight: 600; font-size: 12px; color: #334155; }
.scroll { overflow-x: auto; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.total td { font-weight: 700; border-top: 2px solid #cbd5e1; background: var(--soft); }
tr.chosen td { background: #ecfdf5; }
tr.chosen td:first-child { box-shadow: inset 3px 0 0 #059669; }
tr.infeasible td { color: var(--muted); }
td.reason { font-style: italic; }
table.options td:first-child { white-space: nowrap; }
.badge { display: inline-block; padding: 0 7px; border-radius: 9px; font-size: 11px;
  font-weight: 600; line-height: 18px; margin-left: 6px; vertical-align: 1px; }
.badge.chosen { background: #059669; color: #fff; }
.badge.no { background: #e2e8f0; color: #475569; }
.sev { display: inline-block; min-width: 62px; text-align: center; padding: 0 7px;
  border-radius: 9px; font-size: 11px; font-weight: 700; line-height: 18px;
  text-transform: uppercase; }
.sev.error { background: #fee2e2; color: #b91c1c; }
.sev.warning { background: #fef3c7; color: #92400e; }
.sev.info { background: #e0f2fe; color: #075985; }
tr.error td { background: #fff7f7; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
figure { margin: 8px 0 4px; border: 1px solid var(--line); border-radius: 8px; padding: 8px;
  background: #fff; }
figure svg { display: block; width: 100%; height: auto; }
figcaption { color: var(--muted); font-size: 12px; padding: 4px 6px 0; }
.muted { color: var(--muted); }
nav.toc { border: 1px solid var(--line); border-radius: 8px; background: var(--soft);
  padding: 8px 14px; margin: 0 0 8px; font-size: 13px; }
nav.toc b { display: block; font-size: 12px; color: var(--muted); text-transform: uppercase;
  letter-spacing: .04em; }
nav.toc ol { margin: 4px 0 2px; padding-left: 20px; columns: 3 200px; }
nav.toc a { color: var(--accent); text-decoration: none; }
ul.assumptions { margin: 6px 0; padding-left: 20px; color: #7c2d12; }
footer { margin-top: 36px; color: var(--muted); font-size: 12px; border-top: 1px solid var(--line);
  padding-top: 10px; }
"""


def table(
    headers: Sequence[tuple[str, bool]],
    rows: Iterable[str],
    *,
    table_id: str,
    css_class: str,
) -> str:
    """A table; ``headers`` are (label, numeric) pairs, ``rows`` ready ``<tr>`` markup."""
    head = "".join(
        f'<th class="n">{esc(h)}</th>' if num else f"<th>{esc(h)}</th>" for h, num in headers
    )
    body = "\n".join(rows)
    return (
        f'<div class="scroll"><table id="{esc(table_id)}" class="{esc(css_class)}">\n'
        f"<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table></div>"
    )


def td(value: str, numeric: bool = False, css: str = "") -> str:
    classes = " ".join(c for c in ("n" if numeric else "", css) if c)
    attr = f' class="{classes}"' if classes else ""
    return f"<td{attr}>{value}</td>"


def toc(entries: Sequence[tuple[str, str]]) -> str:
    """A table of contents: a link to each (section id, title)."""
    items = "".join(f'<li><a href="#{esc(sid)}">{esc(title)}</a></li>' for sid, title in entries)
    return f'<nav class="toc" id="contents"><b>Contents</b><ol>{items}</ol></nav>'
