"""The SRv6 plan's page (``srv6/index.html``), from the plan's summary (plain data, as
``srv6/summary.json`` holds it): format and blocks, checks, the program table per class and
what one NIC holds; and the page of ``srv6 failover-sim -o`` (``failover.html``), from its
``failover.json``: endpoint failover against ECMP reconvergence, case by case."""

from __future__ import annotations

from typing import Any

from clusterloom.report._html import CSS, esc, table, td


def _findings(summary: dict[str, Any]) -> str:
    rows = (
        f'<tr class="{esc(f["severity"])}">'
        + td(f'<span class="sev {esc(f["severity"])}">{esc(f["severity"])}</span>')
        + td(f"<code>{esc(f['code'])}</code>")
        + td(esc(f["message"]))
        + "</tr>"
        for f in summary["findings"]
    )
    return table(
        [("severity", False), ("check", False), ("finding", False)],
        rows,
        table_id="srv6-findings",
        css_class="findings",
    )


def _classes(summary: dict[str, Any]) -> str:
    rows = (
        "<tr>"
        + td(esc(c["class"]))
        + td(f"{c['port_pairs']:,}", True)
        + td(f"{c['paths_per_pair']:,}", True)
        + td(f"{c['programs']:,}", True)
        + td(f"{c['sids_per_program']}", True)
        + td(f"{c['bytes']:,}", True)
        + "</tr>"
        for c in summary["programs"]["classes"]
    )
    return table(
        [
            ("pairs", False),
            ("NIC port pairs", True),
            ("paths per pair", True),
            ("programs", True),
            ("SIDs each", True),
            ("bytes", True),
        ],
        rows,
        table_id="srv6-classes",
        css_class="classes",
    )


def srv6_page(summary: dict[str, Any]) -> str:
    """The whole page as deterministic HTML."""
    fmt, progs = summary["format"], summary["programs"]
    nic = progs["per_nic"]
    cards = [
        (f"/{fmt['block_bits']} + {fmt['usid_bits']}-bit", "block + uSID"),
        (f"{fmt['usids_per_container']}", "uSIDs per container"),
        (f"{summary['switch_locators']:,}", "switch locators"),
        (f"{summary['nic_sids']:,}", "NIC SIDs"),
        (f"{progs['evs_per_connection']}", "EVs per connection"),
        (f"{nic['entries_max']:,}", "programs per NIC"),
        (f"{nic['bytes_max']:,}", "bytes per NIC"),
        (f"{nic['factored_bytes']:,}", "bytes per NIC, factored"),
    ]
    card_html = "".join(
        f'<div class="card"><b>{esc(v)}</b><span>{esc(k)}</span></div>' for v, k in cards
    )
    blocks = ", ".join(f"<code>{esc(b)}</code>" for b in summary["blocks"])
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>SRv6 plan: {esc(summary['design'])}</title><style>{CSS}</style></head>\n"
        f"<body><main><header><h1>SRv6 plan<small>{esc(summary['design'])} "
        f"{esc(summary['fabric'])}</small></h1>"
        f'<p class="lead">Blocks per plane: {blocks}; files: sids.csv, summary.json, '
        f"{summary['node_files']:,} node files (nodes/, frr/).</p></header>\n"
        f'<div class="cards">{card_html}</div>\n'
        f'<h2 id="checks">Checks</h2>\n{_findings(summary)}\n'
        f'<h2 id="programs">Path programs</h2>\n<p class="lead">{progs["programs"]:,} '
        f"programs, {progs['bytes']:,} bytes over the whole fabric (closed forms, never "
        f"materialised).</p>\n{_classes(summary)}\n</main></body></html>\n"
    )


def _us(ps: float | None) -> str:
    return "-" if ps is None else f"{ps / 1e6:,.1f}"


def failover_page(doc: dict[str, Any]) -> str:
    """``failover.html`` from ``failover.json``'s plain data, deterministic."""
    cols = [
        ("engine", False),
        ("case", False),
        ("done", True),
        ("completion (µs)", True),
        ("FCT mean (µs)", True),
        ("FCT p99 (µs)", True),
        ("drops", True),
        ("resent", True),
        ("bytes twice", True),
    ]

    def opt(x: int | None) -> str:
        return "-" if x is None else f"{x:,}"

    rows = [
        "<tr>"
        + td(esc(c["engine"]))
        + td(esc(c["case"]))
        + td(f"{c['finished']:,}/{c['flows']:,}", True)
        + td("unfinished" if c["completion_ps"] is None else _us(c["completion_ps"]), True)
        + td(_us(c["fct_mean_ps"]), True)
        + td(_us(c["fct_p99_ps"]), True)
        + td(opt(c["drops"]), True)
        + td(opt(c["retransmissions"]), True)
        + td(opt(c["duplicate_bytes"]), True)
        + "</tr>"
        for c in doc["cases"]
    ]
    lead = (
        f"A permutation of {doc['hosts']:,} hosts, {doc['size_bytes']:,} bytes per flow, with "
        f"<code>{esc(doc['failure'])}</code>. SRv6 cases pin every EV to its path program and "
        "never reconverge: the endpoints retire the EVs whose path crosses the failure, told "
        "one base RTT after it or learned from losses. ECMP cases reroute "
        f"{esc(doc['reroute'])} after the failure (detection and reconvergence). Seed "
        f"{doc['seed']}; a dash is a figure the engine does not have (docs/srv6.md)."
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>SRv6 failover: {esc(doc['design'])}</title><style>{CSS}</style></head>\n"
        f"<body><main><header><h1>Endpoint failover against reconvergence<small>"
        f"{esc(doc['design'])}</small></h1>"
        f'<p class="lead">{lead}</p></header>\n'
        + table(cols, rows, table_id="failover", css_class="data")
        + "\n</main></body></html>\n"
    )
