"""The probe agent (``clusterloom.ops.probe``): how many probes a second one agent sustains on
this machine, what it costs, and the namespace lab demo end to end.

1. Localhost: a responder in a child process (``clusterloom ops probe --respond``), the prober
   here at each rate for ``SECONDS`` s (16 EVs to one target, 100 ms intervals, 500 ms
   timeout): probes sent and lost, mean RTT, the prober's CPU seconds per 1,000 probes, the
   largest number of probes in flight, and the process's peak RSS.
2. The lab (root): ``probe_lab.run_lab`` with its defaults (16 EVs to each of 2 targets, 250 ms
   intervals, 3 s, leaf2~spine1 down at 1.5 s): wall time, rows, loss (and how much of it on
   EVs whose traced path avoids the downed link), and the rank of the downed link among the
   suspects.

Run: ``python bench/bench_ops_probe.py [SECONDS]``; figures go to ``bench/RESULTS.md`` by hand.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time

from clusterloom.ops.probe import EV_BASE, ProbeConfig, Prober, Target

PORT = 7479
RATES = (1_000, 5_000, 20_000)


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def localhost(seconds: float) -> None:
    responder = subprocess.Popen(
        [sys.executable, "-c", "from clusterloom.cli.main import app; app()",
         "ops", "probe", "--respond", f"127.0.0.1:{PORT}"],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert responder.stdout is not None
        responder.stdout.readline()  # "answering probes at ..."
        print("rate (probes/s)  sent  lost  mean RTT (us)  CPU s / 1,000 probes  in flight")
        for rate in RATES:
            evs = 16
            per_interval = max(1, rate // 10 // evs)  # 100 ms intervals
            config = ProbeConfig(
                "bench",
                "eth0",
                (
                    Target(
                        "127.0.0.1", PORT, "responder", "eth0", tuple(range(EV_BASE, EV_BASE + evs))
                    ),
                ),
                interval_ms=100,
                timeout_ms=500,
                per_interval=per_interval,
                rate_pps=rate * 1.01,
            )
            rows: list[dict[str, object]] = []
            flight = [0]
            with Prober(config) as p:

                def seen(
                    batch: list[dict[str, object]],
                    p: Prober = p,
                    rows: list[dict[str, object]] = rows,
                    flight: list[int] = flight,
                ) -> None:
                    rows.extend(batch)
                    flight[0] = max(flight[0], len(p.ledger.outstanding))

                cpu = _cpu()
                s = p.run(round(seconds * 1000), on_rows=seen)
                cpu = _cpu() - cpu
            got = [r for r in rows if r["rtt_us"] is not None]
            rtt = sum(float(r["rtt_us"]) * (int(r["sent"]) - int(r["lost"])) for r in got)  # type: ignore[arg-type]
            back = sum(int(r["sent"]) - int(r["lost"]) for r in got)  # type: ignore[call-overload]
            print(
                f"{rate:>15,}  {s.sent:>6,}  {s.sent - s.answered:>4,}  "
                f"{rtt / max(1, back):>13,.0f}  {1000 * cpu / max(1, s.sent):>20.3f}  "
                f"{flight[0]:>9,}"
            )
    finally:
        responder.terminate()
        responder.wait(10)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of this process {peak:,.0f} MB")


def lab() -> None:
    from clusterloom.ops.probe_lab import run_lab
    from clusterloom.srv6.lab import can_make_namespaces

    why = can_make_namespaces()
    if why is not None:
        print(f"lab skipped: {why}")
        return
    start = time.perf_counter()
    run = run_lab()
    wall = time.perf_counter() - start
    sent = sum(run.probes["sent"].to_pylist())
    lost = sum(run.probes["lost"].to_pylist())
    rank = next((n for n, s in enumerate(run.suspects, 1) if s.target == run.failed), None)
    elsewhere = sum(
        r["lost"]
        for r in run.probes.to_pylist()
        if run.failed not in run.paths[r["dst_device"], r["dst_interface"], r["ev"]]
    )
    print(
        f"lab: {wall:.1f} s wall, {run.probes.num_rows} rows, {sent} probes, {lost} lost "
        f"({elsewhere} on EVs whose path avoids the downed link); "
        f"{run.failed} ranked {rank} of {len(run.suspects)} suspects"
    )


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    print(f"pid {os.getpid()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    localhost(seconds)
    lab()


if __name__ == "__main__":
    main()
