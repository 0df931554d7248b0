"""The installed baseline read back from a NetBox (``--installed https://netbox/?site=NAME``).

``clusterloom netbox push`` tags every device, rack and cable it makes ``clusterloom`` and
stores, on the design's site, the spec the design was built from and its fabrics' families and
planes (custom field ``clusterloom_design``, JSON: what ``read_installed`` takes from
``design.json``). :func:`read_netbox` reads through the REST API the site, its devices, racks,
cabled interfaces (with the far end NetBox's own path tracing reached: through patch panels
and trunks a link is one interface to another) and cables, and :func:`installed_from_netbox`
turns them into the same :class:`~clusterloom.growth.installed.Installed` as
``read_installed(DIR)``:

- links: every cabled interface of a clusterloom device whose cable is clusterloom's and
  whose path ends on an interface of another clusterloom device, by identity
  (``growth.installed.link_end``), once per pair of ends, the lower end first;
- racks: every clusterloom rack with a facility id (the label of what it holds, as
  ``netbox/racks.csv`` sets it) -> its name (the floor position).

Objects clusterloom did not create (no ``clusterloom`` tag), those a later push tagged
``clusterloom-removed``, and links to them, are left out and counted (``Installed.ignored``).
A NetBox that does not match is a ``SpecError`` naming the object: a site without the field, a
device or rack referenced twice, a cable to an interface NetBox does not list, a path that
reaches no interface or several, a name that is not clusterloom's. Another fabric family or
planes removed are ``check_installed``'s, as for a directory.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qs, urlsplit, urlunsplit

from clusterloom.errors import NetBoxError, Problem, SpecError
from clusterloom.export.naming import FABRIC_PREFIX, parse_switch_name
from clusterloom.export.netbox_push import DESIGN_FIELD, OURS, REMOVED, Pusher, _refusal, _say
from clusterloom.growth.installed import Installed, _as_links, _breakout, link_end
from clusterloom.spec import ClusterSpec

__all__ = ["installed_from_netbox", "netbox_source", "read_netbox"]

Record = dict[str, Any]


def netbox_source(value: str, default_site: str) -> tuple[str, str] | None:
    """``(URL, site)`` when ``value`` names a NetBox (``http(s)://host[:port][/path]`` with an
    optional ``?site=NAME``, else the spec's name), None when it is a directory."""
    if not value.startswith(("http://", "https://")):
        return None
    parts = urlsplit(value)
    site = parse_qs(parts.query).get("site", [default_site])[0]
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", "")), site


def _tags(rec: Record) -> set[str]:
    return {str(t.get("slug", t.get("name", ""))) for t in rec.get("tags") or []}


def _id(value: Any) -> int | None:
    if isinstance(value, dict):
        return int(value["id"]) if value.get("id") is not None else None
    return int(value) if value is not None else None


def _design_doc(site: str, site_rec: Record) -> tuple[ClusterSpec, dict[str, tuple[str, int]]]:
    where = f"NetBox site {site}"
    doc = (site_rec.get("custom_fields") or {}).get(DESIGN_FIELD)
    if not isinstance(doc, dict) or "spec" not in doc or "fabrics" not in doc:
        raise SpecError(
            [
                Problem(
                    where,
                    f"has no clusterloom design (custom field {DESIGN_FIELD}): push the "
                    "design with clusterloom netbox push first",
                )
            ]
        )
    try:
        spec = ClusterSpec.model_validate(doc["spec"])
        fabrics = {str(f["name"]): (str(f["family"]), int(f["planes"])) for f in doc["fabrics"]}
    except Exception as exc:  # pydantic's or a malformed field: translated at the boundary
        raise SpecError([Problem(f"{where}:{DESIGN_FIELD}", f"not a valid spec: {exc}")]) from exc
    return spec, fabrics


def _ours_by_id(
    kind: str, records: Iterable[Record], problems: list[Problem], ignored: dict[str, int]
) -> dict[int, Record]:
    out: dict[int, Record] = {}
    names: set[str] = set()
    for rec in records:
        tags = _tags(rec)
        if OURS not in tags or REMOVED in tags:  # not clusterloom's, or no longer designed
            what = kind if OURS not in tags else f"{kind} tagged {REMOVED}"
            ignored[what] = ignored.get(what, 0) + 1
            continue
        name = str(rec.get("name") or rec.get("label") or rec["id"])
        if kind != "cables" and name in names:
            problems.append(Problem(f"NetBox {kind[:-1]} {name}", "referenced twice"))
        names.add(name)
        out[int(rec["id"])] = rec
    return out


def _rack_labels(racks: dict[int, Record], problems: list[Problem]) -> dict[str, str]:
    out: dict[str, str] = {}
    for rec in sorted(racks.values(), key=lambda r: str(r["name"])):
        label = rec.get("facility_id") or ""
        if not label:
            continue  # a patch rack: it holds no placed unit
        if label in out:
            problems.append(
                Problem(f"NetBox rack {rec['name']}", f"holds {label}, as rack {out[label]} does")
            )
        out[str(label)] = str(rec["name"])
    return out


def _check_cables(
    cables: dict[int, Record], interfaces: dict[int, Record], problems: list[Problem]
) -> None:
    for rec in cables.values():
        for side in ("a", "b"):
            for t in rec.get(f"{side}_terminations") or []:
                if t.get("object_type") == "dcim.interface" and _id(t["object_id"]) not in (
                    interfaces
                ):
                    problems.append(
                        Problem(
                            f"NetBox cable {rec.get('label') or rec['id']}",
                            f"its {side} end is interface {t['object_id']}, which NetBox does "
                            "not list on the site",
                        )
                    )


def _pairs(
    devices: dict[int, Record],
    interfaces: dict[int, Record],
    cables: dict[int, Record],
    problems: list[Problem],
    ignored: dict[str, int],
) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """Every link between two clusterloom devices as two (device, interface) ends, once."""
    seen: dict[frozenset[tuple[str, str]], tuple[tuple[str, str], tuple[str, str]]] = {}
    foreign: set[int] = set()
    port_of: dict[tuple[str, str], frozenset[tuple[str, str]]] = {}
    for rec in sorted(interfaces.values(), key=lambda r: int(r["id"])):
        dev = _id(rec.get("device"))
        if dev not in devices:
            continue
        end = (str(devices[dev]["name"]), str(rec["name"]))
        cable = _id(rec.get("cable")) or -1
        if cable not in cables:
            foreign.add(cable)
            continue
        far = rec.get("connected_endpoints") or []
        where = f"NetBox interface {end[0]}:{end[1]}"
        if len(far) != 1:
            what = "reaches no interface (an incomplete path)" if not far else "several"
            problems.append(Problem(where, f"is cabled but its path {what}"))
            continue
        other = interfaces.get(_id(far[0]) or -1)
        if other is None or _id(other.get("device")) not in devices:
            foreign.add(cable)
            continue
        far_end = (str(devices[_id(other["device"]) or -1]["name"]), str(other["name"]))
        key = frozenset((end, far_end))
        for e in (end, far_end):
            if port_of.setdefault(e, key) != key:
                problems.append(Problem(f"NetBox interface {e[0]}:{e[1]}", "in two links"))
        seen.setdefault(key, (end, far_end))
    if foreign:
        ignored["links"] = len(foreign)
    return [seen[k] for k in sorted(seen, key=sorted)]


def installed_from_netbox(
    source: str,
    site: str,
    site_rec: Record,
    devices: list[Record],
    racks: list[Record],
    interfaces: list[Record],
    cables: list[Record],
) -> Installed:
    """The baseline the records of one NetBox site describe (see the module); the records as
    NetBox's REST API answers them (nested objects as dicts with their ``id``)."""
    from clusterloom.fabric.sizing import plan_fabric

    spec, fabrics = _design_doc(site, site_rec)
    problems: list[Problem] = []
    ignored: dict[str, int] = {}
    ours = _ours_by_id("devices", devices, problems, ignored)
    our_racks = _ours_by_id("racks", racks, problems, ignored)
    our_cables = _ours_by_id("cables", cables, problems, ignored)
    by_id = {int(r["id"]): r for r in interfaces}
    _check_cables(our_cables, by_id, problems)
    labels = _rack_labels(our_racks, problems)
    fabric_of = {FABRIC_PREFIX.get(name, name): name for name in fabrics}
    shape = {
        name: (_breakout(spec, name), plan_fabric(spec, name).hosts_per_node) for name in fabrics
    }
    rows: dict[str, list[tuple[int, ...]]] = {name: [] for name in fabrics}
    for a, b in _pairs(ours, by_id, our_cables, problems, ignored):
        switch = next((e[0] for e in (a, b) if not e[0].startswith("node")), None)
        where = f"NetBox link {a[0]}:{a[1]}~{b[0]}:{b[1]}"
        try:
            fabric = fabric_of[parse_switch_name(switch or "")[0]]
            breakout, hpn = shape[fabric]
            ends = sorted(
                (link_end(d, p, breakout, hpn) for d, p in (a, b)),
                key=lambda e: (e[0], e[1], e[2]),
            )
        except (ValueError, KeyError) as exc:
            problems.append(Problem(where, f"not a link of the design's fabrics: {exc}"))
            continue
        lo, hi = ends
        rows[fabric].append((hi[0], *lo, *hi))  # the tier is the upper end's role
    if problems:
        raise SpecError(problems)
    links = {name: _as_links(name, sorted(r)) for name, r in rows.items()}
    where = f"{source} racks"
    return Installed(source, spec, fabrics, links, labels, where, ignored)


def _list(api: Any, kind: str, endpoint: Any, **query: Any) -> list[Record]:
    """Every record of ``endpoint`` matching ``query`` as NetBox's JSON (one line on error)."""
    import pynetbox

    try:
        return list(Pusher(api)._call(kind, lambda: [dict(r) for r in endpoint.filter(**query)]))
    except pynetbox.RequestError as exc:
        raise NetBoxError(
            [Problem(kind, f"NetBox refused to list them: {_say(_refusal(exc)[0])}")]
        ) from None


def read_netbox(url: str, token: str, site: str) -> Installed:
    """The baseline clusterloom pushed to ``site`` of the NetBox at ``url`` (see the module)."""
    try:
        import pynetbox
    except ImportError:
        raise SpecError(
            [
                Problem(
                    "--installed",
                    "reading NetBox needs pynetbox: pip install 'clusterloom[netbox]'",
                )
            ]
        ) from None
    if not token:
        raise SpecError([Problem("--installed", "set NETBOX_TOKEN to an API token of that NetBox")])
    api = pynetbox.api(url, token=token)
    dcim = api.dcim
    found = _list(api, "sites", dcim.sites, name=site)
    if len(found) != 1:
        raise SpecError([Problem("--installed", f"NetBox at {url} has no site {site!r}")])
    sid = int(found[0]["id"])
    devices = _list(api, "devices", dcim.devices, site_id=sid, fields="id,name,tags")
    racks = _list(api, "racks", dcim.racks, site_id=sid, fields="id,name,facility_id,tags")
    interfaces = _list(
        api,
        "interfaces",
        dcim.interfaces,
        site_id=sid,
        cabled=True,
        fields="id,name,device,cable,connected_endpoints",
    )
    cables = _list(
        api,
        "cables",
        dcim.cables,
        site_id=sid,
        fields="id,label,tags,a_terminations,b_terminations",
    )
    source = f"NetBox {url} site {site}"
    return installed_from_netbox(source, site, found[0], devices, racks, interfaces, cables)
