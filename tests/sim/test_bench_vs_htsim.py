"""bench/bench_vs_htsim.py without a built htsim: it says how to build one and exits 0."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).parents[2] / "bench" / "bench_vs_htsim.py"


def test_without_htsim_it_says_how_to_build_it(tmp_path: Path) -> None:
    for args in ([], ["--htsim", str(tmp_path)]):
        done = subprocess.run(
            [sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert "build.sh" in done.stdout and "--htsim" in done.stdout


def test_receiver_driven_first_window_is_htsims_on_the_k16_tree() -> None:
    """The matched comparison gives ``receiver-driven`` htsim's ``-cwnd`` first window: on
    the k=16 fat tree at MTU 4,000, ``RD_IW_BDP`` BDPs of a cross-pod pair's base RTT are
    exactly ``HTSIM_CWND`` packets."""
    import importlib.util

    from clusterloom import parse_spec
    from clusterloom.examples import example_text
    from clusterloom.fabric import generate, plan_fabric
    from clusterloom.sim.packet.base import ConnSpec
    from clusterloom.sim.packet.engine import PacketConfig, PacketSim
    from clusterloom.sim.packet.run import config_for
    from clusterloom.sim.packet.transports import ReceiverDriven

    spec = importlib.util.spec_from_file_location("bench_vs_htsim", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    topology = generate(plan_fabric(parse_spec(example_text("fat-tree-k16"))))
    sim = PacketSim(topology, config_for("receiver-driven", PacketConfig(mtu=4000)))
    options = {"evs": float(bench.EVS), "iw_bdp": bench.RD_IW_BDP}
    conn = ReceiverDriven(sim, 0, 0, 1023, 2_000_000, 0, ConnSpec(options=options))
    assert conn.spec_pkts == bench.HTSIM_CWND == 50
