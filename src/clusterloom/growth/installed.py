"""The installed baseline: what a previous run's output directory says exists.

``read_installed(DIR)`` reads what names every device, port, link and rack position of a
design written by ``clusterloom design -o DIR``:

- ``design.json``: the spec the baseline was built from (fabric families, planes, site);
- ``{fabric}.nodelink.json``: every link of each fabric with its two ends, devices and
  interfaces by name (``export/naming.py``), turned back into identities (role, plane, index
  within its tier and plane, port), the ones stable generation keeps (``fabric/stable.py``);
  for a fabric too large for node-link files, ``cabling/cut_sheet.csv`` (every realized link);
- ``placement/racks.csv`` (when the baseline was placed): the floor position of every rack.

A NetBox the design was pushed to gives the same :class:`Installed` (``growth/netbox.py``).

:func:`check_installed` refuses a baseline that does not match the spec that grows it, with a
``SpecError`` naming the object: another fabric family, planes removed, a fabric gone, a
device, port or rack referenced twice.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from clusterloom.errors import Problem, SpecError
from clusterloom.export.naming import (
    parse_host_port,
    parse_server_name,
    parse_switch_name,
    parse_switch_port,
)
from clusterloom.fabric.stable import InstalledLinks
from clusterloom.fabric.topology import Role
from clusterloom.spec import ClusterSpec

__all__ = ["Installed", "check_installed", "link_end", "read_installed"]

_ROLE = {"host": Role.HOST, "leaf": Role.LEAF, "spine": Role.SPINE, "core": Role.CORE}


@dataclass(frozen=True, eq=False)
class Installed:
    """A design as installed: its spec, every link by identity, every rack's position."""

    #: where it was read: the run's directory, or ``NetBox URL site NAME``
    source: str
    spec: ClusterSpec
    #: fabric name -> family and planes, as the baseline's design.json states them
    fabrics: dict[str, tuple[str, int]]
    links: dict[str, InstalledLinks]
    #: rack label (``holds``) -> floor position (the rack's name, ``b1-h1-r01-p07``)
    racks: dict[str, str]
    #: where the rack positions were read (named in a finding about them)
    racks_from: str = ""
    #: objects read but not taken (NetBox: not created by clusterloom), by kind
    ignored: dict[str, int] = field(default_factory=dict)


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        raise SpecError([Problem(str(path), f"cannot read the installed baseline: {exc}")]) from exc
    except ValueError as exc:
        raise SpecError([Problem(str(path), f"not JSON: {exc}")]) from exc


def _breakout(spec: ClusterSpec, fabric: str) -> dict[str, int]:
    from clusterloom.fabric.sizing import plan_fabric

    plan = plan_fabric(spec, fabric)
    catalog = spec.resolved_catalog()
    return {
        t.role: catalog.switches[t.model].ports_per_cage(plan.speed_gbps) for t in plan.switch_tiers
    }


def _links(path: Path, fabric: str, breakout: dict[str, int]) -> InstalledLinks:
    """A fabric's links from its node-link JSON, by identity; SpecError naming a bad object."""
    data = _json(path)
    ident: dict[int, tuple[int, int, int]] = {}
    problems: list[Problem] = []
    names: dict[str, int] = {}
    for node in data.get("nodes", []):
        nid, kind = int(node["id"]), str(node.get("role", ""))
        if kind == "host":
            ident[nid] = (Role.HOST, -1, nid)
            continue
        name = str(node.get("name", ""))
        if name in names:
            problems.append(Problem(f"{path.name}:{name}", "device referenced twice"))
        names[name] = nid
        try:
            _, plane, r, index = parse_switch_name(name)
        except ValueError as exc:
            problems.append(Problem(f"{path.name}:{name}", str(exc)))
            continue
        ident[nid] = (_ROLE[r], plane, index)
    rows: list[tuple[int, ...]] = []
    seen: set[tuple[int, int]] = set()
    for link in data.get("links", []):
        ends: list[tuple[int, int, int, int]] = []
        for side, port_key in (("source", "src_port"), ("target", "dst_port")):
            nid, pname = int(link[side]), str(link[port_key])
            if nid not in ident:
                problems.append(Problem(f"{path.name}:link {link.get('key')}", f"no node {nid}"))
                break
            role, plane, index = ident[nid]
            port: int
            try:
                if role == Role.HOST:
                    port = parse_host_port(pname)[1]
                else:
                    port = parse_switch_port(
                        pname, breakout[{1: "leaf", 2: "spine", 3: "core"}[role]]
                    )
            except (ValueError, KeyError) as exc:
                problems.append(Problem(f"{path.name}:{pname}", f"bad port: {exc}"))
                break
            if (nid, port) in seen:
                problems.append(
                    Problem(f"{path.name}:node {nid} port {pname}", "port referenced twice")
                )
            seen.add((nid, port))
            ends.append((role, plane, index, port))
        if len(ends) == 2:
            rows.append((int(link.get("tier", 0)), *ends[0], *ends[1]))
    if problems:
        raise SpecError(problems)
    return _as_links(fabric, rows)


def _as_links(fabric: str, rows: list[tuple[int, ...]]) -> InstalledLinks:
    a = np.array(rows, dtype=np.int64).reshape(-1, 9)
    return InstalledLinks(
        fabric,
        a[:, 0].astype(np.int8),
        a[:, 1].astype(np.int8),
        a[:, 2].astype(np.int16),
        a[:, 3],
        a[:, 4],
        a[:, 5].astype(np.int8),
        a[:, 6].astype(np.int16),
        a[:, 7],
        a[:, 8],
    )


def link_end(
    device: str, port: str, breakout: dict[str, int], hosts_per_node: int
) -> tuple[int, int, int, int]:
    """The identity (role, plane, index, port) of a link end by its device and interface
    names: ``gpu{g}p{k}`` of a server is host ``node * hosts_per_node + g`` (a backend),
    ``fe{k}`` the node itself (a frontend). ``ValueError``/``KeyError`` on a name that is not
    clusterloom's."""
    if device.startswith("node"):
        node = parse_server_name(device)
        gpu, k = parse_host_port(port)
        return (Role.HOST, -1, node if gpu is None else node * hosts_per_node + gpu, k)
    _, plane, r, index = parse_switch_name(device)
    return (_ROLE[r], plane, index, parse_switch_port(port, breakout[r]))


_CUT_COLUMNS = ("label", "fabric", "tier", "a_device", "a_port", "b_device", "b_port")
_HOST_PORT = 1 << 20  #: a host port's value: (gpu + 1) * _HOST_PORT + port (gpu + 1 = 0: none)


def _read_cut_sheet(path: Path, fabric: str) -> Any:
    """The cut sheet's columns that name a link's ends, rows of ``fabric`` only (pyarrow's
    CSV reader: the 2 million rows of a 131k-GPU sheet in seconds, not row by row)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyarrow import csv as pa_csv

    types = {c: pa.string() for c in _CUT_COLUMNS} | {"tier": pa.int64()}
    options = pa_csv.ConvertOptions(include_columns=list(_CUT_COLUMNS), column_types=types)
    try:
        table = pa_csv.read_csv(path, convert_options=options)
    except (OSError, pa.ArrowInvalid, KeyError) as exc:
        raise SpecError([Problem(str(path), f"cannot read the cut sheet: {exc}")]) from exc
    return table.filter(pc.equal(table["fabric"], fabric))


def _parse_devices(names: list[str]) -> tuple[NDArray[np.int64], dict[int, str]]:
    """(role, plane, node or switch index) of each distinct device name, parsed once; role -1
    where it is not a name of ours (with the reason)."""
    dev = np.full((len(names), 3), -1, dtype=np.int64)
    bad: dict[int, str] = {}
    for i, device in enumerate(names):
        try:
            if device.startswith("node"):
                dev[i] = (Role.HOST, -1, parse_server_name(device))
            else:
                _, plane, r, index = parse_switch_name(device)
                dev[i] = (_ROLE[r], plane, index)
        except (ValueError, KeyError) as exc:
            bad[i] = str(exc)
    return dev, bad


def _parse_ports(names: list[str], breakout: dict[str, int]) -> NDArray[np.int64]:
    """Each distinct port name's value on a device of each role (-1: not a port there): a
    switch's logical port; a host's ``(gpu + 1) * _HOST_PORT + port``."""
    out = np.full((len(_ROLE), len(names)), -1, dtype=np.int64)
    for j, name in enumerate(names):
        for r, code in _ROLE.items():
            try:
                if code == Role.HOST:
                    gpu, k = parse_host_port(name)
                    out[code, j] = (0 if gpu is None else gpu + 1) * _HOST_PORT + k
                else:
                    out[code, j] = parse_switch_port(name, breakout[r])
            except (ValueError, KeyError):
                continue
    return out


def _links_from_cut_sheet(
    path: Path, fabric: str, breakout: dict[str, int], hosts_per_node: int
) -> InstalledLinks:
    """A fabric's links from ``cabling/cut_sheet.csv`` (a baseline too large for node-link
    files): servers and their ports turned back into hosts (``gpu{g}p{k}``: host
    ``node * hosts_per_node + g`` on a backend; ``fe{k}``: the node on a frontend). Each
    distinct device and port name is parsed once; the ends are gathered with numpy (ends
    ``e < n`` are the a ends of rows ``e``, the others the b ends of rows ``e - n``)."""
    import pyarrow as pa

    table = _read_cut_sheet(path, fabric)
    n = table.num_rows
    enc = {
        c: pa.concat_arrays(
            [table[f"a_{c}"].combine_chunks(), table[f"b_{c}"].combine_chunks()]
        ).dictionary_encode()
        for c in ("device", "port")
    }
    devices, ports = enc["device"].dictionary.to_pylist(), enc["port"].dictionary.to_pylist()
    d = enc["device"].indices.to_numpy(zero_copy_only=False).astype(np.int64)
    q = enc["port"].indices.to_numpy(zero_copy_only=False).astype(np.int64)
    dev, bad = _parse_devices(devices)
    role = dev[d, 0]
    value = np.where(role >= 0, _parse_ports(ports, breakout)[np.maximum(role, 0), q], -1)

    def where(e: int) -> str:
        label = table["label"][int(e) % n].as_py()
        return f"cabling/cut_sheet.csv:{label}:{devices[d[e]]}:{ports[q[e]]}"

    key = d * len(ports) + q
    order = np.argsort(key, kind="stable")
    twice = order[1:][key[order][1:] == key[order][:-1]]
    problems = sorted(
        [(int(e), f"bad end: {bad[int(d[e])]}") for e in np.flatnonzero(role < 0)]
        + [
            (int(e), "bad end: not a port of this device")
            for e in np.flatnonzero((value < 0) & (role >= 0))
        ]
        + [(int(e), "port referenced twice") for e in twice],
        key=lambda p: (p[0] % max(n, 1), p[0] // max(n, 1)),
    )
    if problems:
        raise SpecError([Problem(where(e), why) for e, why in problems])
    host = role == Role.HOST
    gpu = value // _HOST_PORT - 1
    index = np.where(host & (gpu >= 0), dev[d, 2] * hosts_per_node + gpu, dev[d, 2])
    port = np.where(host, value % _HOST_PORT, value)
    ends = np.stack([role, dev[d, 1], index, port])
    a, b = ends[:, :n], ends[:, n:]
    # the lower end first: by (role, plane, index)
    swap = (a[0] > b[0]) | ((a[0] == b[0]) & ((a[1] > b[1]) | ((a[1] == b[1]) & (a[2] > b[2]))))
    lo, hi = np.where(swap, b, a), np.where(swap, a, b)
    tier = table["tier"].to_numpy(zero_copy_only=False)
    return InstalledLinks(
        fabric,
        tier.astype(np.int8),
        lo[0].astype(np.int8),
        lo[1].astype(np.int16),
        lo[2],
        lo[3],
        hi[0].astype(np.int8),
        hi[1].astype(np.int16),
        hi[2],
        hi[3],
    )


def _racks(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    out: dict[str, str] = {}
    where: dict[str, str] = {}
    problems: list[Problem] = []
    with path.open(newline="") as fh:
        for row in csv.DictReader(fh):
            label, rack = row["holds"], row["rack"]
            if label in out:
                problems.append(Problem(f"placement/racks.csv:{label}", "rack referenced twice"))
            if rack in where:
                problems.append(
                    Problem(
                        f"placement/racks.csv:{rack}", f"position holds {where[rack]} and {label}"
                    )
                )
            out[label], where[rack] = rack, label
    if problems:
        raise SpecError(problems)
    return out


def read_installed(directory: str | Path) -> Installed:
    """The baseline a previous ``design -o DIR`` run wrote (see the module)."""
    root = Path(directory)
    doc = _json(root / "design.json")
    if not isinstance(doc, dict) or doc.get("schema") != "clusterloom.design":
        raise SpecError([Problem(str(root / "design.json"), "not a clusterloom design.json")])
    try:
        spec = ClusterSpec.model_validate(doc["spec"])
    except Exception as exc:  # pydantic's error: translated at the boundary
        raise SpecError([Problem(f"{root}/design.json:spec", f"not a valid spec: {exc}")]) from exc
    fabrics = {str(f["name"]): (str(f["family"]), int(f["planes"])) for f in doc["fabrics"]}
    links = {}
    cut_sheet = root / "cabling" / "cut_sheet.csv"
    for name in fabrics:
        path = root / f"{name}.nodelink.json"
        if path.exists():
            links[name] = _links(path, name, _breakout(spec, name))
        elif cut_sheet.exists():
            from clusterloom.fabric.sizing import plan_fabric

            hpn = plan_fabric(spec, name).hosts_per_node
            links[name] = _links_from_cut_sheet(cut_sheet, name, _breakout(spec, name), hpn)
        else:
            raise SpecError(
                [Problem(str(path), "the installed baseline has no links of this fabric")]
            )
    racks = root / "placement" / "racks.csv"
    return Installed(str(root), spec, fabrics, links, _racks(racks), str(racks))


def check_installed(installed: Installed, spec: ClusterSpec) -> None:
    """Refuse a baseline ``spec`` cannot grow from (see the module)."""
    from clusterloom.fabric.design import fabric_names
    from clusterloom.fabric.sizing import fabric_spec

    problems: list[Problem] = []
    new = set(fabric_names(spec))
    for name, (family, planes) in installed.fabrics.items():
        where = f"installed:{name}"
        if name not in new:
            problems.append(Problem(where, "the installed fabric is not in the spec"))
            continue
        fs = fabric_spec(spec, name)
        if fs.family != family:
            problems.append(
                Problem(
                    f"fabrics.{name}.family", f"the installed fabric is {family}, not {fs.family}"
                )
            )
        from clusterloom.fabric.sizing import plan_fabric

        grown = plan_fabric(spec, name).planes
        if grown < planes:
            problems.append(
                Problem(
                    f"fabrics.{name}",
                    f"{planes - grown} installed plane(s) removed ({planes} installed, "
                    f"{grown} in the spec)",
                )
            )
    if problems:
        raise SpecError(problems)
