"""Two designs compared from the files ``design -o`` wrote: what building B instead of A means.

Every category is matched by name, never by position in a file (``docs/assist.md``):

- **bill of materials**: ``bom.csv`` lines by (fabric, tier, category, item, length), quantity,
  cost in cents and power in milliwatts, so a total is the sum of its lines and a delta exact;
- **devices** by name (``netbox/devices.csv``, else the node-link files): added, removed, and
  changed (another device type, rack or rack unit);
- **links** by their two ends (device:port, order-free; ``cabling/cut_sheet.csv``, else the
  node-link files): added, removed, and **re-cabled**: the same two ends but another route,
  the notion of growth's "re-pulled" (``growth/rework.py``): another rack at either end, another
  medium, ordered length or frame pair;
- **racks** by what they hold (``placement/racks.csv``; a rack's name is its floor position):
  added, removed and moved (another position);
- **fibres pulled**: the cables B pulls that A has not (its added and re-cabled links), count and
  metres by medium; **fibres recovered** the same for A's cables B takes out;
- **findings** (``design.json``) by severity, code and object: appear in B or clear from A;
- **performance**: when both runs carry a prediction (``simulation/``), per transport the p99
  flow completion time, the completion time and the flows finished, in A and B;
- **blast radius**: the racks, fabrics and planes whose links, devices or racks change, and the
  spec's job when a change touches an accelerator (a spec without a job: none).

:meth:`DesignDiff.inverse` is the diff read the other way (added and removed swapped, every
``a`` and ``b`` swapped, so every delta negated): ``diff_designs(b, a) == diff_designs(a,
b).inverse()``. :attr:`DesignDiff.empty` holds when nothing differs.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from clusterloom.errors import Problem, SpecError
from clusterloom.export.naming import parse_switch_name

__all__ = [
    "BomLine",
    "DesignDiff",
    "DeviceChange",
    "FindingKey",
    "LinkChange",
    "LinkRoute",
    "Performance",
    "Pulls",
    "RackMove",
    "RunFiles",
    "diff_designs",
    "read_run",
    "reads",
]


@dataclass(frozen=True, order=True)
class LinkRoute:
    """How one link is cabled: what makes its cable the same or another pull."""

    a_rack: str = ""
    b_rack: str = ""
    medium: str = ""
    #: ordered length in millimetres (the cut sheet's ``order_m``), 0 when not cabled
    order_mm: int = 0
    frames: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "a_rack": self.a_rack,
            "b_rack": self.b_rack,
            "medium": self.medium,
            "order_m": self.order_mm / 1000,
            "frames": self.frames,
        }


@dataclass(frozen=True, order=True)
class Link:
    """One link: its two ends ``device:port~device:port`` (the lesser end first), fabric,
    plane (-1 for none) and route."""

    ends: str
    fabric: str
    plane: int
    route: LinkRoute

    def to_json(self) -> dict[str, Any]:
        return {"ends": self.ends, "fabric": self.fabric, "plane": self.plane} | {
            "route": self.route.to_json()
        }


@dataclass(frozen=True, order=True)
class LinkChange:
    """A link of both designs with another route: re-cabled."""

    ends: str
    fabric: str
    plane: int
    a: LinkRoute
    b: LinkRoute

    def inverse(self) -> LinkChange:
        return replace(self, a=self.b, b=self.a)

    def to_json(self) -> dict[str, Any]:
        return {"ends": self.ends, "fabric": self.fabric, "plane": self.plane} | {
            "a": self.a.to_json(),
            "b": self.b.to_json(),
        }


@dataclass(frozen=True, order=True)
class Device:
    name: str
    device_type: str = ""
    rack: str = ""
    position: str = ""


@dataclass(frozen=True, order=True)
class DeviceChange:
    """A device of both designs with another type, rack or rack unit."""

    name: str
    a: Device
    b: Device

    def inverse(self) -> DeviceChange:
        return replace(self, a=self.b, b=self.a)


@dataclass(frozen=True, order=True)
class Rack:
    holds: str
    rack: str
    hall: str = ""
    row: str = ""


@dataclass(frozen=True, order=True)
class RackMove:
    """A rack (by what it holds) on another floor position."""

    holds: str
    a: Rack
    b: Rack

    def inverse(self) -> RackMove:
        return replace(self, a=self.b, b=self.a)


@dataclass(frozen=True, order=True)
class BomLine:
    """One BOM line that differs: its key, and quantity, cost (cents), power (mW) of each side."""

    key: tuple[str, str, str, str, str]
    quantity_a: int
    quantity_b: int
    cost_cents_a: int
    cost_cents_b: int
    power_mw_a: int
    power_mw_b: int

    def inverse(self) -> BomLine:
        return BomLine(
            self.key,
            self.quantity_b,
            self.quantity_a,
            self.cost_cents_b,
            self.cost_cents_a,
            self.power_mw_b,
            self.power_mw_a,
        )

    def to_json(self) -> dict[str, Any]:
        fabric, tier, category, item, length = self.key
        out: dict[str, Any] = {
            "fabric": fabric,
            "tier": tier,
            "category": category,
            "item": item,
            "length_m": float(length) if length else None,
        }
        out |= {
            "quantity_a": self.quantity_a,
            "quantity_b": self.quantity_b,
            "quantity_delta": self.quantity_b - self.quantity_a,
            "cost_usd_a": self.cost_cents_a / 100,
            "cost_usd_b": self.cost_cents_b / 100,
            "cost_usd_delta": (self.cost_cents_b - self.cost_cents_a) / 100,
            "power_w_delta": (self.power_mw_b - self.power_mw_a) / 1000,
        }
        return out


@dataclass(frozen=True, order=True)
class Pulls:
    """Cables of one medium pulled (or recovered): how many and their ordered metres (mm)."""

    medium: str
    cables: int
    order_mm: int

    def to_json(self) -> dict[str, Any]:
        return {"medium": self.medium, "cables": self.cables, "metres": self.order_mm / 1000}


@dataclass(frozen=True, order=True)
class FindingKey:
    """A finding by severity, code and object; its message kept to be shown."""

    severity: str
    code: str
    where: str
    message: str = ""

    def to_json(self) -> dict[str, str]:
        return {
            "severity": self.severity,
            "code": self.code,
            "where": self.where,
            "message": self.message,
        }


#: per transport: the figures of ``store.summary.run_summary`` (``fct_p99_us``,
#: ``completion_ms``, ``finished``, ``total`` ...); None: not simulated
Simulated = dict[str, dict[str, float | int | None]]
#: what reads a run's ``simulation/`` directory into :data:`Simulated` (the caller's: the
#: command line and the store pass ``store.summary.run_summary``; this part imports no store)
Summarize = Callable[[Path], Simulated]


@dataclass(frozen=True, order=True)
class Performance:
    """One transport's predicted figures in A and B (None where that side lacks them)."""

    transport: str
    fct_p99_us: tuple[float | None, float | None]
    completion_ms: tuple[float | None, float | None]
    finished: tuple[int | None, int | None]

    @property
    def changed(self) -> bool:
        return (
            self.fct_p99_us[0] != self.fct_p99_us[1]
            or self.completion_ms[0] != self.completion_ms[1]
            or self.finished[0] != self.finished[1]
        )

    def inverse(self) -> Performance:
        return Performance(
            self.transport,
            self.fct_p99_us[::-1],
            self.completion_ms[::-1],
            self.finished[::-1],
        )

    def to_json(self) -> dict[str, Any]:
        def pair(v: tuple[Any, Any]) -> dict[str, Any]:
            delta = None if None in v else round(v[1] - v[0], 6)
            return {"a": v[0], "b": v[1], "delta": delta}

        return {
            "transport": self.transport,
            "fct_p99_us": pair(self.fct_p99_us),
            "completion_ms": pair(self.completion_ms),
            "finished": pair(self.finished),
        }


@dataclass(frozen=True)
class RunFiles:
    """What one design's files say, read once (:func:`read_run`)."""

    source: str
    bom: dict[tuple[str, str, str, str, str], tuple[int, int, int]]
    devices: dict[str, Device]
    links: dict[str, Link]
    racks: dict[str, Rack]
    findings: dict[tuple[str, str, str], FindingKey]
    #: the name of the spec's job (its model), "" without a job
    job: str
    #: what the links were read from: "cut sheet", "node-link" or "" (none)
    links_from: str
    #: what the BOM is based on (its total line's label: as cabled, or an estimate)
    bom_basis: str = ""
    #: the prediction the run carries (its ``simulation/``), None: not simulated
    simulated: Simulated | None = None


@dataclass(frozen=True)
class DesignDiff:
    """B against A (deltas are b - a); every tuple sorted, so equal diffs are equal."""

    a: str
    b: str
    bom: tuple[BomLine, ...]
    #: totals over every line (cents, milliwatts) of each side
    cost_cents: tuple[int, int]
    power_mw: tuple[int, int]
    devices_added: tuple[str, ...]
    devices_removed: tuple[str, ...]
    devices_changed: tuple[DeviceChange, ...]
    links_added: tuple[Link, ...]
    links_removed: tuple[Link, ...]
    links_recabled: tuple[LinkChange, ...]
    racks_added: tuple[Rack, ...]
    racks_removed: tuple[Rack, ...]
    racks_moved: tuple[RackMove, ...]
    fibres_pulled: tuple[Pulls, ...]
    fibres_recovered: tuple[Pulls, ...]
    findings_appear: tuple[FindingKey, ...]
    findings_clear: tuple[FindingKey, ...]
    blast_racks: tuple[str, ...]
    blast_planes: tuple[str, ...]
    blast_jobs: tuple[str, ...]
    #: per transport of either side, when both were simulated; else empty (see notes)
    performance: tuple[Performance, ...] = ()
    #: what a reader must know: links not compared, no job in the spec ...
    notes: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        """Nothing differs: no BOM line, device, link, rack, finding or predicted figure."""
        return not (
            self.bom
            or self.devices_added
            or self.devices_removed
            or self.devices_changed
            or self.links_added
            or self.links_removed
            or self.links_recabled
            or self.racks_added
            or self.racks_removed
            or self.racks_moved
            or self.findings_appear
            or self.findings_clear
            or any(p.changed for p in self.performance)
        )

    @property
    def new_errors(self) -> tuple[FindingKey, ...]:
        """Error findings of B that A had not."""
        return tuple(f for f in self.findings_appear if f.severity == "error")

    def inverse(self) -> DesignDiff:
        """The same comparison read from B to A."""
        return replace(
            self,
            a=self.b,
            b=self.a,
            bom=tuple(sorted(x.inverse() for x in self.bom)),
            cost_cents=(self.cost_cents[1], self.cost_cents[0]),
            power_mw=(self.power_mw[1], self.power_mw[0]),
            devices_added=self.devices_removed,
            devices_removed=self.devices_added,
            devices_changed=tuple(x.inverse() for x in self.devices_changed),
            links_added=self.links_removed,
            links_removed=self.links_added,
            links_recabled=tuple(x.inverse() for x in self.links_recabled),
            racks_added=self.racks_removed,
            racks_removed=self.racks_added,
            racks_moved=tuple(x.inverse() for x in self.racks_moved),
            fibres_pulled=self.fibres_recovered,
            fibres_recovered=self.fibres_pulled,
            findings_appear=self.findings_clear,
            findings_clear=self.findings_appear,
            performance=tuple(x.inverse() for x in self.performance),
        )

    def counts(self) -> dict[str, int]:
        """How many of each kind changed (the terminal's and the explorer's summary)."""
        return {
            "bom_lines": len(self.bom),
            "devices_added": len(self.devices_added),
            "devices_removed": len(self.devices_removed),
            "devices_changed": len(self.devices_changed),
            "links_added": len(self.links_added),
            "links_removed": len(self.links_removed),
            "links_recabled": len(self.links_recabled),
            "racks_added": len(self.racks_added),
            "racks_removed": len(self.racks_removed),
            "racks_moved": len(self.racks_moved),
            "findings_appear": len(self.findings_appear),
            "findings_clear": len(self.findings_clear),
        }

    def to_dict(self) -> dict[str, Any]:
        """Plain data, every list sorted: what ``--json`` prints."""

        def rack(r: Rack) -> dict[str, str]:
            return {"holds": r.holds, "rack": r.rack, "hall": r.hall, "row": r.row}

        def device(d: Device) -> dict[str, str]:
            return {"device_type": d.device_type, "rack": d.rack, "position": d.position}

        return {
            "a": self.a,
            "b": self.b,
            "empty": self.empty,
            "counts": self.counts(),
            "bom": {
                "lines": [x.to_json() for x in self.bom],
                "cost_usd": {
                    "a": self.cost_cents[0] / 100,
                    "b": self.cost_cents[1] / 100,
                    "delta": (self.cost_cents[1] - self.cost_cents[0]) / 100,
                },
                "power_w": {
                    "a": self.power_mw[0] / 1000,
                    "b": self.power_mw[1] / 1000,
                    "delta": (self.power_mw[1] - self.power_mw[0]) / 1000,
                },
            },
            "devices": {
                "added": list(self.devices_added),
                "removed": list(self.devices_removed),
                "changed": [
                    {"name": c.name, "a": device(c.a), "b": device(c.b)}
                    for c in self.devices_changed
                ],
            },
            "links": {
                "added": [x.to_json() for x in self.links_added],
                "removed": [x.to_json() for x in self.links_removed],
                "recabled": [x.to_json() for x in self.links_recabled],
            },
            "racks": {
                "added": [rack(r) for r in self.racks_added],
                "removed": [rack(r) for r in self.racks_removed],
                "moved": [
                    {"holds": m.holds, "a": rack(m.a), "b": rack(m.b)} for m in self.racks_moved
                ],
            },
            "fibres": {
                "pulled": [x.to_json() for x in self.fibres_pulled],
                "recovered": [x.to_json() for x in self.fibres_recovered],
            },
            "findings": {
                "appear": [x.to_json() for x in self.findings_appear],
                "clear": [x.to_json() for x in self.findings_clear],
            },
            "blast_radius": {
                "racks": list(self.blast_racks),
                "planes": list(self.blast_planes),
                "jobs": list(self.blast_jobs),
            },
            "performance": [x.to_json() for x in self.performance],
            "notes": list(self.notes),
        }

    def to_json(self) -> str:
        """Deterministic JSON (sorted keys, one line per level): same designs, same bytes."""
        return json.dumps(self.to_dict(), indent=1, sort_keys=True) + "\n"


# --- reading one run -------------------------------------------------------------------


def _rows(path: Path) -> list[dict[str, str]]:
    try:
        with open(path, newline="") as fh:
            return list(csv.DictReader(fh))
    except (OSError, csv.Error, UnicodeDecodeError) as exc:
        raise SpecError([Problem(str(path), f"cannot read it: {exc}")]) from exc


def _int_scaled(value: str, scale: int, where: str) -> int:
    try:
        return round(float(value or 0) * scale)
    except ValueError:
        raise SpecError([Problem(where, f"not a number: {value[:40]!r}")]) from None


def _bom(run: Path) -> tuple[dict[tuple[str, str, str, str, str], tuple[int, int, int]], str]:
    """The lines by key (quantity, cents, milliwatts) and what the BOM is based on."""
    out: dict[tuple[str, str, str, str, str], tuple[int, int, int]] = {}
    basis = ""
    for i, r in enumerate(_rows(run / "bom.csv")):
        if r["category"] == "total":  # the file's own sum of its lines: not a line
            basis = r["item"]
            continue
        key = (r["fabric"], r["tier"], r["category"], r["item"], r["length_m"])
        where = f"{run / 'bom.csv'}:{i + 2}"
        q, c, p = out.get(key, (0, 0, 0))
        out[key] = (
            q + _int_scaled(r["quantity"], 1, where),
            c + _int_scaled(r["cost_usd"], 100, where),
            p + _int_scaled(r["power_w"], 1000, where),
        )
    return out, basis


def _plane(*devices: str) -> int:
    for d in devices:
        try:
            return parse_switch_name(d)[1]
        except ValueError:
            continue
    return -1


def _ends(a: str, b: str) -> str:
    return "~".join(sorted((a, b)))


def _links_cut_sheet(path: Path) -> dict[str, Link]:
    out: dict[str, Link] = {}
    for i, r in enumerate(_rows(path)):
        a, b = f"{r['a_device']}:{r['a_port']}", f"{r['b_device']}:{r['b_port']}"
        racks = (r["a_rack"], r["b_rack"]) if a <= b else (r["b_rack"], r["a_rack"])
        frames = sorted(f for f in (r.get("a_frame", ""), r.get("b_frame", "")) if f)
        route = LinkRoute(
            racks[0],
            racks[1],
            r["medium"],
            _int_scaled(r.get("order_m", "") or r["length_m"], 1000, f"{path}:{i + 2}"),
            "~".join(frames),
        )
        out[_ends(a, b)] = Link(
            _ends(a, b), r["fabric"], _plane(r["a_device"], r["b_device"]), route
        )
    return out


def _nodelink(run: Path) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted(run.glob("*.nodelink.json")):
        try:
            out.append((path.name.removesuffix(".nodelink.json"), json.loads(path.read_text())))
        except (OSError, ValueError) as exc:
            raise SpecError([Problem(str(path), f"cannot read it: {exc}")]) from exc
    return out


def _links_nodelink(graphs: list[tuple[str, dict[str, Any]]]) -> dict[str, Link]:
    out: dict[str, Link] = {}
    for fabric, data in graphs:
        device = {int(n["id"]): str(n.get("device", n.get("name", ""))) for n in data["nodes"]}
        for link in data["links"]:
            a = f"{device[int(link['source'])]}:{link['src_port']}"
            b = f"{device[int(link['target'])]}:{link['dst_port']}"
            out[_ends(a, b)] = Link(_ends(a, b), fabric, int(link.get("plane", -1)), LinkRoute())
    return out


def _devices(run: Path, graphs: list[tuple[str, dict[str, Any]]]) -> dict[str, Device]:
    path = run / "netbox" / "devices.csv"
    if path.is_file():
        return {
            r["name"]: Device(r["name"], r["device_type"], r["rack"], r["position"])
            for r in _rows(path)
        }
    names = {str(n.get("device", "")) for _, data in graphs for n in data["nodes"]}
    return {n: Device(n) for n in sorted(names) if n}


def _racks(run: Path) -> dict[str, Rack]:
    path = run / "placement" / "racks.csv"
    if not path.is_file():
        return {}
    return {
        r["holds"]: Rack(r["holds"], r["rack"], f"{r['building']}/{r['hall']}", r["row"])
        for r in _rows(path)
    }


def _findings(doc: dict[str, Any]) -> dict[tuple[str, str, str], FindingKey]:
    out: dict[tuple[str, str, str], FindingKey] = {}
    for f in doc.get("findings", []):
        key = (str(f["severity"]), str(f["code"]), str(f.get("where", "")))
        out.setdefault(key, FindingKey(*key, str(f.get("message", ""))))
    return out


#: the files :func:`read_run` reads, by their names in a run directory
READS = frozenset(
    {
        "design.json",
        "bom.csv",
        "cabling/cut_sheet.csv",
        "placement/racks.csv",
        "netbox/devices.csv",
    }
)


def reads(name: str) -> bool:
    """Whether :func:`read_run` reads the run's file ``name`` (a relative POSIX path): what a
    copy of a stored design needs (``Store.materialize(..., keep=reads)``)."""
    return (
        name in READS
        or ("/" not in name and name.endswith(".nodelink.json"))
        or name.startswith("simulation/")
    )


def read_run(run: Path, source: str | None = None, summarize: Summarize | None = None) -> RunFiles:
    """One design's files, from the directory ``design -o`` wrote; ``SpecError`` naming the
    directory when it is not one. With ``summarize``, its ``simulation/`` (when it has one)
    read into per-transport figures."""
    run = Path(run)
    if not (run / "design.json").is_file() or not (run / "bom.csv").is_file():
        raise SpecError(
            [Problem(str(run), "not a design run: no design.json and bom.csv (give `design -o`)")]
        )
    try:
        doc = json.loads((run / "design.json").read_text())
    except (OSError, ValueError) as exc:
        raise SpecError([Problem(str(run / "design.json"), f"cannot read it: {exc}")]) from exc
    graphs = _nodelink(run)
    cut = run / "cabling" / "cut_sheet.csv"
    links, links_from = (
        (_links_cut_sheet(cut), "cut sheet")
        if cut.is_file()
        else (_links_nodelink(graphs), "node-link" if graphs else "")
    )
    job = (doc.get("spec") or {}).get("job") or {}
    bom, basis = _bom(run)
    return RunFiles(
        source or str(run),
        bom,
        _devices(run, graphs),
        links,
        _racks(run),
        _findings(doc),
        str((job.get("model") or {}).get("name", "job")) if job else "",
        links_from,
        basis,
        _simulated(run, summarize),
    )


def _simulated(run: Path, summarize: Summarize | None) -> Simulated | None:
    sim = run / "simulation"
    if summarize is None or not (sim / "groups.parquet").is_file():
        return None
    return summarize(sim)


# --- comparing two ---------------------------------------------------------------------


def _bom_lines(a: RunFiles, b: RunFiles) -> tuple[BomLine, ...]:
    lines = []
    for key in sorted(set(a.bom) | set(b.bom)):
        qa, ca, pa = a.bom.get(key, (0, 0, 0))
        qb, cb, pb = b.bom.get(key, (0, 0, 0))
        if (qa, ca, pa) != (qb, cb, pb):
            lines.append(BomLine(key, qa, qb, ca, cb, pa, pb))
    return tuple(lines)


def _pulls(links: list[Link]) -> tuple[Pulls, ...]:
    by: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for link in links:
        if link.route.medium:
            by[link.route.medium][0] += 1
            by[link.route.medium][1] += link.route.order_mm
    return tuple(Pulls(m, n, mm) for m, (n, mm) in sorted(by.items()))


def _blast(
    a: RunFiles,
    b: RunFiles,
    links: list[Link],
    devices: list[str],
    racks: list[str],
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    touched_racks = set(racks)
    planes: set[str] = set()
    hosts = False
    for link in links:
        touched_racks |= {r for r in (link.route.a_rack, link.route.b_rack) if r}
        planes.add(link.fabric if link.plane < 0 else f"{link.fabric} plane {link.plane}")
        hosts = hosts or link.ends.startswith("node") or "~node" in link.ends
    for name in devices:
        for side in (a, b):
            if name in side.devices and side.devices[name].rack:
                touched_racks.add(side.devices[name].rack)
        hosts = hosts or name.startswith("node")
    jobs = {j for j in (a.job, b.job) if j} if hosts else set()
    return tuple(sorted(touched_racks)), tuple(sorted(planes)), tuple(sorted(jobs))


def _num(v: object) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _performance(a: RunFiles, b: RunFiles) -> tuple[Performance, ...]:
    if a.simulated is None or b.simulated is None:
        return ()
    out = []
    for t in sorted(set(a.simulated) | set(b.simulated)):
        fa, fb = a.simulated.get(t, {}), b.simulated.get(t, {})
        finished = tuple(None if (v := f.get("finished")) is None else int(v) for f in (fa, fb))
        out.append(
            Performance(
                t,
                (_num(fa.get("fct_p99_us")), _num(fb.get("fct_p99_us"))),
                (_num(fa.get("completion_ms")), _num(fb.get("completion_ms"))),
                (finished[0], finished[1]),
            )
        )
    return tuple(out)


def _notes(a: RunFiles, b: RunFiles) -> tuple[str, ...]:
    """What a reader must know; the same read either way (so the inverse keeps them)."""
    notes = []
    if not a.links_from and not b.links_from:
        notes.append("links: neither design wrote any (no cut sheet, no node-link files)")
    elif not a.links_from == b.links_from == "cut sheet":
        notes.append("links: not both designs are cabled, so routes are not compared")
    if a.bom_basis != b.bom_basis:
        bases = " and ".join(sorted({a.bom_basis, b.bom_basis}))
        notes.append(f"bill of materials: the two are not on one basis ({bases})")
    if not a.job and not b.job:
        notes.append("jobs: none (neither spec has a job)")
    if a.simulated is None or b.simulated is None:
        notes.append("performance: not simulated (both designs need a simulation/)")
    return tuple(notes)


def diff_designs(a: RunFiles, b: RunFiles) -> DesignDiff:
    """B against A, from the two designs' files (:func:`read_run`)."""
    cabled = bool(a.links_from == b.links_from == "cut sheet")
    common = sorted(set(a.links) & set(b.links))
    recabled = tuple(
        LinkChange(k, b.links[k].fabric, b.links[k].plane, a.links[k].route, b.links[k].route)
        for k in common
        if cabled and a.links[k].route != b.links[k].route
    )
    added = tuple(b.links[k] for k in sorted(set(b.links) - set(a.links)))
    removed = tuple(a.links[k] for k in sorted(set(a.links) - set(b.links)))
    dev_changed = tuple(
        DeviceChange(n, a.devices[n], b.devices[n])
        for n in sorted(set(a.devices) & set(b.devices))
        if a.devices[n] != b.devices[n]
    )
    dev_added = tuple(sorted(set(b.devices) - set(a.devices)))
    dev_removed = tuple(sorted(set(a.devices) - set(b.devices)))
    moved = tuple(
        RackMove(h, a.racks[h], b.racks[h])
        for h in sorted(set(a.racks) & set(b.racks))
        if a.racks[h] != b.racks[h]
    )
    racks_added = tuple(b.racks[h] for h in sorted(set(b.racks) - set(a.racks)))
    racks_removed = tuple(a.racks[h] for h in sorted(set(a.racks) - set(b.racks)))
    touched_links = [*added, *removed]
    touched_links += [b.links[c.ends] for c in recabled] + [a.links[c.ends] for c in recabled]
    touched_racks = [r.rack for r in (*racks_added, *racks_removed)]
    touched_racks += [m.a.rack for m in moved] + [m.b.rack for m in moved]
    blast = _blast(
        a,
        b,
        touched_links,
        [*dev_added, *dev_removed, *(c.name for c in dev_changed)],
        touched_racks,
    )
    return DesignDiff(
        a=a.source,
        b=b.source,
        bom=_bom_lines(a, b),
        cost_cents=(sum(v[1] for v in a.bom.values()), sum(v[1] for v in b.bom.values())),
        power_mw=(sum(v[2] for v in a.bom.values()), sum(v[2] for v in b.bom.values())),
        devices_added=dev_added,
        devices_removed=dev_removed,
        devices_changed=dev_changed,
        links_added=added,
        links_removed=removed,
        links_recabled=recabled,
        racks_added=racks_added,
        racks_removed=racks_removed,
        racks_moved=moved,
        fibres_pulled=_pulls([*added, *(b.links[c.ends] for c in recabled)]),
        fibres_recovered=_pulls([*removed, *(a.links[c.ends] for c in recabled)]),
        findings_appear=tuple(b.findings[k] for k in sorted(set(b.findings) - set(a.findings))),
        findings_clear=tuple(a.findings[k] for k in sorted(set(a.findings) - set(b.findings))),
        blast_racks=blast[0],
        blast_planes=blast[1],
        blast_jobs=blast[2],
        performance=_performance(a, b),
        notes=_notes(a, b),
    )
