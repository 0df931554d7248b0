"""The append-only dataset: locked, parts by key with a manifest, reopened where it stopped."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pytest

from clusterloom.errors import OutputError
from clusterloom.sweep.dataset import open_dataset, read_parts


def _table(key: str, v: float) -> pa.Table:
    return pa.table({"key": [key], "v": [v]})


def test_parts_are_listed_in_the_manifest_and_found_again_on_reopening(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    with open_dataset(out, {"runs": []}) as ds:
        assert ds.done == frozenset()
        path = ds.add("k2", {"variant": "base", "transport": "t"}, _table("k2", 2.0))
        ds.add("k1", {"variant": "base", "transport": "u"}, _table("k1", 1.0))
    assert path == out / "parts" / "variant=base" / "transport=t" / "k2.parquet"
    manifest = json.loads((out / "manifest.json").read_text())
    assert [p["key"] for p in manifest["parts"]] == ["k2", "k1"]  # sorted by path: t < u
    entry = manifest["parts"][0]
    assert entry["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest() and entry["rows"] == 1
    (out / "manifest.json").unlink()  # a kill between a part and its manifest
    with open_dataset(out, {"runs": []}) as ds:
        assert ds.done == {"k1", "k2"}  # the parts on disk say what is done
    assert json.loads((out / "manifest.json").read_text()) == manifest
    assert read_parts(out).column("key").to_pylist() == ["k1", "k2"]


def test_a_part_cut_short_by_a_kill_leaves_no_file_behind_at_the_next_open(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    with open_dataset(out, {"runs": []}) as ds:
        ds.add("k1", {"variant": "base", "transport": "t"}, _table("k1", 1.0))
    part = out / "parts" / "variant=base" / "transport=t"
    stale = part / ".k2.parquet.x8c1q0zz.tmp"  # what atomic_write leaves when killed mid-write
    stale.write_bytes(b"PAR1 half")
    with open_dataset(out, {"runs": []}) as ds:
        assert ds.done == {"k1"}
    assert sorted(p.name for p in part.iterdir()) == ["k1.parquet"]


def test_a_second_writer_is_refused_while_the_first_holds_the_lock(tmp_path: Path) -> None:
    with (
        open_dataset(tmp_path / "ds", {}),
        pytest.raises(OutputError, match="another"),
        open_dataset(tmp_path / "ds", {}),
    ):
        pass
    with open_dataset(tmp_path / "ds", {}):  # released when the first ended
        pass
