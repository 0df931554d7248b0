"""The probe agent (``ops.probe``, ``ops probe``) and its proof on the kernel
(``ops.probe_lab``): the packet, the loss and RTT accounting on a fake clock, the agent on
localhost sockets, the three output formats in PROBE_SCHEMA; then, in network namespaces (root;
skipped without it, except under ``CI=true``, where they must run), the lab::

        spine1        spine2          leaf2~spine1 is set down mid-run (at leaf2):
        /  |  \\      /  |  \\         host1's EVs to host2 through spine1 are lost,
    leaf1 leaf2 leaf3 (each to both)  those to host3 through spine1 are not
      |     |     |
    host1 host2 host3

RTT of real veth paths, loss of exactly the EVs whose traced path crosses the downed link,
both spines used by different EVs, and the downed link ranked first.
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clusterloom.cli.main import app
from clusterloom.errors import SpecError
from clusterloom.ops.model import PROBE_SCHEMA, Suspect, SuspectKind
from clusterloom.ops.probe import (
    HEADER,
    REPLY,
    REQUEST,
    Bucket,
    Ledger,
    Packet,
    ProbeConfig,
    Prober,
    Responder,
    Target,
    _icmp_match,
    decode,
    echo,
    encode,
    open_sink,
    parse_duration_ms,
    parse_target,
    read_targets,
    rows_table,
    tomography_input,
)
from clusterloom.srv6.lab import NETNS_DIR, PREFIX, can_make_namespaces

runner = CliRunner()
WHY = can_make_namespaces()
CI = os.environ.get("CI") == "true"
needs_root = pytest.mark.skipif(WHY is not None and not CI, reason=WHY or "")
MS = 1_000_000  # ns


# -- the packet ----------------------------------------------------------------------------


@given(
    kind=st.sampled_from([REQUEST, REPLY]),
    ev=st.integers(0, 65535),
    session=st.integers(0, 2**32 - 1),
    seq=st.integers(0, 2**64 - 1),
    sent=st.integers(0, 2**64 - 1),
    size=st.integers(HEADER.size, 1400),
)
def test_a_probe_decodes_to_what_was_encoded(
    kind: int, ev: int, session: int, seq: int, sent: int, size: int
) -> None:
    p = Packet(kind, ev, session, seq, sent)
    data = encode(p, size)
    assert len(data) == size
    assert decode(data) == p


def test_the_responder_echoes_requests_only_and_changes_nothing_but_the_kind() -> None:
    req = encode(Packet(REQUEST, 49152, 7, 3, 123), 64)
    rep = echo(req)
    assert rep is not None and len(rep) == len(req)
    assert decode(rep) == Packet(REPLY, 49152, 7, 3, 123)
    assert [i for i in range(len(req)) if req[i] != rep[i]] == [5]
    assert echo(rep) is None  # two responders cannot ping-pong


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"CLPR",
        encode(Packet(REQUEST, 1, 2, 3, 4))[:-1],  # one byte short
        b"XXXX" + encode(Packet(REQUEST, 1, 2, 3, 4))[4:],  # wrong magic
        encode(Packet(REQUEST, 1, 2, 3, 4))[:4] + b"\x09" + encode(Packet(0, 1, 2, 3, 4))[5:],
        encode(Packet(7, 1, 2, 3, 4)),  # no such kind
    ],
)
def test_anything_else_is_not_a_probe(data: bytes) -> None:
    assert decode(data) is None
    assert echo(data) is None


# -- configuration -------------------------------------------------------------------------


def test_targets_are_parsed_with_their_names_and_ports() -> None:
    evs = (49152, 49153)
    t6 = parse_target("[fd00::2]:7000=node00002:gpu0p0", evs)
    assert (t6.address, t6.port, t6.device, t6.interface, t6.evs) == (
        "fd00::2", 7000, "node00002", "gpu0p0", evs
    )  # fmt: skip
    assert t6.family == socket.AF_INET6
    t4 = parse_target("10.0.0.2:7001", evs)
    assert (t4.address, t4.port, t4.device, t4.interface) == ("10.0.0.2", 7001, "10.0.0.2", "-")
    assert parse_target("fd00:0:0::2", evs).address == "fd00::2"  # normalised
    for bad, why in [
        ("host.example", "not an IPv4 or IPv6 address"),
        ("[fd00::2:7000", "[ADDR]:PORT"),
        ("10.0.0.2:99999", "1..65535"),
        ("10.0.0.2=node1", "=DEVICE:INTERFACE"),
    ]:
        with pytest.raises(SpecError, match=re.escape(why)):
            parse_target(bad, evs)


def test_a_targets_file_names_every_bad_line_and_reads_yaml(tmp_path: Path) -> None:
    lines = tmp_path / "targets.txt"
    lines.write_text("# the mesh\n[fd00::2]=h2:eth0\nnot-an-address\n10.0.0.3:70000\n")
    with pytest.raises(SpecError) as caught:
        read_targets(lines, (1,))
    assert [p.where for p in caught.value.problems] == [f"{lines}:3", f"{lines}:4"]
    lines.write_text("[fd00::2]=h2:eth0  # spine side\n10.0.0.3\n")
    assert [t.device for t in read_targets(lines, (1,))] == ["h2", "10.0.0.3"]
    doc = tmp_path / "targets.yaml"
    doc.write_text("- {address: 'fd00::2', port: 7000, device: h2, interface: eth0, evs: 3}\n")
    (t,) = read_targets(doc, (1,))
    assert (t.port, t.evs) == (7000, (49152, 49153, 49154))
    doc.write_text("- {port: 7000}\n")
    with pytest.raises(SpecError, match=r"targets.yaml\[0\]"):
        read_targets(doc, (1,))


def test_durations() -> None:
    assert [parse_duration_ms(t, "x") for t in ("500ms", "1s", "1.5s", "2m", "1h", "3")] == [
        500, 1000, 1500, 120_000, 3_600_000, 3000
    ]  # fmt: skip
    for bad in ("soon", "-1s", "0", "2y"):
        with pytest.raises(SpecError, match="x"):
            parse_duration_ms(bad, "x")


def _config(targets: Sequence[Target], **kw: object) -> ProbeConfig:
    return ProbeConfig("host1", "eth0", tuple(targets), **kw)  # type: ignore[arg-type]


def test_a_schedule_above_the_rate_limit_is_refused_naming_the_fix() -> None:
    t = Target("::1", 7471, "h2", "eth0", tuple(range(49152, 49168)))
    with pytest.raises(SpecError, match="--rate: the schedule sends 1,600 probes/s"):
        _config([t], interval_ms=10, rate_pps=1000).check()
    assert _config([t], interval_ms=16, rate_pps=1000).check()  # exactly at the limit
    broken = Target("::1", 7471, "h2", "eth0", (5, 5, 70000))
    with pytest.raises(SpecError) as caught:
        _config([broken], timeout_ms=0, size=8).check()
    wheres = sorted(p.where for p in caught.value.problems)
    assert wheres == ["--size", "--timeout", "targets[0].evs", "targets[0].evs"]


@settings(max_examples=50, deadline=None)
@given(
    rate=st.floats(1, 10_000),
    gaps=st.lists(st.integers(0, 5 * MS), min_size=1, max_size=300),
)
def test_the_bucket_never_allows_more_than_its_rate_and_burst(rate: float, gaps: list[int]) -> None:
    burst = max(1.0, rate / 10)
    b = Bucket(rate, burst, 1.0, 0)
    now = taken = 0
    for g in gaps:
        now += g
        taken += b.take(now)
    assert taken <= 1 + rate * now / 1e9 + 1e-9


# -- accounting on a fake clock ------------------------------------------------------------

T2 = Target("fd00::2", 7471, "host2", "eth0", (49152, 49153))


def _ledger() -> Ledger:
    return Ledger(_config([T2], interval_ms=1000, timeout_ms=500), start_ns=0, start_ms=10_000)


def test_an_interval_closes_one_timeout_after_its_end_with_its_loss_and_rtt() -> None:
    led = _ledger()
    led.sent(0, 49152, 1, 0)
    led.sent(0, 49153, 2, 100 * MS)
    led.sent(0, 49152, 3, 600 * MS)
    assert led.answered(0, 49152, 1, 250_000) == 250_000  # 250 us
    assert led.answered(0, 49152, 3, 600 * MS + 750_000) == 750_000
    assert led.answered(0, 49152, 3, 600 * MS + 800_000) is None  # a duplicate
    assert led.unknown == 1
    assert led.due(1500 * MS - 1) == []  # one ns before interval 0's end + timeout
    rows = led.due(1500 * MS)
    assert rows == [
        {"ts_ms": 11_000, "src_device": "host1", "src_interface": "eth0", "dst_device": "host2",
         "dst_interface": "eth0", "ev": 49152, "sent": 2, "lost": 0, "rtt_us": 500.0,
         "rtt_max_us": 750.0},
        {"ts_ms": 11_000, "src_device": "host1", "src_interface": "eth0", "dst_device": "host2",
         "dst_interface": "eth0", "ev": 49153, "sent": 1, "lost": 1, "rtt_us": None,
         "rtt_max_us": None},
    ]  # fmt: skip
    assert led.outstanding == {}  # the lost probe is forgotten: memory stays bounded
    assert led.due(1600 * MS) == []


def test_a_reply_after_the_timeout_is_late_and_the_probe_lost() -> None:
    led = _ledger()
    led.sent(0, 49152, 1, 0)
    assert led.answered(0, 49152, 1, 500 * MS + 1) is None
    assert led.late == 1
    (row,) = led.finish()
    assert (row["sent"], row["lost"], row["rtt_us"]) == (1, 1, None)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5000), st.sampled_from([49152, 49153]), st.integers(-1, 900)),
        min_size=1,
        max_size=80,
    )
)
def test_every_probe_is_in_exactly_one_row_sent_once_and_lost_or_timed(
    probes: list[tuple[int, int, int]],
) -> None:
    """Probes sent at ms ``t`` with an RTT of ``r`` ms (-1: never answered): the rows count
    each once, a probe back within the 500 ms timeout as answered with its RTT, any other as
    lost, whatever order intervals close in."""
    led = _ledger()
    events: list[tuple[int, int, int, int]] = []  # (time ns, kind 0 send 1 reply, seq, ev)
    for seq, (t, ev, r) in enumerate(sorted(probes), start=1):
        events.append((t * MS, 0, seq, ev))
        if r >= 0:
            events.append(((t + r) * MS, 1, seq, ev))
    rows = []
    for now, kind, seq, ev in sorted(events):
        rows += led.due(now)
        # memory stays bounded: only the probes and cells of open intervals are kept
        assert all(k >= led.closed_upto for k, _ in led.outstanding.values())
        assert all(k >= led.closed_upto for k, _, _ in led.cells)
        if kind == 0:
            led.sent(0, ev, seq, now)
        else:
            led.answered(0, ev, seq, now)
    rows += led.finish()
    answered = [r for _, _, r in probes if 0 <= r <= 500]
    assert sum(r["sent"] for r in rows) == len(probes)
    assert sum(r["lost"] for r in rows) == len(probes) - len(answered)
    rtt_total = sum(r["rtt_us"] * (r["sent"] - r["lost"]) for r in rows if r["rtt_us"] is not None)
    assert rtt_total == pytest.approx(sum(answered) * 1000)
    keys = [(r["ts_ms"], r["ev"]) for r in rows]
    assert len(keys) == len(set(keys)) and keys == sorted(keys)
    for r in rows:
        expected_start = {t for t, _, _ in probes if 10_000 + (t // 1000 + 1) * 1000 == r["ts_ms"]}
        assert expected_start, r  # a row's interval holds the probes sent in it
    assert led.outstanding == {}


# -- the agent on localhost, a fake clock ----------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def _wait_readable(s: socket.socket) -> None:
    with selectors.DefaultSelector() as sel:
        sel.register(s, selectors.EVENT_READ)
        assert sel.select(5.0), "the request did not arrive"


@pytest.fixture
def localhost() -> Iterator[tuple[Responder, socket.socket]]:
    """A responder on ::1 and a silent UDP socket on 127.0.0.1 (a target that never answers)."""
    with Responder("::1", 0) as r:
        silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        silent.bind(("127.0.0.1", 0))
        try:
            yield r, silent
        finally:
            silent.close()


def _free_ports(n: int) -> tuple[int, ...]:
    """``n`` UDP ports free on both families just now (the EVs of a localhost test)."""
    held = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        s.bind(("::", 0))  # dual-stack: free for IPv4 too
        held.append(s)
    ports = tuple(s.getsockname()[1] for s in held)
    for s in held:
        s.close()
    return ports


def _fake_run(r: Responder, silent: socket.socket) -> list[dict[str, object]]:
    """Two EVs to the responder, two to the silent socket; each answered probe back after
    exactly 120 us of the fake clock."""
    clock = FakeClock()
    ports = _free_ports(2)
    config = _config(
        [
            Target("::1", r.port, "host2", "eth0", ports),
            Target("127.0.0.1", silent.getsockname()[1], "host3", "eth0", ports),
        ],
        interval_ms=1000,
        timeout_ms=500,
        session=42,
    )
    rows: list[dict[str, object]] = []
    with Prober(config, clock=clock, wall_ms=5_000) as p:
        for slot in range(4):  # the slots of interval 0: at 0, 250, 500, 750 ms
            clock.now = slot * 250 * MS
            assert p.send_due(clock.now) == 1
            if slot < 2:  # to the responder
                _wait_readable(r.sock)
                assert r.handle() == 1
                clock.now += 120_000
                assert p.receive(5.0) == 1
            rows += p.ledger.due(clock.now)
        clock.now = 1500 * MS
        rows += p.ledger.due(clock.now)
    return rows


def test_on_localhost_with_a_fake_clock_the_rows_are_exact(
    localhost: tuple[Responder, socket.socket],
) -> None:
    rows = _fake_run(*localhost)
    got = [(r["dst_device"], r["sent"], r["lost"], r["rtt_us"], r["rtt_max_us"]) for r in rows]
    assert got == [
        ("host2", 1, 0, 120.0, 120.0),
        ("host2", 1, 0, 120.0, 120.0),
        ("host3", 1, 1, None, None),
        ("host3", 1, 1, None, None),
    ]
    assert {r["ts_ms"] for r in rows} == {6_000}


def test_replies_of_another_session_or_source_change_nothing(
    localhost: tuple[Responder, socket.socket],
) -> None:
    r, _ = localhost
    clock = FakeClock()
    (ev,) = _free_ports(1)
    config = _config([Target("::1", r.port, "host2", "eth0", (ev,))], session=1)
    with Prober(config, clock=clock, wall_ms=0) as p:
        (sock,) = p.sockets.values()
        p.send_due(0)
        _wait_readable(r.sock)
        r.handle()  # the real reply: the session matches, the sequence number is 1
        _wait_readable(sock)
        assert p.receive(1.0) == 1
        stranger = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        stranger.bind(("::1", 0))
        try:
            assert p.send_due(1000 * MS) == 1  # sequence number 2, outstanding
            _wait_readable(r.sock)
            r.sock.recvfrom(2048)  # the responder never answers it; others do:
            stranger.sendto(encode(Packet(REPLY, ev, 1, 2, 0)), ("::1", ev))  # wrong source
            r.sock.sendto(encode(Packet(REPLY, ev, 2, 2, 0)), ("::1", ev))  # wrong session
            r.sock.sendto(encode(Packet(REPLY, ev + 1, 1, 2, 0)), ("::1", ev))  # wrong EV
            sent_ns = p.ledger.outstanding[0, ev, 2][1]
            r.sock.sendto(
                encode(Packet(REPLY, ev, 1, 2, sent_ns + 1)), ("::1", ev)
            )  # not its send time
            _wait_readable(sock)
            time.sleep(0.05)
            assert p.receive(1.0) == 0
        finally:
            stranger.close()
        assert p.ledger.unknown == 4
        assert list(p.ledger.outstanding) == [(0, ev, 2)]  # still waiting for its reply


def test_the_responder_answers_no_faster_than_its_rate() -> None:
    with Responder("127.0.0.1", 0, rate_pps=1) as r:  # a burst of 1, then one a second
        client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        client.bind(("127.0.0.1", 0))
        try:
            for seq in range(5):
                client.sendto(encode(Packet(REQUEST, 1, 0, seq, 0)), ("127.0.0.1", r.port))
            client.sendto(b"not a probe", ("127.0.0.1", r.port))
            _wait_readable(r.sock)
            time.sleep(0.05)
            assert r.handle() == 1
            assert (r.replied, r.limited, r.ignored) == (1, 4, 1)
        finally:
            client.close()


def test_the_three_formats_hold_the_same_rows_in_probe_schema(
    localhost: tuple[Responder, socket.socket], tmp_path: Path
) -> None:
    rows = _fake_run(*localhost)
    for name in ("p.parquet", "p.csv", "p.prom"):
        sink = open_sink(tmp_path / name)
        sink.write(rows[:1])
        sink.write(rows[1:])
        assert not (tmp_path / name).exists()  # appears only when the run ends
        sink.close()
    table = pq.read_table(tmp_path / "p.parquet")
    assert table.schema.equals(PROBE_SCHEMA)
    assert table.equals(rows_table(rows))
    csv = pcsv.read_csv(
        tmp_path / "p.csv", convert_options=pcsv.ConvertOptions(column_types=PROBE_SCHEMA)
    )
    assert csv.select(PROBE_SCHEMA.names).cast(PROBE_SCHEMA).equals(rows_table(rows))
    text = (tmp_path / "p.prom").read_text()
    assert text.endswith("# EOF\n")
    samples = [x for x in text.splitlines() if x and not x.startswith("#")]
    assert len([s for s in samples if s.startswith("clusterloom_probe_sent{")]) == 4
    assert len([s for s in samples if s.startswith("clusterloom_probe_rtt_us{")]) == 2  # lost: none
    first = next(s for s in samples if s.startswith("clusterloom_probe_rtt_us{"))
    assert first.endswith(" 120.0 6.000")
    families = [x.split()[2] for x in text.splitlines() if x.startswith("# TYPE")]
    assert families == sorted(set(families), key=families.index)  # each family once, together


def test_ops_ingest_reads_the_agents_files_back_to_the_same_rows(tmp_path: Path) -> None:
    """The agent's three formats, with a design's names, through ``ops.ingest.read_probes``:
    no problem, the same rows."""
    from clusterloom.ops import load_fabric
    from clusterloom.ops.ingest import read_probes

    fabric = load_fabric("fat-tree-k16")
    (me, mine) = fabric.endpoint(0, 0)
    targets = [Target(f"fd00::{h}", 7471, *fabric.endpoint(h, 0), (49152, 49153)) for h in (1, 2)]
    led = Ledger(ProbeConfig(me, mine, tuple(targets)), start_ns=0, start_ms=1_764_547_200_000)
    seq = 0
    for k in range(3):
        for n in range(2):
            for ev in (49152, 49153):
                seq += 1
                led.sent(n, ev, seq, k * 1000 * MS + seq * MS)
                if (seq + k) % 3:  # the others lost
                    led.answered(n, ev, seq, k * 1000 * MS + seq * MS + (40 + seq) * 1000)
    rows = led.finish()
    want = rows_table(rows)
    assert 0 < sum(want["lost"].to_pylist()) < len(rows)
    for name in ("p.parquet", "p.csv", "p.prom"):
        sink = open_sink(tmp_path / name)
        sink.write(rows)
        sink.close()
        got = read_probes(tmp_path / name, fabric)
        assert got.problems == (), (name, got.problems)
        key = ["ts_ms", "dst_device", "ev"]
        assert got.table.sort_by([(c, "ascending") for c in key]).equals(
            want.sort_by([(c, "ascending") for c in key])
        ), name


def test_an_aborted_run_leaves_no_file(tmp_path: Path) -> None:
    sink = open_sink(tmp_path / "p.parquet")
    sink.write(rows_table([]).to_pylist())
    sink.abort()
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(SpecError, match=r"\.parquet, \.csv or \.prom"):
        open_sink(tmp_path / "p.json")


# -- the agent on localhost, the real clock ------------------------------------------------


def _responder_thread(r: Responder, stop: threading.Event) -> threading.Thread:
    th = threading.Thread(target=r.serve, args=(stop,), daemon=True)
    th.start()
    return th


def test_a_real_run_accounts_for_every_probe_and_stops_when_asked() -> None:
    stop, halt = threading.Event(), threading.Event()
    with Responder("127.0.0.1", 0) as r:
        th = _responder_thread(r, stop)
        config = _config(
            [Target("127.0.0.1", r.port, "host2", "eth0", _free_ports(2))],
            interval_ms=100,
            timeout_ms=200,
            per_interval=4,
        )
        rows: list[dict[str, object]] = []
        try:
            with Prober(config) as p:
                timer = threading.Timer(0.45, halt.set)
                timer.start()
                began = time.monotonic()
                summary = p.run(10_000, stop=halt, on_rows=rows.extend)
                took = time.monotonic() - began
        finally:
            stop.set()
            th.join()
    assert took < 5  # stopped long before the 10 s duration
    assert summary.sent == sum(int(x["sent"]) for x in rows) > 0  # type: ignore[call-overload]
    assert summary.answered == summary.sent - sum(int(x["lost"]) for x in rows)  # type: ignore[call-overload]
    assert summary.rows == len(rows)
    for x in rows:
        assert x["rtt_us"] is None or 0 < x["rtt_us"] <= x["rtt_max_us"] < 200_000  # type: ignore[operator]


def test_sigterm_ends_the_command_cleanly_with_every_row_written(tmp_path: Path) -> None:
    with Responder("127.0.0.1", 0) as r:
        stop = threading.Event()
        th = _responder_thread(r, stop)
        out = tmp_path / "probes.parquet"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        code = "from clusterloom.cli.main import app; app()"
        (ev,) = _free_ports(1)
        args = ["ops", "probe", "-t", f"127.0.0.1:{r.port}=host2:eth0", "--evs", "1",
                "--ev-base", str(ev), "--interval", "100ms", "--duration", "60s",
                "--timeout", "1s", "--per-interval", "2", "--device", "host1",
                "--interface", "eth0", "-o", str(out)]  # fmt: skip
        proc = subprocess.Popen(
            [sys.executable, "-c", code, *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            assert proc.stdout is not None
            started = proc.stdout.readline()  # printed once the signal handlers are in place
            assert started.startswith("probing 1 targets over 1 EVs"), started
            time.sleep(1.0)
            proc.send_signal(signal.SIGTERM)
            text, _ = proc.communicate(timeout=20)
        finally:
            proc.kill()
            stop.set()
            th.join()
    assert proc.returncode == 0, text
    table = pq.read_table(out)
    assert table.schema.equals(PROBE_SCHEMA)
    sent = sum(table["sent"].to_pylist())
    assert sent > 0 and set(table["ev"].to_pylist()) == {ev}
    assert f"{sent:,} probes to 1 targets" in text  # every probe sent is in a row
    row = next(x for x in text.splitlines() if "host2:eth0" in x).split()
    assert row[:4] == ["host2:eth0", f"{sent:,}", "0", "0"]  # the per-target table
    assert sum(table["lost"].to_pylist()) == 0


def test_the_responder_command_answers_until_its_duration() -> None:
    result = runner.invoke(app, ["ops", "probe", "--respond", "127.0.0.1:0", "--duration", "300ms"])
    assert result.exit_code == 0, result.output
    assert "answering probes at 127.0.0.1:" in result.output
    assert "answered 0 probes, ignored 0 other datagrams" in result.output


def test_names_outside_the_design_are_refused_naming_each() -> None:
    from clusterloom.ops import load_fabric
    from clusterloom.ops.probe import check_names

    fabric = load_fabric("fat-tree-k16")
    (me, mine), (dev, ifname) = fabric.endpoint(0, 0), fabric.endpoint(1, 0)
    good = ProbeConfig(me, mine, (Target("::1", 7471, dev, ifname, (49152,)),))
    assert check_names(good, fabric) is good
    bad = ProbeConfig("node99999", mine, (Target("::1", 7471, dev, "swp1", (1,)),) * 2)
    with pytest.raises(SpecError) as caught:
        check_names(bad, fabric)
    assert [p.where for p in caught.value.problems] == [
        "--device/--interface", "targets[0]", "targets[1]"
    ]  # fmt: skip
    result = runner.invoke(
        app,
        ["ops", "probe", "-t", f"[::1]={dev}:{ifname}", "--device", me, "--interface", "eth9",
         "--design", "fat-tree-k16"],
    )  # fmt: skip
    assert result.exit_code == 2
    assert f"{me}:eth9 is not a host NIC port of the design" in result.output


def test_the_command_line_refuses_bad_input_with_exit_2() -> None:
    result = runner.invoke(app, ["ops", "probe", "--respond", "::1", "-t", "::1"])
    assert result.exit_code == 2 and "give one of the two" in result.output
    result = runner.invoke(app, ["ops", "probe", "-t", "::1"])
    assert result.exit_code == 2 and "--device/--interface" in result.output
    result = runner.invoke(
        app, ["ops", "probe", "-t", "nowhere", "--device", "h", "--interface", "e"]
    )
    assert result.exit_code == 2 and "'nowhere' is not an IPv4 or IPv6 address" in result.output


# -- path discovery's parsing, without root --------------------------------------------------


def _time_exceeded_v6(sport: int, dport: int, payload: bytes) -> bytes:
    ip6 = struct.pack("!IHBB16s16s", 6 << 28, 8 + len(payload), socket.IPPROTO_UDP, 1,
                      bytes(16), bytes(16))  # fmt: skip
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0)
    return bytes([3, 0, 0, 0, 0, 0, 0, 0]) + ip6 + udp + payload


def _time_exceeded_v4(sport: int, dport: int, payload: bytes) -> bytes:
    outer = bytes([0x45]) + bytes(19)
    inner = bytes([0x45]) + bytes(8) + bytes([socket.IPPROTO_UDP]) + bytes(10)
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0)
    return outer + bytes([11, 0, 0, 0, 0, 0, 0, 0]) + inner + udp + payload


@pytest.mark.parametrize(
    ("family", "build", "kind"),
    [(socket.AF_INET6, _time_exceeded_v6, 3), (socket.AF_INET, _time_exceeded_v4, 11)],
)
def test_an_icmp_error_is_matched_to_its_probe_by_ports_session_and_sequence(
    family: socket.AddressFamily, build: object, kind: int
) -> None:
    make = build  # type: ignore[assignment]
    probe = encode(Packet(REQUEST, 49153, 9, 4, 0))
    assert _icmp_match(make(49153, 7471, probe), family, 49153, 7471, 9) == (kind, 4)  # type: ignore[operator]
    assert _icmp_match(make(49154, 7471, probe), family, 49153, 7471, 9) is None  # type: ignore[operator]
    assert _icmp_match(make(49153, 7471, probe), family, 49153, 7471, 8) is None  # type: ignore[operator]
    assert _icmp_match(make(49153, 7471, b"junk"), family, 49153, 7471, 9) is None  # type: ignore[operator]


def test_without_a_raw_socket_path_discovery_says_it_needs_root(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from clusterloom.ops import probe

    real = socket.socket

    def no_raw(family: int = -1, kind: int = -1, proto: int = -1) -> socket.socket:
        if kind == socket.SOCK_RAW:
            raise PermissionError(1, "Operation not permitted")
        return real(family, kind, proto)

    monkeypatch.setattr(probe.socket, "socket", no_raw)
    with pytest.raises(probe.ProbeError, match="path discovery needs root"):
        probe.trace(Target("::1", 7471, "h2", "eth0", (49152,)), 49152)


def test_tomography_input_keeps_the_rows_with_a_known_path() -> None:
    rows = rows_table(
        [
            {"ts_ms": 1, "src_device": "h1", "src_interface": "e", "dst_device": "h2",
             "dst_interface": "e", "ev": ev, "sent": 4, "lost": lost, "rtt_us": None,
             "rtt_max_us": None}
            for ev, lost in ((1, 4), (2, 0), (3, 1))
        ]
    )  # fmt: skip
    paths = {("h2", "e", 1): ("a", "b"), ("h2", "e", 2): ("a", "c")}
    assert tomography_input(rows, paths) == ([["a", "b"], ["a", "c"]], [4, 4], [4, 0])


# -- on the kernel: the lab ----------------------------------------------------------------


def _ours() -> list[str]:
    if not NETNS_DIR.is_dir():
        return []
    mine = f"{PREFIX}{os.getpid()}-"
    return sorted(p.name for p in NETNS_DIR.iterdir() if p.name.startswith(mine))


def _share_lost(
    paths: Sequence[Sequence[str]], sent: Sequence[int], lost: Sequence[int]
) -> tuple[Suspect, ...]:
    """A trivial localiser: each link's share of the probes crossing it that were lost."""
    seen: dict[str, list[int]] = {}
    for path, s, n in zip(paths, sent, lost, strict=True):
        for link in path:
            a = seen.setdefault(link, [0, 0])
            a[0] += s
            a[1] += n
    ranked = sorted(seen.items(), key=lambda kv: (-kv[1][1] / kv[1][0], kv[0]))
    return tuple(Suspect(SuspectKind.LINK, k, v[1] / v[0]) for k, v in ranked)


@pytest.fixture(scope="module")
def lab_run() -> object:
    if WHY is not None and not CI:
        pytest.skip(WHY)
    from clusterloom.ops.probe_lab import run_lab

    # the suspects are ops.localise.tomography's (the default localiser)
    return run_lab(evs=16, interval_ms=250, duration_ms=3000, fail_after_ms=1500,
                   timeout_ms=500)  # fmt: skip


@needs_root
def test_the_lab_deletes_every_namespace(lab_run: object) -> None:
    assert _ours() == []


@needs_root
def test_different_evs_take_both_spines_to_each_target(lab_run: object) -> None:
    from clusterloom.ops.probe_lab import LabRun

    assert isinstance(lab_run, LabRun)
    assert lab_run.spines == {
        "host2": frozenset({"spine1", "spine2"}),
        "host3": frozenset({"spine1", "spine2"}),
    }
    for (dst, _, _), links in lab_run.paths.items():
        assert len(links) == 4  # host1~leaf1, leaf1~spine, leaf~spine, leaf~host
        assert links[0] == "host1:eth0~leaf1:swp1" and links[-1].startswith(f"{dst}:eth0~")


@needs_root
def test_real_veth_paths_have_an_rtt_and_no_loss_before_the_failure(lab_run: object) -> None:
    from clusterloom.ops.probe_lab import LabRun

    assert isinstance(lab_run, LabRun) and lab_run.failed_ms is not None
    before = [r for r in lab_run.probes.to_pylist() if r["ts_ms"] <= lab_run.failed_ms]
    assert len(before) >= 2 * 16 * 4  # 2 targets x 16 EVs x at least 4 intervals
    for r in before:
        assert r["lost"] == 0, r
        # through 4 namespaces and back in user space: tens of microseconds at least, and
        # within the 500 ms timeout
        assert 5.0 < r["rtt_us"] <= r["rtt_max_us"] <= 500_000.0, r


@needs_root
def test_exactly_the_evs_through_the_downed_link_lose_their_probes(lab_run: object) -> None:
    from clusterloom.ops.probe_lab import LabRun

    assert isinstance(lab_run, LabRun) and lab_run.failed_ms is not None
    after = [r for r in lab_run.probes.to_pylist() if r["ts_ms"] >= lab_run.failed_ms + 250]
    assert after
    crossing = 0
    for r in after:
        path = lab_run.paths[r["dst_device"], r["dst_interface"], r["ev"]]
        if lab_run.failed in path:
            crossing += 1
            assert r["lost"] == r["sent"] and r["rtt_us"] is None, r
        else:
            assert r["lost"] == 0, r
    assert crossing > 0


@needs_root
def test_the_downed_link_is_ranked_first_by_tomography(lab_run: object) -> None:
    from clusterloom.ops.model import FaultKind
    from clusterloom.ops.probe_lab import LabRun

    assert isinstance(lab_run, LabRun) and lab_run.failed_ms is not None
    assert lab_run.failed == "leaf2:swp2~spine1:swp2"
    first = lab_run.suspects[0]
    assert (first.kind, first.target, first.fault) == (
        SuspectKind.LINK, lab_run.failed, FaultKind.GRAY_LINK
    )  # fmt: skip
    assert all(s.confidence < first.confidence for s in lab_run.suspects[1:])
    # the path incidence alone, by a trivial rule (each link's share of its probes lost),
    # points at the same link: the paths the traces found are what tells the links apart
    after = lab_run.probes.filter(
        pc.greater_equal(lab_run.probes["ts_ms"], lab_run.failed_ms + 250)
    )
    simple = _share_lost(*tomography_input(after, lab_run.paths))
    assert simple[0].target == lab_run.failed and simple[0].confidence == 1.0
    assert simple[1].confidence < 1.0


@needs_root
def test_the_command_traces_and_probes_from_a_namespace(tmp_path: Path) -> None:
    """``ops probe --paths`` run as a process inside host1's namespace: every EV's trace
    reaches host2 through leaf1, a spine and leaf2, and the CSV holds every EV's rows."""
    import json

    from clusterloom.ops.probe_lab import probe_lab

    with probe_lab() as pl:
        with pl.inside("host2"):
            r = Responder(pl.host_address("host2"))
        stop = threading.Event()
        th = _responder_thread(r, stop)
        try:
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
            args = ["ops", "probe", "-t", f"[{pl.host_address('host2')}]:{r.port}=host2:eth0",
                    "--evs", "4", "--interval", "200ms", "--duration", "600ms", "--device",
                    "host1", "--interface", "eth0", "--paths", str(tmp_path / "paths.json"),
                    "-o", str(tmp_path / "probes.csv")]  # fmt: skip
            done = subprocess.run(
                ["ip", "netns", "exec", pl.lab.namespace("host1"), sys.executable, "-c",
                 "from clusterloom.cli.main import app; app()", *args],
                env=env, capture_output=True, text=True, timeout=60,
            )  # fmt: skip
        finally:
            stop.set()
            th.join()
            r.close()
        names = pl.addresses
    assert done.returncode == 0, done.stdout + done.stderr
    assert "traced 4 EV paths (4 reached)" in done.stdout
    traces = json.loads((tmp_path / "paths.json").read_text())
    for t in traces:
        hops = [names[h] for h in t["hops"]]
        assert hops[0] == "leaf1" and hops[1] in ("spine1", "spine2") and hops[2:] == [
            "leaf2", "host2"
        ], t  # fmt: skip
    table = pcsv.read_csv(
        tmp_path / "probes.csv", convert_options=pcsv.ConvertOptions(column_types=PROBE_SCHEMA)
    )
    assert sorted(set(table["ev"].to_pylist())) == [49152, 49153, 49154, 49155]
    assert sum(table["lost"].to_pylist()) == 0
    assert _ours() == []


@needs_root
def test_the_lab_command_ranks_the_downed_link_first(tmp_path: Path) -> None:
    out = tmp_path / "lab.prom"
    result = runner.invoke(
        app, ["ops", "probe-lab", "--duration", "2s", "--fail-after", "1s", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "the downed link leaf2:swp2~spine1:swp2 is ranked first" in result.output
    assert "suspect 1: leaf2:swp2~spine1:swp2" in result.output
    assert out.read_text().endswith("# EOF\n")
    assert _ours() == []


@needs_root
def test_a_failing_lab_run_still_deletes_every_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    from clusterloom.ops import probe_lab

    def boom(*_: object, **__: object) -> tuple[object, ...]:
        raise RuntimeError("a trace blew up")

    monkeypatch.setattr(probe_lab, "discover", boom)
    with pytest.raises(RuntimeError, match="a trace blew up"):
        probe_lab.run_lab(duration_ms=500, fail_after_ms=None, localiser=_share_lost)
    assert _ours() == []


@needs_root
def test_sigterm_to_the_lab_command_deletes_its_namespaces() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-c", "from clusterloom.cli.main import app; app()", "ops",
         "probe-lab", "--duration", "20s", "--fail-after", "10s"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("built 8 namespaces, 9 veth pairs"), first
        theirs = f"{PREFIX}{proc.pid}-"
        assert any(p.name.startswith(theirs) for p in NETNS_DIR.iterdir())
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, first + rest
    assert not [p.name for p in NETNS_DIR.iterdir() if p.name.startswith(theirs)]


def test_without_namespaces_the_lab_says_so_and_exits_2(monkeypatch: pytest.MonkeyPatch) -> None:
    from clusterloom.ops import probe_lab

    monkeypatch.setattr(probe_lab, "can_make_namespaces", lambda: "cannot create a namespace")
    result = runner.invoke(app, ["ops", "probe-lab"])
    assert result.exit_code == 2
    assert "cannot create a namespace" in result.output


_ = pa  # pyarrow is the tables' type throughout
