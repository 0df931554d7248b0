"""``clusterloom ops mitigate``, ``ops approve``, ``ops outcome`` and ``ops timeline``: the
thin commands over :mod:`clusterloom.ops.mitigate`, :mod:`clusterloom.ops.incident` and
:mod:`clusterloom.ops.page` (docs/ops.md, "Mitigations checked before they are proposed" and
"Incident timeline").

Exit codes as in ``main.py``; ``mitigate``: 0 a mitigation was predicted better than doing
nothing (and proposed with ``--store`` or ``--log``), 1 none was (nothing is proposed: the
refused are listed with their figures), 2 bad input (a fault or suspect the design does not
have, a fault the engine cannot express, a design too big for the packet engine, a proposal
decided already)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from clusterloom.cli.store import StoreUrlOpt

if TYPE_CHECKING:
    from clusterloom.ops.fabric import OpsFabric
    from clusterloom.ops.mitigate import Checked
    from clusterloom.ops.model import Fault, Suspect
    from clusterloom.store import Store

Guard = Callable[[Callable[[], Any]], Any]

RecordOpt = Annotated[
    bool, typer.Option("--store", help="record in the design store (its URL: --store-url)")
]
LogOpt = Annotated[
    Path | None,
    typer.Option("--log", help="record in this JSON-lines change log instead of the store"),
]
IncidentOpt = Annotated[
    Path | None,
    typer.Option(
        "--incident",
        help="the incident file (JSON) to write or add to (with --store, kept there too)",
    ),
]
AtOpt = Annotated[
    int | None,
    typer.Option("--at", help="when, ms since the epoch (UTC) [default: now]", show_default=False),
]


def _now(at: int | None) -> int:
    return at if at is not None else int(time.time() * 1000)


def _where(
    record: bool, store_url: str | None, log: Path | None
) -> tuple[Store | None, Path | None]:
    from clusterloom.errors import Problem, SpecError

    if record and log is not None:
        raise SpecError([Problem("--store/--log", "record in the store or a log, not both")])
    if store_url is not None and not record:
        raise SpecError([Problem("--store-url", "give --store too, to record in the store")])
    if record:
        from clusterloom.store import open_store

        return open_store(store_url), None
    return None, log


@contextmanager
def _deciding(record: bool, store_url: str | None, log: Path | None) -> Iterator[Store]:
    """The store a decision is checked and recorded in: the design store (``--store``) or the
    store's approval model over the log (``--log``, ``store.log_store``)."""
    from clusterloom.errors import Problem, SpecError
    from clusterloom.store.logstore import log_store

    store, log_path = _where(record, store_url, log)
    if store is not None:
        try:
            yield store
        finally:
            store.close()
    elif log_path is not None:
        with log_store(log_path) as held:
            yield held
    else:
        raise SpecError([Problem("--store/--log", "give one: the store or the log")])


def _faults(texts: Sequence[str], fabric: OpsFabric) -> list[Fault]:
    from clusterloom.ops.faults import parse_fault

    return [parse_fault(t, fabric) for t in texts]


def _progress(text: str) -> None:
    sys.stderr.write(f"progress: {text}\n")
    sys.stderr.flush()


def _fmt(ps: int | None) -> str:
    from clusterloom.sim.flow.run import fmt_time

    return "-" if ps is None else fmt_time(ps)


def _table(checked: Sequence[Checked]) -> Table:
    t = Table(title="mitigations checked against doing nothing", box=box.SIMPLE_HEAD)
    for h in (
        "#",
        "mitigation",
        "verdict",
        "predicted",
        "nothing",
        "gain",
        "drained",
        "hosts",
        "capacity left",
        "2nd failure partitions",
        "why",
    ):
        t.add_column(h, overflow="fold")
    for n, c in enumerate(checked, 1):
        t.add_row(
            str(n),
            c.mitigation.id,
            c.verdict.value.upper() if c.proposable else c.verdict.value,
            _fmt(c.predicted_ps),
            _fmt(c.nothing_ps),
            "-" if c.gain is None else f"{c.gain:+.1%}",
            str(c.risk.links_drained),
            str(c.risk.hosts_affected),
            f"{c.risk.capacity_left:.0%}",
            "yes" if c.risk.second_failure_partitions else "no",
            c.reason,
        )
    return t


def register(group: typer.Typer, guard: Guard, out: Console) -> None:
    """Add ``mitigate``, ``approve``, ``outcome`` and ``timeline`` to the ``ops`` group."""

    @group.command("mitigate")
    def mitigate_command(
        design: Annotated[
            str, typer.Argument(help="the design: a run directory, a spec file or an example")
        ],
        fault: Annotated[
            list[str] | None,
            typer.Option("--fault", help="a fault (ops synth's syntax); repeat for several"),
        ] = None,
        suspects: Annotated[
            Path | None,
            typer.Option("--suspects", help="suspects as JSON (ops localise --json)"),
        ] = None,
        transport: Annotated[
            str | None,
            typer.Option(help="the job's transport [default: the spec scenario's first]"),
        ] = None,
        traffic: Annotated[
            str | None,
            typer.Option(help="traffic kind [default: step with a job, else permutation]"),
        ] = None,
        size: Annotated[str | None, typer.Option(help="message size, e.g. 2MB")] = None,
        hosts: Annotated[
            int | None,
            typer.Option(help="hosts the traffic spans; the rest are spares to move ranks to"),
        ] = None,
        seed: Annotated[int, typer.Option(help="the simulators' seed")] = 0,
        engine: Annotated[
            str,
            typer.Option(
                help="flow, or packet for small designs (drops and retransmissions simulated)"
            ),
        ] = "flow",
        seeds: Annotated[
            int,
            typer.Option(
                help="runs per candidate (seeds SEED, SEED+1...): proposed only when better "
                "on every one"
            ),
        ] = 1,
        min_gain: Annotated[
            float | None,
            typer.Option(help="share of doing nothing's time a mitigation must save [0.01]"),
        ] = None,
        assume_rate: Annotated[
            float,
            typer.Option(
                "--assume-rate",
                help="the rate a suspected gray link or slow port keeps, for --suspects, "
                "when its evidence states none",
            ),
        ] = 0.5,
        record: RecordOpt = False,
        store_url: StoreUrlOpt = None,
        log: LogOpt = None,
        incident: IncidentOpt = None,
        at: AtOpt = None,
        user: Annotated[str, typer.Option("--user", help="the proposal's author")] = "ops",
        as_json: Annotated[bool, typer.Option("--json", help="print the checks as JSON")] = False,
        quiet: Annotated[
            bool, typer.Option("--no-progress", help="no progress lines on stderr")
        ] = False,
    ) -> None:
        """Check the mitigations of a fault (or of localised suspects) in the flow (or, for
        small designs, the packet) simulator against doing nothing, and propose the best; one
        predicted worse than doing nothing is never proposed."""

        def run() -> bool:
            from clusterloom.atomic import atomic_write
            from clusterloom.errors import Problem, SpecError
            from clusterloom.ops.fabric import load_fabric
            from clusterloom.ops.incident import (
                incident_from,
                incident_json,
                read_suspects,
                with_mitigation,
            )
            from clusterloom.ops.mitigate import (
                candidates,
                check_mitigations,
                propose_mitigation,
            )

            if bool(fault) == (suspects is not None):
                raise SpecError([Problem("--fault/--suspects", "give faults or a suspects file")])
            store, log_path = _where(record, store_url, log)
            fabric = load_fabric(design, hash_seed=seed)
            given: list[Fault | Suspect]
            observed: list[tuple[int, Any]] = []
            if fault:
                given = list(_faults(fault, fabric))
            else:
                assert suspects is not None
                groups = read_suspects(suspects)
                observed = [
                    (ts, {"suspects": sus, "congestion": cong, "anomalies": an})
                    for ts, sus, cong, an in groups
                ]
                given = list(groups[-1][1])  # the latest localisation's suspects
            checked = check_mitigations(
                fabric,
                given,
                candidates(fabric, given),
                traffic=traffic,
                engine=engine,
                seed=seed,
                transport=transport,
                size=size,
                hosts=hosts,
                min_gain=min_gain,
                progress=None if quiet else _progress,
                assumed_rate=assume_rate,
                seeds=seeds,
            )
            proposal = propose_mitigation(
                fabric, checked, suspects=given, author=user, store=store, log=log_path
            )
            if incident is not None:
                from clusterloom.spec.load import spec_hash

                now = _now(at)
                if not observed:
                    observed = [(now, {"suspects": given_suspects(given), "congestion": False})]
                inc = incident_from(spec_hash(fabric.spec), observed)
                inc = with_mitigation(inc, checked, proposal, now)
                atomic_write(incident, incident_json(inc))
                if store is not None:  # --store: the incident is kept there too
                    store.record_incident(incident_json(inc), user=user)
            if as_json:
                doc = {
                    "checked": [c.to_dict() for c in checked],
                    "proposal": None if proposal is None else proposal.id,
                }
                sys.stdout.write(json.dumps(doc, indent=1, sort_keys=True) + "\n")
                return proposal is not None
            out.print(_table(checked))
            if proposal is None:
                out.print(
                    "nothing proposed: no mitigation is predicted better than doing nothing",
                    markup=False,
                )
            else:
                where = (
                    f" in {store.url}"
                    if store is not None
                    else f" in {log_path}"
                    if log_path is not None
                    else " (not recorded: give --store or --log)"
                )
                out.print(
                    f"proposed {proposal.id}{where}: {checked[0].mitigation.id}",
                    markup=False,
                    soft_wrap=True,
                )
            if incident is not None:
                out.print(f"incident written to {incident}", markup=False, soft_wrap=True)
            return proposal is not None

        proposed = guard(run)
        raise typer.Exit(0 if proposed else 1)

    @group.command("approve")
    def approve_command(
        proposal: Annotated[str, typer.Argument(help="the proposal's id (ops mitigate)")],
        by: Annotated[str, typer.Option("--by", help="who decides")],
        note: Annotated[str, typer.Option("--note", help="why: the reason the decision records")],
        reject: Annotated[bool, typer.Option("--reject", help="reject it instead")] = False,
        record: RecordOpt = False,
        store_url: StoreUrlOpt = None,
        log: LogOpt = None,
        incident: IncidentOpt = None,
        at: AtOpt = None,
    ) -> None:
        """Approve (or --reject) a proposed mitigation: records the approval and the
        decision with its context; a proposal decided or superseded already is refused."""

        def run() -> None:
            from clusterloom.atomic import atomic_write
            from clusterloom.ops.incident import incident_json, read_incident, with_decision
            from clusterloom.ops.mitigate import decide

            inc, when = None, _now(at)
            if incident is not None:  # checked before anything is recorded
                inc = read_incident(incident)
                inc = with_decision(inc, approved=not reject, by=by, at_ms=when, proposal=proposal)
            with _deciding(record, store_url, log) as store:
                approval, decision = decide(
                    proposal, by=by, approved=not reject, note=note, store=store, log=log
                )
                if inc is not None and log is None:  # --store: the incident kept there too
                    store.record_incident(incident_json(inc), user=by)
            if incident is not None and inc is not None:
                atomic_write(incident, incident_json(inc))
            status = "APPROVED" if approval.approved else "REJECTED"
            out.print(
                f"proposal {proposal}: {status} by {by}; decision: {decision.chosen}",
                markup=False,
                soft_wrap=True,
            )

        guard(run)

    @group.command("outcome")
    def outcome_command(
        proposal: Annotated[str, typer.Argument(help="the approved proposal's id")],
        measured: Annotated[
            str,
            typer.Option(
                "--measured", help="the completion (step) time measured after it, e.g. 250us"
            ),
        ],
        by: Annotated[str, typer.Option("--by", help="who measured it")] = "ops",
        note: Annotated[str, typer.Option("--note", help="what was seen")] = "",
        record: RecordOpt = False,
        store_url: StoreUrlOpt = None,
        log: LogOpt = None,
        incident: IncidentOpt = None,
        at: AtOpt = None,
    ) -> None:
        """Record the measured outcome of an approved mitigation next to its prediction."""

        def run() -> None:
            from clusterloom.atomic import atomic_write
            from clusterloom.ops.incident import incident_json, read_incident, with_outcome
            from clusterloom.ops.mitigate import record_outcome
            from clusterloom.sim.failures import parse_time

            ps = parse_time(measured, "--measured")
            inc = None
            if incident is not None:  # checked before anything is recorded
                inc = read_incident(incident)
                inc = with_outcome(inc, measured_ps=ps, at_ms=_now(at), proposal=proposal)
            with _deciding(record, store_url, log) as store:
                decision = record_outcome(
                    proposal, measured_ps=ps, by=by, note=note, store=store, log=log
                )
                if inc is not None and log is None:  # --store: the incident kept there too
                    store.record_incident(incident_json(inc), user=by)
            if incident is not None and inc is not None:
                atomic_write(incident, incident_json(inc))
            out.print(f"proposal {proposal}: {decision.outcome}", markup=False, soft_wrap=True)

        guard(run)

    @group.command("timeline")
    def timeline_command(
        incident: Annotated[Path, typer.Argument(help="the incident file (JSON)")],
        output: Annotated[Path, typer.Option("--output", "-o", help="the page to write")],
    ) -> None:
        """The incident's timeline as one self-contained HTML page."""

        def run() -> None:
            from clusterloom.atomic import atomic_write
            from clusterloom.ops.incident import read_incident
            from clusterloom.ops.page import render_incident

            inc = read_incident(incident)
            atomic_write(output, render_incident(inc))
            out.print(f"wrote {output} (incident {inc.id})", markup=False, soft_wrap=True)

        guard(run)


def given_suspects(given: Sequence[Fault | Suspect]) -> tuple[Suspect, ...]:
    """Faults given on the command line as the suspects of the incident's one observation."""
    from clusterloom.ops.mitigate import _as_suspect

    return tuple(_as_suspect(g) for g in given)
