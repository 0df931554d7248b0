"""Failures of a fabric, shared by both engines, and the texts that name them.

Failures are written ``KIND:TARGET@START[-END][*FRACTION]``: ``link:17@1ms`` (physical link 17
down at 1 ms for the rest of the run), ``switch:4200@2ms-5ms`` (every link of node 4200 down from
2 to 5 ms), ``port:12:3@0`` (host 12's NIC port 3), ``plane:1@1ms`` (every link of plane 1), and
``link:17@1ms*0.5`` (a gray failure: the link keeps half its capacity). Times take ``ps``, ``ns``,
``us``, ``ms`` or ``s``; sizes ``B``, ``kB``, ``MB``, ``KiB`` ... (``parse_size``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from clusterloom.errors import Problem, SpecError
from clusterloom.fabric.topology import Topology
from clusterloom.units import PS_PER_MS, PS_PER_NS, PS_PER_S, PS_PER_US

I64 = NDArray[np.int64]

#: the longest time a failure or run may name (a day), and the largest flow (1 TiB): beyond
#: them nothing is physical, and picoseconds of a day still fit an int64 100 times over
MAX_TIME_S = 86_400
MAX_TIME_PS = MAX_TIME_S * PS_PER_S
MAX_SIZE_BYTES = 2**40
_UNITS = {"ps": 1, "ns": PS_PER_NS, "us": PS_PER_US, "ms": PS_PER_MS, "s": PS_PER_S}
FAILURE_SYNTAX = re.compile(
    r"^(?P<kind>link|switch|port|plane):(?P<target>\d+(?::\d+)?|[a-z][a-z0-9-]*)"
    r"@(?P<start>[\d.]+[a-z]*)"
    r"(?:-(?P<end>[\d.]+[a-z]*))?(?:\*(?P<fraction>[\d.]+))?$"
)


def parse_time(text: str, where: str) -> int:
    """``'1.5ms'`` to picoseconds; a bare number is picoseconds."""
    m = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)([a-z]*)", text)
    if not m or m.group(2) not in {"", *_UNITS}:
        raise SpecError([Problem(where, f"'{text}' is not a time like 10us or 1.5ms")])
    value = float(m.group(1)) * _UNITS[m.group(2) or "ps"]
    if not value <= MAX_TIME_PS:
        raise SpecError([Problem(where, f"'{text}' is beyond the {MAX_TIME_S:,} s a run may last")])
    return round(value)


@dataclass(frozen=True)
class Failure:
    """Physical links down (or cut to ``fraction`` of their capacity) from ``start_ps`` to
    ``end_ps`` (None: to the end of the run)."""

    label: str
    links: I64
    start_ps: int
    end_ps: int | None
    fraction: float = 0.0


def parse_failure(text: str, t: Topology) -> Failure:
    """A failure from its text form (see the module docstring), checked against ``t``."""
    where = f"--fail {text}"
    m = FAILURE_SYNTAX.match(text)
    if not m:
        raise SpecError(
            [
                Problem(
                    where,
                    "expected KIND:TARGET@START[-END][*FRACTION], e.g. "
                    "link:17@1ms or plane:0@2ms-4ms*0.5",
                )
            ]
        )
    kind, target = m.group("kind"), m.group("target")
    start = parse_time(m.group("start"), where)
    end = parse_time(m.group("end"), where) if m.group("end") else None
    try:
        fraction = float(m.group("fraction")) if m.group("fraction") else 0.0
    except ValueError:
        raise SpecError(
            [Problem(where, f"'{m.group('fraction')}' is not a fraction like 0.5")]
        ) from None
    if end is not None and end <= start:
        raise SpecError([Problem(where, "the end of a failure comes after its start")])
    if not 0.0 <= fraction < 1.0:
        raise SpecError(
            [Problem(where, f"a gray failure keeps a fraction in [0, 1), got {fraction}")]
        )
    if not target[0].isdigit():
        links = _named(kind, target, t, where)
    elif kind == "link":
        link = int(target)
        if link >= t.n_links:
            raise SpecError([Problem(where, f"no link {link}; links are 0..{t.n_links - 1}")])
        links = np.array([link], dtype=np.int64)
    elif kind == "switch":
        node = int(target)
        if node >= t.n_nodes or t.node_role[node] == 0:
            raise SpecError(
                [
                    Problem(
                        where,
                        f"no switch {node}; switches are node ids {t.plan.hosts}..{t.n_nodes - 1}",
                    )
                ]
            )
        links = np.flatnonzero((t.link_src == node) | (t.link_dst == node)).astype(np.int64)
    elif kind == "port":
        host_s, _, port_s = target.partition(":")
        host, port = int(host_s), int(port_s or 0)
        sel = (t.link_tier == 1) & (t.link_src == host) & (t.link_src_port == port)
        links = np.flatnonzero(sel).astype(np.int64)
        if links.size == 0:
            raise SpecError([Problem(where, f"host {host} has no port {port}")])
    else:
        plane = int(target)
        if plane >= t.plan.planes:
            raise SpecError(
                [Problem(where, f"no plane {plane}; planes are 0..{t.plan.planes - 1}")]
            )
        links = np.flatnonzero(t.link_plane == plane).astype(np.int64)
    return Failure(text, links, start, end, fraction)


def parse_size(text: str, where: str = "--size") -> int:
    """``'2MB'``, ``'512KiB'``, ``'1e6'`` to bytes."""
    m = re.fullmatch(r"([\d.eE+]+)\s*([kKMGT]?i?B)?", text.strip())
    scale = {
        "B": 1,
        "kB": 10**3,
        "KB": 10**3,
        "MB": 10**6,
        "GB": 10**9,
        "TB": 10**12,
        "KiB": 2**10,
        "kiB": 2**10,
        "MiB": 2**20,
        "GiB": 2**30,
        "TiB": 2**40,
    }
    if not m or (m.group(2) or "B") not in scale:
        raise SpecError([Problem(where, f"'{text}' is not a size like 2MB or 512KiB")])
    try:
        value = float(m.group(1)) * scale[m.group(2) or "B"]
    except ValueError:
        raise SpecError([Problem(where, f"'{text}' is not a size like 2MB or 512KiB")]) from None
    if not 1 <= value <= MAX_SIZE_BYTES:
        raise SpecError(
            [Problem(where, f"'{text}': a size is from 1 B to {MAX_SIZE_BYTES:,} B (1 TiB)")]
        )
    return round(value)


#: a switch by name: ``spine0000`` (its role and index within its tier and plane), with the
#: plane when the fabric has several (``p1-spine0000``), optionally the exports' fabric
#: prefix (``be-p1-spine0000``, as in the NetBox files)
SWITCH_NAME = r"(?:[a-z]+-)??(?:p(?P<plane{n}>\d+)-)?(?P<role{n}>leaf|spine|core)(?P<index{n}>\d+)"
_ONE_SWITCH = re.compile("^" + SWITCH_NAME.format(n="") + "$")
_TWO_SWITCHES = re.compile("^" + SWITCH_NAME.format(n="a") + "-" + SWITCH_NAME.format(n="b") + "$")
_ROLES = {"leaf": 1, "spine": 2, "core": 3}


def _node(t: Topology, plane: str | None, role: str, index: str, where: str) -> int:
    """The node id of the switch named by its plane, role and index."""
    planes = int(t.plan.planes)
    if plane is None and planes > 1:
        raise SpecError(
            [Problem(where, f"the fabric has {planes} planes; name one, e.g. p0-{role}{index}")]
        )
    p_, i_ = int(plane or 0), int(index)
    hit = np.flatnonzero(
        (t.node_role == _ROLES[role]) & (t.node_plane == p_) & (t.node_index == i_)
    )
    if hit.size == 0:
        count = int(((t.node_role == _ROLES[role]) & (t.node_plane == p_)).sum())
        raise SpecError(
            [
                Problem(
                    where,
                    f"no {role}{i_:04d} in plane {p_}; "
                    + (
                        f"{role}s are {role}0000..{role}{count - 1:04d}" if count else f"no {role}s"
                    ),
                )
            ]
        )
    return int(hit[0])


def _named(kind: str, target: str, t: Topology, where: str) -> I64:
    """The links of a failure that names a switch (``switch:spine0003``) or the link(s)
    between two switches (``link:leaf0003-spine0001``: every parallel link of the pair)."""
    if kind == "switch" and (m := _ONE_SWITCH.match(target)):
        node = _node(t, m["plane"], m["role"], m["index"], where)
        return np.flatnonzero((t.link_src == node) | (t.link_dst == node)).astype(np.int64)
    if kind == "link" and (m := _TWO_SWITCHES.match(target)):
        a = _node(t, m["planea"], m["rolea"], m["indexa"], where)
        b = _node(t, m["planeb"], m["roleb"], m["indexb"], where)
        sel = ((t.link_src == a) & (t.link_dst == b)) | ((t.link_src == b) & (t.link_dst == a))
        links = np.flatnonzero(sel).astype(np.int64)
        if links.size == 0:
            raise SpecError(
                [
                    Problem(
                        where,
                        f"no link between {m['rolea']}{m['indexa']} and {m['roleb']}{m['indexb']}",
                    )
                ]
            )
        return links
    examples = {
        "switch": "switch:spine0000 or switch:p1-spine0000",
        "link": "link:leaf0003-spine0001",
    }
    raise SpecError(
        [
            Problem(
                where,
                f"'{target}' names no {kind}; "
                + (
                    f"use a number or a name like {examples[kind]}"
                    if kind in examples
                    else f"a {kind} failure takes a number"
                ),
            )
        ]
    )
