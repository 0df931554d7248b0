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


def _links_from_cut_sheet(
    path: Path, fabric: str, breakout: dict[str, int], hosts_per_node: int
) -> InstalledLinks:
    """A fabric's links from ``cabling/cut_sheet.csv`` (a baseline too large for node-link
    files): servers and their ports turned back into hosts (:func:`link_end`)."""
    rows: list[tuple[int, ...]] = []
    problems: list[Problem] = []
    seen: set[tuple[str, str]] = set()
    with path.open(newline="") as fh:
        for row in csv.DictReader(fh):
            if row["fabric"] != fabric:
                continue
            ends: list[tuple[int, int, int, int]] = []
            for side in ("a", "b"):
                device, port = row[f"{side}_device"], row[f"{side}_port"]
                where = f"cabling/cut_sheet.csv:{row['label']}"
                if (device, port) in seen:
                    problems.append(Problem(f"{where}:{device}:{port}", "port referenced twice"))
                seen.add((device, port))
                try:
                    ends.append(link_end(device, port, breakout, hosts_per_node))
                except (ValueError, KeyError) as exc:
                    problems.append(Problem(f"{where}:{device}:{port}", f"bad end: {exc}"))
            if len(ends) == 2:
                lo, hi = sorted(ends, key=lambda e: (e[0], e[1], e[2]))
                rows.append((int(row["tier"]), *lo, *hi))
    if problems:
        raise SpecError(problems)
    return _as_links(fabric, rows)


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
