"""Read and write htsim connection-matrix files, so that one traffic runs in both simulators.

The format, as htsim's ``ConnectionMatrix::load`` (``sim/datacenter/connection_matrix.cpp``,
csg-htsim) parses it::

    Nodes 4
    Connections 3
    Triggers 1
    0->1 id 1 start 0 size 1000000 recv_done_trigger 1
    2->3 id 2 start 5 size 4000
    1->2 id 3 trigger 1 size 2000
    trigger id 1 oneshot

- Header lines ``Nodes N``, ``Connections C``, optional ``Triggers T`` (and ``Failures F``);
  the counts must match the lines that follow. Lines starting with ``#`` are comments (htsim
  skips them only before the first connection; this reader anywhere).
- A connection: ``SRC->DST`` then key/value tokens in any order: ``id`` (flow id, > 0),
  ``start`` (start time), ``size`` (bytes; htsim stores it in a C ``int``), ``trigger TID`` (start
  when trigger TID fires; htsim rejects ``start`` together with ``trigger`` and a connection with
  neither), ``send_done_trigger TID`` / ``recv_done_trigger TID`` (activate trigger TID when the
  sender has sent / the receiver has received everything), ``prio P`` (accepted and ignored here).
- A trigger: ``trigger id TID oneshot`` (fires on its first activation; htsim asserts it is
  activated once), ``trigger id TID barrier count N`` (fires after N activations; note ``count``
  is a keyword: ``barrier N`` alone is an error in htsim), or ``multishot`` (starts one waiting
  connection per activation, in completion order: no static dependency, so rejected here).
  Trigger and flow ids 0 are not allowed.

Units. htsim's loader keeps ``start`` as written; every ``main_*.cpp`` then converts it with
``timeFromUs((uint32_t)crt->start)``: the value is **microseconds, truncated to a whole number**.
This reader converts ``start`` to picoseconds exactly (``round(value * 1e6)``, decimals
accepted); the writer writes whole microseconds, rounding ``start_ps`` to the nearest
microsecond, so ``read_htsim(write_htsim(t)) == t`` exactly when every start is a whole number
of microseconds. Sizes are bytes.

Dependencies. A connection with ``trigger TID`` depends on every connection that activates TID
(``send_done_trigger`` or ``recv_done_trigger``; a fluid flow is finished when its last byte is
delivered, so both count as "finished"): the one connection of a oneshot trigger, the N of a
barrier. The writer uses ``recv_done_trigger`` by default (the NDP, TCP, UEC and BBR mains of htsim
honour it; ``send_done_trigger`` only some); ``done="send"`` writes ``send_done_trigger``.
Because a connection activates at most one trigger and waits for at most one, htsim can express
a dependency structure only when the distinct dependency sets are disjoint (each flow is a
dependency of one set of flows at most, and a flow with dependencies has no start time):
:func:`write_htsim` raises ``OutputError`` otherwise. The traffic of
:func:`clusterloom.sim.flow.traffic.from_step_flows` always qualifies.

Groups. The writer records ``group`` and ``group_names`` in two comment lines before ``Nodes``
(``# clusterloom group-names [...]`` and ``# clusterloom flow-groups [[group, run length], ...]``,
JSON), which htsim skips and this reader restores.

Bad input raises ``SpecError`` with one ``Problem`` per bad line (``where`` is
``"FILE line N"``), every problem of the file at once.
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from clusterloom.errors import OutputError, Problem, SpecError
from clusterloom.export.atomic import atomic_open
from clusterloom.sim.flow.traffic import Traffic
from clusterloom.units import PS_PER_US

__all__ = ["format_htsim", "parse_htsim", "read_htsim", "write_htsim"]

StrPath = str | os.PathLike[str]

#: htsim stores a connection's size in a C ``int`` and its start as ``uint32_t`` microseconds
HTSIM_MAX_SIZE = 2**31 - 1
HTSIM_MAX_START_US = 2**32 - 1

_ARROW = re.compile(r"^(\d+)->(\d+)$")
_UINT = re.compile(r"^\d+$")
_NUMBER = re.compile(r"^(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_META = "# clusterloom "
_CONN_KEYS = ("id", "start", "size", "trigger", "send_done_trigger", "recv_done_trigger", "prio")


@dataclass
class _Conn:
    line: int
    src: int = -1
    dst: int = -1
    flow_id: int = 0
    start_ps: int | None = None
    size: int | None = None
    waits: int = 0
    fires: list[int] = field(default_factory=list)


@dataclass
class _Trigger:
    line: int
    kind: str
    count: int | None


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.errors: dict[int, list[str]] = defaultdict(list)
        self.headers: dict[str, tuple[int, int]] = {}  # name -> (value, line)
        self.conns: list[_Conn] = []
        self.triggers: dict[int, _Trigger] = {}
        self.group_names: tuple[str, ...] = ()
        self.group_runs: list[tuple[int, int]] | None = None
        self.meta_line = 0

    def bad(self, line: int, message: str) -> None:
        self.errors[line].append(message)

    def uint(self, line: int, key: str, token: str | None, *, positive: bool = False) -> int:
        if token is None:
            self.bad(line, f"'{key}' needs a value")
            return -1
        if not _UINT.match(token):
            what = "a positive integer" if positive else "a non-negative integer"
            if token.startswith("-") and _UINT.match(token[1:]):
                self.bad(line, f"'{key} {token}': negative, expected {what}")
            else:
                self.bad(line, f"'{key} {token}': expected {what}")
            return -1
        value = int(token)
        if positive and value == 0:
            self.bad(line, f"'{key} 0': htsim does not allow id 0, expected a positive integer")
            return -1
        return value

    def parse(self, text: str) -> None:
        for n, raw in enumerate(text.splitlines(), start=1):
            stripped = raw.strip()
            if stripped.startswith(_META):
                self.meta(n, stripped[len(_META) :])
                continue
            if not stripped or stripped.startswith("#"):
                continue
            tokens = stripped.split()
            head = tokens[0]
            if head in ("Nodes", "Connections", "Triggers", "Failures"):
                self.header(n, tokens)
            elif "->" in head:
                self.connection(n, tokens)
            elif head == "trigger":
                self.trigger(n, tokens)
            elif head == "failure":
                self.bad(n, "'failure': link failures are not traffic; remove the line")
            else:
                self.bad(
                    n,
                    f"'{head}': expected a header (Nodes, Connections, Triggers), "
                    "a connection 'SRC->DST ...' or 'trigger id ...'",
                )

    def meta(self, n: int, body: str) -> None:
        key, _, value = body.partition(" ")
        try:
            data = json.loads(value)
            if key == "group-names":
                if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
                    raise ValueError("a list of strings")
                self.group_names = tuple(data)
            elif key == "flow-groups":
                ok = isinstance(data, list) and all(
                    isinstance(r, list) and len(r) == 2 and all(isinstance(x, int) for x in r)
                    for r in data
                )
                if not ok:
                    raise ValueError("a list of [group, count] pairs")
                self.group_runs = [(int(g), int(c)) for g, c in data]
                self.meta_line = n
            else:
                self.bad(n, f"'{key}': unknown clusterloom comment (group-names, flow-groups)")
        except ValueError as exc:
            self.bad(n, f"'{key}' comment: expected JSON, {exc}")

    def header(self, n: int, tokens: list[str]) -> None:
        name = tokens[0]
        if len(tokens) != 2:
            self.bad(n, f"'{name}' header: expected '{name} COUNT'")
            return
        value = self.uint(n, name, tokens[1])
        if value < 0:
            return
        if name in self.headers:
            self.bad(n, f"'{name}' header repeated (first on line {self.headers[name][1]})")
            return
        if name == "Failures" and value:
            self.bad(n, f"'Failures {value}': link failures are not traffic; expected 0")
        self.headers[name] = (value, n)

    def connection(self, n: int, tokens: list[str]) -> None:
        conn = _Conn(line=n)
        self.conns.append(conn)
        m = _ARROW.match(tokens[0])
        if m is None:
            self.bad(n, f"'{tokens[0]}': expected 'SRC->DST' with non-negative host ids")
        else:
            conn.src, conn.dst = int(m.group(1)), int(m.group(2))
            if conn.src == conn.dst:
                self.bad(n, f"'{tokens[0]}': a connection from a host to itself")
        seen: set[str] = set()
        i = 1
        while i < len(tokens):
            key = tokens[i]
            value = tokens[i + 1] if i + 1 < len(tokens) else None
            i += 2
            if key not in _CONN_KEYS:
                self.bad(n, f"'{key}': unknown token, expected one of {', '.join(_CONN_KEYS)}")
                i -= 1
                continue
            if key in seen:
                self.bad(n, f"'{key}' given twice")
            seen.add(key)
            if key == "start":
                if value is None or not _NUMBER.match(value):
                    self.bad(n, f"'start {value or ''}'".rstrip() + ": expected microseconds >= 0")
                else:
                    conn.start_ps = round(float(value) * PS_PER_US)
            elif key == "size":
                size = self.uint(n, "size", value)
                conn.size = size if size >= 0 else None
            elif key == "id":
                conn.flow_id = self.uint(n, "id", value, positive=True)
            elif key == "trigger":
                conn.waits = max(self.uint(n, key, value, positive=True), 0)
            elif key in ("send_done_trigger", "recv_done_trigger"):
                fired = self.uint(n, key, value, positive=True)
                if fired > 0 and fired not in conn.fires:
                    conn.fires.append(fired)
            else:  # prio: a transport priority, not traffic
                self.uint(n, key, value)
        if "size" not in seen:
            self.bad(n, "no 'size': expected 'size BYTES'")
        if "start" in seen and "trigger" in seen:
            self.bad(n, "both 'start' and 'trigger': htsim takes one start method")
        elif "start" not in seen and "trigger" not in seen:
            self.bad(n, "no start method: expected 'start MICROSECONDS' or 'trigger TID'")

    def trigger(self, n: int, tokens: list[str]) -> None:
        tid, kind, count = 0, "", None
        i = 1
        while i < len(tokens):
            key = tokens[i]
            if key in ("oneshot", "barrier", "multishot"):
                if kind:
                    self.bad(n, f"'{key}': trigger type given twice ('{kind}' before)")
                kind = key
                i += 1
                continue
            value = tokens[i + 1] if i + 1 < len(tokens) else None
            i += 2
            if key == "id":
                tid = self.uint(n, "id", value, positive=True)
            elif key == "count":
                count = self.uint(n, "count", value)
            else:
                self.bad(n, f"'{key}': expected 'id TID', 'oneshot', 'barrier' or 'count N'")
                i -= 1
        if tid == 0:
            self.bad(n, "trigger without 'id TID'")
        if not kind:
            self.bad(n, "trigger without a type: expected 'oneshot' or 'barrier count N'")
        elif kind == "multishot":
            self.bad(n, "'multishot': starts its targets in completion order; not supported")
        elif kind == "barrier" and count is None:
            self.bad(n, "'barrier' without 'count N'")
        if tid > 0:
            if tid in self.triggers:
                self.bad(n, f"'id {tid}': trigger defined twice (line {self.triggers[tid].line})")
            else:
                self.triggers[tid] = _Trigger(n, kind, count)

    def check(self) -> None:
        """Cross-line checks: header counts, ids in range, trigger references and counts."""
        first = 1
        for name, expected in (
            ("Nodes", None),
            ("Connections", len(self.conns)),
            ("Triggers", len(self.triggers)),
        ):
            if name not in self.headers:
                if name == "Nodes" or (name == "Connections" and self.conns):
                    self.bad(first, f"no '{name}' header: expected '{name} COUNT' at the top")
                elif name == "Triggers" and self.triggers:
                    line = min(t.line for t in self.triggers.values())
                    self.bad(line, f"trigger defined but no 'Triggers {len(self.triggers)}' header")
                continue
            value, line = self.headers[name]
            if expected is not None and value != expected:
                noun = name.lower()
                self.bad(line, f"'{name} {value}': the file has {expected} {noun}")
        nodes = self.headers.get("Nodes", (None, 0))[0]
        firers: dict[int, list[int]] = defaultdict(list)
        ids: dict[int, int] = {}
        for k, c in enumerate(self.conns):
            if nodes is not None:
                for what, host in (("source", c.src), ("destination", c.dst)):
                    if host >= nodes:
                        self.bad(c.line, f"{what} '{host}': expected a host 0..{nodes - 1}")
            if c.flow_id > 0:
                if c.flow_id in ids:
                    self.bad(c.line, f"'id {c.flow_id}' already used on line {ids[c.flow_id]}")
                else:
                    ids[c.flow_id] = c.line
            for tid in c.fires:
                firers[tid].append(k)
                if tid not in self.triggers:
                    self.bad(c.line, f"trigger {tid} is activated here but never defined")
            if c.waits and c.waits not in self.triggers:
                self.bad(c.line, f"'trigger {c.waits}': trigger never defined")
        waiting = {c.waits for c in self.conns if c.waits}
        for tid, t in self.triggers.items():
            count = len(firers.get(tid, []))
            if t.kind == "oneshot" and count != 1:
                self.bad(
                    t.line,
                    f"oneshot trigger {tid} is activated by {count} connections; expected 1",
                )
            elif t.kind == "oneshot" and tid not in waiting:
                self.bad(t.line, f"oneshot trigger {tid} starts no connection (htsim asserts)")
            elif t.kind == "barrier" and t.count == 0:
                self.bad(t.line, f"'count 0': barrier {tid} would never fire, expected >= 1")
            elif t.kind == "barrier" and t.count is not None and t.count > 0 and t.count != count:
                self.bad(
                    t.line,
                    f"'count {t.count}': barrier {tid} is activated by {count} connections",
                )
        if self.group_runs is not None:
            total = sum(c for _, c in self.group_runs)
            if total != len(self.conns) or any(c < 0 or g < -1 for g, c in self.group_runs):
                self.bad(self.meta_line, f"flow-groups covers {total} flows, not {len(self.conns)}")

    def problems(self) -> list[Problem]:
        return [
            Problem(f"{self.source} line {n}", "; ".join(msgs))
            for n, msgs in sorted(self.errors.items())
        ]

    def traffic(self) -> Traffic:
        firers: dict[int, list[int]] = defaultdict(list)
        for k, c in enumerate(self.conns):
            for tid in c.fires:
                firers[tid].append(k)
        deps = [sorted(firers[c.waits]) if c.waits else [] for c in self.conns]
        n = len(self.conns)
        group = np.full(n, -1, dtype=np.int64)
        if self.group_runs is not None:
            group = np.repeat(
                np.array([g for g, _ in self.group_runs], dtype=np.int64),
                np.array([c for _, c in self.group_runs], dtype=np.int64),
            )
        return Traffic.from_arrays(
            [c.src for c in self.conns],
            [c.dst for c in self.conns],
            [c.size or 0 for c in self.conns],
            n_hosts=self.headers["Nodes"][0],
            start_ps=[c.start_ps or 0 for c in self.conns],
            deps=deps,
            group=group,
            group_names=self.group_names,
        )


def parse_htsim(text: str, *, source: str = "<htsim>") -> Traffic:
    """The traffic of connection-matrix ``text``; ``source`` names it in problems."""
    parser = _Parser(source)
    parser.parse(text)
    parser.check()
    if parser.errors:
        raise SpecError(parser.problems())
    traffic = parser.traffic()
    for k in np.flatnonzero(traffic.levels() < 0):
        parser.bad(parser.conns[k].line, "never starts: waits on a trigger dependency cycle")
    if parser.errors:
        raise SpecError(parser.problems())
    return traffic


def read_htsim(path: StrPath) -> Traffic:
    """Read an htsim connection-matrix file. Raises ``SpecError`` on a bad or unreadable file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError([Problem(str(path), f"cannot read: {exc}")]) from exc
    return parse_htsim(text, source=str(path))


def _runs(group: np.ndarray[tuple[int], np.dtype[np.int32]]) -> list[list[int]]:
    if group.shape[0] == 0:
        return []
    change = np.flatnonzero(np.diff(group)) + 1
    starts = np.concatenate([[0], change])
    lengths = np.diff(np.append(starts, group.shape[0]))
    return [[int(group[s]), int(c)] for s, c in zip(starts, lengths, strict=True)]


def format_htsim(traffic: Traffic, *, done: Literal["recv", "send"] = "recv") -> str:
    """The connection-matrix text of ``traffic`` (see :func:`write_htsim`). Barrier flows are
    folded back into dependencies first: htsim expresses them as barrier triggers, and a
    zero-byte connection means "no size limit" to several htsim mains."""
    traffic = traffic.without_barriers()
    traffic.validate()
    traffic = traffic.split_flows(HTSIM_MAX_SIZE)
    n = len(traffic)
    problems: list[str] = []

    def flows(idx: np.ndarray[tuple[int], np.dtype[np.intp]]) -> str:
        return ", ".join(str(int(i)) for i in idx[:5]) + (" ..." if idx.shape[0] > 5 else "")

    start_us = (traffic.start_ps + PS_PER_US // 2) // PS_PER_US
    late = np.flatnonzero(start_us > HTSIM_MAX_START_US)
    if late.shape[0]:
        problems.append(f"flows {flows(late)} start after htsim's uint32 microseconds")
    has_deps = np.diff(traffic.dep_ptr) > 0
    timed = np.flatnonzero(has_deps & (traffic.start_ps > 0))
    if timed.shape[0]:
        problems.append(
            f"flows {flows(timed)} have both dependencies and a start time; "
            "htsim starts a connection by time or by trigger"
        )
    # one trigger per distinct dependency set; a flow may activate one trigger only
    canon = traffic.canonical_deps()
    trigger_of_set: dict[tuple[int, ...], int] = {}
    waits = np.zeros(n, dtype=np.int64)
    fires = np.zeros(n, dtype=np.int64)
    clash: list[int] = []
    for f in np.flatnonzero(has_deps).tolist():
        key = tuple(np.unique(canon[traffic.dep_ptr[f] : traffic.dep_ptr[f + 1]]).tolist())
        tid = trigger_of_set.get(key)
        if tid is None:
            tid = trigger_of_set[key] = len(trigger_of_set) + 1
            for d in key:
                if fires[d]:
                    clash.append(d)
                fires[d] = tid
        waits[f] = tid
    if clash:
        problems.append(
            f"flows {flows(np.array(sorted(set(clash))))} are dependencies of different "
            "dependency sets; an htsim connection activates one trigger"
        )
    if problems:
        raise OutputError("cannot express the traffic as htsim triggers: " + "; ".join(problems))

    done_key = "recv_done_trigger" if done == "recv" else "send_done_trigger"
    out = []
    if traffic.group_names:
        out.append(f"{_META}group-names {json.dumps(list(traffic.group_names))}")
    if np.any(traffic.group != -1):
        out.append(f"{_META}flow-groups {json.dumps(_runs(traffic.group))}")
    out += [f"Nodes {traffic.n_hosts}", f"Connections {n}"]
    if trigger_of_set:
        out.append(f"Triggers {len(trigger_of_set)}")
    for k in range(n):
        when = f"trigger {waits[k]}" if waits[k] else f"start {start_us[k]}"
        line = f"{traffic.src[k]}->{traffic.dst[k]} id {k + 1} {when} size {traffic.nbytes[k]}"
        if fires[k]:
            line += f" {done_key} {fires[k]}"
        out.append(line)
    for members, tid in trigger_of_set.items():
        if len(members) == 1:
            out.append(f"trigger id {tid} oneshot")
        else:
            out.append(f"trigger id {tid} barrier count {len(members)}")
    return "\n".join(out) + "\n"


def write_htsim(traffic: Traffic, path: StrPath, *, done: Literal["recv", "send"] = "recv") -> Path:
    """Write ``traffic`` as an htsim connection matrix, atomically; return the path.

    A flow over htsim's ``int`` size (:data:`HTSIM_MAX_SIZE`) is written as a chain of
    connections (:meth:`Traffic.split_flows`), so it reads back as that chain.
    Flow k gets ``id k+1``; a flow with dependencies starts on the trigger of its dependency set
    (oneshot for one dependency, ``barrier count N`` for N); starts are whole microseconds
    (rounded). ``done`` picks ``recv_done_trigger`` or ``send_done_trigger``. Raises
    ``SpecError`` if the traffic is invalid and ``OutputError`` if htsim cannot express it
    (module docstring) or the file cannot be written.
    """
    text = format_htsim(traffic, done=done)
    with atomic_open(path) as fh:
        fh.write(text)
    return Path(path)
