"""The operations fabric: names to links and back, and probe paths that run end to end."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterloom.errors import SpecError
from clusterloom.ops import load_fabric


@pytest.fixture(scope="module")
def fabric():  # type: ignore[no-untyped-def]
    return load_fabric("fat-tree-k16")


def test_every_interface_is_one_end_of_one_link(fabric) -> None:  # type: ignore[no-untyped-def]
    table = fabric.interface_table()
    t = fabric.topology
    assert table.num_rows == 2 * t.n_links
    keys = set(zip(table["device"].to_pylist(), table["interface"].to_pylist(), strict=True))
    assert len(keys) == table.num_rows  # names are unique per interface
    for d, f, link, end in list(
        zip(*(table[c].to_pylist() for c in ("device", "interface", "link", "end")), strict=True)
    )[::97]:
        assert fabric.interface(d, f) == (link, end)
    assert fabric.interface("node99999", "gpu0p0") is None


def test_labels_round_trip_either_way_round(fabric) -> None:  # type: ignore[no-untyped-def]
    for link in (0, 17, fabric.topology.n_links - 1):
        label = fabric.link_label(link)
        a, b = label.split("~")
        assert fabric.link_of_label(label) == link
        assert fabric.link_of_label(f"{b}~{a}") == link
    with pytest.raises(SpecError):
        fabric.link_of_label("node00000:gpu0p0~be-p0-leaf0001:swp1")


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 1023), st.integers(0, 1023), st.integers(0, 65535))
def test_a_probe_path_runs_from_its_source_nic_to_its_destination_nic(
    fabric, src: int, dst: int, ev: int
) -> None:  # type: ignore[no-untyped-def]
    if src // 8 == dst // 8:
        return  # the same server: no fabric path
    t = fabric.topology
    row = fabric.paths(np.array([src]), np.array([dst]), np.array([0]), np.array([ev]))[0]
    hops = row[row >= 0]
    first, last = hops[0], hops[-1]
    assert first % 2 == 0 and t.link_src[first // 2] == src  # up from the source's port
    assert last % 2 == 1 and t.link_src[last // 2] == dst  # down to the destination's port
    # consecutive hops meet at a switch
    ends = [
        (int(t.link_src[h // 2]), int(t.link_dst[h // 2]))[:: 1 if h % 2 == 0 else -1] for h in hops
    ]
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ends))
    assert fabric.host_of(*fabric.endpoint(src, 0)) == (src, 0)


def test_a_run_directory_gives_the_same_fabric(tmp_path, fabric) -> None:  # type: ignore[no-untyped-def]
    import json

    spec = fabric.spec.model_dump(mode="json", exclude_none=True)
    (tmp_path / "design.json").write_text(json.dumps({"spec": spec}))
    again = load_fabric(tmp_path)
    assert (again.link_labels == fabric.link_labels).all()
    with pytest.raises(SpecError, match="not a run directory"):
        load_fabric(tmp_path / "nothing-here")
