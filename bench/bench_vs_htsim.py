"""clusterloom and htsim side by side: the same topology and the same ``.cm`` files, back to back.

The case of issue 15: the k=16 fat tree (1,024 hosts, 100 Gb/s, 1 us links, htsim's MTU 4000),
three traffics written once with ``write_htsim`` and read by both tools:

    permutation  2 MB per host (seed 0)
    incast       32 senders x 512 KB to host 1000
    allreduce    chained ring all-reduces of 2 MB in groups of 8 (14 steps, each waiting on
                 the block it received the step before; htsim oneshot triggers)
    chainfresh   36 chains of 14 steps of 250 KB, step k of a chain between two hosts of
                 leaf 14 j + k that no other connection uses: the chain without a receiver
                 hosting a second connection (htsim's EQDS slows those down, docs/sim.md)

htsim's EQDS and NDP sinks never fire a ``recv_done_trigger`` (only their sources fire theirs,
on the last ACK) and its RoCE main reads only ``send_done_trigger``, so the chain is written
with ``send_done_trigger``: in htsim a step starts when its predecessor's SENDER has the last
ACK. Ours is run with ``notify_us`` set to that ACK's trip (two 1 us links and 64 bytes each
way inside a group of 8, one leaf), so both tools mean the same dependency.

and ECMP over seeds (``--seeds N``, default 10): the permutation of seed s through htsim_roce
``-seed s`` and roce-ecmp with seed s; hash functions differ, so the median over seeds of each
tool's p99 is compared. Pairs:

    clusterloom mrc-spray        vs  htsim_eqds  (sprayed, receiver-credited)
    clusterloom receiver-driven  vs  htsim_ndp   (sprayed, receiver pulls)
    clusterloom roce-ecmp        vs  htsim_roce  (one ECMP path per flow, no DCQCN in htsim)

htsim's RoCE has no congestion control on a lossless fabric, so ``roce-ecmp`` runs twice: by
default (DCQCN: max-min) and as htsim runs it (``dcqcn=0 ack_every=1``: the lossless model, the
rule of docs/sim.md; with ``pfc_hol=0`` beside it, max-min on that configuration), and with
``--packet`` the packet engine in its default and in htsim's configuration
(``sim.crossval.HTSIM_ROCE``), the ECMP sweep too. The packet engine runs every case, the
chains included; a packet run whose flows do not all finish stops the bench (its child exits
3 and says which and why). After the table, each packet run's peak memory against htsim's,
with and without its floor: the same child on 16 hosts' 40 KB permutation (the interpreter,
numpy, numba, the modules, the topology and the compiled loop: what no run goes under).

with the same framing (htsim's ``-mtu 4000`` is 4000 payload bytes + 64 header for NDP and
RoCE, 4000 bytes on the wire for EQDS: ``mss`` 4000 or 3936, ``hdr`` 64) and paths (256 EVs).
htsim prints a flow's end when its SENDER sees the last ACK; ours is the last byte at the
receiver, so htsim's times are taken back by the ACK's one-way trip (a 64-byte packet over the
flow's hops, 1 us and 5.12 ns each) before comparing. Every run (htsim's and ours) is its own
process under ``/usr/bin/time``: wall, CPU (user + sys) and peak RSS; ours include Python's
start-up and numba's compile.

    python bench/bench_vs_htsim.py --htsim /tmp/htsim [--packet] [--cases permutation,incast]

The flow engine runs exact (``rtol`` 0) and at the CLI's default 0.01. Without ``--htsim`` (or
with a directory that holds no build) it says how to build htsim and exits 0. htsim is the
reference and is not part of the project (BSD 2-clause): ``../shared/reference/htsim/build.sh
DIR`` builds it in about 4 minutes.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HOSTS = 1024
PAIRS = (("mrc-spray", "eqds"), ("receiver-driven", "ndp"), ("roce-ecmp", "roce"))
MSS = {"mrc-spray": 3936, "receiver-driven": 4000, "roce-ecmp": 4000}
EVS = 256
#: htsim's NDP and EQDS first window, ``-cwnd`` in packets
HTSIM_CWND = 50
#: ``receiver-driven``'s first window matched to it: ``iw_bdp`` is in BDPs of the base RTT
#: (k=16, six hops: 2 x 6 us + 6 x (325.12 + 5.12) ns = 13.98 us, at 100 Gb/s 174,768 B or
#: 43.7 packets of 4,000 B), and int(1.15 x 174,768 / 4,000) = 50 packets; the default (1
#: BDP, 43 packets) leaves the pull loop no slack for queueing (FCT 7% above htsim_ndp's)
RD_IW_BDP = 1.15
CASES = ("permutation", "incast", "allreduce", "chainfresh")
#: extra flow-engine runs (rtol 0.01) per transport: options beside the defaults.
#: ``roce-ecmp`` as htsim runs RoCE (no DCQCN, an ACK per packet): the lossless model by the
#: rule of docs/sim.md; ``pfc_hol=0`` beside it is max-min on the same configuration.
MATCHED_ROCE = "dcqcn=0+ack_every=1"
VARIANTS = {"mrc-spray": ["avoid=0"], "roce-ecmp": [MATCHED_ROCE, MATCHED_ROCE + "+pfc_hol=0"]}
#: extra packet-engine runs (``--packet``): ``roce-ecmp`` in htsim's RoCE configuration
#: (``sim.crossval.HTSIM_ROCE``: PFC with 15/12-packet thresholds, no marking, no DCQCN)
PACKET_VARIANTS = {"roce-ecmp": ["htsim"]}
FINISHED = re.compile(r"Flow \S+?_(\d+)_(\d+)\b.*? finished at ([0-9.eE+]+)")
TIME = re.compile(r"bench-time (\S+) (\S+) (\S+) (\d+)")
HOW_TO_BUILD = (
    "htsim is not built here. Build it (about 4 minutes) with\n"
    "    ../shared/reference/htsim/build.sh /tmp/htsim\n"
    "and run  python bench/bench_vs_htsim.py --htsim /tmp/htsim [--packet]"
)


def _timed(args: list[str], cwd: Path | None = None) -> tuple[str, dict[str, float]]:
    """Run ``args`` under /usr/bin/time: stdout, and wall/cpu seconds and peak MB."""
    done = subprocess.run(
        ["/usr/bin/time", "-f", "bench-time %e %U %S %M", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
    )
    m = TIME.search(done.stderr)
    if done.returncode != 0 or m is None:
        raise RuntimeError(
            f"{args[0]} failed ({done.returncode}): {done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    wall, user, sys_, kb = m.groups()
    return done.stdout, {
        "wall": float(wall),
        "cpu": float(user) + float(sys_),
        "mb": int(kb) / 1024,
    }


def _hops(topology, src: np.ndarray, dst: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Links between two hosts of the fat tree: 2 under one leaf, 4 in one pod, else 6."""
    from clusterloom.sim.paths import build_router

    r = build_router(topology)
    leaf = topology.link_dst[r.host_link[:, 0]]
    pod = topology.node_pod[leaf]
    return np.where(leaf[src] == leaf[dst], 2, np.where(pod[src] == pod[dst], 4, 6))


def run_htsim(
    bin_dir: Path, name: str, cm: Path, n: int, seed: int, end_us: int, hosts: int = HOSTS
) -> tuple[str, dict[str, float]]:
    args = [str(bin_dir / f"htsim_{name}"), "-tm", str(cm), "-nodes", str(hosts)]
    args += ["-conns", str(n), "-linkspeed", "100000", "-mtu", "4000", "-end", str(end_us)]
    args += ["-strat", "ecmp_host", "-paths", str(EVS), "-q", "35", "-seed", str(seed)]
    if name != "roce":
        args += ["-cwnd", str(HTSIM_CWND)]
    return _timed(args, cwd=bin_dir)


def htsim_times(out: str, topology) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[no-untyped-def]
    """(src, dst) order of htsim's finished flows and their last-byte times in us: the printed
    time less the last ACK's one-way trip over the flow's hops."""
    rows = [(int(a), int(b), float(t)) for a, b, t in FINISHED.findall(out)]
    src = np.array([r[0] for r in rows], dtype=np.int64)
    dst = np.array([r[1] for r in rows], dtype=np.int64)
    t = np.array([r[2] for r in rows])
    ack_us = _hops(topology, src, dst) * (1.0 + 64 * 8 / 100e9 * 1e6)
    return np.stack([src, dst]), t - ack_us


#: the one-way trip of an ACK inside a leaf: 2 links of 1 us, 64 bytes at 100 Gb/s each
ACK_IN_LEAF_US = 2 * (1.0 + 64 * 8 / 100e9 * 1e6)


def one(engine: str, name: str, cm: str, seed: int, rtol: float, out: str) -> None:
    """A child process: one transport on one engine; FCTs and finishes (us) to ``out``."""
    from clusterloom import parse_spec
    from clusterloom.examples import example_text
    from clusterloom.fabric import generate, plan_fabric
    from clusterloom.sim.htsim import read_htsim

    floor = engine == "packet-floor"  # the same process on 16 hosts' 40 KB: its floor
    if floor:
        from clusterloom.sim.traffic import permutation

        engine, traffic = "packet", permutation(16, 40_000, seed=0)
    else:
        traffic = read_htsim(cm)
    if traffic.n_hosts == SPEED_HOSTS:  # the speed case: bench_sim.py's k=32 fat tree
        sys.path.insert(0, str(Path(__file__).parent))
        from bench_sim import K32

        topology = generate(plan_fabric(parse_spec(K32)))
    else:
        topology = generate(plan_fabric(parse_spec(example_text("fat-tree-k16"))))
    name, *extra = name.split("+")  # "roce-ecmp+pfc_hol=1": options beside the bench's
    start = time.perf_counter()
    if engine == "flow":
        from clusterloom.sim.flow.run import run
        from clusterloom.sim.flow.transports import transport

        opts: dict[str, float] = {"mss": MSS[name], "hdr": 64}
        opts.update({k: float(v) for k, v in (x.split("=") for x in extra)})
        if name != "roce-ecmp":
            opts["evs"] = EVS
        if traffic.dep_idx.size:  # the chain: htsim starts a step on its predecessor's last ACK
            opts["notify_us"] = ACK_IN_LEAF_US
        result = run(topology, traffic, transport(name, **opts), seed=seed, rtol=rtol)
        fct, finish = result.fct_ps, result.finish_ps
    else:
        from dataclasses import replace

        from clusterloom.sim.packet.engine import PacketConfig
        from clusterloom.sim.packet.run import config_for, run_packets

        cfg = config_for(name, PacketConfig(mtu=MSS[name], header=64))
        if name == "receiver-driven":  # htsim's -q 35 packets per port, trimming on
            cfg = replace(cfg, buffer_bytes=35 * (MSS[name] + 64))
        options = {} if name == "roce-ecmp" else {"evs": float(EVS)}
        if name == "receiver-driven":  # htsim's -cwnd 50 packets (RD_IW_BDP)
            options["iw_bdp"] = RD_IW_BDP
        if extra == ["htsim"]:  # htsim's RoCE: PFC at 15/12 packets, no marking, no DCQCN
            from clusterloom.sim.crossval import HTSIM_ROCE

            cfg, options = config_for(name, HTSIM_ROCE[0]), dict(HTSIM_ROCE[1])
        res = run_packets(topology, traffic, name, seed=seed, config=cfg, options=options)
        fct, finish = res.fct_ps, res.finish_ps
        if res.unfinished:  # an honest run: every flow finishes, or the bench stops here
            print(f"packet {name}: {len(traffic) - res.finished} flow(s) did not finish:")
            print("\n".join(res.unfinished))
            sys.exit(3)
    sim_s = time.perf_counter() - start
    np.savez(out, fct_us=fct / 1e6, finish_us=finish / 1e6, sim_s=sim_s)


def _stats(x: np.ndarray) -> list[float]:
    return [
        float(x.mean()),
        float(np.percentile(x, 50)),
        float(np.percentile(x, 99)),
        float(x.max()),
    ]


def ours(engine: str, name: str, cm: Path, seed: int, rtol: float, tmp: Path) -> dict:  # type: ignore[type-arg]
    out = tmp / f"{engine}-{name}-{seed}-{rtol}.npz"
    args = [sys.executable, __file__, "--one", engine, name, str(cm), str(seed), str(rtol)]
    _, cost = _timed([*args, str(out)])
    data = np.load(out)
    return {
        "fct": data["fct_us"],
        "finish": data["finish_us"],
        "sim_s": float(data["sim_s"]),
        **cost,
    }


def traffic_for(case: str, seed: int):  # type: ignore[no-untyped-def]
    from clusterloom.sim.crossval import chained_ring_all_reduce
    from clusterloom.sim.traffic import incast, permutation

    if case == "permutation":
        return permutation(HOSTS, 2_000_000, seed=seed)
    if case == "incast":
        return incast(32, 512 * 1024, receiver=1000, n_hosts=HOSTS)
    if case == "chainfresh":
        return fresh_chains()
    return chained_ring_all_reduce(HOSTS, 8, 2_000_000)


def probe_chain(kind: str, steps: int = 14, block: int = 250_000):  # type: ignore[no-untyped-def]
    """A 14-step chain of 250 KB connections (each waits on the one before) for
    ``--probe-chains``: ``ring8`` (8 hosts of one leaf, as the all-reduce; 8 per step),
    ``pair`` (host 0 to 1 every step), ``samerecv`` (hosts 1..7, 9..15 each to host 0),
    ``samesend`` (host 0 to 1..7, 9..15), ``fresh`` (step k from host 8k to 8k + 1)."""
    from clusterloom.sim.traffic import Traffic

    others = [1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15][:steps]
    if kind == "ring8":
        pairs = [(h, (h + 1) % 8) for _ in range(steps) for h in range(8)]
        deps = [[(k - 1) * 8 + (h - 1) % 8] if k else [] for k in range(steps) for h in range(8)]
        return Traffic.from_arrays(*zip(*pairs, strict=True), block, deps=deps, n_hosts=HOSTS)
    pairs = {
        "pair": [(0, 1)] * steps,
        "samerecv": [(s, 0) for s in others],
        "samesend": [(0, d) for d in others],
        "fresh": [(8 * k, 8 * k + 1) for k in range(steps)],
    }[kind]
    deps = [[k - 1] if k else [] for k in range(steps)]
    return Traffic.from_arrays(*zip(*pairs, strict=True), block, deps=deps, n_hosts=HOSTS)


def probe_chains(bin_dir: Path, tmp: Path) -> None:
    """Per-step times (us) of small chains in each htsim: does a transport slow down its
    own chained steps? (docs/sim.md, "Chained collectives against htsim's EQDS")."""
    from clusterloom.sim.htsim import write_htsim

    for kind in ("ring8", "pair", "samerecv", "samesend", "fresh"):
        load = probe_chain(kind)
        per = 8 if kind == "ring8" else 1
        cm = tmp / f"probe-{kind}.cm"
        write_htsim(load, cm, done="send")
        for _, theirs in PAIRS:
            out, _ = run_htsim(bin_dir, theirs, cm, len(load), 0, 20_000)
            t = np.sort([float(x[2]) for x in FINISHED.findall(out)])
            if t.size != len(load):
                print(f"{kind} htsim_{theirs}: {t.size}/{len(load)} finished")
                continue
            ends = t.reshape(-1, per).max(axis=1)
            steps = np.diff(np.concatenate([[0.0], ends]))
            print(f"{kind:9s} htsim_{theirs:5s} " + " ".join(f"{x:.1f}" for x in steps), flush=True)


def fresh_chains(steps: int = 14, block: int = 250_000):  # type: ignore[no-untyped-def]
    """Chains whose every step is a connection between two hosts of one leaf that no other
    connection touches: chain (j, p) runs step k from host 2p to host 2p + 1 of leaf
    ``steps * j + k`` (8 hosts per leaf), each step waiting on the chain's step before."""
    from clusterloom.sim.traffic import Traffic

    src, dst, deps = [], [], []
    for j in range(HOSTS // 8 // steps):
        for q in range(4):
            for k in range(steps):
                leaf = steps * j + k
                src.append(8 * leaf + 2 * q)
                dst.append(8 * leaf + 2 * q + 1)
                deps.append([len(src) - 2] if k else [])
    return Traffic.from_arrays(src, dst, block, deps=deps, n_hosts=HOSTS)


#: the ECMP sweep's runs beside htsim_roce: (label, engine, transport with its options)
ECMP_RUNS = (
    ("flow roce-ecmp (DCQCN, default)", "flow", "roce-ecmp"),
    ("flow roce-ecmp dcqcn=0 (htsim's RoCE: lossless)", "flow", f"roce-ecmp+{MATCHED_ROCE}"),
    ("flow roce-ecmp dcqcn=0 pfc_hol=0 (max-min)", "flow", f"roce-ecmp+{MATCHED_ROCE}+pfc_hol=0"),
)
ECMP_PACKET = ("packet roce-ecmp htsim configuration", "packet", "roce-ecmp+htsim")


def ecmp_seeds(bin_dir: Path, topology, tmp: Path, seeds: int, packet: bool) -> dict:  # type: ignore[no-untyped-def, type-arg]
    """The permutation of seed s through htsim_roce ``-seed s`` and our runs with seed s:
    the median over seeds of each one's p99 against htsim_roce's (hashes differ between the
    tools; ours are the same in both engines, so their seeds are the same collisions)."""
    from clusterloom.sim.htsim import write_htsim

    runs = ECMP_RUNS + ((ECMP_PACKET,) if packet else ())
    p99: dict[str, list[float]] = {"htsim_roce": [], **{label: [] for label, _, _ in runs}}
    for seed in range(seeds):
        load = traffic_for("permutation", seed)
        cm = tmp / f"perm-{seed}.cm"
        write_htsim(load, cm)
        out, _ = run_htsim(bin_dir, "roce", cm, len(load), seed, 20_000)
        p99["htsim_roce"].append(float(np.percentile(htsim_times(out, topology)[1], 99)))
        for label, engine, name in runs:
            got = ours(engine, name, cm, seed, 0.01 if engine == "flow" else 0.0, tmp)
            p99[label].append(float(np.percentile(got["fct"], 99)))
        print(
            f"seed {seed}: p99 us " + ", ".join(f"{k} {v[-1]:.1f}" for k, v in p99.items()),
            flush=True,
        )
    med = {k: float(np.median(v)) for k, v in p99.items()}
    for label, _, _ in runs:
        print(
            f"ECMP median p99 over {seeds} seeds: {label} {med[label]:.1f} us, htsim_roce "
            f"{med['htsim_roce']:.1f} us, ratio {med[label] / med['htsim_roce']:.3f}"
        )
    return {"ecmp_p99_us": p99, "ecmp_median_p99_us": med}


#: the speed target's case: the 8,192-host (k=32) fat tree of bench_sim.py, a 2 MB permutation
SPEED_HOSTS = 8192


def speed(bin_dir: Path, tmp: Path) -> dict:  # type: ignore[type-arg]
    """Issue 15's speed target, back to back: htsim_eqds and the flow engine's ``mrc-spray``
    (rtol 0.01, the framing and 256 EVs of the k=16 case) on the 8,192-host permutation of
    2 MB (seed 0), each in its own process: wall, CPU, peak MB and their ratios, and the FCTs
    side by side. htsim takes several minutes here."""
    from clusterloom.sim.htsim import write_htsim
    from clusterloom.sim.traffic import permutation

    load = permutation(SPEED_HOSTS, 2_000_000, seed=0)
    cm = tmp / "perm-8192.cm"
    write_htsim(load, cm)
    out, cost = run_htsim(bin_dir, "eqds", cm, len(load), 0, 20_000, hosts=SPEED_HOSTS)
    theirs = np.array([float(x[2]) for x in FINISHED.findall(out)])
    got = ours("flow", "mrc-spray", cm, 0, 0.01, tmp)
    mine = got["fct"]
    print(
        f"speed, {SPEED_HOSTS:,} hosts, mrc-spray vs htsim_eqds: finished {mine.size} / "
        f"{theirs.size}; FCT mean / p50 / p99 / max us ours "
        f"{' / '.join(f'{x:.1f}' for x in _stats(mine))}, "
        f"htsim (at its last ACK) {' / '.join(f'{x:.1f}' for x in _stats(theirs))}"
    )
    print(f"  ours: simulation {got['sim_s']:.1f} s of the process's wall")
    for key in ("wall", "cpu", "mb"):
        print(
            f"  {key}: ours {got[key]:,.1f}, htsim {cost[key]:,.1f}: "
            f"htsim / ours {cost[key] / got[key]:.1f}"
        )
    return {"speed": {"ours": {k: got[k] for k in ("wall", "cpu", "mb", "sim_s")}, "htsim": cost}}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--htsim", help="a directory htsim was built into (build.sh DIR)")
    p.add_argument("--packet", action="store_true", help="also the packet engine (~100 s each)")
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--seeds", type=int, default=10, help="ECMP seeds (0: no ECMP sweep)")
    p.add_argument("--json", help="write every figure to this file")
    p.add_argument(
        "--probe-chains", action="store_true", help="only htsim's per-step times of small chains"
    )
    p.add_argument(
        "--speed", action="store_true", help="only the 8,192-host speed case (several minutes)"
    )
    p.add_argument("--one", nargs=6, help=argparse.SUPPRESS)
    opts = p.parse_args()
    if opts.one:
        engine, name, cm, seed, rtol, out = opts.one
        one(engine, name, cm, int(seed), float(rtol), out)
        return 0
    bin_dir = Path(opts.htsim or "/nonexistent") / "csg-htsim" / "sim" / "datacenter"
    if not opts.htsim or not all((bin_dir / f"htsim_{b}").exists() for _, b in PAIRS):
        print(HOW_TO_BUILD)
        return 0

    from clusterloom import parse_spec
    from clusterloom.examples import example_text
    from clusterloom.fabric import generate, plan_fabric
    from clusterloom.sim.htsim import write_htsim

    if opts.probe_chains:
        with tempfile.TemporaryDirectory() as tmp_name:
            probe_chains(bin_dir, Path(tmp_name))
        return 0
    if opts.speed:
        with tempfile.TemporaryDirectory() as tmp_name:
            found = speed(bin_dir, Path(tmp_name))
        if opts.json:
            Path(opts.json).write_text(json.dumps(found, indent=1, default=float))
        return 0
    topology = generate(plan_fabric(parse_spec(example_text("fat-tree-k16"))))
    record: dict[str, object] = {}
    rows = []
    floors: dict[str, float] = {}  # per packet run's transport: its floor's peak MB
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for case in filter(None, opts.cases.split(",")):  # --cases "": the ECMP sweep only
            load = traffic_for(case, 0)
            cm = tmp / f"{case}.cm"
            chained = case in ("allreduce", "chainfresh")
            write_htsim(load, cm, done="send" if chained else "recv")
            for ours_name, theirs in PAIRS:
                out, cost = run_htsim(bin_dir, theirs, cm, len(load), 0, 20_000)
                _, t_us = htsim_times(out, topology)
                if t_us.size < len(load):
                    print(f"htsim_{theirs} {case}: {t_us.size}/{len(load)} finished")
                ref = {"fct": t_us, **cost}
                # the chains too: 14,336 connections, made as they start (5 GB once, now
                # about 2x htsim's: docs/packet.md, "Memory on chained collectives")
                packet = opts.packet
                runs = [("flow", 0.0, ""), ("flow", 0.01, "")]
                runs += [("flow", 0.01, v) for v in VARIANTS.get(ours_name, [])]
                if packet:
                    runs += [("packet", 0.0, "")]
                    runs += [("packet", 0.0, v) for v in PACKET_VARIANTS.get(ours_name, [])]
                for engine, rtol, variant in runs:
                    full = ours_name + (f"+{variant}" if variant else "")
                    got = ours(engine, full, cm, 0, rtol, tmp)
                    mine = got["finish"][got["finish"] >= 0] if chained else got["fct"]
                    theirs_x = ref["fct"]
                    if chained:  # the collective's finish only (htsim prints no start times)
                        a, b = [float(mine.max())] * 4, [float(theirs_x.max())] * 4
                    else:
                        a, b = _stats(mine[mine >= 0]), _stats(theirs_x)
                    label = f"{engine}" + (f" rtol {rtol:g}" if engine == "flow" else "")
                    row = {
                        "case": case,
                        "ours": f"{label} {ours_name}" + (f" {variant}" if variant else ""),
                        "htsim": f"htsim_{theirs}",
                        "fct_us": a,
                        "htsim_us": b,
                        "ratio": [x / y for x, y in zip(a, b, strict=True)],
                        "cost": {k: got[k] for k in ("wall", "cpu", "mb", "sim_s")},
                        "htsim_cost": cost,
                        "finished": f"{int((got['finish'] >= 0).sum())}/{t_us.size}/{len(load)}",
                    }
                    if engine == "packet":  # the same process's floor (imports, compile)
                        if full not in floors:
                            floors[full] = ours("packet-floor", full, cm, 0, 0.0, tmp)["mb"]
                        row["floor_mb"] = floors[full]
                    rows.append(row)
                    print(_line(row), flush=True)
        if opts.seeds:
            record.update(ecmp_seeds(bin_dir, topology, tmp, opts.seeds, opts.packet))
    record["rows"] = rows
    print()
    print(
        "| case | clusterloom | htsim | mean / p50 / p99 / max us (ours) | ours / htsim | "
        "wall s / CPU s / MB (ours) | wall s / CPU s / MB (htsim) |"
    )
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(_line(row))
    _memory_lines(rows)
    if opts.json:
        Path(opts.json).write_text(json.dumps(record, indent=1, default=float))
    return 0


CHAINS = ("allreduce", "chainfresh")


def _memory_lines(rows: list[dict]) -> None:  # type: ignore[type-arg]
    """The packet engine's peak memory against htsim's, with and without its floor: the same
    child process on 16 hosts' 40 KB permutation (Python, numpy, numba, the clusterloom
    modules, the topology, the compiled loop loaded), which no run can go under."""
    packet = [r for r in rows if "floor_mb" in r]
    if not packet:
        return
    print()
    print(
        "| case | clusterloom | MB ours | floor | ours - floor | htsim | ours / htsim | "
        "(ours - floor) / htsim |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in packet:
        mb, floor, theirs = r["cost"]["mb"], r["floor_mb"], r["htsim_cost"]["mb"]
        print(
            f"| {r['case']} | {r['ours']} | {mb:.0f} | {floor:.0f} | {mb - floor:.0f} | "
            f"{theirs:.0f} | {mb / theirs:.2f} | {(mb - floor) / theirs:.2f} |"
        )


def _line(row: dict) -> str:  # type: ignore[type-arg]
    a, r, c, h = row["fct_us"], row["ratio"], row["cost"], row["htsim_cost"]
    figs = (
        " / ".join(f"{x:,.1f}" for x in a) if row["case"] not in CHAINS else f"finish {a[0]:,.1f}"
    )
    rat = " / ".join(f"{x:.3f}" for x in r) if row["case"] not in CHAINS else f"{r[0]:.3f}"
    return (
        f"| {row['case']} | {row['ours']} | {row['htsim']} | {figs} | {rat} | "
        f"{c['wall']:.1f} / {c['cpu']:.1f} / {c['mb']:.0f} | "
        f"{h['wall']:.1f} / {h['cpu']:.1f} / {h['mb']:.0f} |"
    )


if __name__ == "__main__":
    sys.exit(main())
