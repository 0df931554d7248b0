"""Localisation read from a telemetry store in its compact form (``localise_store``,
``store_probe_rows``: no names, narrow arrays, only the rate columns the detectors read) finds
what localisation over the store's tables finds, deterministically; the dead-EV clearing
worked out interval by interval equals its definition."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterloom.ops.fabric import OpsFabric, load_fabric
from clusterloom.ops.faults import parse_fault
from clusterloom.ops.localise import (
    ProbeRows,
    _cleared_by,
    localisation_dict,
    localise,
    localise_store,
    probe_rows,
    store_probe_rows,
)
from clusterloom.ops.synth import synthesize
from clusterloom.ops.telemetry import TelemetryStore


@pytest.fixture(scope="module")
def fabric() -> OpsFabric:
    return load_fabric("hgx-1k-roce")


def _store(fabric: OpsFabric, text: str, path: Path) -> TelemetryStore:
    syn = synthesize(fabric, [parse_fault(text, fabric)], duration_s=60, interval_s=10, seed=4)
    store = TelemetryStore(path, fabric)
    store.add_counters(syn.counters)
    store.add_probes(syn.probes)
    store.add_collectives(syn.collectives)
    return store


def _summary(loc: object) -> list[tuple[str, str, str | None, float]]:
    return [
        (str(s.kind), s.target, None if s.fault is None else str(s.fault), s.confidence)
        for s in loc.suspects  # type: ignore[attr-defined]
    ]


@pytest.mark.parametrize(
    "text",
    [
        # an EV alone in its bucket at that spine (49152 and 49153 share one there: a dead
        # bucket loses both, sim.faultforms.dead_hops, and either names it)
        "dead-ev:be-p0-spine0003#49154@20s",
        "gray-link:be-p0-leaf0000:swp53s1~be-p0-spine0000:swp3s2@10s*loss=0.02",
        "flapping-link:be-p0-leaf0000:swp53s1~be-p0-spine0000:swp3s2@20s*flaps=3",
        "gray-link:be-p0-leaf0000:swp53s1~be-p0-spine0000:swp3s2@10s*rate=0.4",
    ],
)
def test_the_store_read_compactly_finds_what_its_tables_give(
    fabric: OpsFabric, tmp_path: Path, text: str
) -> None:
    store = _store(fabric, text, tmp_path / "tel")
    whole = localise(
        fabric, rates=store.rates(), probes=store.probes(), collectives=store.collectives()
    )
    compact = localise_store(fabric, store, rates_resolution="raw")
    got, want = _summary(compact), _summary(whole)
    assert [g[:3] for g in got] == [w[:3] for w in want] and want
    assert [g[3] for g in got] == pytest.approx([w[3] for w in want], rel=1e-9)
    assert compact.congestion == whole.congestion
    truth = text.split(":", 1)[1].split("@")[0]
    first = compact.suspects[0].target
    assert first == truth or fabric.link_of_label(first) == fabric.link_of_label(truth)
    if text.startswith("dead-ev"):  # the same store, the same bytes
        again = localise_store(fabric, store, rates_resolution="raw")
        assert json.dumps(localisation_dict(again)) == json.dumps(localisation_dict(compact))


def test_a_window_reads_only_its_rows_and_rollups_localise_too(
    fabric: OpsFabric, tmp_path: Path
) -> None:
    store = _store(
        fabric,
        "gray-link:be-p0-leaf0000:swp53s1~be-p0-spine0000:swp3s2@10s*loss=0.02",
        tmp_path / "tel",
    )
    table = store.probes()
    ts = np.asarray(table["ts_ms"])
    lo, hi = int(ts.min()) + 20_000, int(ts.min()) + 40_000
    rows = store_probe_rows(fabric, store, lo, hi)
    inside = table.filter((table["ts_ms"].to_numpy() >= lo) & (table["ts_ms"].to_numpy() < hi))
    ref = probe_rows(fabric, inside)
    assert rows.num_rows == inside.num_rows
    assert int(rows.sent.sum()) == int(ref.sent.sum())
    assert int(rows.lost.sum()) == int(ref.lost.sum())
    assert (np.diff(rows.ts) >= 0).all()  # sorted by time (then key): one order of sums
    store.downsample()
    loc = localise_store(fabric, store, probes_resolution="1m")
    assert loc.suspects and "swp53s1" in loc.suspects[0].target


def _naive_cleared(p: ProbeRows, t_idx: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The definition: per row, the fewest probes clean rows of its interval sent over any
    one link of its path."""
    good = (p.sent > 0) & (p.lost <= 0.01 * p.sent)
    out = []
    for r in rows.tolist():
        best = np.inf
        for link in p.paths[p.key[r]].tolist():
            if link < 0:
                continue
            on = [
                g
                for g in np.flatnonzero(good & (t_idx == t_idx[r])).tolist()
                if link in p.paths[p.key[g]].tolist()
            ]
            best = min(best, float(p.sent[on].sum()))
        out.append(best)
    return np.asarray(out)


@settings(max_examples=40, deadline=None)
@given(
    n_keys=st.integers(1, 6),
    n_t=st.integers(1, 4),
    seed=st.integers(0, 2**31),
)
def test_clearing_interval_by_interval_equals_its_definition(
    n_keys: int, n_t: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    # distinct directed links per path (as routes are), padded with -1
    paths = np.stack([rng.permutation(8)[:4] for _ in range(n_keys)])
    paths[rng.random(paths.shape) < 0.3] = -1
    n = int(rng.integers(1, 30))
    key = rng.integers(0, n_keys, n).astype(np.int32)
    t_idx = rng.integers(0, n_t, n).astype(np.int64)
    sent = rng.integers(0, 12, n).astype(np.int32)
    lost = np.minimum(rng.integers(0, 12, n), sent).astype(np.int32)
    zeros = np.zeros(n_keys, dtype=np.int64)
    p = ProbeRows(
        zeros, zeros, zeros, zeros, paths, key, t_idx, sent, lost, np.zeros(n, np.float32)
    )
    rows = np.flatnonzero(rng.random(n) < 0.5)
    got = _cleared_by(p, t_idx, n_t, rows)
    assert got.tolist() == _naive_cleared(p, t_idx, rows).tolist()


def test_ops_localise_store_reads_it_compactly_at_the_resolution_given(
    fabric: OpsFabric, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from clusterloom.cli.main import app

    link = "be-p0-leaf0000:swp53s1~be-p0-spine0000:swp3s2"
    store = _store(fabric, f"gray-link:{link}@10s*rate=0.5", tmp_path / "tel")
    store.downsample()
    runner = CliRunner()
    for res in ("raw", "1m"):
        got = runner.invoke(
            app,
            [
                "ops",
                "localise",
                "hgx-1k-roce",
                "--store",
                str(store.path),
                "--json",
                "--resolution",
                res,
            ],
        )
        assert got.exit_code == 1, got.output
        first = json.loads(got.output)["suspects"][0]
        assert fabric.link_of_label(first["target"]) == fabric.link_of_label(link)
        assert "operational speed" in first["evidence"][0]
    bad = runner.invoke(
        app, ["ops", "localise", "hgx-1k-roce", "--store", str(store.path), "--resolution", "5m"]
    )
    assert bad.exit_code == 2 and "--resolution" in bad.output
