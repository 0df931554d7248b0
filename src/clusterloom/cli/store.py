"""``clusterloom store ...``: the thin commands over :mod:`clusterloom.store` (list, show and
compare designs, collect unreferenced blobs, add and revoke tokens, import a change log), and
``record_design_run``/``record_sim_run``, which ``design --store`` and ``simulate --store``
call after writing their directory."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from clusterloom.pipeline import Design
    from clusterloom.store import DesignRecord, Store

StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store",
        help="the store's URL: sqlite:///PATH or postgresql://USER@HOST/DB (default: "
        "$CLUSTERLOOM_STORE, else sqlite:///~/.clusterloom/store.db)",
        show_default=False,
    ),
]
#: the store of a command that records what it made (``--store`` is then the flag)
StoreUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--store-url",
        help="the store's URL with --store (default: $CLUSTERLOOM_STORE, else "
        "sqlite:///~/.clusterloom/store.db)",
        show_default=False,
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON instead of tables")]

#: the summary figures ``store ls`` shows, in order, with their headings
LS_FIGURES = (
    ("accelerators", "accel."),
    ("switches", "switches"),
    ("cables", "cables"),
    ("cost_usd", "cost $"),
    ("errors", "err."),
    ("warnings", "warn."),
)


def _json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=1, sort_keys=True, default=str) + "\n")


def _figure(key: str, value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.2f}" if not value.is_integer() else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _open(url: str | None) -> Store:
    from clusterloom.store import open_store

    return open_store(url)


def record_design_run(
    out: Console, url: str | None, design: Design, run_dir: Path, *, store: Store | None = None
) -> DesignRecord:
    """Record a written design directory (``design --store``) and say where it went."""
    opened = store if store is not None else _open(url)
    rec = opened.record_design(design, run_dir)
    out.print(
        f"recorded {rec.ref} (id {rec.id}"
        + (f", after {rec.parent}" if rec.parent else "")
        + f") in {opened.url}",
        soft_wrap=True,
    )
    return rec


def record_sim_run(
    out: Console, url: str | None, run_dir: Path, store: Store | None = None
) -> None:
    """Record a written simulation directory (``simulate --store``) and say where it went."""
    opened = store if store is not None else _open(url)
    run = opened.record_run(run_dir, design_id=None)
    out.print(f"recorded run {run.id} in {opened.url}", soft_wrap=True)


def _ls(out: Console, store: Store) -> None:
    designs = store.designs()
    table = Table(
        title=f"designs in {store.url}",
        box=box.SIMPLE,
        padding=(0, 1),
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column("id", no_wrap=True)
    table.add_column("design", no_wrap=True)
    for _, heading in LS_FIGURES:
        table.add_column(heading, justify="right", no_wrap=True)
    for d in designs:
        table.add_row(d.id, d.ref, *(_figure(k, d.summary.get(k)) for k, _ in LS_FIGURES))
    out.print(table)
    if not designs:
        out.print("no designs yet: `clusterloom design SPEC -o DIR --store` records one")


def _show(store: Store, ref: str) -> dict[str, Any]:
    from dataclasses import asdict

    from clusterloom.errors import StoreError

    try:
        d = store.design(ref)
    except StoreError as missing:
        try:
            run = store.run(ref)
        except StoreError:
            raise missing from None
        return {
            "run": asdict(run),
            "artifacts": [asdict(a) for a in store.artifacts(run.id)],
            "tables": {t: store.table_rows(run.id, t) for t in store.tables(run.id)},
        }
    return {
        "design": asdict(d),
        "findings": store.findings(d.id),
        "artifacts": [asdict(a) for a in store.artifacts(d.id)],
        "tables": {t: store.table_rows(d.id, t) for t in store.tables(d.id)},
        "pictures": store.pictures(d.id),
        "runs": [asdict(r) for r in store.runs(d.id)],
    }


def _say_show(out: Console, shown: dict[str, Any]) -> None:
    if "run" in shown:
        run = shown["run"]
        out.print(Text.assemble(("run ", "bold"), (run["id"], "bold"), f" by {run['user']}"))
        table = Table("transport", "finished", "FCT p50 µs", "FCT p99 µs", "completion ms")
        for transport, s in sorted(run["summary"].items()):
            table.add_row(
                transport,
                f"{s['finished']:,} / {s['total']:,}",
                _figure("", s["fct_p50_us"]),
                _figure("", s["fct_p99_us"]),
                _figure("", s["completion_ms"]),
            )
        out.print(table)
    else:
        d = shown["design"]
        parent = f", after {d['parent']}" if d["parent"] else ""
        out.print(
            Text.assemble(
                (f"{d['name']}@{d['version']}", "bold"),
                f" (id {d['id']}{parent}), recorded {d['created'][:19]} by {d['user']}; "
                f"spec {d['spec_hash'][:12]}",
            ),
            soft_wrap=True,
        )
        table = Table("figure", "value", title="summary")
        for key, value in sorted(d["summary"].items()):
            table.add_row(key, _figure(key, value))
        out.print(table)
        problems = [f for f in shown["findings"] if f["severity"] != "info"]
        if problems:
            ft = Table("stage", "severity", "code", "object", "message", title="findings")
            for f in problems:
                ft.add_row(f["stage"], f["severity"], f["code"], f["object"], f["message"])
            out.print(ft)
        else:
            out.print(f"all {len(shown['findings'])} checks passed")
        out.print("pictures: " + (", ".join(shown["pictures"]) or "none"), soft_wrap=True)
        for r in shown["runs"]:
            out.print(f"run {r['id']} ({r['created'][:19]})")
    tables = ", ".join(f"{n} ({rows:,} rows)" for n, rows in shown["tables"].items())
    out.print(f"tables: {tables or 'none'}", soft_wrap=True)
    size = sum(a["size"] for a in shown["artifacts"])
    out.print(f"{len(shown['artifacts'])} files, {size:,} bytes")


def _say_diff(out: Console, diff: dict[str, Any]) -> None:
    a, b = diff["a"]["ref"], diff["b"]["ref"]
    out.print(
        Text.assemble(
            ("diff ", "bold"), f"{a} -> {b}" + ("  (same spec)" if diff["same_spec"] else "")
        )
    )
    table = Table("figure", a, b, "delta", title="summary")
    for key, f in diff["summary"].items():
        if f["changed"]:
            delta = f["delta"]
            shown = "" if delta is None else ("+" if delta > 0 else "") + _figure(key, delta)
            table.add_row(key, _figure(key, f["a"]), _figure(key, f["b"]), shown)
    out.print(table if table.row_count else "summary: no figure changed")
    if diff["bom"]:
        bom = Table("category", "item", "fabric", "length m", a, b, "cost delta $", title="BOM")
        for line in diff["bom"]:
            bom.add_row(
                line["category"],
                line["item"],
                line["fabric"] or "",
                _figure("", line["length_m"]),
                f"{line['quantity_a']:,}",
                f"{line['quantity_b']:,}",
                f"{line['cost_usd_delta']:+,.2f}",
            )
        out.print(bom)
    else:
        out.print("BOM: no line changed")
    changes = diff["changes"]
    n = changes["counts"]
    blast = changes["blast_radius"]
    out.print(
        f"devices +{n['devices_added']:,} -{n['devices_removed']:,}; links "
        f"+{n['links_added']:,} -{n['links_removed']:,}, {n['links_recabled']:,} re-cabled; "
        f"racks +{n['racks_added']:,} -{n['racks_removed']:,}, {n['racks_moved']:,} moved; "
        f"blast radius {len(blast['racks']):,} racks, planes: "
        f"{', '.join(blast['planes']) or 'none'} (clusterloom diff shows it all)",
        soft_wrap=True,
        markup=False,
    )
    for what, findings in (
        ("appear", diff["findings"]["appear"]),
        ("clear", diff["findings"]["clear"]),
    ):
        for f in findings:
            out.print(
                f"finding {what}s: [{f['severity']}] {f['code']} {f['object']}: {f['message']}",
                soft_wrap=True,
            )


def _export_plan(store: Store, proposal_id: str, output: str, force: bool, out: Console) -> None:
    """``store export-plan ID -o DIR``: the stored plan's ``mop.csv`` and ``changes.jsonl``
    with its status; APPROVED (with approver and reason) only when it is approved."""
    from clusterloom._version import __version__
    from clusterloom.assist.mop import mop_csv
    from clusterloom.atomic import atomic_write
    from clusterloom.changes import Proposal, to_json
    from clusterloom.errors import StoreError
    from clusterloom.export.outdir import output_run

    status = store.proposal_status(proposal_id)
    rec = store.change_record(proposal_id)
    if not isinstance(rec, Proposal):
        raise StoreError(f"record {proposal_id[:64]!r} is no proposal")
    decision = store.decision(proposal_id) if status in ("approved", "rejected") else None
    who = decision.approver if decision is not None else ""
    why = decision.note if decision is not None else ""
    lines = to_json(rec.plan) + "\n" + to_json(rec) + "\n"
    if decision is not None:
        lines += to_json(decision) + "\n"
    with output_run(output, spec_hash=rec.plan.target, version=__version__, force=force) as run:
        atomic_write(run.staging / "mop.csv", mop_csv(rec.plan, status, who, why))
        atomic_write(run.staging / "changes.jsonl", lines)
    out.print(
        f"wrote mop.csv and changes.jsonl to {output}/: {status.upper()}"
        + (f" by {who}: {why}" if who else ""),
        markup=False,
        soft_wrap=True,
    )


def register(app: typer.Typer, guard: Callable[[Callable[[], Any]], Any], out: Console) -> None:
    """Add the ``store`` command group to ``app``."""
    group = typer.Typer(
        help="The design store: designs, runs, decisions and tokens a team shares (docs/store.md).",
        no_args_is_help=True,
    )
    app.add_typer(group, name="store")
    tokens = typer.Typer(help="Access tokens of the web explorer.", no_args_is_help=True)
    group.add_typer(tokens, name="token")

    @group.command("ls")
    def ls_command(store: StoreOpt = None, as_json: JsonOpt = False) -> None:
        """List the designs, newest first, with their figures."""

        def run() -> None:
            from dataclasses import asdict

            opened = _open(store)
            if as_json:
                _json([asdict(d) for d in opened.designs()])
            else:
                _ls(out, opened)

        guard(run)

    @group.command("show")
    def show_command(
        ref: Annotated[
            str, typer.Argument(help="a design (id, prefix, NAME@VERSION, NAME) or a run id")
        ],
        store: StoreOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """A design's figures, findings, tables, pictures and runs (or a run's figures)."""

        def run() -> None:
            shown = _show(_open(store), ref)
            if as_json:
                _json(shown)
            else:
                _say_show(out, shown)

        guard(run)

    @group.command("diff")
    def diff_command(
        a: Annotated[str, typer.Argument(help="the design to compare from")],
        b: Annotated[str, typer.Argument(help="the design to compare to")],
        store: StoreOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Two designs compared: summary figure deltas (B - A), BOM lines that changed,
        findings that appear and clear."""

        def run() -> None:
            diff = _open(store).diff(a, b)
            if as_json:
                _json(diff)
            else:
                _say_diff(out, diff)

        guard(run)

    @group.command("gc")
    def gc_command(store: StoreOpt = None) -> None:
        """Remove blobs no design, run, table or picture refers to (older than an hour)."""

        def run() -> None:
            removed, freed = _open(store).gc()
            out.print(f"removed {removed:,} blobs, {freed:,} bytes freed")

        guard(run)

    @group.command("incidents")
    def incidents_command(
        design: Annotated[
            str | None, typer.Option("--design", help="only this design's (a reference)")
        ] = None,
        store: StoreOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """The runtime incidents kept (ops mitigate/approve/outcome --incident --store), the
        latest opened first: status, proposal, design (docs/ops.md)."""

        def run() -> None:
            from dataclasses import asdict

            from rich.table import Table

            found = _open(store).incidents(design)
            if as_json:
                _json([{k: v for k, v in asdict(r).items() if k != "body"} for r in found])
                return
            table = Table("incident", "design", "opened (ms)", "lasted (s)", "status", "proposal")
            for r in found:
                table.add_row(
                    r.id,
                    r.design_id or r.design[:16],
                    str(r.opened_ms),
                    f"{(r.last_ms - r.opened_ms) / 1000:,.1f}",
                    r.status,
                    r.proposal or "",
                )
            out.print(table if found else "no incident in the store")

        guard(run)

    @group.command("import-records")
    def import_command(
        file: Annotated[Path, typer.Argument(help="a JSON-lines change log (changes.jsonl)")],
        store: StoreOpt = None,
    ) -> None:
        """Store every record of a change log (plans, proposals, approvals, decisions); a
        record stored already is left as it is."""

        def run() -> None:
            opened = _open(store)
            before = len(opened.records())
            ids = opened.import_records(file)
            added = len(opened.records()) - before
            out.print(f"{len(ids):,} records read from {file}, {added:,} new in {opened.url}")

        guard(run)

    @group.command("export-plan")
    def export_plan_command(
        proposal: Annotated[str, typer.Argument(help="a stored proposal's id")],
        output: Annotated[str, typer.Option("--output", "-o", help="the directory to write")],
        store: StoreOpt = None,
        force: Annotated[bool, typer.Option("--force", help="move foreign files aside")] = False,
    ) -> None:
        """A stored change plan as mop.csv and changes.jsonl, with its status: APPROVED (the
        approver and reason) only when approved, else PROPOSED, REJECTED or SUPERSEDED."""

        def run() -> None:
            _export_plan(_open(store), proposal, output, force, out)

        guard(run)

    @tokens.command("add")
    def token_add(
        user: Annotated[str, typer.Argument(help="who the token is for")],
        role: Annotated[str, typer.Option("--role", help="read or write")] = "read",
        store: StoreOpt = None,
    ) -> None:
        """A new token; its secret is printed once, only its hash is kept."""

        def run() -> None:
            from clusterloom.errors import StoreError

            if role not in ("read", "write"):
                raise StoreError(f"--role {role[:40]!r}: give read or write")
            token_id, secret = _open(store).add_token(user, "write" if role == "write" else "read")
            out.print(f"token {token_id} for {user} ({role}); its secret, shown this once:")
            sys.stdout.flush()
            sys.stdout.write(secret + "\n")

        guard(run)

    @tokens.command("revoke")
    def token_revoke(
        token_id: Annotated[str, typer.Argument(help="the token's id")],
        store: StoreOpt = None,
    ) -> None:
        """Revoke a token: its secret opens nothing from now on."""

        def run() -> None:
            _open(store).revoke_token(token_id)
            out.print(f"token {token_id} revoked")

        guard(run)

    @tokens.command("ls")
    def token_ls(store: StoreOpt = None) -> None:
        """List the tokens (ids, users, roles; never a secret)."""

        def run() -> None:
            table = Table("id", "user", "role", "created", "revoked")
            for t in _open(store).tokens():
                table.add_row(t.id, t.user, t.role, t.created[:19], "yes" if t.revoked else "")
            out.print(table)

        guard(run)
