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

Units. ``start`` is in **picoseconds**: htsim's tokenized loader (``ConnectionMatrix::load``,
the one that reads ``Nodes``/``Connections``/``Triggers``) keeps the value as written
("start is in picoseconds already") and every ``main_*.cpp`` hands it to ``connect`` as a
``simtime_picosec``. (Its older ``fscanf`` loader for ``src->dst start T size S`` lines without
a header takes microseconds; that is not this format.) htsim parses the number with ``stof``,
a 32-bit float, so a start past 2**24 ps (16.8 us) reaches htsim rounded to 24 significant bits
(a relative error below 6e-8). This reader rounds ``start`` to the nearest picosecond
(decimals accepted); the writer writes ``start_ps`` as a whole number, so
``read_htsim(write_htsim(t)) == t`` exactly. Sizes are bytes.

Dependencies. A connection with ``trigger TID`` depends on every connection that activates TID
(``send_done_trigger`` or ``recv_done_trigger``; a fluid flow is finished when its last byte is
delivered, so both count as "finished"): the one connection of a oneshot trigger, the N of a
barrier. The writer uses ``recv_done_trigger`` by default (the NDP, TCP, UEC and BBR mains of htsim
honour it; ``send_done_trigger`` only some); ``done="send"`` writes ``send_done_trigger``.
Because a connection activates at most one trigger and waits for at most one, htsim can express
a dependency structure only when the distinct dependency sets are disjoint (each flow is a
dependency of one set of flows at most, and a flow with dependencies has no start time):
:func:`write_htsim` raises ``OutputError`` otherwise. The traffic of
:func:`clusterloom.sim.traffic.from_step_flows` always qualifies.

Groups. The writer records ``group`` and ``group_names`` in two comment lines before ``Nodes``
(``# clusterloom group-names [...]`` and ``# clusterloom flow-groups [[group, run length], ...]``,
JSON), which htsim skips and this reader restores.

Bad input raises ``SpecError`` with one ``Problem`` per bad line (``where`` is
``"FILE line N"``), every problem of the file at once (at most :data:`HTSIM_MAX_PROBLEMS`
lines; then the reader stops and says so).

Input limits. A file from elsewhere may be hostile, so every number is bounded to what htsim
itself can hold or what a traffic of this project can be simulated with, and refused outside
that range with the line named (never an overflow or an allocation the size of a number):

- the file: at most :data:`HTSIM_MAX_FILE_BYTES` (256 MiB; :func:`read_htsim` checks the size
  before reading, :func:`parse_htsim` the length of the text);
- ``Nodes``: at most :data:`HTSIM_MAX_NODES` (2**24 hosts, 16 times the largest fabric
  simulated here);
- ``Connections``, ``Triggers``, a barrier's ``count`` and the connection lines themselves:
  at most :data:`HTSIM_MAX_CONNECTIONS` (2**22; an all-to-all among 2,048 hosts);
- ``size``: 0..:data:`HTSIM_MAX_SIZE` bytes (htsim's C ``int``);
- ``start``: a finite decimal, 0..:data:`HTSIM_MAX_START_PS` picoseconds (2**53: a double
  holds every whole number up to it; about 2.5 hours); ``nan``, ``inf``, negative numbers and
  exponents past the range are refused;
- ids (``id``, ``trigger``, ``*_done_trigger``, ``prio``) and host ids: 0..2**31 - 1 (htsim's
  C ``int``), with at most :data:`HTSIM_MAX_DIGITS` digits read;
- the ``# clusterloom`` comments: groups -1..2**31 - 1, run lengths 0..HTSIM_MAX_CONNECTIONS,
  JSON nested at most a few levels (deeper is refused, not a ``RecursionError``).
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Literal

import numpy as np

from clusterloom.atomic import atomic_open
from clusterloom.errors import OutputError, Problem, SpecError
from clusterloom.sim.traffic import Traffic

__all__ = ["format_htsim", "parse_htsim", "read_htsim", "write_htsim"]

StrPath = str | os.PathLike[str]

#: htsim stores a connection's size in a C ``int``; its start is picoseconds (``simtime_picosec``,
#: parsed as a float): starts are held to the whole numbers a double represents exactly
HTSIM_MAX_SIZE = 2**31 - 1
HTSIM_MAX_START_PS = 2**53
#: ids (flow, trigger, priority) and host ids: htsim's C ``int``
HTSIM_MAX_ID = 2**31 - 1
#: the largest file read, in bytes (characters for :func:`parse_htsim`)
HTSIM_MAX_FILE_BYTES = 256 * 2**20
#: the most hosts a file may declare (``Nodes``)
HTSIM_MAX_NODES = 2**24
#: the most connections (and triggers, and a barrier's count) a file may hold
HTSIM_MAX_CONNECTIONS = 2**22
#: the most digits read in one integer token (2**64 has 20)
HTSIM_MAX_DIGITS = 20
#: the most bad lines reported; the reader stops at the next one
HTSIM_MAX_PROBLEMS = 1_000

_ARROW = re.compile(r"([0-9]+)->([0-9]+)")
_UINT = re.compile(r"[0-9]+")
_NUMBER = re.compile(r"([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")
_HEADER_MAX = {
    "Nodes": HTSIM_MAX_NODES,
    "Connections": HTSIM_MAX_CONNECTIONS,
    "Triggers": HTSIM_MAX_CONNECTIONS,
    "Failures": HTSIM_MAX_ID,
}
_META = "# clusterloom "
_CONN_KEYS = ("id", "start", "size", "trigger", "send_done_trigger", "recv_done_trigger", "prio")


def _clip(token: str, width: int = 40) -> str:
    """``token`` for a message: a hostile file's 100 MB token is not copied into it."""
    return token if len(token) <= width else token[:width] + "..."


def _int(digits: str) -> int | None:
    """The value of a string of ASCII digits, or None past :data:`HTSIM_MAX_DIGITS` digits
    (Python refuses to convert 4,300 digits and more; leading zeros do not count)."""
    if len(digits) <= HTSIM_MAX_DIGITS:  # the common case, fast
        return int(digits)
    significant = digits.lstrip("0")
    return None if len(significant) > HTSIM_MAX_DIGITS else int(significant or "0")


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
        self.stopped = False  # too many problems or connections: the rest was not read
        self.bad_headers: set[str] = set()  # given, but with a value already reported

    def bad(self, line: int, message: str) -> None:
        self.errors[line].append(message)

    def stop(self, line: int, message: str) -> None:
        self.bad(line, message)
        self.stopped = True

    def uint(
        self,
        line: int,
        key: str,
        token: str | None,
        *,
        positive: bool = False,
        limit: int = HTSIM_MAX_ID,
    ) -> int:
        if token is None:
            self.bad(line, f"'{key}' needs a value")
            return -1
        lo = 1 if positive else 0
        if not _UINT.fullmatch(token):
            what = "a positive integer" if positive else "a non-negative integer"
            if token.startswith("-") and _UINT.fullmatch(token[1:]):
                self.bad(line, f"'{key} {_clip(token)}': negative, expected {what}")
            else:
                self.bad(line, f"'{key} {_clip(token)}': expected {what}")
            return -1
        value = _int(token)
        if value is None or value > limit:
            self.bad(line, f"'{key} {_clip(token)}': out of range, expected {lo}..{limit}")
            return -1
        if positive and value == 0:
            self.bad(line, f"'{key} 0': htsim does not allow id 0, expected a positive integer")
            return -1
        return value

    def parse(self, text: str) -> None:
        for n, raw in enumerate(text.splitlines(), start=1):
            if self.stopped:
                break
            if len(self.errors) >= HTSIM_MAX_PROBLEMS:
                self.stop(
                    n,
                    f"more than {HTSIM_MAX_PROBLEMS} bad lines; stopped reading here: "
                    "fix the lines above first",
                )
                break
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
                    f"'{_clip(head)}': expected a header (Nodes, Connections, Triggers), "
                    "a connection 'SRC->DST ...' or 'trigger id ...'",
                )

    def meta(self, n: int, body: str) -> None:
        key, _, value = body.partition(" ")
        try:
            try:
                data = json.loads(value)
            except RecursionError:
                raise ValueError("nested too deeply") from None
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
                if not all(
                    -1 <= g <= HTSIM_MAX_ID and 0 <= c <= HTSIM_MAX_CONNECTIONS for g, c in data
                ):
                    raise ValueError(
                        f"groups -1..{HTSIM_MAX_ID} and counts 0..{HTSIM_MAX_CONNECTIONS}"
                    )
                self.group_runs = [(int(g), int(c)) for g, c in data]
                self.meta_line = n
            else:
                self.bad(n, f"'{key}': unknown clusterloom comment (group-names, flow-groups)")
        except ValueError as exc:
            self.bad(n, f"'{_clip(key)}' comment: expected JSON, {_clip(str(exc), 200)}")

    def header(self, n: int, tokens: list[str]) -> None:
        name = tokens[0]
        if len(tokens) != 2:
            self.bad(n, f"'{name}' header: expected '{name} COUNT'")
            self.bad_headers.add(name)
            return
        value = self.uint(n, name, tokens[1], limit=_HEADER_MAX[name])
        if value < 0:
            self.bad_headers.add(name)
            return
        if name in self.headers:
            self.bad(n, f"'{name}' header repeated (first on line {self.headers[name][1]})")
            return
        if name == "Failures" and value:
            self.bad(n, f"'Failures {value}': link failures are not traffic; expected 0")
        self.headers[name] = (value, n)

    def connection(self, n: int, tokens: list[str]) -> None:
        if len(self.conns) >= HTSIM_MAX_CONNECTIONS:
            self.stop(
                n,
                f"more than {HTSIM_MAX_CONNECTIONS} connections; stopped reading here: "
                "split the traffic into several files",
            )
            return
        conn = _Conn(line=n)
        self.conns.append(conn)
        m = _ARROW.fullmatch(tokens[0])
        if m is None:
            self.bad(n, f"'{_clip(tokens[0])}': expected 'SRC->DST' with non-negative host ids")
        else:
            src, dst = _int(m.group(1)), _int(m.group(2))
            if src is None or dst is None or src >= HTSIM_MAX_NODES or dst >= HTSIM_MAX_NODES:
                self.bad(
                    n, f"'{_clip(tokens[0])}': out of range, host ids are 0..{HTSIM_MAX_NODES - 1}"
                )
            else:
                conn.src, conn.dst = src, dst
                if src == dst:
                    self.bad(n, f"'{tokens[0]}': a connection from a host to itself")
        seen: set[str] = set()
        i = 1
        while i < len(tokens):
            key = tokens[i]
            value = tokens[i + 1] if i + 1 < len(tokens) else None
            i += 2
            if key not in _CONN_KEYS:
                self.bad(
                    n, f"'{_clip(key)}': unknown token, expected one of {', '.join(_CONN_KEYS)}"
                )
                i -= 1
                continue
            if key in seen:
                self.bad(n, f"'{key}' given twice")
            seen.add(key)
            if key == "start":
                # exact decimal arithmetic: a float would take 2**53 + 1 for 2**53
                ok = value is not None and _NUMBER.fullmatch(value) is not None
                ps = Decimal(value) if ok and value is not None else Decimal(-1)
                if not (0 <= ps <= HTSIM_MAX_START_PS):
                    shown = f"start {_clip(value)}" if value else "start"
                    self.bad(
                        n,
                        f"'{shown}': expected picoseconds 0..{HTSIM_MAX_START_PS} "
                        "as a plain decimal",
                    )
                else:
                    conn.start_ps = round(ps)
            elif key == "size":
                size = self.uint(n, "size", value, limit=HTSIM_MAX_SIZE)
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
                count = self.uint(n, "count", value, limit=HTSIM_MAX_CONNECTIONS)
            else:
                self.bad(n, f"'{_clip(key)}': expected 'id TID', 'oneshot', 'barrier' or 'count N'")
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
            if name in self.bad_headers:
                continue
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
    """The traffic of connection-matrix ``text``; ``source`` names it in problems.

    Raises ``SpecError`` for a bad file, one problem per bad line, or for a text longer than
    :data:`HTSIM_MAX_FILE_BYTES` characters (module docstring, "Input limits")."""
    if len(text) > HTSIM_MAX_FILE_BYTES:
        raise SpecError([_too_big(source, len(text))])
    parser = _Parser(source)
    parser.parse(text)
    if not parser.stopped:
        parser.check()
    if parser.errors:
        raise SpecError(parser.problems())
    traffic = parser.traffic()
    for k in np.flatnonzero(traffic.levels() < 0)[:HTSIM_MAX_PROBLEMS]:
        parser.bad(parser.conns[k].line, "never starts: waits on a trigger dependency cycle")
    if parser.errors:
        raise SpecError(parser.problems())
    return traffic


def read_htsim(path: StrPath) -> Traffic:
    """Read an htsim connection-matrix file. Raises ``SpecError`` on a bad or unreadable file
    or one over :data:`HTSIM_MAX_FILE_BYTES` (refused before it is read)."""
    try:
        with Path(path).open("rb") as fh:
            if os.fstat(fh.fileno()).st_size > HTSIM_MAX_FILE_BYTES:
                raise SpecError([_too_big(str(path), os.fstat(fh.fileno()).st_size)])
            data = fh.read(HTSIM_MAX_FILE_BYTES + 1)  # a pipe or device has no size
        if len(data) > HTSIM_MAX_FILE_BYTES:
            raise SpecError([_too_big(str(path), len(data))])
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError([Problem(str(path), f"cannot read: {exc}")]) from exc
    return parse_htsim(text, source=str(path))


def _too_big(source: str, size: int) -> Problem:
    return Problem(
        source,
        f"{size} bytes, over the {HTSIM_MAX_FILE_BYTES // 2**20} MiB limit of an htsim file: "
        "split the traffic into several files",
    )


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

    start_ps = traffic.start_ps
    late = np.flatnonzero(start_ps > HTSIM_MAX_START_PS)
    if late.shape[0]:
        problems.append(f"flows {flows(late)} start after {HTSIM_MAX_START_PS} ps")
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
        when = f"trigger {waits[k]}" if waits[k] else f"start {start_ps[k]}"
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
    (oneshot for one dependency, ``barrier count N`` for N); starts are whole picoseconds.
    ``done`` picks ``recv_done_trigger`` or ``send_done_trigger``. Raises
    ``SpecError`` if the traffic is invalid and ``OutputError`` if htsim cannot express it
    (module docstring) or the file cannot be written.
    """
    text = format_htsim(traffic, done=done)
    with atomic_open(path) as fh:
        fh.write(text)
    return Path(path)
