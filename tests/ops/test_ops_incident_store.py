"""``ops mitigate/approve/outcome --incident FILE --store``: the incident is kept in the design
store too, as the file holds it after each command (proposed, approved, measured); with
``--log`` it is not (the log's store is a throwaway)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from typer.testing import CliRunner

from clusterloom.ops.fabric import load_fabric
from clusterloom.ops.incident import incident_from_dict, read_incident
from clusterloom.store import open_store

HOSTS = 256


def test_the_incident_follows_the_commands_into_the_store(tmp_path: Path) -> None:
    from clusterloom.cli.main import app

    fabric = load_fabric("hgx-1k-roce")
    t = fabric.topology
    leaf = int(t.link_dst[np.flatnonzero((t.link_tier == 1) & (t.link_src == 0))[0]])
    uplink = int(np.flatnonzero((t.link_tier == 2) & (t.link_src == leaf))[0])
    url = f"sqlite:///{tmp_path / 'store.db'}"
    inc = tmp_path / "incident.json"
    at = ["--store", "--store-url", url, "--incident", str(inc)]
    runner = CliRunner()
    r = runner.invoke(
        app,
        [
            "ops",
            "mitigate",
            "hgx-1k-roce",
            "--hosts",
            str(HOSTS),
            "--transport",
            "mrc-spray",
            "--fault",
            f"gray-link:{fabric.link_label(uplink)}@0s*rate=0.25",
            "--at",
            "1000",
            "--no-progress",
            *at,
        ],
    )
    assert r.exit_code == 0, r.output
    written = read_incident(inc)
    assert written.chosen is not None
    pid = written.chosen.proposal

    def stored() -> tuple[str, Any]:
        store = open_store(url)
        try:
            (rec,) = store.incidents()
            return rec.status, incident_from_dict(rec.body, "stored")
        finally:
            store.close()

    assert stored() == ("proposed", written)
    r = runner.invoke(
        app, ["ops", "approve", pid, "--by", "bob", "--note", "ok", "--at", "2000", *at]
    )
    assert r.exit_code == 0, r.output
    assert stored() == ("approved", read_incident(inc))
    r = runner.invoke(app, ["ops", "outcome", pid, "--measured", "44us", "--at", "3000", *at])
    assert r.exit_code == 0, r.output
    status, body = stored()
    assert status == "measured" and body == read_incident(inc)
    listed = runner.invoke(app, ["store", "incidents", "--store", url, "--json"])
    assert listed.exit_code == 0, listed.output
    assert [(r["id"], r["status"]) for r in json.loads(listed.stdout)] == [(body.id, "measured")]
    assert read_incident(inc).chosen.measured_ps == 44_000_000  # type: ignore[union-attr]
    # a second decision is refused by the store: the incident there is left as it was
    r = runner.invoke(app, ["ops", "approve", pid, "--by", "eve", "--note", "no", *at])
    assert r.exit_code == 2
    assert stored() == (status, body)
