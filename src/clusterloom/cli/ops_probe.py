"""``clusterloom ops probe`` (the probe agent: ``--respond`` answers, ``--targets`` probes) and
``clusterloom ops probe-lab`` (the agent on a namespace leaf-spine with a link set down mid-run;
``clusterloom.ops.probe``, ``clusterloom.ops.probe_lab``, ``docs/ops.md``). Exit codes as in
``main.py``: 0 done; 1 ``probe-lab``'s downed link was not ranked first; 2 bad input, or it
cannot run here (a port in use, no root for the lab or a path trace)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

if TYPE_CHECKING:
    from clusterloom.ops.probe import Target

Respond = Annotated[
    list[str] | None,
    typer.Option(
        "--respond",
        help="answer probes at ADDR[:PORT] ([ADDR]:PORT for IPv6; port 7471 unless given, 0: "
        "any free one); repeatable",
        show_default=False,
    ),
]
Targets = Annotated[
    list[str] | None,
    typer.Option(
        "--targets",
        "-t",
        help="a target ADDR, ADDR:PORT or [ADDR]:PORT, optionally =DEVICE:INTERFACE (the "
        "design's names), or a file of them (one a line, or YAML); repeatable",
        show_default=False,
    ),
]


def _responder_address(text: str) -> tuple[str, int]:
    from clusterloom.ops.probe import parse_target

    t = parse_target(text, (), where="--respond", lowest_port=0)
    return t.address, t.port


def _targets(values: list[str], evs: tuple[int, ...]) -> tuple[Target, ...]:
    from clusterloom.errors import Problem, SpecError
    from clusterloom.ops.probe import parse_target, read_targets

    out: list[Target] = []
    problems: list[Problem] = []
    for v in values:
        try:
            if Path(v).is_file():
                out += read_targets(Path(v), evs)
            else:
                out.append(parse_target(v, evs))
        except SpecError as exc:
            problems += exc.problems
    if problems:
        raise SpecError(problems)
    return tuple(out)


def register(group: typer.Typer, guard: Callable[[Callable[[], Any]], Any], out: Console) -> None:
    """Add ``probe`` and ``probe-lab`` to the ``ops`` group."""

    @group.command()
    def probe(
        respond: Respond = None,
        targets: Targets = None,
        evs: Annotated[int, typer.Option(help="EVs (UDP source ports) per target")] = 16,
        ev_base: Annotated[int, typer.Option(help="the first EV")] = 49152,
        interval: Annotated[str, typer.Option(help="the reporting interval")] = "1s",
        duration: Annotated[
            str | None,
            typer.Option(
                help="how long to run [default: 30s when probing; until SIGINT/SIGTERM when "
                "answering]",
                show_default=False,
            ),
        ] = None,
        timeout: Annotated[str, typer.Option(help="a probe not back by then is lost")] = "500ms",
        per_interval: Annotated[
            int, typer.Option(help="probes per target and EV in each interval")
        ] = 1,
        rate: Annotated[float, typer.Option(help="the most probes per second ever sent")] = 1000.0,
        size: Annotated[int, typer.Option(help="UDP payload of a probe, bytes")] = 64,
        source: Annotated[
            str | None, typer.Option(help="the address to send from", show_default=False)
        ] = None,
        device: Annotated[
            str | None,
            typer.Option(help="the design's name of this host (src_device)", show_default=False),
        ] = None,
        interface: Annotated[
            str | None,
            typer.Option(help="the design's name of this port (src_interface)", show_default=False),
        ] = None,
        output: Annotated[
            Path | None,
            typer.Option(
                "-o", "--output", help="write the rows (.parquet, .csv, .prom)", show_default=False
            ),
        ] = None,
        fmt: Annotated[
            str | None,
            typer.Option(
                "--format", help="parquet, csv or prom [default: by the suffix]", show_default=False
            ),
        ] = None,
        design: Annotated[
            str | None,
            typer.Option(
                help="a design (run directory, spec or example): the agent's and the targets' "
                "names must be its host NIC ports",
                show_default=False,
            ),
        ] = None,
        paths: Annotated[
            Path | None,
            typer.Option(
                help="first trace every EV's path (hop-limited probes, ICMP time-exceeded on a "
                "raw socket: root) and write them to this JSON file",
                show_default=False,
            ),
        ] = None,
    ) -> None:
        """The probe agent: answer probes (--respond) or probe targets over EVs (--targets),
        loss and RTT per target, EV and interval (PROBE_SCHEMA); stops cleanly on
        SIGINT/SIGTERM with every finished probe written."""

        def run() -> int:
            import threading

            from clusterloom.errors import Problem, SpecError
            from clusterloom.ops.probe import parse_duration_ms, stop_on_signals

            if bool(respond) == bool(targets):
                raise SpecError([Problem("--respond/--targets", "give one of the two")])
            stop = threading.Event()
            limit = parse_duration_ms(duration, "--duration") if duration else None
            if respond:
                return _respond(respond, limit, stop, out)
            if device is None or interface is None:
                raise SpecError(
                    [Problem("--device/--interface", "name the host and port this agent runs on")]
                )
            if not 1 <= evs <= 4096 or not 1 <= ev_base <= 65536 - evs:
                raise SpecError([Problem("--evs/--ev-base", "EVs within the UDP ports 1..65535")])
            from clusterloom.ops.probe import ProbeConfig, new_session

            chosen = tuple(range(ev_base, ev_base + evs))
            config = ProbeConfig(
                device,
                interface,
                _targets(targets or [], chosen),
                interval_ms=parse_duration_ms(interval, "--interval"),
                timeout_ms=parse_duration_ms(timeout, "--timeout"),
                per_interval=per_interval,
                rate_pps=rate,
                size=size,
                source=source,
                session=new_session(),
            ).check()
            if design is not None:
                from clusterloom.ops.fabric import load_fabric
                from clusterloom.ops.probe import check_names

                check_names(config, load_fabric(design))
            with stop_on_signals(stop):
                return _probe(config, limit or 30_000, output, fmt, paths, stop, out)

        raise typer.Exit(guard(run))

    @group.command("probe-lab")
    def probe_lab(
        evs: Annotated[int, typer.Option(help="EVs per target")] = 16,
        interval: Annotated[str, typer.Option(help="the reporting interval")] = "250ms",
        duration: Annotated[str, typer.Option(help="how long to probe")] = "3s",
        fail_after: Annotated[
            str, typer.Option(help="set leaf2~spine1 down this long into the run")
        ] = "1500ms",
        output: Annotated[
            Path | None,
            typer.Option(
                "-o", "--output", help="write the rows (.parquet, .csv, .prom)", show_default=False
            ),
        ] = None,
    ) -> None:
        """Build a 3-leaf, 2-spine leaf-spine of network namespaces (L4 ECMP), trace and probe
        host1's EVs to host2 and host3, set a link down mid-run and localise it by tomography
        (needs root; every namespace is deleted)."""

        def run() -> int:
            import sys

            from clusterloom.errors import Problem, SpecError
            from clusterloom.ops.probe import parse_duration_ms
            from clusterloom.ops.probe_lab import run_lab

            if not 1 <= evs <= 64:
                raise SpecError([Problem("--evs", "1..64 in the lab")])
            length = parse_duration_ms(duration, "--duration")
            fail_ms = parse_duration_ms(fail_after, "--fail-after")
            if fail_ms >= length:
                raise SpecError([Problem("--fail-after", "before the end of --duration")])

            def say(line: str) -> None:
                out.print(line, soft_wrap=True, markup=False)
                sys.stdout.flush()

            with _sigterm_interrupts():  # the namespaces are deleted on SIGTERM too
                result = run_lab(
                    evs=evs,
                    interval_ms=parse_duration_ms(interval, "--interval"),
                    duration_ms=length,
                    fail_after_ms=fail_ms,
                    out=output,
                    say=say,
                )
            for n, s in enumerate(result.suspects[:3], start=1):
                out.print(
                    f"  suspect {n}: {s.target} (confidence {s.confidence:.2f})",
                    soft_wrap=True,
                    markup=False,
                )
            first = result.suspects[0].target if result.suspects else None
            ok = first == result.failed
            out.print(
                f"the downed link {result.failed} is "
                + ("ranked first" if ok else f"not ranked first (first: {first})"),
                soft_wrap=True,
                markup=False,
            )
            if output is not None:
                out.print(f"wrote {output}", markup=False)
            return 0 if ok else 1

        raise typer.Exit(guard(run))


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt for the block (as SIGINT does), so every ``with``
    around it unwinds: the lab's namespaces are deleted, the output left unwritten."""
    import signal
    from types import FrameType

    def raise_interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _respond(addresses: list[str], limit_ms: int | None, stop: Any, out: Console) -> int:
    import threading
    import time

    from clusterloom.ops.probe import Responder, stop_on_signals

    wanted = [_responder_address(a) for a in addresses]
    responders: list[Responder] = []
    try:
        for addr, port in wanted:
            responders.append(Responder(addr, port))
        for r, (addr, _) in zip(responders, wanted, strict=True):
            shown = f"[{addr}]" if ":" in addr else addr
            out.print(f"answering probes at {shown}:{r.port}", markup=False)
        until = None if limit_ms is None else time.monotonic_ns() + limit_ms * 1_000_000
        with stop_on_signals(stop):
            threads = [
                threading.Thread(target=r.serve, args=(stop,), kwargs={"until_ns": until})
                for r in responders
            ]
            for th in threads:
                th.start()
            try:
                while any(th.is_alive() for th in threads):
                    for th in threads:
                        th.join(0.1)
            finally:
                stop.set()
                for th in threads:
                    th.join()
    finally:
        for r in responders:
            r.close()
    replied = sum(r.replied for r in responders)
    ignored = sum(r.ignored for r in responders)
    out.print(f"answered {replied:,} probes, ignored {ignored:,} other datagrams", markup=False)
    return 0


def _probe(
    config: Any,
    duration_ms: int,
    output: Path | None,
    fmt: str | None,
    paths: Path | None,
    stop: Any,
    out: Console,
) -> int:
    import json
    import sys

    from clusterloom.ops.probe import Prober, discover, open_sink

    if paths is not None:
        from clusterloom.atomic import atomic_write

        traces = discover(config)
        doc = [
            {
                "dst_device": config.targets[t.target].device,
                "dst_interface": config.targets[t.target].interface,
                "address": config.targets[t.target].address,
                "ev": t.ev,
                "hops": list(t.hops),
                "reached": t.reached,
            }
            for t in traces
        ]
        atomic_write(paths, json.dumps(doc, indent=1) + "\n")
        reached = sum(t.reached for t in traces)
        out.print(f"traced {len(traces)} EV paths ({reached} reached): {paths}", markup=False)
    sink = open_sink(output, fmt) if output is not None else None
    try:
        with Prober(config) as prober:
            out.print(
                f"probing {len(config.targets)} targets over "
                f"{sum(len(t.evs) for t in config.targets)} EVs, {config.interval_ms} ms "
                "intervals; SIGINT or SIGTERM ends the run",
                markup=False,
            )
            sys.stdout.flush()
            tally = _Tally()
            summary = prober.run(duration_ms, sink, stop=stop, on_rows=tally.add)
    except BaseException:
        if sink is not None:
            sink.abort()
        raise
    if sink is not None:
        sink.close()
    lost = summary.sent - summary.answered
    share = lost / summary.sent if summary.sent else 0.0
    out.print(
        f"{summary.sent:,} probes to {len(config.targets)} targets over "
        f"{sum(len(t.evs) for t in config.targets)} EVs in {summary.seconds:.1f} s: "
        f"{lost:,} lost ({share:.2%}), {summary.rows:,} rows"
        + (f", {summary.send_errors:,} send errors" if summary.send_errors else ""),
        soft_wrap=True,
        markup=False,
    )
    out.print(tally.table())
    if output is not None:
        out.print(f"wrote {output}", markup=False)
    return 0


class _Tally:
    """Per target: probes sent and lost, the EVs that lost any, RTTs (bounded by the targets)."""

    def __init__(self) -> None:
        self.by: dict[tuple[str, str], list[float]] = {}
        self.bad_evs: dict[tuple[str, str], set[int]] = {}

    def add(self, rows: list[dict[str, Any]]) -> None:
        for r in rows:
            key = (r["dst_device"], r["dst_interface"])
            t = self.by.setdefault(key, [0, 0, 0.0, 0.0])
            back = r["sent"] - r["lost"]
            t[0] += r["sent"]
            t[1] += r["lost"]
            if back:
                t[2] += r["rtt_us"] * back
                t[3] = max(t[3], r["rtt_max_us"])
            if r["lost"]:
                self.bad_evs.setdefault(key, set()).add(r["ev"])

    def table(self) -> Any:
        from rich import box
        from rich.table import Table

        table = Table(box=box.SIMPLE_HEAD)
        for heading in ("target", "sent", "lost", "EVs with loss", "mean RTT us", "max RTT us"):
            table.add_column(heading, justify="left" if heading == "target" else "right")
        for (dev, ifname), (sent, lost, rtt, top) in self.by.items():
            back = sent - lost
            table.add_row(
                f"{dev}:{ifname}",
                f"{sent:,.0f}",
                f"{lost:,.0f}",
                str(len(self.bad_evs.get((dev, ifname), ()))),
                f"{rtt / back:,.1f}" if back else "-",
                f"{top:,.1f}" if back else "-",
            )
        return table
