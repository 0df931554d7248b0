"""Drive a real NetBox in-process: import files through NetBox's own bulk-import views, then
read back object counts and NetBox's own cable traces. Run with NetBox's Python (3.12, its
own packages); the test suite imports only ``fresh_database`` from it (stdlib only):

    NETBOX_DIR/venv/bin/python netbox_driver.py JOB.json  > RESULT.json

``JOB.json``: ``{"netbox": DIR, "database": NAME, "shared": [FILE, ...], "designs": [{"site":
SITE, "dir": PATH, "steps": [[FILE, PAGE, FORMAT], ...]}]}``. Of a ``shared`` file (objects
every design in a NetBox shares) only the rows NetBox lacks are posted, as a user importing a
second design does. The database ``NAME`` is made fresh from NetBox's
migrated database (``netbox``, as ``netbox-up.sh`` restored it) before anything is imported,
so every run starts clean. The result, as JSON: per design, each step's HTTP status, objects
before and after and form errors; object counts of the site; and for every cabled interface
of the site the far end(s) NetBox's trace reached and whether the path is complete.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TEMPLATE = "netbox"


def fresh_database(name: str) -> None:
    """``name`` as a copy of NetBox's migrated, empty database."""
    sql = (
        f'DROP DATABASE IF EXISTS "{name}";\n'
        f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE}" OWNER netbox;\n'
    )
    subprocess.run(
        ["su", "postgres", "-c", "psql -q -v ON_ERROR_STOP=1"],
        input=sql,
        text=True,
        check=True,
        capture_output=True,
    )


def setup(netbox: Path, database: str) -> None:
    sys.path.insert(0, str(netbox / "src" / "netbox"))
    import os

    os.environ["DJANGO_SETTINGS_MODULE"] = "netbox.settings"
    import netbox.configuration as configuration  # type: ignore[import-not-found]

    configuration.DATABASES["default"]["NAME"] = database
    import django  # type: ignore[import-not-found]

    django.setup()
    from django.test.utils import setup_test_environment  # type: ignore[import-not-found]

    setup_test_environment()  # responses keep their template context (the form's errors)


def model_of(page: str) -> Any:
    from django.urls import resolve  # type: ignore[import-not-found]

    view = resolve(page).func
    return view.view_class.queryset.model


def errors(response: Any) -> list[str]:
    context = response.context
    if context is None:
        return [f"HTTP {response.status_code}"]
    form = context.get("form")
    if form is None:
        return [f"HTTP {response.status_code} without a form"]
    out = []
    for field, messages in form.errors.items():
        out += [f"{field}: {m}" if field != "__all__" else str(m) for m in messages]
    return out or ["form re-shown without errors"]


def missing(model: Any, text: str, fmt: str) -> tuple[str, int]:
    """``text`` less the rows (CSV) or documents (YAML) whose object NetBox already has, by
    name (device types: by model), and how many were left out."""
    key = "model" if hasattr(model, "model") and model.__name__.endswith("Type") else "name"
    have = set(model.objects.values_list(key, flat=True))
    if fmt == "yaml":
        import yaml  # type: ignore[import-untyped]

        docs = [d for d in yaml.safe_load_all(text) if d]
        keep = [d for d in docs if d[key] not in have]
        return yaml.safe_dump_all(keep, sort_keys=False, explicit_start=True), len(docs) - len(keep)
    import csv
    import io

    rows = list(csv.reader(io.StringIO(text)))
    col = rows[0].index(key)
    keep = [rows[0]] + [r for r in rows[1:] if r[col] not in have]
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(keep)
    return buf.getvalue(), len(rows) - len(keep)


def run_steps(
    client: Any, folder: Path, steps: list[list[str]], shared: set[str]
) -> list[dict[str, Any]]:
    results = []
    for name, page, fmt in steps:
        model = model_of(page)
        before = model.objects.count()
        start = time.monotonic()
        text, left_out = (folder / name).read_text(), 0
        if name in shared:
            text, left_out = missing(model, text, fmt)
        if left_out and not text.strip("-\n").count("\n"):
            status = 302  # every row is there already
        else:
            response = client.post(page, {"data": text, "format": fmt, "csv_delimiter": ","})
            status = response.status_code
        ok = status == 302
        results.append(
            {
                "file": name,
                "page": page,
                "status": status,
                "before": before,
                "after": model.objects.count(),
                "already_there": left_out,
                "errors": [] if ok else errors(response)[:20],
                "seconds": round(time.monotonic() - start, 2),
            }
        )
        if not ok:
            break
    return results


def counts(site: str) -> dict[str, int]:
    from dcim.models import (  # type: ignore[import-not-found]
        Cable,
        CableBundle,
        Device,
        FrontPort,
        Interface,
        Location,
        Rack,
        RearPort,
    )

    return {
        "locations": Location.objects.filter(site__name=site).count(),
        "racks": Rack.objects.filter(site__name=site).count(),
        "devices": Device.objects.filter(site__name=site).count(),
        "interfaces": Interface.objects.filter(device__site__name=site).count(),
        "front_ports": FrontPort.objects.filter(device__site__name=site).count(),
        "rear_ports": RearPort.objects.filter(device__site__name=site).count(),
        "cables": Cable.objects.filter(terminations___site__name=site).distinct().count(),
        "bundles": CableBundle.objects.filter(name__startswith=f"{site}/").count(),
    }


def traces(site: str) -> list[dict[str, Any]]:
    from dcim.models import Interface

    out = []
    cabled = Interface.objects.filter(device__site__name=site, cable__isnull=False)
    for iface in cabled.select_related("device", "_path"):
        path = iface._path
        far = [] if path is None else path.destinations
        out.append(
            {
                "device": iface.device.name,
                "name": iface.name,
                "complete": bool(path is not None and path.is_complete),
                "far": [[getattr(getattr(d, "device", None), "name", ""), d.name] for d in far],
                "far_type": [type(d).__name__ for d in far],
            }
        )
    return out


def main() -> None:
    job = json.loads(Path(sys.argv[1]).read_text())
    start = time.monotonic()
    fresh_database(job["database"])
    setup(Path(job["netbox"]), job["database"])
    from django.test import Client  # type: ignore[import-not-found]

    client = Client()
    if not client.login(username="admin", password="admin"):
        raise SystemExit("cannot log in to NetBox as admin")
    result: dict[str, Any] = {"setup_seconds": round(time.monotonic() - start, 2), "designs": []}
    for design in job["designs"]:
        t0 = time.monotonic()
        steps = run_steps(client, Path(design["dir"]), design["steps"], set(job["shared"]))
        t1 = time.monotonic()
        paths = traces(design["site"])
        result["designs"].append(
            {
                "site": design["site"],
                "steps": steps,
                "counts": counts(design["site"]),
                "traces": paths,
                "import_seconds": round(t1 - t0, 2),
                "trace_seconds": round(time.monotonic() - t1, 2),
            }
        )
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
