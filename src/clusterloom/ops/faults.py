"""Faults as texts and files, checked against a design; the simulator failures that carry
them; random faults for evaluations (issue 23, ``ops synth``).

A fault is written ``KIND:TARGET@START[-END][*KEY=VALUE[,KEY=VALUE...]]``:

- ``KIND`` is a :class:`~clusterloom.ops.model.FaultKind` value (``gray-link``,
  ``flapping-link``, ``dead-link``, ``slow-nic-port``, ``dead-ev``, ``mis-hashed-switch``,
  ``congested-spine``, ``straggler-rank``);
- ``TARGET`` names the object as :class:`~clusterloom.ops.model.Fault` says: a link label
  ``device:interface~device:interface`` (either end first; kept lower end first), a host port
  ``device:interface``, an EV ``device:interface>device:interface#EV`` or ``switch#EV``, a
  switch name, ``rank:N``;
- ``START`` and ``END`` are offsets from the start of the telemetry: a number with ``ms``,
  ``s``, ``m`` or ``h`` (``90s``, ``1.5m``); no ``END``: to the end;
- the keys set the size: ``loss=P`` (gray link: packet loss probability), ``rate=F`` (gray link
  or slow NIC port: the fraction of its rate left), ``flaps=N`` (flapping link: flaps per
  minute), ``share=F`` (mis-hashed switch: the share of its flows sent to its favourite uplink,
  its first), ``load=F`` (congested spine: extra load as a fraction of its links' capacity),
  ``delay=T`` (straggler: its delay per step, a time like ``20ms`` or ``500us``).

Examples: ``gray-link:be-p0-leaf0003:swp9~be-p0-spine0001:swp3@10s-50s*loss=0.01``,
``slow-nic-port:node00012:gpu3p0@0s*rate=0.5``, ``straggler-rank:rank:17@2m*delay=30ms``.

A file of faults (``--faults FILE``, :func:`read_faults`) is YAML or JSON: a list whose items
are fault texts or mappings ``{kind, target, start, end, loss, rate, flaps, share, load,
delay}`` (times as texts like ``10s``, or numbers of seconds), or a mapping with such a list
under ``faults``.

The :class:`Fault` a text parses to keeps its times as milliseconds from the start of the
telemetry; ``ops synth`` shifts them to epoch milliseconds in the truth it writes.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from clusterloom.errors import Problem, SpecError
from clusterloom.ops.model import Fault, FaultKind

if TYPE_CHECKING:
    from clusterloom.ops.fabric import OpsFabric

__all__ = [
    "FAULT_SYNTAX",
    "PROBE_EVS",
    "default_severity",
    "fault_failures",
    "flap_windows",
    "format_fault",
    "parse_fault",
    "parse_faults",
    "parse_offset_ms",
    "probe_streams",
    "random_fault",
    "read_faults",
]

FAULT_SYNTAX = re.compile(
    r"^(?P<kind>[a-z-]+):(?P<target>[^@*]+)@(?P<start>[0-9.]+[a-z]*)"
    r"(?:-(?P<end>[0-9.]+[a-z]*))?(?:\*(?P<keys>.+))?$"
)
_TIME_UNITS_MS = {"ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0}
#: the longest offset a fault may name: a day
MAX_OFFSET_MS = 86_400_000
#: the EVs the synthetic probes use (UDP source ports from 49152, the dynamic range): a dead
#: EV drawn by :func:`random_fault` is one of them, so the probes can see it
PROBE_EVS: tuple[int, ...] = (49152, 49153, 49154, 49155)

_LINK_KINDS = (FaultKind.GRAY_LINK, FaultKind.FLAPPING_LINK, FaultKind.DEAD_LINK)
_KEYS: dict[FaultKind, tuple[str, ...]] = {
    FaultKind.GRAY_LINK: ("loss", "rate"),
    FaultKind.FLAPPING_LINK: ("flaps",),
    FaultKind.DEAD_LINK: (),
    FaultKind.SLOW_NIC_PORT: ("rate",),
    FaultKind.DEAD_EV: (),
    FaultKind.MIS_HASHED_SWITCH: ("share",),
    FaultKind.CONGESTED_SPINE: ("load",),
    FaultKind.STRAGGLER_RANK: ("delay",),
}
#: the severity key of each kind (``Fault.severity``), and its default
_SEVERITY: dict[FaultKind, tuple[str, float]] = {
    FaultKind.FLAPPING_LINK: ("flaps", 2.0),
    FaultKind.MIS_HASHED_SWITCH: ("share", 0.8),
    FaultKind.CONGESTED_SPINE: ("load", 0.5),
    FaultKind.STRAGGLER_RANK: ("delay", 10_000.0),
}
_ROLE_SPINE, _ROLE_LEAF = 2, 1


def default_severity(kind: FaultKind) -> float:
    """The size a fault of ``kind`` has when none is given (its key's default: 2 flaps a
    minute, a share of 0.8, a load of 0.5, a delay of 10,000 us); 0 for the kinds sized by
    ``loss`` and ``rate`` or not at all."""
    return _SEVERITY[kind][1] if kind in _SEVERITY else 0.0


def parse_offset_ms(text: str, where: str) -> int:
    """``'90s'``, ``'1.5m'``, ``'500ms'``, ``'2h'`` to milliseconds (at most a day)."""
    m = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)(ms|s|m|h)", text)
    if not m:
        raise SpecError([Problem(where, f"'{text}' is not a time like 500ms, 10s, 1.5m or 2h")])
    value = float(m.group(1)) * _TIME_UNITS_MS[m.group(2)]
    if value > MAX_OFFSET_MS:
        raise SpecError([Problem(where, f"'{text}' is beyond a day from the start")])
    return round(value)


def _delay_us(text: str, where: str) -> float:
    """A straggler's delay (``20ms``, ``500us``, ``0.1s``) in microseconds."""
    m = re.fullmatch(r"(\d+(?:\.\d*)?(?:e-?\d+)?|\.\d+)(us|ms|s)", text)
    if not m:
        raise SpecError([Problem(where, f"delay='{text}' is not a time like 500us or 20ms")])
    return float(m.group(1)) * {"us": 1.0, "ms": 1e3, "s": 1e6}[m.group(2)]


def _fmt_ms(ms: int) -> str:
    if ms % 1000:
        return f"{ms}ms"
    return f"{ms // 1000}s"


def _number(text: str, where: str, key: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise SpecError([Problem(where, f"{key}='{text}' is not a number")]) from None
    if not math.isfinite(value):
        raise SpecError([Problem(where, f"{key}='{text}' is not a finite number")])
    return value


# -- targets ---------------------------------------------------------------------------------


def _switch_index(fabric: OpsFabric) -> dict[str, int]:
    t = fabric.topology
    hosts = int(t.plan.hosts)
    names = fabric.names.devices[hosts:].tolist()
    return {str(n): hosts + i for i, n in enumerate(names)}


def switch_node(fabric: OpsFabric, name: str, where: str) -> int:
    """The topology node of the switch named ``name``; ``SpecError`` naming ``where``."""
    index = _switch_index(fabric)
    node = index.get(name)
    if node is None:
        some = ", ".join(list(index)[:3])
        raise SpecError([Problem(where, f"the design has no switch '{name}' (e.g. {some})")])
    return node


def uplinks(fabric: OpsFabric, node: int) -> np.ndarray[Any, np.dtype[np.int64]]:
    """The physical links from switch ``node`` up a tier (its lower end is ``node``), by id."""
    t = fabric.topology
    out: np.ndarray[Any, np.dtype[np.int64]] = np.flatnonzero(t.link_src == node).astype(np.int64)
    return out


def _host_port(fabric: OpsFabric, target: str, where: str) -> tuple[int, int]:
    dev, sep, ifname = target.partition(":")
    hit = fabric.host_of(dev, ifname) if sep else None
    if hit is None:
        raise SpecError(
            [
                Problem(
                    where,
                    f"'{target}' is no NIC port of the design; name one as device:interface, "
                    f"e.g. {':'.join(fabric.endpoint(0, 0))}",
                )
            ]
        )
    return hit


def _link(fabric: OpsFabric, target: str, where: str) -> int:
    if "~" not in target:
        raise SpecError(
            [
                Problem(
                    where,
                    f"'{target}' is not a link label; name it device:interface~device:interface, "
                    f"e.g. {fabric.link_label(0)}",
                )
            ]
        )
    try:
        return fabric.link_of_label(target)
    except SpecError:
        raise SpecError(
            [Problem(where, f"the design has no link '{target}' (e.g. {fabric.link_label(0)})")]
        ) from None


def _target(kind: FaultKind, target: str, fabric: OpsFabric, where: str) -> str:
    """The canonical target (a link label lower end first), checked against ``fabric``."""
    t = fabric.topology
    if kind in _LINK_KINDS:
        return fabric.link_label(_link(fabric, target, where))
    if kind is FaultKind.SLOW_NIC_PORT:
        _host_port(fabric, target, where)
        return target
    if kind is FaultKind.DEAD_EV:
        path, sep, ev_text = target.rpartition("#")
        if not sep or not re.fullmatch(r"\d+", ev_text) or not 0 <= int(ev_text) < 2**31:
            raise SpecError(
                [
                    Problem(
                        where,
                        "a dead EV is SRC>DST#EV (device:interface of each end) or SWITCH#EV, "
                        f"e.g. {':'.join(fabric.endpoint(0, 0))}>"
                        f"{':'.join(fabric.endpoint(1, 0))}#{PROBE_EVS[0]}",
                    )
                ]
            )
        if ">" in path:
            a, _, b = path.partition(">")
            (ha, pa_), (hb, pb) = _host_port(fabric, a, where), _host_port(fabric, b, where)
            if ha == hb:
                raise SpecError([Problem(where, "a probe's two ends are different hosts")])
            if pa_ != pb:
                raise SpecError([Problem(where, "a probe runs between the same port of two hosts")])
        else:
            switch_node(fabric, path, where)
        return f"{path}#{int(ev_text)}"
    if kind in (FaultKind.MIS_HASHED_SWITCH, FaultKind.CONGESTED_SPINE):
        node = switch_node(fabric, target, where)
        role = int(t.node_role[node])
        if kind is FaultKind.MIS_HASHED_SWITCH and uplinks(fabric, node).size < 2:
            raise SpecError(
                [Problem(where, f"'{target}' has fewer than two uplinks to mis-hash over")]
            )
        if kind is FaultKind.CONGESTED_SPINE and role < _ROLE_SPINE:
            raise SpecError([Problem(where, f"'{target}' is a leaf; name a spine (or core)")])
        return target
    # straggler
    m = re.fullmatch(r"rank:(\d+)", target)
    if not m or int(m.group(1)) >= t.plan.hosts:
        raise SpecError([Problem(where, f"a rank is rank:N with N from 0 to {t.plan.hosts - 1}")])
    return f"rank:{int(m.group(1))}"


# -- texts -----------------------------------------------------------------------------------


def parse_fault(text: str, fabric: OpsFabric) -> Fault:
    """The :class:`Fault` a text names (module docstring), its target checked against
    ``fabric``; ``SpecError`` naming the text and what would fix it."""
    where = f"fault {text}"
    m = FAULT_SYNTAX.match(text.strip())
    if not m:
        raise SpecError(
            [
                Problem(
                    where,
                    "expected KIND:TARGET@START[-END][*KEY=VALUE,...], e.g. "
                    "dead-link:LINK-LABEL@10s or straggler-rank:rank:3@1m*delay=20ms",
                )
            ]
        )
    try:
        kind = FaultKind(m["kind"])
    except ValueError:
        known = ", ".join(k.value for k in FaultKind)
        raise SpecError([Problem(where, f"unknown kind '{m['kind']}'; known: {known}")]) from None
    start = parse_offset_ms(m["start"], where)
    end = parse_offset_ms(m["end"], where) if m["end"] else None
    keys: dict[str, str] = {}
    for item in (m["keys"] or "").split(",") if m["keys"] else []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in _KEYS[kind]:
            allowed = ", ".join(_KEYS[kind]) or "none"
            raise SpecError(
                [Problem(where, f"'{item}': a {kind.value} takes KEY=VALUE with keys {allowed}")]
            )
        if key in keys:
            raise SpecError([Problem(where, f"{key} given twice")])
        keys[key] = value.strip()
    values: dict[str, float] = {}
    for key, value in keys.items():
        values[key] = _delay_us(value, where) if key == "delay" else _number(value, where, key)
    return make_fault(
        kind,
        _target(kind, m["target"].strip(), fabric, where),
        start,
        end,
        values,
        where,
    )


def make_fault(
    kind: FaultKind,
    target: str,
    start_ms: int,
    end_ms: int | None,
    values: dict[str, float],
    where: str,
) -> Fault:
    """A :class:`Fault` from checked parts, its sizes checked for its kind."""
    if start_ms < 0:
        raise SpecError([Problem(where, "a fault starts at or after the start")])
    if end_ms is not None and end_ms <= start_ms:
        raise SpecError([Problem(where, "the end of a fault comes after its start")])
    loss = values.get("loss", 0.0)
    rate = values.get("rate", 1.0)
    severity = 0.0
    problems: list[Problem] = []
    if not 0.0 <= loss < 1.0:
        problems.append(Problem(where, f"loss={loss:g}: a probability in [0, 1)"))
    if not 0.0 < rate <= 1.0:
        problems.append(Problem(where, f"rate={rate:g}: the fraction of the rate left, in (0, 1]"))
    if kind is FaultKind.GRAY_LINK and loss == 0.0 and rate == 1.0:
        problems.append(Problem(where, "a gray link needs loss=P (> 0) or rate=F (< 1)"))
    if kind is FaultKind.SLOW_NIC_PORT and rate == 1.0:
        problems.append(Problem(where, "a slow NIC port needs rate=F (< 1)"))
    if kind in _SEVERITY:
        key, default = _SEVERITY[kind]
        severity = values.get(key, default)
        limits = {
            "flaps": (0.0, 30.0, "flaps per minute, above 0 and at most 30"),
            "share": (0.0, 1.0, "a share in (0, 1]"),
            "load": (0.0, 10.0, "extra load as a fraction of capacity, above 0"),
            "delay": (0.0, 3.6e9, "a delay above 0"),
        }[key]
        if not limits[0] < severity <= limits[1]:
            problems.append(Problem(where, f"{key}={severity:g}: {limits[2]}"))
    if problems:
        raise SpecError(problems)
    return Fault(kind, target, start_ms, end_ms, loss=loss, rate=rate, severity=severity)


def format_fault(fault: Fault) -> str:
    """The text of a fault (times as offsets), which :func:`parse_fault` reads back."""
    when = _fmt_ms(fault.start_ms) + ("" if fault.end_ms is None else f"-{_fmt_ms(fault.end_ms)}")
    keys: list[str] = []
    if fault.kind is FaultKind.GRAY_LINK:
        if fault.loss > 0.0:
            keys.append(f"loss={fault.loss!r}")
        if fault.rate < 1.0:
            keys.append(f"rate={fault.rate!r}")
    elif fault.kind is FaultKind.SLOW_NIC_PORT:
        keys.append(f"rate={fault.rate!r}")
    elif fault.kind is FaultKind.STRAGGLER_RANK:
        keys.append(f"delay={fault.severity!r}us")
    elif fault.kind in _SEVERITY:
        keys.append(f"{_SEVERITY[fault.kind][0]}={fault.severity!r}")
    return f"{fault.kind.value}:{fault.target}@{when}" + ("*" + ",".join(keys) if keys else "")


def parse_faults(texts: Sequence[str], fabric: OpsFabric) -> tuple[Fault, ...]:
    """Every text's fault; the problems of all the bad ones together."""
    out: list[Fault] = []
    problems: list[Problem] = []
    for text in texts:
        try:
            out.append(parse_fault(text, fabric))
        except SpecError as exc:
            problems += exc.problems
    if problems:
        raise SpecError(problems)
    return tuple(out)


def _item_text(item: Any, where: str) -> str:
    """A file's fault item (a text or a mapping) as a fault text."""
    if isinstance(item, str):
        return item
    if not isinstance(item, dict):
        raise SpecError([Problem(where, "a fault is a text or a mapping with kind and target")])
    unknown = set(item) - {
        "kind",
        "target",
        "start",
        "end",
        *{k for ks in _KEYS.values() for k in ks},
    }
    if unknown or "kind" not in item or "target" not in item:
        raise SpecError(
            [
                Problem(
                    where,
                    "a fault mapping has kind, target, start and optionally end, loss, rate, "
                    "flaps, share, load, delay"
                    + (f" (unknown: {', '.join(sorted(map(str, unknown)))})" if unknown else ""),
                )
            ]
        )

    def when(v: Any) -> str:
        return f"{v}s" if isinstance(v, int | float) and not isinstance(v, bool) else str(v)

    text = f"{item['kind']}:{item['target']}@{when(item.get('start', '0s'))}"
    if item.get("end") is not None:
        text += f"-{when(item['end'])}"
    keys = [f"{k}={when(v) if k == 'delay' else v}" for k, v in item.items() if k in _ALL_KEYS]
    return text + ("*" + ",".join(keys) if keys else "")


_ALL_KEYS = frozenset(k for ks in _KEYS.values() for k in ks)


def read_faults(path: str | Path, fabric: OpsFabric) -> tuple[Fault, ...]:
    """The faults of a YAML or JSON file (module docstring); ``SpecError`` naming the file
    and the item."""
    import yaml

    p = Path(path)
    try:
        raw = p.read_text()
    except OSError as exc:
        raise SpecError([Problem(str(p), f"cannot read: {exc.strerror or exc}")]) from exc
    try:
        doc = json.loads(raw) if p.suffix == ".json" else yaml.safe_load(raw)
    except (ValueError, yaml.YAMLError) as exc:
        raise SpecError([Problem(str(p), f"not valid YAML or JSON: {exc}")]) from exc
    if isinstance(doc, dict):
        doc = doc.get("faults")
    if not isinstance(doc, list):
        raise SpecError([Problem(str(p), "expected a list of faults (or faults: [...])")])
    out: list[Fault] = []
    problems: list[Problem] = []
    for i, item in enumerate(doc):
        where = f"{p}: faults[{i}]"
        try:
            text = _item_text(item, where)
            out.append(parse_fault(text, fabric))
        except SpecError as exc:
            problems += [Problem(f"{where} ({q.where})", q.message) for q in exc.problems]
    if problems:
        raise SpecError(problems)
    return tuple(out)


# -- into a simulator ------------------------------------------------------------------------


def flap_windows(fault: Fault, horizon_ms: int) -> tuple[tuple[int, int], ...]:
    """The down windows ``(start_ms, end_ms)`` of a flapping link: at ``severity`` flaps a
    minute, the link goes down at the start of each period of ``60 / flaps`` seconds and comes
    back up half way through it, until the fault's end (or ``horizon_ms``)."""
    end = fault.end_ms if fault.end_ms is not None else horizon_ms
    period = 60_000.0 / fault.severity
    out: list[tuple[int, int]] = []
    k = 0
    while True:
        a = fault.start_ms + round(k * period)
        if a >= end:
            break
        b = min(fault.start_ms + round(k * period + period / 2), end)
        if b > a:
            out.append((a, b))
        k += 1
    return tuple(out)


def fault_failures(
    fault: Fault,
    fabric: OpsFabric,
    *,
    horizon_ms: int | None = None,
    at_start: bool = False,
) -> tuple[str, ...]:
    """The ``sim.failures`` texts that put ``fault`` into a simulator run (times as its
    offsets, in ms): a dead link ``link:N@A-B``; a gray link running at a fraction of its rate
    ``link:N@A-B*RATE``; a flapping link one ``link:N@A-B`` per down window
    (:func:`flap_windows`, up to its end or ``horizon_ms``); a slow NIC port
    ``port:HOST:PORT@A-B*RATE``. A kind no failure expresses (loss on a gray link, a dead EV,
    a mis-hashed switch, a congested spine, a straggler) gives none: ``ops synth`` applies it
    where it acts.

    ``at_start``: the fault in force for the whole of a run instead (``@0``, no end), as a
    check of a steady state wants it (a simulated step lasts milliseconds, the fault's times
    are seconds): a flapping link is then down (its down half, the worse one)."""

    def window(a: int, b: int | None) -> str:
        if at_start:
            return "0ms"
        return f"{a}ms" + ("" if b is None else f"-{b}ms")

    if fault.kind in _LINK_KINDS:
        link = fabric.link_of_label(fault.target)
        if fault.kind is FaultKind.DEAD_LINK or (
            fault.kind is FaultKind.FLAPPING_LINK and at_start
        ):
            return (f"link:{link}@{window(fault.start_ms, fault.end_ms)}",)
        if fault.kind is FaultKind.GRAY_LINK:
            if fault.rate >= 1.0:
                return ()
            return (f"link:{link}@{window(fault.start_ms, fault.end_ms)}*{fault.rate!r}",)
        if fault.end_ms is None and horizon_ms is None:
            raise SpecError(
                [
                    Problem(
                        f"fault {format_fault(fault)}",
                        "a flapping link without an end needs a horizon (the run's length)",
                    )
                ]
            )
        horizon = fault.end_ms if fault.end_ms is not None else int(horizon_ms or 0)
        return tuple(f"link:{link}@{window(a, b)}" for a, b in flap_windows(fault, horizon))
    if fault.kind is FaultKind.SLOW_NIC_PORT:
        hit = fabric.host_of(*fault.target.split(":", 1))
        assert hit is not None, fault.target
        host, port = hit
        return (f"port:{host}:{port}@{window(fault.start_ms, fault.end_ms)}*{fault.rate!r}",)
    return ()


# -- the probes' pattern ------------------------------------------------------------------


def probe_streams(
    fabric: OpsFabric, *, peers: int = 2, evs: int = len(PROBE_EVS), traffic_seed: int = 0
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """``(src host, dst host, port, ev)`` of every probe stream ``ops.synth.synthesize`` sends
    with these settings: each host probes ``peers`` distinct peers under other leaves (drawn
    with ``traffic_seed``), on port ``(host + j) % ports``, with each of the first ``evs`` of
    :data:`PROBE_EVS`; a fixed pattern per ``traffic_seed``, as a deployment keeps it."""
    return _probe_pairs(
        fabric, peers, evs, np.random.default_rng(np.random.SeedSequence([traffic_seed, 0x9E7]))
    )


def _probe_pairs(
    fabric: OpsFabric, peers: int, evs: int, rng: np.random.Generator
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """``(src, dst, port, ev)`` of every probe stream (module docstring)."""
    t = fabric.topology
    hosts = int(t.plan.hosts)
    r = fabric.router
    leaf = t.link_dst[r.host_link[:, 0]]
    src = np.repeat(np.arange(hosts, dtype=np.int64), peers)
    dst = rng.integers(0, hosts, size=src.size)

    def bad_of(d: NDArray[np.int64]) -> NDArray[np.bool_]:
        """Under the source's leaf, the source itself, or a peer the source has already."""
        order = np.lexsort((np.arange(d.size), d, src))
        again = np.zeros(d.size, dtype=bool)
        again[order[1:]] = (src[order][1:] == src[order][:-1]) & (d[order][1:] == d[order][:-1])
        out: NDArray[np.bool_] = (leaf[d] == leaf[src]) | (d == src) | again
        return out

    for _ in range(64):
        bad = bad_of(dst)
        if not bad.any():
            break
        dst[bad] = rng.integers(0, hosts, size=int(bad.sum()))
    bad = bad_of(dst)
    if bad.any():  # a fabric too small to find such peers: the next hosts along
        j = np.tile(np.arange(peers, dtype=np.int64), hosts)
        dst[bad] = (src[bad] + 1 + j[bad]) % hosts
    j = np.tile(np.arange(peers, dtype=np.int64), hosts)
    port = (src + j) % fabric.host_ports
    n = src.size
    ev_vals = np.asarray(PROBE_EVS[:evs], dtype=np.int64)
    return (
        np.repeat(src, evs),
        np.repeat(dst, evs),
        np.repeat(port, evs),
        np.tile(ev_vals, n),
    )


# -- random faults ---------------------------------------------------------------------------


def random_fault(
    fabric: OpsFabric, kind: FaultKind, rng: np.random.Generator, *, duration_ms: int
) -> Fault:
    """A fault of ``kind`` on a target drawn uniformly from the design's (links of every tier;
    NIC ports; spines; leaves for mis-hashing; ranks; ``switch#EV``, a switch on a default
    probe stream's path with its EV, :func:`probe_streams`), with a
    plausible severity: a gray link loses 0.1-5% of its packets (log-uniform) or, one time in
    three, runs at 10-50% of its rate; a flapping link flaps 1-4 times a minute; a slow NIC
    port runs at 5-20% (a 400G port fallen back to 20-80G: ECMP collisions already leave a
    permutation's flows a third of their rate, so a port above about a fifth of its rate is
    not a step's bottleneck and nothing shows, not even to the job); a mis-hashed switch sends
    60-95% of its flows to one uplink; a congested spine carries 30-80% extra load; a
    straggler is 2-20 ms late each step. It starts 10-30% into ``duration_ms`` and lasts to
    the end."""
    if duration_ms <= 0:
        raise SpecError([Problem("duration_ms", "a positive duration")])
    t = fabric.topology
    start = int(rng.integers(duration_ms // 10, max(duration_ms * 3 // 10, duration_ms // 10 + 1)))
    where = f"random {kind.value}"
    values: dict[str, float] = {}
    if kind in _LINK_KINDS:
        target = fabric.link_label(int(rng.integers(t.n_links)))
        if kind is FaultKind.GRAY_LINK:
            if rng.random() < 1.0 / 3.0:
                values["rate"] = round(float(rng.uniform(0.1, 0.5)), 3)
            else:
                values["loss"] = float(
                    f"{math.exp(rng.uniform(math.log(1e-3), math.log(5e-2))):.3g}"
                )
        elif kind is FaultKind.FLAPPING_LINK:
            values["flaps"] = float(rng.integers(1, 5))
    elif kind is FaultKind.SLOW_NIC_PORT:
        host = int(rng.integers(t.plan.hosts))
        port = int(rng.integers(fabric.host_ports))
        target = ":".join(fabric.endpoint(host, port))
        values["rate"] = round(float(rng.uniform(0.05, 0.2)), 3)
    elif kind is FaultKind.DEAD_EV:
        # a switch on the path of one of the default probe streams, with that stream's EV: a
        # switch hashes only the EV, so some (switch, EV) pairs carry no probe at all
        p_src, p_dst, p_port, p_ev = probe_streams(fabric)
        k = int(rng.integers(p_src.size))
        one = slice(k, k + 1)
        path = fabric.paths(p_src[one], p_dst[one], p_port[one], p_ev[one])[0]
        hops = path[path >= 0]
        to = np.where(hops % 2 == 0, t.link_dst[hops // 2], t.link_src[hops // 2])
        nodes = to[to >= t.plan.hosts]
        node = int(nodes[rng.integers(nodes.size)])
        target = f"{fabric.names.devices[node]}#{int(p_ev[k])}"
    elif kind is FaultKind.MIS_HASHED_SWITCH:
        nodes = np.flatnonzero(t.node_role >= _ROLE_LEAF)
        ups = np.array([uplinks(fabric, int(n)).size for n in nodes])
        nodes = nodes[ups >= 2]
        if nodes.size == 0:
            raise SpecError([Problem(where, "the design has no switch with two uplinks")])
        node = int(nodes[rng.integers(nodes.size)])
        target = str(fabric.names.devices[node])
        values["share"] = round(float(rng.uniform(0.6, 0.95)), 3)
    elif kind is FaultKind.CONGESTED_SPINE:
        nodes = np.flatnonzero(t.node_role == _ROLE_SPINE)
        if nodes.size == 0:
            raise SpecError([Problem(where, "the design has no spine")])
        node = int(nodes[rng.integers(nodes.size)])
        target = str(fabric.names.devices[node])
        values["load"] = round(float(rng.uniform(0.3, 0.8)), 3)
    else:
        target = f"rank:{int(rng.integers(t.plan.hosts))}"
        values["delay"] = round(float(rng.uniform(2.0, 20.0)), 3) * 1000.0
    return make_fault(kind, target, start, None, values, where)


def shifted(fault: Fault, offset_ms: int) -> Fault:
    """``fault`` with its times moved by ``offset_ms`` (offsets to epoch milliseconds)."""
    return replace(
        fault,
        start_ms=fault.start_ms + offset_ms,
        end_ms=None if fault.end_ms is None else fault.end_ms + offset_ms,
    )
