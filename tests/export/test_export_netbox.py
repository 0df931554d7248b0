"""NetBox CSVs: NetBox's import headers, one device row per server and switch, one interface
row per link end with no (device, name) twice, and descriptions that point at the other end."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pytest

from clusterloom import Design
from clusterloom.export.netbox import (
    DEVICE_COLUMNS,
    INTERFACE_COLUMNS,
    interface_type,
    manufacturer,
    write_devices,
    write_interfaces,
)


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        return list(reader.fieldnames or []), list(reader)


@pytest.fixture(scope="module")
def demo_csvs(demo: Design, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("netbox")
    return write_devices(demo, out / "devices.csv"), write_interfaces(demo, out / "interfaces.csv")


def test_headers_are_netbox_import_fields(demo_csvs: tuple[Path, Path]) -> None:
    devices, interfaces = demo_csvs
    assert DEVICE_COLUMNS == ("name", "role", "manufacturer", "device_type", "site", "location",
                              "rack", "position", "face", "status", "description")  # fmt: skip
    assert INTERFACE_COLUMNS == ("device", "name", "type", "speed", "enabled", "description")
    assert read_csv(devices)[0] == list(DEVICE_COLUMNS)
    assert read_csv(interfaces)[0] == list(INTERFACE_COLUMNS)


def test_one_device_per_server_and_switch(demo: Design, demo_csvs: tuple[Path, Path]) -> None:
    _, rows = read_csv(demo_csvs[0])
    names = [r["name"] for r in rows]
    assert len(set(names)) == len(names)
    servers = [r for r in rows if r["role"] == "ai-server"]
    assert len(servers) == demo.spec.compute.nodes == 128  # once, though on two fabrics
    switches = [r for r in rows if r["role"].endswith("-switch")]
    assert len(switches) == sum(fd.bom.switches for fd in demo.fabrics)
    assert len(rows) == len(servers) + len(switches)
    assert {r["site"] for r in rows} == {"demo-1k"}
    assert {r["status"] for r in rows} == {"planned"}
    by_name = {r["name"]: r for r in rows}
    leaf = by_name["be-p0-leaf0000"]
    assert (leaf["role"], leaf["manufacturer"], leaf["device_type"]) == (
        "leaf-switch", "NVIDIA", "sn5600 128x400G",
    )  # fmt: skip
    spine = by_name["fe-p1-spine0000"]
    assert (spine["role"], spine["manufacturer"], spine["device_type"]) == (
        "spine-switch", "Generic", "tomahawk4-64x400g 128x200G",
    )  # fmt: skip


def test_one_interface_per_link_end(demo: Design, demo_csvs: tuple[Path, Path]) -> None:
    _, rows = read_csv(demo_csvs[1])
    links = sum(fd.topology.n_links for fd in demo.fabrics)
    assert len(rows) == 2 * links
    keys = Counter((r["device"], r["name"]) for r in rows)
    assert max(keys.values()) == 1
    _, devices = read_csv(demo_csvs[0])
    assert {r["device"] for r in rows} <= {d["name"] for d in devices}
    assert {r["enabled"] for r in rows} == {"true"}


def test_descriptions_name_the_other_end_both_ways(demo_csvs: tuple[Path, Path]) -> None:
    _, rows = read_csv(demo_csvs[1])
    peer = {}
    for r in rows:
        to, device, name = r["description"].split(" ")
        assert to == "to"
        peer[(r["device"], r["name"])] = (device, name)
    for end, other in peer.items():
        assert peer[other] == end


def test_types_and_speeds(demo: Design, demo_csvs: tuple[Path, Path]) -> None:
    _, rows = read_csv(demo_csvs[1])
    by_key = {(r["device"], r["name"]): r for r in rows}
    gpu = by_key[("node00000", "gpu0p0")]
    assert (gpu["type"], gpu["speed"]) == ("400gbase-x-osfp", "400000000")  # Kbps
    assert gpu["description"] == "to be-p0-leaf0000 swp1s1"
    fe = by_key[("node00000", "fe1")]
    assert (fe["type"], fe["speed"]) == ("200gbase-x-qsfp56", "200000000")
    assert fe["description"].startswith("to fe-p1-leaf")


def test_rows_are_grouped_by_device_in_port_order(demo_csvs: tuple[Path, Path]) -> None:
    _, rows = read_csv(demo_csvs[1])
    assert [r["name"] for r in rows[:3]] == ["gpu0p0", "gpu1p0", "gpu2p0"]
    seen: list[str] = []
    for r in rows:
        if not seen or seen[-1] != r["device"]:
            seen.append(r["device"])
    # a server appears once per fabric (backend then frontend), a switch once
    counts = Counter(seen)
    assert all(n == 1 for d, n in counts.items() if not d.startswith("node"))
    assert all(n == 2 for d, n in counts.items() if d.startswith("node"))


def test_infiniband_interfaces(ib: Design, tmp_path: Path) -> None:
    _, rows = read_csv(write_interfaces(ib, tmp_path / "interfaces.csv"))
    assert {r["type"] for r in rows} == {"infiniband-ndr"}
    assert len(rows) == 2 * ib.fabrics[0].topology.n_links
    cores = [r for r in rows if "-core" in r["device"]]
    assert cores and all(r["name"].startswith("swp") and "s" not in r["name"][3:] for r in cores)


def test_chunking_does_not_change_the_output(demo: Design, tmp_path: Path) -> None:
    whole = write_interfaces(demo, tmp_path / "a.csv").read_bytes()
    chunked = write_interfaces(demo, tmp_path / "b.csv", chunk_rows=97).read_bytes()
    assert whole == chunked


@pytest.mark.parametrize(
    ("speed", "technology", "slug"),
    [
        (100, "ethernet", "100gbase-x-qsfp28"),
        (200, "ethernet", "200gbase-x-qsfp56"),
        (400, "ethernet", "400gbase-x-osfp"),
        (800, "ethernet", "800gbase-x-osfp"),
        (200, "infiniband", "infiniband-hdr"),
        (400, "infiniband", "infiniband-ndr"),
        (800, "infiniband", "infiniband-xdr"),
        (3, "ethernet", "other"),
    ],
)
def test_interface_type(speed: int, technology: str, slug: str) -> None:
    assert interface_type(speed, technology) == slug


@pytest.mark.parametrize(
    ("vendor", "name"),
    [
        ("generic (Broadcom Tomahawk 5)", "Generic"),
        ("NVIDIA", "NVIDIA"),
        ("Arista Networks", "Arista Networks"),
        ("test", "Test"),
    ],
)
def test_manufacturer(vendor: str, name: str) -> None:
    assert manufacturer(vendor) == name
