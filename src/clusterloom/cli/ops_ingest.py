"""``clusterloom ops ingest DESIGN FILE... --store DIR``: telemetry files (exposition text,
CSV, Parquet) checked against a design and appended to a telemetry store; ``ops rates`` shows
the stored rates; ``ops retain`` rolls up and applies the store's retention
(``clusterloom.ops.ingest``, ``clusterloom.ops.telemetry``; docs/ops.md).

Exit codes: 0 every row kept; 1 the good rows were stored and some rows were refused (each
printed with its file and line: a finding, as a check's); 2 bad input that stores nothing
(an unreadable file, a missing column, an unknown design or store)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from rich import box
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from clusterloom.ops.ingest import Kind

#: problems printed per file (all are counted)
SHOWN = 50


def register(group: typer.Typer, guard: Callable[[Callable[[], Any]], Any], out: Console) -> None:
    """Add ``ingest``, ``rates`` and ``retain`` to the ``ops`` group."""

    @group.command("ingest")
    def ingest_command(
        design: Annotated[str, typer.Argument(help="run directory, spec file or example")],
        files: Annotated[
            list[Path], typer.Argument(help="telemetry files (.prom, .csv, .parquet)")
        ],
        store: Annotated[Path, typer.Option("--store", help="the telemetry store (a directory)")],
        kind: Annotated[
            str | None,
            typer.Option("--kind", help="counters, probes or collectives (default: from the file)"),
        ] = None,
        fmt: Annotated[
            str | None, typer.Option("--format", help="prom, csv or parquet (default: suffix)")
        ] = None,
        scrape_ms: Annotated[
            int | None,
            typer.Option("--scrape-ms", help="time (ms since the epoch) of untimed samples"),
        ] = None,
        as_json: Annotated[bool, typer.Option("--json", help="print the outcome as JSON")] = False,
    ) -> None:
        """Check telemetry files against DESIGN and append their good rows to the store;
        every refused row is printed with its file and line (exit 1 when there are any)."""

        def run() -> int:
            from clusterloom.errors import Problem, SpecError
            from clusterloom.ops.fabric import load_fabric
            from clusterloom.ops.ingest import guess_kind, read_telemetry
            from clusterloom.ops.telemetry import TelemetryStore

            if kind is not None and kind not in ("counters", "probes", "collectives"):
                raise SpecError([Problem("--kind", "counters, probes or collectives")])
            fabric = load_fabric(design)
            # read and check every file before storing anything: a file that cannot be read
            # at all stores nothing of the others either
            read = []
            for path in files:
                k: Kind = cast("Kind", kind) if kind else guess_kind(path, fmt=fmt)
                got = read_telemetry(k, path, fabric, fmt=fmt, scrape_ms=scrape_ms)
                read.append((path, k, got))
            ts = TelemetryStore(store, fabric)
            done = []
            refused = 0
            for path, k, got in read:
                add = {
                    "counters": ts.add_counters,
                    "probes": ts.add_probes,
                    "collectives": ts.add_collectives,
                }[k]
                added = add(got.table)
                stale = [n for n in added.notes if "not stored" in n.message]
                refused += len(got.problems) + len(stale)
                done.append((path, k, got, added))
            if as_json:
                doc = {
                    "store": str(store),
                    "files": [
                        {
                            "file": str(path),
                            "kind": k,
                            "rows_read": got.rows_read,
                            "rows_kept": added.rows,
                            "rates": added.rates,
                            "problems": [str(p) for p in got.problems],
                            "notes": [str(n) for n in added.notes],
                        }
                        for path, k, got, added in done
                    ],
                }
                sys.stdout.write(json.dumps(doc, indent=2) + "\n")
            else:
                for path, k, got, added in done:
                    extra = f", {added.rates:,} rates" if k == "counters" else ""
                    out.print(
                        f"{path}: {k}, {added.rows:,} of {got.rows_read:,} rows stored{extra}",
                        markup=False,
                        soft_wrap=True,
                    )
                    lines = [str(p) for p in (*got.problems, *added.notes)]
                    for line in lines[:SHOWN]:
                        out.print(f"  {line}", markup=False, soft_wrap=True)
                    if len(lines) > SHOWN:
                        out.print(
                            f"  ... and {len(lines) - SHOWN:,} more", markup=False, soft_wrap=True
                        )
            return 1 if refused else 0

        code = guard(run)
        if code:
            raise typer.Exit(code)

    @group.command("rates")
    def rates_command(
        store: Annotated[Path, typer.Option("--store", help="the telemetry store")],
        device: Annotated[
            str | None, typer.Option("--device", help="one device's interfaces")
        ] = None,
        start_ms: Annotated[int | None, typer.Option("--start-ms", help="from (ms, UTC)")] = None,
        end_ms: Annotated[int | None, typer.Option("--end-ms", help="until (ms, excluded)")] = None,
        resolution: Annotated[str, typer.Option("--resolution", help="raw, 1m or 1h")] = "raw",
        top: Annotated[int, typer.Option("--top", help="interfaces shown, busiest first")] = 20,
        as_json: Annotated[bool, typer.Option("--json", help="print the rows as JSON")] = False,
    ) -> None:
        """The stored rates per interface over a window: mean Gb/s each way, drops, ECN
        marks and PFC pauses per second, the share of time up and the flaps."""

        def run() -> None:
            from clusterloom.errors import Problem, SpecError
            from clusterloom.ops.telemetry import TelemetryStore, summarise_rates

            if not (store / "store.json").is_file():
                raise SpecError([Problem(str(store), "not a telemetry store (no store.json)")])
            if resolution not in ("raw", "1m", "1h"):
                raise SpecError([Problem("--resolution", "raw, 1m or 1h")])
            ts = TelemetryStore(store)
            rows = summarise_rates(
                ts.rates(start_ms, end_ms, resolution=resolution, device=device),  # type: ignore[arg-type]
            )
            if as_json:
                sys.stdout.write(json.dumps(rows[:top] if top else rows, indent=2) + "\n")
                return
            table = Table(title=f"rates in {store} ({resolution})", box=box.SIMPLE_HEAD)
            table.add_column("interface", no_wrap=True)
            for h in ("tx Gb/s", "rx Gb/s", "drops/s", "ECN/s", "PFC/s", "up", "flaps"):
                table.add_column(h, justify="right", no_wrap=True)
            for r in rows[:top]:
                table.add_row(
                    f"{r['device']}:{r['interface']}",
                    *(_num(r[k]) for k in ("tx_gbps", "rx_gbps", "drops_ps", "ecn_ps", "pfc_ps")),
                    _num(r["up"]),
                    str(r["flaps"]),
                )
            first = min((int(str(r["first_ms"])) for r in rows), default=0)
            last = max((int(str(r["last_ms"])) for r in rows), default=0)
            table.caption = (
                f"{len(rows):,} interfaces, {first} to {last} ms; busiest "
                f"{min(top, len(rows)):,} shown"
            )
            out.print(table)

        guard(run)

    @group.command("retain")
    def retain_command(
        store: Annotated[Path, typer.Option("--store", help="the telemetry store")],
        now_ms: Annotated[
            int | None, typer.Option("--now-ms", help="the time to apply it at (default: now)")
        ] = None,
    ) -> None:
        """Roll the store's raw hours up into 1-minute and 1-hour rollups and remove what is
        older than its retention (store.json)."""

        def run() -> None:
            import time

            from clusterloom.errors import Problem, SpecError
            from clusterloom.ops.telemetry import TelemetryStore

            if not (store / "store.json").is_file():
                raise SpecError([Problem(str(store), "not a telemetry store (no store.json)")])
            ts = TelemetryStore(store)
            now = int(time.time() * 1000) if now_ms is None else now_ms
            rolled = ts.downsample()
            removed = ts.enforce_retention(now)
            r = ts.retention
            out.print(
                f"rolled up {rolled} hour partitions; removed {removed['raw']} raw, "
                f"{removed['1m']} 1-minute, {removed['1h']} 1-hour (kept raw {r.raw_days:g} d, "
                f"1m {r.minute_days:g} d, 1h {r.hour_days:g} d)",
                markup=False,
                soft_wrap=True,
            )

        guard(run)


def _num(v: object) -> str:
    if not isinstance(v, int | float):
        return "-"
    return f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"
