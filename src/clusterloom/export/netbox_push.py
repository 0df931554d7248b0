"""Push a design's NetBox files straight into a NetBox through its REST API (``pynetbox``).

:func:`push` reads the files ``clusterloom design -o OUTDIR`` wrote in ``OUTDIR/netbox`` (the
same objects as the CSV import) in :data:`~clusterloom.export.netbox_setup.IMPORT_ORDER` and
makes NetBox hold them: every object is looked up by its natural key (custom fields, sites,
roles, manufacturers and bundles by name; locations, racks and devices by site and name; device
types by manufacturer and model, their component templates by device type and name; cables by
their two ends), created when missing and updated only in the fields that differ. A second push
changes nothing. The counts created / updated / unchanged / tagged / deleted are returned per
object type.

Devices, racks and cables carry the tag ``clusterloom`` (other tags a user set are kept), and
the site the design's spec and fabrics (custom field ``clusterloom_design``), so that
``--installed URL`` reads the NetBox back as the installed baseline (``growth/netbox.py``).
A grown design pushed in place (names are stable): a cable the design no longer has but whose
port a new cable takes is moved to the new ends (updated: its terminations change), one whose
ports the design re-uses otherwise is deleted (NetBox holds one cable per port); every other
clusterloom device, rack and cable of the site the design no longer has is tagged
``clusterloom-removed`` and left, or deleted with ``delete_removed`` (cables, then devices with
their interfaces, then racks).

Everything NetBox refuses is raised as one :class:`~clusterloom.errors.NetBoxError` with one
problem per object; the push stops after the step that failed (later steps refer to it).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from clusterloom.errors import NetBoxError, Problem
from clusterloom.export.netbox_setup import IMPORT_ORDER

#: Objects created or updated per request.
CHUNK = 250
#: The tag of every device, rack and cable a push makes, the tag of those a later push's
#: design no longer has, and the site's custom field holding the design (:func:`design_record`).
OURS = "clusterloom"
REMOVED = "clusterloom-removed"
DESIGN_FIELD = "clusterloom_design"

Key = Any
Row = dict[str, str]


@dataclass
class Tally:
    """What a push did to one object type."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    #: tagged ``clusterloom-removed`` by this push, and deleted (``--delete-removed``, or a
    #: removed cable on a port the design re-uses)
    tagged: int = 0
    deleted: int = 0


def _rows(path: Path) -> list[Row]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _none(value: str) -> str | None:
    return value if value != "" else None


def _num(value: str) -> float | None:
    return float(value) if value != "" else None


def _same(have: Any, want: Any) -> bool:
    if want in ("", None):
        return have in ("", None)
    if isinstance(want, dict):
        have = have if isinstance(have, dict) else {}
        return all(_same(have.get(k), v) for k, v in want.items())
    if isinstance(want, list) and want and all(isinstance(w, dict) for w in want):
        # a JSON value's list of objects (NetBox keeps its order, not its objects' key order)
        return isinstance(have, list) and len(have) == len(want) and all(map(_same, have, want))
    if isinstance(want, list):
        return isinstance(have, list) and sorted(map(str, have)) == sorted(map(str, want))
    if isinstance(want, bool) or isinstance(have, bool):
        return bool(have) == bool(want)
    if isinstance(want, int | float):
        try:
            return float(have) == float(want)
        except (TypeError, ValueError):
            return False
    return bool(str(have) == str(want))


def _refusal(exc: Exception) -> list[Any]:
    """NetBox's answer to a refused request: a list (bulk) or one dict of field errors."""
    req = getattr(exc, "req", None)
    try:
        body = req.json() if req is not None else None
    except ValueError:
        body = None
    if isinstance(body, list):
        return body
    if body is not None:
        return [body]
    if req is not None:
        return [f"HTTP {req.status_code} {req.reason}"]
    return [str(getattr(exc, "error", exc))]


def _say(error: Any) -> str:
    if isinstance(error, dict):
        parts = []
        for field, msgs in error.items():
            text = "; ".join(map(str, msgs)) if isinstance(msgs, list) else json.dumps(msgs)
            parts.append(
                text if field in ("__all__", "non_field_errors", "detail") else f"{field}: {text}"
            )
        return "; ".join(parts)
    return str(error).splitlines()[0][:300] if str(error) else "refused"


class Pusher:
    """One push into the NetBox behind ``api`` (a ``pynetbox.api``)."""

    def __init__(self, api: Any) -> None:
        self.api = api
        self.report: dict[str, Tally] = {}
        self.problems: list[Problem] = []
        self.ids: dict[str, dict[Key, int]] = {}
        #: (port type, (site, device), port name) -> id, read once per port type and site
        self.ports: dict[tuple[str, tuple[str, str], str], int] = {}
        self.ports_of: set[tuple[str, int]] = set()
        self.cables_of: dict[tuple[int, ...], dict[Key, dict[str, Any]]] = {}
        #: the two tags' ids; per kind with removals, what NetBox has and the keys pushed
        self.tag: dict[str, int] = {}
        self.have: dict[str, dict[Key, dict[str, Any]]] = {}
        self.wanted: dict[str, set[Key]] = {}

    # -- the one loop every object type goes through ---------------------------------------

    def _call(self, what: str, fn: Callable[[], Any]) -> Any:
        import pynetbox
        import requests

        try:
            return fn()
        except pynetbox.RequestError as exc:
            req = exc.req
            if req.status_code in (401, 403):
                raise NetBoxError(
                    [Problem(what, f"NetBox refused the token: {_say(_refusal(exc)[0])}")]
                ) from None
            raise
        except requests.RequestException as exc:
            raise NetBoxError(
                [Problem(what, f"cannot reach NetBox at {self.api.base_url}: {type(exc).__name__}")]
            ) from None
        except pynetbox.ContentError as exc:
            raise NetBoxError(
                [Problem(what, f"{self.api.base_url} does not answer as NetBox's API: {exc}")]
            ) from None

    def fetch(
        self, kind: str, endpoint: Any, key: Callable[[dict[str, Any]], Key], **query: Any
    ) -> dict[Key, dict[str, Any]]:
        if query and any(isinstance(v, list) and not v for v in query.values()):
            return {}
        import pynetbox

        try:
            found = self._call(
                kind, lambda: list(endpoint.filter(**query) if query else endpoint.all())
            )
        except pynetbox.RequestError as exc:
            raise NetBoxError(
                [Problem(kind, f"NetBox refused to list them: {_say(_refusal(exc)[0])}")]
            ) from None
        out = {}
        for rec in found:
            d = rec.serialize()
            d["id"] = rec.id
            out[key(d)] = d
        return out

    def sync(
        self,
        kind: str,
        endpoint: Any,
        have: dict[Key, dict[str, Any]],
        want: Iterable[tuple[Key, str, dict[str, Any]]],
        *,
        fixed: tuple[str, ...] = (),
    ) -> dict[Key, int]:
        """Make NetBox hold ``want`` (key, label, payload); ``fixed`` fields are set on creation
        only. The ids of every wanted key."""
        tally = self.report.setdefault(kind, Tally())
        ids: dict[Key, int] = {}
        creates: list[tuple[Key, str, dict[str, Any]]] = []
        updates: list[tuple[str, dict[str, Any]]] = []
        for k, label, payload in want:
            rec = have.get(k)
            if "tags" in payload:
                payload = {**payload, "tags": self._tags(rec)}
            if rec is None:
                creates.append((k, label, payload))
                continue
            ids[k] = rec["id"]
            diff = {f: v for f, v in payload.items() if f not in fixed and not _same(rec.get(f), v)}
            if diff:
                updates.append((label, {"id": rec["id"], **diff}))
            else:
                tally.unchanged += 1

        failed = False
        for i in range(0, len(creates), CHUNK):
            chunk = creates[i : i + CHUNK]
            made = self._apply(kind, "create", endpoint.create, [(lb, p) for _, lb, p in chunk])
            for (k, _, _), rec in zip(chunk, made, strict=True):
                if rec is None:
                    failed = True
                    continue
                ids[k] = rec.id
                tally.created += 1
        for i in range(0, len(updates), CHUNK):
            done = self._apply(kind, "update", endpoint.update, updates[i : i + CHUNK])
            failed |= None in done
            tally.updated += sum(1 for d in done if d is not None)
        if failed:
            raise NetBoxError(self.problems)
        return ids

    def _tags(self, rec: dict[str, Any] | None) -> list[int]:
        """The tags of a pushed object: its own (a user's kept), ``clusterloom``, not removed."""
        have = set() if rec is None else {int(t) for t in rec.get("tags") or []}
        return sorted((have - {self.tag[REMOVED]}) | {self.tag[OURS]})

    def _apply(
        self, kind: str, verb: str, op: Callable[[list[Any]], Any], items: list[tuple[str, Any]]
    ) -> list[Any]:
        """``op`` (a bulk create or update) on the payloads of ``items`` (label, payload): per
        item, what NetBox answered, or None when it refused (recorded in ``problems``). When
        NetBox's refusal of a bulk request does not say which object, each is sent alone."""
        import pynetbox

        try:
            done = self._call(kind, partial(op, [p for _, p in items]))
        except pynetbox.RequestError as exc:
            errors = _refusal(exc)
            if len(items) > 1 and len(errors) != len(items):
                return [x for item in items for x in self._apply(kind, verb, op, [item])]
            for (label, _), error in zip(items, errors, strict=False):
                if error or len(items) == 1:
                    self.problems.append(
                        Problem(f"{kind} {label}", f"NetBox refused to {verb} it: {_say(error)}")
                    )
            return [None] * len(items)
        return list(done) if isinstance(done, list) else [True] * len(items)

    # -- the steps -------------------------------------------------------------------------

    def named(self, kind: str, endpoint: Any, rows: list[Row], fields: tuple[str, ...]) -> None:
        have = self.fetch(kind, endpoint, lambda d: d["name"])
        want = ((r["name"], r["name"], {f: r[f] for f in ("name", *fields)}) for r in rows)
        self.ids.setdefault(kind, {}).update(self.sync(kind, endpoint, have, want))

    def custom_fields(self, rows: list[Row]) -> None:
        ep = self.api.extras.custom_fields
        have = self.fetch("custom fields", ep, lambda d: d["name"])
        want = (
            (
                r["name"],
                r["name"],
                {
                    "name": r["name"],
                    "object_types": r["object_types"].split(","),
                    "type": r["type"],
                    "label": r["label"],
                    "description": r["description"],
                    "search_weight": int(r["search_weight"]),
                    "filter_logic": r["filter_logic"],
                    "weight": int(r["weight"]),
                },
            )
            for r in rows
        )
        self.sync("custom fields", ep, have, want, fixed=("type",))

    def _site(self, name: str) -> int:
        return self.ids["sites"][name]

    def locations(self, rows: list[Row]) -> None:
        ep = self.api.dcim.locations
        sites = sorted({self._site(r["site"]) for r in rows})
        names = {v: k for k, v in self.ids["sites"].items()}
        have = self.fetch(
            "locations", ep, lambda d: (names.get(d["site"]), d["name"]), site_id=sites
        )
        ids = self.ids.setdefault("locations", {})
        todo = list(rows)
        while todo:  # parents before their children
            ready = [r for r in todo if not r["parent"] or (r["site"], r["parent"]) in ids]
            if not ready:
                self.problems += [
                    Problem(f"locations {r['site']}/{r['name']}", f"parent {r['parent']} missing")
                    for r in todo
                ]
                raise NetBoxError(self.problems)
            want = (
                (
                    (r["site"], r["name"]),
                    f"{r['site']}/{r['name']}",
                    {
                        "name": r["name"],
                        "slug": r["slug"],
                        "site": self._site(r["site"]),
                        "parent": ids[(r["site"], r["parent"])] if r["parent"] else None,
                        "status": r["status"],
                        "description": r["description"],
                    },
                )
                for r in ready
            )
            ids.update(self.sync("locations", ep, have, want))
            todo = [r for r in todo if r not in ready]

    def racks(self, rows: list[Row]) -> None:
        if not rows:
            return
        ep = self.api.dcim.racks
        names = {v: k for k, v in self.ids["sites"].items()}
        sites = sorted({self._site(r["site"]) for r in rows})
        have = self.fetch("racks", ep, lambda d: (names.get(d["site"]), d["name"]), site_id=sites)
        want = []
        for r in rows:
            payload: dict[str, Any] = {
                "name": r["name"],
                "site": self._site(r["site"]),
                "location": self.ids["locations"][(r["site"], r["location"])]
                if r["location"]
                else None,
                "status": r["status"],
                "role": self.ids["rack roles"][r["role"]] if r["role"] else None,
                "facility_id": _none(r.get("facility_id", "")),
                "width": int(r["width"]),
                "u_height": int(r["u_height"]),
                "description": r["description"],
                "tags": [],
            }
            cfs = {k[3:]: v for k, v in r.items() if k.startswith("cf_")}
            if cfs:
                payload["custom_fields"] = {
                    k: (_num(v) if k in ("x_m", "y_m") else _none(v)) for k, v in cfs.items()
                }
            want.append(((r["site"], r["name"]), f"{r['site']}/{r['name']}", payload))
        self._track("racks", have, (k for k, _, _ in want))
        self.ids.setdefault("racks", {}).update(self.sync("racks", ep, have, want))

    def _track(self, kind: str, have: dict[Key, dict[str, Any]], keys: Iterable[Key]) -> None:
        """Remember what NetBox has of ``kind`` and the keys pushed (for :meth:`remove`)."""
        self.have.setdefault(kind, {}).update(have)
        self.wanted.setdefault(kind, set()).update(keys)

    def device_types(self, docs: list[dict[str, Any]]) -> None:
        dcim = self.api.dcim
        makers = {v: k for k, v in self.ids["manufacturers"].items()}
        have = self.fetch(
            "device types", dcim.device_types, lambda d: (makers.get(d["manufacturer"]), d["model"])
        )
        want = (
            (
                (d["manufacturer"], d["model"]),
                f"{d['manufacturer']} {d['model']}",
                {
                    "manufacturer": self.ids["manufacturers"][d["manufacturer"]],
                    "model": d["model"],
                    "slug": d["slug"],
                    "u_height": d.get("u_height", 1),
                    "is_full_depth": d.get("is_full_depth", True),
                    "description": d.get("description", ""),
                },
            )
            for d in docs
        )
        types = self.sync("device types", dcim.device_types, have, want)
        self.ids["device types"] = types
        by_id = sorted(types.values())

        def comps(
            kind: str,
            ep: Any,
            section: str,
            fields: tuple[str, ...],
            extra: Callable[[int, dict[str, Any]], dict[str, Any]] | None = None,
            fixed: tuple[str, ...] = (),
        ) -> dict[Key, int]:
            got = self.fetch(
                kind, ep, lambda d: (d["device_type"], d["name"]), device_type_id=by_id
            )
            want = []
            for d in docs:
                t = types[(d["manufacturer"], d["model"])]
                for c in d.get(section, []):
                    payload = {"device_type": t, **{f: c[f] for f in fields if f in c}}
                    if extra is not None:
                        payload.update(extra(t, c))
                    want.append(((t, c["name"]), f"{d['model']} {c['name']}", payload))
            return self.sync(kind, ep, got, want, fixed=fixed)

        comps("interface templates", dcim.interface_templates, "interfaces", ("name", "type"))
        rears = comps(
            "rear port templates",
            dcim.rear_port_templates,
            "rear-ports",
            ("name", "type", "positions"),
        )
        maps: dict[tuple[int, str], list[dict[str, Any]]] = {}
        for d in docs:
            t = types[(d["manufacturer"], d["model"])]
            for m in d.get("port-mappings", []):
                maps.setdefault((t, m["front_port"]), []).append(
                    {
                        "position": m["front_port_position"],
                        "rear_port": rears[(t, m["rear_port"])],
                        "rear_port_position": m["rear_port_position"],
                    }
                )
        comps(
            "front port templates",
            dcim.front_port_templates,
            "front-ports",
            ("name", "type", "positions"),
            extra=lambda t, c: {"rear_ports": maps.get((t, c["name"]), [])},
            fixed=("rear_ports",),
        )

    def devices(self, kind: str, rows: list[Row]) -> None:
        if not rows:
            return
        ep = self.api.dcim.devices
        names = {v: k for k, v in self.ids["sites"].items()}
        sites = sorted({self._site(r["site"]) for r in rows})
        have = self.fetch(kind, ep, lambda d: (names.get(d["site"]), d["name"]), site_id=sites)
        want = [
            (
                (r["site"], r["name"]),
                f"{r['site']}/{r['name']}",
                {
                    "name": r["name"],
                    "role": self.ids["device roles"][r["role"]],
                    "device_type": self.ids["device types"][(r["manufacturer"], r["device_type"])],
                    "site": self._site(r["site"]),
                    "location": self.ids["locations"][(r["site"], r["location"])]
                    if r["location"]
                    else None,
                    "rack": self.ids["racks"][(r["site"], r["rack"])] if r["rack"] else None,
                    "position": _num(r["position"]),
                    "face": _none(r["face"]),
                    "status": r["status"],
                    "description": r["description"],
                    "tags": [],
                },
            )
            for r in rows
        ]
        self._track("devices", have, (k for k, _, _ in want))
        self.ids.setdefault("devices", {}).update(self.sync(kind, ep, have, want))

    def cables(self, rows: list[Row]) -> None:
        if not rows:
            return
        dcim = self.api.dcim
        sites = sorted({self._site(r[f"side_{s}_site"]) for r in rows for s in "ab"})
        names = {v: k for k, v in self.ids["devices"].items()}
        ports = self.ports
        for otype, ep in (
            ("dcim.interface", dcim.interfaces),
            ("dcim.frontport", dcim.front_ports),
            ("dcim.rearport", dcim.rear_ports),
        ):
            for site in sites:
                if (otype, site) in self.ports_of:
                    continue
                self.ports_of.add((otype, site))
                # brief: the id, name and device of every port, a tenth of the full answer
                got = self.fetch(
                    "ports", ep, lambda d: (d["device"], d["name"]), site_id=site, brief=1
                )
                for (dev, name), d in got.items():
                    if dev in names:
                        ports[(otype, names[dev], name)] = d["id"]
        if tuple(sites) not in self.cables_of:  # read once for both cable files
            self.cables_of[tuple(sites)] = self.fetch(
                "cables",
                dcim.cables,
                lambda d: frozenset(
                    (t["object_type"], t["object_id"])
                    for t in d["a_terminations"] + d["b_terminations"]
                ),
                site_id=sites,
            )
        have = self.cables_of[tuple(sites)]
        bundles = self.ids.get("cable bundles", {})
        want = []
        for r in rows:
            ends = []
            for s in "ab":
                where = (
                    r[f"side_{s}_type"],
                    (r[f"side_{s}_site"], r[f"side_{s}_device"]),
                    r[f"side_{s}_name"],
                )
                if where not in ports:
                    self.problems.append(
                        Problem(
                            f"cables {r['label']}",
                            f"no {where[0]} {where[2]} on {where[1][0]}/{where[1][1]} in NetBox",
                        )
                    )
                    break
                ends.append({"object_type": where[0], "object_id": ports[where]})
            if len(ends) < 2:
                continue
            payload = {
                "a_terminations": [ends[0]],
                "b_terminations": [ends[1]],
                "type": _none(r["type"]),
                "status": r["status"],
                "profile": _none(r["profile"]),
                "bundle": bundles[r["bundle"]] if r["bundle"] else None,
                "label": r["label"],
                "length": _num(r["length"]),
                "length_unit": _none(r["length_unit"]),
                "tags": [],
            }
            k = frozenset((e["object_type"], e["object_id"]) for e in ends)
            want.append((k, r["label"] or f"{r['side_a_device']} {r['side_a_name']}", payload))
        if self.problems:
            raise NetBoxError(self.problems)
        self._sync_cables(dcim.cables, have, want)

    def _sync_cables(
        self,
        ep: Any,
        have: dict[Key, dict[str, Any]],
        want: list[tuple[Key, str, dict[str, Any]]],
    ) -> None:
        """Cables by their two ends: the same ends are the same cable (its other fields
        synced); a wanted cable sharing an end with a clusterloom cable the design no longer
        has moves that cable (its terminations updated, in an order where every port it takes
        is free); any other wanted cable is created, after deleting the removed clusterloom
        cables on its ports. The removed cables left are :meth:`remove`'s."""
        ends_fixed = ("a_terminations", "b_terminations")
        wanted = {k for k, _, _ in want}
        self.sync("cables", ep, have, [w for w in want if w[0] in have], fixed=ends_fixed)
        tally = self.report["cables"]
        free = {
            k: rec
            for k, rec in have.items()
            if k not in wanted and self.tag[OURS] in (rec.get("tags") or [])
        }
        hold = {end: int(rec["id"]) for k, rec in have.items() for end in k}
        by_id = {int(rec["id"]): k for k, rec in have.items()}
        moves: list[tuple[int, Key, str, dict[str, Any]]] = []
        creates: list[tuple[Key, str, dict[str, Any]]] = []
        for k, label, payload in (w for w in want if w[0] not in have):
            payload = {**payload, "tags": self._tags(None)}
            ends = [
                (t[0]["object_type"], t[0]["object_id"])
                for t in (payload["a_terminations"], payload["b_terminations"])
            ]
            old = next((by_id[hold[e]] for e in ends if by_id.get(hold.get(e, -1)) in free), None)
            if old is None:
                creates.append((k, label, payload))
            else:
                moves.append((int(free.pop(old)["id"]), k, label, payload))
        # removed cables on ports a moved or new cable takes cannot stay
        taken = {e for _, k, _, _ in moves for e in k} | {e for k, _, _ in creates for e in k}
        blocking = sorted({hold[e] for e in taken if by_id.get(hold.get(e, -1)) in free})
        self._delete("cables", ep, blocking)
        for c in blocking:
            free.pop(by_id[c])
        hold = {e: c for e, c in hold.items() if c not in set(blocking)}
        while moves:
            ready = [m for m in moves if all(hold.get(e, m[0]) == m[0] for e in m[1])]
            if not ready:  # a cycle of moves: one cable is deleted and made again
                c, k, label, payload = moves.pop(0)
                self._delete("cables", ep, [c])
                hold = {e: h for e, h in hold.items() if h != c}
                creates.append((k, label, payload))
                continue
            done = self._apply(
                "cables", "update", ep.update, [(lb, {"id": c, **p}) for c, _, lb, p in ready]
            )
            tally.updated += sum(1 for d in done if d is not None)
            if None in done:
                raise NetBoxError(self.problems)
            moved = {c for c, _, _, _ in ready}
            hold = {e: h for e, h in hold.items() if h not in moved}
            hold.update({e: c for c, k, _, _ in ready for e in k})
            moves = [m for m in moves if m[0] not in moved]
        self.sync("cables", ep, {}, creates)
        self._track("cables", free, ())

    def _delete(self, kind: str, ep: Any, ids: list[int]) -> None:
        import pynetbox

        for i in range(0, len(ids), CHUNK):
            chunk = ids[i : i + CHUNK]
            try:
                self._call(kind, partial(ep.delete, chunk))
            except pynetbox.RequestError as exc:
                raise NetBoxError(
                    [Problem(kind, f"NetBox refused to delete them: {_say(_refusal(exc)[0])}")]
                ) from None
            self.report.setdefault(kind, Tally()).deleted += len(chunk)

    def remove(self, delete: bool) -> None:
        """Every clusterloom cable, device and rack of the design's sites that the design no
        longer has: tagged ``clusterloom-removed`` (once), or deleted when ``delete``; cables
        first, then devices (NetBox deletes their interfaces with them), then racks."""
        dcim = self.api.dcim
        for kind, ep in (("cables", dcim.cables), ("devices", dcim.devices), ("racks", dcim.racks)):
            gone = [
                rec
                for k, rec in sorted(self.have.get(kind, {}).items(), key=lambda kv: kv[1]["id"])
                if k not in self.wanted.get(kind, set())
                and self.tag[OURS] in (rec.get("tags") or [])
            ]
            tally = self.report.setdefault(kind, Tally())
            if delete:
                self._delete(kind, ep, [int(r["id"]) for r in gone])
                continue
            todo = [r for r in gone if self.tag[REMOVED] not in r["tags"]]
            tally.unchanged += len(gone) - len(todo)
            items = [
                (
                    str(r.get("name") or r.get("label") or r["id"]),
                    {"id": r["id"], "tags": sorted({*r["tags"], self.tag[REMOVED]})},
                )
                for r in todo
            ]
            for i in range(0, len(items), CHUNK):
                done = self._apply(kind, "tag", ep.update, items[i : i + CHUNK])
                tally.tagged += sum(1 for d in done if d is not None)
            if self.problems:
                raise NetBoxError(self.problems)

    def tags(self) -> None:
        """The two tags, made once per NetBox."""
        ep = self.api.extras.tags
        have = self.fetch("tags", ep, lambda d: d["slug"])
        want = (
            (slug, slug, {"name": slug, "slug": slug, "color": color, "description": text})
            for slug, color, text in (
                (OURS, "2196f3", "made by clusterloom netbox push"),
                (REMOVED, "9e9e9e", "pushed by clusterloom; the design pushed since lacks it"),
            )
        )
        self.tag.update(self.sync("tags", ep, have, want))

    def sites(self, rows: list[Row], design: dict[str, Any] | None) -> None:
        """The design's sites, the one holding the design with its spec and fabrics."""
        ep = self.api.dcim.sites
        have = self.fetch("sites", ep, lambda d: d["name"])
        want = []
        for r in rows:
            payload: dict[str, Any] = {f: r[f] for f in ("name", "slug", "status", "description")}
            if design is not None and r["name"] == design["spec"]["name"]:
                payload["custom_fields"] = {DESIGN_FIELD: design}
            want.append((r["name"], r["name"], payload))
        self.ids.setdefault("sites", {}).update(self.sync("sites", ep, have, want))


def steps(folder: Path) -> Iterator[tuple[str, Path]]:
    """The files of ``folder`` (``OUTDIR/netbox``) in the import order."""
    for name, _, _ in IMPORT_ORDER:
        if (folder / name).exists():
            yield name, folder / name


def design_record(outdir: Path) -> dict[str, Any] | None:
    """What the site keeps of the design (custom field ``clusterloom_design``): the spec and
    each fabric's family and planes, as ``design.json`` has them (``growth/netbox.py``)."""
    path = outdir / "design.json"
    if not path.is_file():
        return None
    doc = json.loads(path.read_text())
    return {
        "schema": "clusterloom.installed",
        "spec_hash": doc.get("provenance", {}).get("spec_hash", ""),
        "spec": doc["spec"],
        "fabrics": [
            {"name": f["name"], "family": f["family"], "planes": f["planes"]}
            for f in doc["fabrics"]
        ],
    }


#: The site's custom field holding :func:`design_record` (JSON, not searched or filtered).
DESIGN_FIELD_ROW: Row = {
    "name": DESIGN_FIELD,
    "object_types": "dcim.site",
    "type": "json",
    "label": "clusterloom design",
    "description": "the spec and fabrics clusterloom netbox push pushed (read by --installed)",
    "search_weight": "0",
    "filter_logic": "disabled",
    "weight": "100",
}


def push_files(folder: Path, api: Any, *, delete_removed: bool = False) -> dict[str, Tally]:
    """Push the NetBox files in ``folder`` (``OUTDIR/netbox``) through ``api``."""
    p = Pusher(api)
    # one cheap authenticated request first: a bad URL or token is one line, not one per step
    p.fetch("netbox", api.dcim.manufacturers, lambda d: d["id"], name=["-"])
    p.tags()
    design = design_record(folder.parent)
    cables: list[Row] = []
    for name, path in steps(folder):
        if name == "device_types.yaml":
            docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
            p.device_types(docs)
            continue
        rows = _rows(path)
        dcim = api.dcim
        if name == "custom_fields.csv":
            p.custom_fields(rows + ([DESIGN_FIELD_ROW] if design is not None else []))
        elif name == "sites.csv":
            p.sites(rows, design)
        elif name == "locations.csv":
            p.locations(rows)
        elif name == "rack_roles.csv":
            p.named("rack roles", dcim.rack_roles, rows, ("slug", "color", "description"))
        elif name in ("racks.csv", "patch_racks.csv"):
            p.racks(rows)
        elif name == "manufacturers.csv":
            p.named("manufacturers", dcim.manufacturers, rows, ("slug",))
        elif name == "device_roles.csv":
            p.named("device roles", dcim.device_roles, rows, ("slug", "color", "description"))
        elif name in ("devices.csv", "panels.csv"):
            p.devices("devices", rows)
        elif name == "cable_bundles.csv":
            p.named("cable bundles", dcim.cable_bundles, rows, ("description",))
        elif name in ("cables_plant.csv", "cables.csv"):
            cables += rows  # the plant and the cords at once: a moved cable may be either
    p.cables(cables)
    p.remove(delete_removed)
    return p.report


def push(
    outdir: str | Path, url: str, token: str, *, delete_removed: bool = False
) -> dict[str, Tally]:
    """Push the NetBox objects of the design written to ``outdir`` into the NetBox at ``url``;
    the clusterloom objects of its site it no longer has are tagged, or deleted when
    ``delete_removed``."""
    try:
        import pynetbox
    except ImportError:
        raise NetBoxError(
            [Problem("", "pushing to NetBox needs pynetbox: pip install 'clusterloom[netbox]'")]
        ) from None
    folder = Path(outdir) / "netbox"
    if not (folder / "devices.csv").is_file():
        raise NetBoxError(
            [
                Problem(
                    str(outdir),
                    "holds no netbox/devices.csv: write it with clusterloom design -o OUTDIR first",
                )
            ]
        )
    if not url.startswith(("http://", "https://")):
        raise NetBoxError([Problem("--url", f"{url!r} is not an http(s) URL")])
    api = pynetbox.api(url.rstrip("/"), token=token)
    return push_files(folder, api, delete_removed=delete_removed)
