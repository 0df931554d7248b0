"""The design store: designs, runs, their files, tables and pictures, findings, tokens and the
one model of changes, in a SQL database (SQLite by default, PostgreSQL by URL) with the files
as content-addressed blobs beside it. ``open_store`` opens one and migrates it to head."""

from __future__ import annotations

import hashlib
import hmac
import json
import mimetypes
import os
import re
import secrets
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
from sqlalchemy import Engine, create_engine, event, select
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from clusterloom.changes import Approval, ChangePlan, Decision, Proposal, from_json, to_json
from clusterloom.errors import StoreError
from clusterloom.store import migrate
from clusterloom.store.blobs import Blobs
from clusterloom.store.models import (
    ArtifactRow,
    BlobRow,
    ChangeRecordRow,
    DesignRow,
    FindingRow,
    IncidentRow,
    PictureRow,
    RunRow,
    SpecRow,
    TableRow,
    TokenRow,
)
from clusterloom.store.records import (
    ROLES,
    Artifact,
    DesignRecord,
    IncidentRecord,
    Role,
    RunRecord,
    TokenRecord,
)
from clusterloom.store.summary import design_summary, run_summary, staged_findings
from clusterloom.store.tables import (
    DESIGN_TABLES,
    RUN_TABLES,
    TablePage,
    csv_to_parquet,
    parquet_columns,
    parquet_rows,
    query,
    vocabulary,
)

if TYPE_CHECKING:
    from clusterloom.pipeline import Design

Record = ChangePlan | Proposal | Approval | Decision

DEFAULT_DIR = Path("~/.clusterloom")
_ID = re.compile(r"[0-9a-f]{6,12}")
_MEDIA = {
    ".csv": "text/csv",
    ".json": "application/json",
    ".jsonl": "application/x-ndjson",
    ".parquet": "application/vnd.apache.parquet",
    ".npz": "application/octet-stream",
    ".graphml": "application/xml",
    ".yaml": "application/yaml",
    ".txt": "text/plain",
    ".html": "text/html",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}
MAX_USER = 200


def new_id() -> str:
    """A fresh id of a design or a run: 12 random hex digits."""
    return secrets.token_hex(6)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _media_type(name: str) -> str:
    suffix = Path(name).suffix.lower()
    return _MEDIA.get(suffix) or mimetypes.guess_type(name)[0] or "application/octet-stream"


def _secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def default_url() -> str:
    """``$CLUSTERLOOM_STORE``, else a SQLite file ``~/.clusterloom/store.db``."""
    return os.environ.get("CLUSTERLOOM_STORE") or f"sqlite:///{DEFAULT_DIR / 'store.db'}"


def _parse_url(text: str) -> URL:
    try:
        url = make_url(text)
    except ArgumentError as exc:
        raise StoreError(
            f"store URL {text[:120]!r} is not a database URL; give sqlite:///PATH or "
            "postgresql://USER@HOST/DB"
        ) from exc
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")  # psycopg 3, the driver installed
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        url = url.set(database=str(Path(url.database).expanduser()))
    return url


def _blob_root(url: URL) -> Path:
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        return Path(f"{url.database}.blobs")
    return Path(os.environ.get("CLUSTERLOOM_BLOBS") or DEFAULT_DIR / "blobs").expanduser()


def _sqlite_pragmas(engine: Engine) -> None:
    """Foreign keys checked; write-ahead logging, so readers (the explorer) go on while a
    record is written."""

    @event.listens_for(engine, "connect")
    def _on(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.close()


def _at_head(engine: Engine) -> bool:
    try:
        return migrate.current(engine) == migrate.head()
    except SQLAlchemyError:
        return False


def open_store(url: str | None = None) -> Store:
    """The store at ``url`` (None: :func:`default_url`), migrated to the newest schema. Blobs
    live beside a SQLite file (``<db>.blobs/``), otherwise in ``$CLUSTERLOOM_BLOBS`` or
    ``~/.clusterloom/blobs``. A URL that cannot be used raises ``StoreError`` (one line)."""
    text = url or default_url()
    parsed = _parse_url(text)
    shown = parsed.render_as_string(hide_password=True)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        try:
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"store {shown}: cannot create its directory: {exc}") from exc
    try:
        engine = create_engine(parsed)
    except (ArgumentError, NoSuchModuleError, ImportError) as exc:
        raise StoreError(f"store {shown}: no driver for this URL ({exc})") from exc
    if parsed.get_backend_name() == "sqlite":
        _sqlite_pragmas(engine)
    try:
        migrate.upgrade(engine)
    except SQLAlchemyError as exc:
        if not _at_head(engine):  # else another process migrated it at the same moment
            first = (str(exc.orig if hasattr(exc, "orig") else exc).splitlines() or [""])[0]
            raise StoreError(f"store {shown}: cannot be opened: {first[:300]}") from exc
    return Store(engine, Blobs(_blob_root(parsed)), shown)


def _design_record(row: DesignRow) -> DesignRecord:
    return DesignRecord(
        id=row.id,
        name=row.name,
        version=row.version,
        spec_hash=row.spec_hash,
        parent=row.parent,
        created=row.created,
        user=row.user,
        summary=json.loads(row.summary),
    )


def _run_record(row: RunRow) -> RunRecord:
    return RunRecord(
        id=row.id,
        design_id=row.design_id,
        created=row.created,
        user=row.user,
        scenario=json.loads(row.scenario),
        summary=json.loads(row.summary),
    )


def _token_record(row: TokenRow) -> TokenRecord:
    role: Role = "write" if row.role == "write" else "read"
    return TokenRecord(row.id, row.user, role, row.created, row.revoked is not None)


def _check_user(user: str) -> str:
    if not user.strip() or len(user) > MAX_USER or any(ord(ch) < 32 for ch in user):
        raise StoreError(f"user {user[:80]!r}: give a name of 1 to {MAX_USER} printable characters")
    return user


def _run_files(run_dir: Path) -> list[tuple[str, Path, str | None]]:
    """The files of a run directory: (relative name, path, sha256 the manifest lists or None).
    With a manifest, exactly its files and the manifest itself; else every file."""
    from clusterloom.export.outdir import MANIFEST, read_manifest

    manifest = read_manifest(run_dir)
    if manifest is None:
        files = sorted(p for p in run_dir.rglob("*") if p.is_file())
        return [(p.relative_to(run_dir).as_posix(), p, None) for p in files]
    listed = manifest.get("files")
    out: list[tuple[str, Path, str | None]] = [(MANIFEST, run_dir / MANIFEST, None)]
    for entry in listed if isinstance(listed, list) else []:
        name = str(entry["path"])
        out.append((name, run_dir / name, str(entry["sha256"])))
    return sorted(out)


#: what ``ops.incident.incident_json`` writes (the store reads its JSON, not its types)
INCIDENT_SCHEMA = "clusterloom.ops.incident"
_INCIDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+-]{0,63}")


def _ms(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise StoreError(f"incident: {where} must be an integer time in ms, got {value!r:.40}")
    return value


def _incident_fields(body: str) -> dict[str, Any]:
    """The columns of an incident's JSON: id, design, opened and last times (the latest time
    it names), status and proposal; ``StoreError`` naming the field otherwise."""
    try:
        d = json.loads(body)
    except ValueError as exc:
        raise StoreError(f"incident: not JSON ({exc})") from None
    if not isinstance(d, dict) or d.get("schema") != INCIDENT_SCHEMA:
        raise StoreError(f"incident: not an incident (schema {INCIDENT_SCHEMA} expected)")
    iid, design = d.get("id"), d.get("design")
    if not isinstance(iid, str) or _INCIDENT_ID.fullmatch(iid) is None:
        raise StoreError(f"incident: id {iid!r:.80} is not a name (letters, digits, ._:+-)")
    if not isinstance(design, str) or not 0 < len(design) <= 200:
        raise StoreError(f"incident {iid}: design must be a name of 1 to 200 characters")
    opened = _ms(d.get("opened_ms"), "opened_ms")
    times = [opened]
    for key in ("symptoms", "observations"):
        items = d.get(key, [])
        if not isinstance(items, list) or not all(isinstance(x, dict) for x in items):
            raise StoreError(f"incident {iid}: {key} must be a list of objects")
        times += [_ms(x.get("ts_ms"), f"{key}[{i}].ts_ms") for i, x in enumerate(items)]
    chosen = d.get("chosen")
    status, proposal = "open", None
    if chosen is not None:
        if not isinstance(chosen, dict) or not isinstance(chosen.get("proposal"), str):
            raise StoreError(f"incident {iid}: chosen must be an object naming its proposal")
        proposal = chosen["proposal"][:64]
        for key in ("proposed_ms", "decided_ms", "measured_ms"):
            if chosen.get(key) is not None:
                times.append(_ms(chosen[key], f"chosen.{key}"))
        status = str(chosen.get("status", "proposed"))[:16]
        if chosen.get("measured_ps") is not None:
            status = "measured"
    return {
        "id": iid,
        "design": design,
        "opened_ms": opened,
        "last_ms": max(times),
        "status": status,
        "proposal": proposal,
    }


def _incident_record(row: IncidentRow) -> IncidentRecord:
    return IncidentRecord(
        id=row.id,
        design_id=row.design_id,
        design=row.design,
        opened_ms=row.opened_ms,
        last_ms=row.last_ms,
        status=row.status,
        proposal=row.proposal_id,
        user=row.user,
        created=row.created,
        updated=row.updated,
        body=json.loads(row.body),
    )


def _deciding(session: Session, proposal_id: str) -> ChangeRecordRow | None:
    """The first approval (or rejection) recorded for a proposal: the one that decided it."""
    return session.scalars(
        select(ChangeRecordRow)
        .where(ChangeRecordRow.kind == "approval")
        .where(ChangeRecordRow.proposal_id == proposal_id)
        .order_by(ChangeRecordRow.created, ChangeRecordRow.id)
        .limit(1)
    ).first()


class Store:
    """An open design store (``open_store``). Every method is one transaction."""

    def __init__(self, engine: Engine, blobs: Blobs, url: str) -> None:
        self.engine = engine
        self.blobs = blobs
        self.url = url
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._duck: duckdb.DuckDBPyConnection | None = None
        self._duck_lock = threading.Lock()

    def close(self) -> None:
        self.engine.dispose()
        with self._duck_lock:
            if self._duck is not None:
                self._duck.close()
                self._duck = None

    def duckdb(self) -> duckdb.DuckDBPyConnection:
        """A cursor of the store's one in-memory DuckDB connection (opened on first use), for
        one query in any thread; the caller closes it."""
        with self._duck_lock:
            if self._duck is None:
                self._duck = duckdb.connect()
            return self._duck.cursor()

    @contextmanager
    def _session(self) -> Iterator[Session]:
        with self._sessions() as session:
            try:
                with session.begin():
                    yield session
            except IntegrityError as exc:
                raise StoreError(
                    f"store {self.url}: a concurrent change collided with this one; try again "
                    f"({(str(exc.orig).splitlines() or [''])[0][:200]})"
                ) from exc
            except SQLAlchemyError as exc:
                first = (str(exc).splitlines() or [""])[0][:300]
                raise StoreError(f"store {self.url}: {first}") from exc

    # --- writing files ---------------------------------------------------------------------

    def _put_files(self, run_dir: Path) -> list[Artifact]:
        artifacts = []
        for name, path, listed in _run_files(run_dir):
            if not path.is_file():
                raise StoreError(f"{run_dir}: {name} is in its manifest but missing")
            sha, size = self.blobs.put_file(path)
            if listed is not None and listed != sha:
                raise StoreError(
                    f"{run_dir}: {name} differs from the manifest; the run directory was "
                    "changed after it was written: write it again"
                )
            artifacts.append(Artifact(name, sha, size, _media_type(name)))
        return artifacts

    def _put_table(self, path: Path, *, csv: bool) -> tuple[str, int, int, str]:
        """A table's blob, with its search vocabulary made (``tables.vocabulary``): (sha256,
        size, rows, columns as JSON)."""
        if not csv:
            sha, size = self.blobs.put_file(path)
            rows, columns = parquet_rows(path), parquet_columns(path)
        else:
            made, rows = csv_to_parquet(path, self.blobs.root)
            try:
                columns = parquet_columns(made)
                sha, size = self.blobs.put_file(made)
            finally:
                made.unlink(missing_ok=True)
        with self.duckdb() as con:
            vocabulary(self.blobs.path(sha), columns, con)
        return sha, size, rows, json.dumps(columns)

    @staticmethod
    def _add_blob(session: Session, sha: str, size: int) -> None:
        if session.get(BlobRow, sha) is None:
            session.add(BlobRow(sha256=sha, size=size))
            session.flush()

    def _add_artifacts(
        self, session: Session, owner: str, kind: str, artifacts: Sequence[Artifact]
    ) -> None:
        for a in artifacts:
            self._add_blob(session, a.sha256, a.size)
            session.add(
                ArtifactRow(
                    owner_id=owner,
                    owner_kind=kind,
                    name=a.name,
                    sha256=a.sha256,
                    size=a.size,
                    media_type=a.media_type,
                )
            )

    def _add_tables(
        self,
        session: Session,
        owner: str,
        made: Sequence[tuple[str, str, tuple[str, int, int, str]]],
    ) -> None:
        for name, source, (sha, size, rows, columns) in made:
            self._add_blob(session, sha, size)
            session.add(
                TableRow(
                    owner_id=owner,
                    name=name,
                    source=source,
                    sha256=sha,
                    rows=rows,
                    columns=columns,
                )
            )

    # --- designs ---------------------------------------------------------------------------

    def record_design(
        self, design: Design, run_dir: Path, *, user: str = "cli", parent: str | None = None
    ) -> DesignRecord:
        """Record ``design`` with the files of ``run_dir`` (the directory ``design -o`` wrote
        for it): the spec by hash, the summary figures, findings, every file as a blob, its
        tables as Parquet and its pictures. The version is one more than the last of the same
        name; ``parent`` (a reference) defaults to that last one. A ``simulation/`` in the
        directory is also recorded as a run of the design."""
        from clusterloom.report.pictures import pictures

        _check_user(user)
        run_dir = Path(run_dir)
        if not (run_dir / "design.json").is_file():
            raise StoreError(f"{run_dir}: no design.json; give the directory `design -o` wrote")
        artifacts = self._put_files(run_dir)
        tables = [
            (name, source, self._put_table(run_dir / source, csv=True))
            for name, source in DESIGN_TABLES.items()
            if (run_dir / source).is_file()
        ]
        drawn = [
            (name, self.blobs.put_bytes(svg.encode())) for name, svg in pictures(design).items()
        ]
        parent_id = self.design(parent).id if parent is not None else None
        spec = design.spec
        provenance = design.provenance
        with self._session() as session:
            self._add_spec(session, provenance.spec_hash, spec.name, spec.model_dump_json())
            last = session.scalars(
                select(DesignRow)
                .where(DesignRow.name == spec.name)
                .order_by(DesignRow.version.desc())
                .limit(1)
            ).first()
            row = DesignRow(
                id=new_id(),
                name=spec.name,
                version=(last.version + 1) if last is not None else 1,
                spec_hash=provenance.spec_hash,
                parent=parent_id if parent is not None else (last.id if last else None),
                created=_now(),
                user=user,
                clusterloom_version=provenance.clusterloom_version,
                summary=json.dumps(design_summary(design), sort_keys=True),
            )
            session.add(row)
            session.flush()
            for seq, f in enumerate(staged_findings(design)):
                session.add(FindingRow(design_id=row.id, seq=seq, **f))
            self._add_artifacts(session, row.id, "design", artifacts)
            self._add_tables(session, row.id, tables)
            for name, (sha, size) in drawn:
                self._add_blob(session, sha, size)
                session.add(PictureRow(design_id=row.id, name=name, sha256=sha))
            record = _design_record(row)
        if (run_dir / "simulation" / "groups.parquet").is_file():
            self.record_run(run_dir / "simulation", design_id=record.id, user=user)
        return record

    @staticmethod
    def _add_spec(session: Session, spec_hash: str, name: str, document: str) -> None:
        if session.get(SpecRow, spec_hash) is not None:
            return
        last = session.scalars(
            select(SpecRow).where(SpecRow.name == name).order_by(SpecRow.version.desc()).limit(1)
        ).first()
        session.add(
            SpecRow(
                hash=spec_hash,
                name=name,
                version=(last.version + 1) if last is not None else 1,
                parent=last.hash if last is not None else None,
                created=_now(),
                document=document,
            )
        )
        session.flush()

    def specs(self, name: str | None = None) -> list[dict[str, Any]]:
        """Recorded specs (newest first): hash, name, version, parent, created."""
        with self._session() as session:
            q = select(SpecRow).order_by(SpecRow.created.desc())
            if name is not None:
                q = q.where(SpecRow.name == name)
            return [
                {
                    "hash": r.hash,
                    "name": r.name,
                    "version": r.version,
                    "parent": r.parent,
                    "created": r.created,
                }
                for r in session.scalars(q)
            ]

    def designs(self) -> list[DesignRecord]:
        """Every design, newest first."""
        with self._session() as session:
            rows = session.scalars(
                select(DesignRow).order_by(DesignRow.created.desc(), DesignRow.version.desc())
            )
            return [_design_record(r) for r in rows]

    def design(self, ref: str) -> DesignRecord:
        """A design by its id, a unique prefix of it (6 or more hex digits), ``name@version``
        or a name alone (its newest version)."""
        with self._session() as session:
            return _design_record(self._design_row(session, ref))

    def _design_row(self, session: Session, ref: str) -> DesignRow:
        shown = ref[:80]
        row = session.get(DesignRow, ref) if len(ref) == 12 else None
        if row is not None:
            return row
        if "@" in ref:
            name, _, version = ref.rpartition("@")
            if not version.isdigit():
                raise StoreError(f"design {shown!r}: the version after @ must be a number")
            found = session.scalars(
                select(DesignRow).where(DesignRow.name == name, DesignRow.version == int(version))
            ).first()
            if found is None:
                raise StoreError(f"design {shown!r}: not found; `clusterloom store ls` lists them")
            return found
        if _ID.fullmatch(ref):
            hits = list(
                session.scalars(select(DesignRow).where(DesignRow.id.startswith(ref)).limit(2))
            )
            if len(hits) > 1:
                raise StoreError(f"design {shown!r}: ambiguous; give more digits of the id")
            if hits:
                return hits[0]
        newest = session.scalars(
            select(DesignRow)
            .where(DesignRow.name == ref)
            .order_by(DesignRow.version.desc())
            .limit(1)
        ).first()
        if newest is None:
            raise StoreError(
                f"design {shown!r}: not found; give an id, a prefix of 6 or more digits, "
                "NAME@VERSION or a name (`clusterloom store ls` lists them)"
            )
        return newest

    def findings(self, design_id: str) -> list[dict[str, str]]:
        """The design's findings in order: stage, severity, code, object, message."""
        with self._session() as session:
            row = self._design_row(session, design_id)
            found = session.scalars(
                select(FindingRow).where(FindingRow.design_id == row.id).order_by(FindingRow.seq)
            )
            return [
                {
                    "stage": f.stage,
                    "severity": f.severity,
                    "code": f.code,
                    "object": f.object,
                    "message": f.message,
                }
                for f in found
            ]

    # --- runs ------------------------------------------------------------------------------

    def record_run(self, run_dir: Path, *, design_id: str | None, user: str = "cli") -> RunRecord:
        """Record a ``clusterloom simulate -o DIR`` directory: its scenario, per-transport
        figures, files and Parquet tables; ``design_id`` (a reference, or None) the design it
        ran on."""
        _check_user(user)
        run_dir = Path(run_dir)
        scenario_path = run_dir / "scenario.json"
        try:
            scenario = json.loads(scenario_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise StoreError(
                f"{run_dir}: no readable scenario.json; give a `clusterloom simulate -o DIR` "
                "directory"
            ) from exc
        summary = run_summary(run_dir)
        design = self.design(design_id).id if design_id is not None else None
        artifacts = self._put_files(run_dir)
        tables = [
            (name, source, self._put_table(run_dir / source, csv=False))
            for name, source in RUN_TABLES.items()
            if (run_dir / source).is_file()
        ]
        with self._session() as session:
            row = RunRow(
                id=new_id(),
                design_id=design,
                created=_now(),
                user=user,
                scenario=json.dumps(scenario, sort_keys=True),
                summary=json.dumps(summary, sort_keys=True),
            )
            session.add(row)
            session.flush()
            self._add_artifacts(session, row.id, "run", artifacts)
            self._add_tables(session, row.id, tables)
            return _run_record(row)

    def runs(self, design_id: str | None = None) -> list[RunRecord]:
        """Runs newest first; with ``design_id`` (a reference), that design's."""
        with self._session() as session:
            q = select(RunRow).order_by(RunRow.created.desc())
            if design_id is not None:
                q = q.where(RunRow.design_id == self._design_row(session, design_id).id)
            return [_run_record(r) for r in session.scalars(q)]

    def run(self, ref: str) -> RunRecord:
        """A run by its id or a unique prefix of it (6 or more hex digits)."""
        with self._session() as session:
            return _run_record(self._run_row(session, ref))

    @staticmethod
    def _run_row(session: Session, ref: str) -> RunRow:
        row = session.get(RunRow, ref) if len(ref) == 12 else None
        if row is not None:
            return row
        if _ID.fullmatch(ref):
            hits = list(session.scalars(select(RunRow).where(RunRow.id.startswith(ref)).limit(2)))
            if len(hits) > 1:
                raise StoreError(f"run {ref!r}: ambiguous; give more digits of the id")
            if hits:
                return hits[0]
        raise StoreError(f"run {ref[:80]!r}: not found; give a run id or 6 or more of its digits")

    # --- an owner's files, tables, pictures ------------------------------------------------

    def _owner(self, session: Session, owner_id: str) -> str:
        if (
            session.get(DesignRow, owner_id) is not None
            or session.get(RunRow, owner_id) is not None
        ):
            return owner_id
        raise StoreError(f"{owner_id[:80]!r}: not found; give the full id of a design or a run")

    def artifacts(self, owner_id: str) -> list[Artifact]:
        """The files of a design or a run (by full id), by name."""
        with self._session() as session:
            owner = self._owner(session, owner_id)
            rows = session.scalars(
                select(ArtifactRow).where(ArtifactRow.owner_id == owner).order_by(ArtifactRow.name)
            )
            return [Artifact(r.name, r.sha256, r.size, r.media_type) for r in rows]

    def artifact_path(self, owner_id: str, name: str) -> Path:
        """The blob of the owner's artifact ``name``: only a name the owner holds, exactly,
        is looked up; the path is made from the stored hash, never from ``name``."""
        with self._session() as session:
            owner = self._owner(session, owner_id)
            row = session.scalars(
                select(ArtifactRow).where(ArtifactRow.owner_id == owner, ArtifactRow.name == name)
            ).first()
            if row is None:
                raise StoreError(
                    f"{name[:120]!r}: not an artifact of {owner}; "
                    "`clusterloom store show` lists them"
                )
            sha = row.sha256
        path = self.blobs.path(sha)
        if not path.is_file():
            raise StoreError(
                f"artifact {name}: its blob {sha[:12]} is missing from {self.blobs.root}"
            )
        return path

    def materialize(
        self, ref: str, into: Path, keep: Callable[[str], bool] | None = None
    ) -> DesignRecord:
        """Copy every artifact of design ``ref`` (those whose name ``keep`` accepts) by name
        into the directory ``into``, so that it holds the files ``design -o`` wrote; a name
        that is not a plain relative path is refused, never followed."""
        import shutil
        from pathlib import PurePosixPath

        record = self.design(ref)
        for artifact in self.artifacts(record.id):
            if keep is not None and not keep(artifact.name):
                continue
            name = PurePosixPath(artifact.name)
            if name.is_absolute() or not name.parts or ".." in name.parts:
                raise StoreError(f"design {record.ref}: artifact {artifact.name[:80]!r} is no path")
            target = Path(into).joinpath(*name.parts)
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(self.artifact_path(record.id, artifact.name), target)
            except OSError as exc:
                raise StoreError(
                    f"design {record.ref}: cannot copy {artifact.name}: {exc}"
                ) from exc
        return record

    def pictures(self, design_id: str) -> list[str]:
        """The names of the design's pictures (``report.pictures``), in the order drawn."""
        with self._session() as session:
            owner = self._design_row(session, design_id).id
            return list(
                session.scalars(
                    select(PictureRow.name)
                    .where(PictureRow.design_id == owner)
                    .order_by(PictureRow.id)
                )
            )

    def picture(self, design_id: str, name: str) -> str:
        """The SVG text of the design's picture ``name``."""
        with self._session() as session:
            owner = self._design_row(session, design_id).id
            sha = session.scalars(
                select(PictureRow.sha256).where(
                    PictureRow.design_id == owner, PictureRow.name == name
                )
            ).first()
        if sha is None:
            raise StoreError(f"{name[:120]!r}: not a picture of design {owner}")
        return self.blobs.path(sha).read_text(encoding="utf-8")

    def tables(self, owner_id: str) -> list[str]:
        """The names of the owner's tables."""
        with self._session() as session:
            owner = self._owner(session, owner_id)
            return list(
                session.scalars(
                    select(TableRow.name).where(TableRow.owner_id == owner).order_by(TableRow.id)
                )
            )

    def columns(self, owner_id: str, name: str) -> tuple[tuple[str, str], ...]:
        """The columns of the owner's table ``name`` with their Arrow types (``string``,
        ``int64``, ``double``...), in order."""
        return self._table(owner_id, name)[1]

    def table_rows(self, owner_id: str, name: str) -> int:
        """How many rows the owner's table ``name`` has."""
        return self._table(owner_id, name)[2]

    def _table(self, owner_id: str, name: str) -> tuple[Path, tuple[tuple[str, str], ...], int]:
        with self._session() as session:
            owner = self._owner(session, owner_id)
            row = session.scalars(
                select(TableRow).where(TableRow.owner_id == owner, TableRow.name == name)
            ).first()
            if row is None:
                names = ", ".join(self.tables(owner)) or "none"
                raise StoreError(f"{name[:80]!r}: not a table of {owner}; its tables: {names}")
            columns = tuple((str(c), str(t)) for c, t in json.loads(row.columns))
            return self.blobs.path(row.sha256), columns, row.rows

    def table(
        self,
        owner_id: str,
        name: str,
        *,
        offset: int = 0,
        limit: int = 50,
        sort: str | None = None,
        descending: bool = False,
        search: str | None = None,
        where: Mapping[str, str] | None = None,
    ) -> TablePage:
        """A page of the owner's table ``name`` (``tables.query``: DuckDB on the Parquet
        blob; ``sort`` and ``where`` keys must be its columns)."""
        path, columns, _ = self._table(owner_id, name)
        return query(
            path,
            columns,
            table=name,
            offset=offset,
            limit=limit,
            sort=sort,
            descending=descending,
            search=search,
            where=where,
            connection=self.duckdb(),
        )

    # --- tokens ----------------------------------------------------------------------------

    def add_token(self, user: str, role: Role) -> tuple[str, str]:
        """A new token for ``user``: (its id, the secret, shown once; only its SHA-256 is
        kept)."""
        _check_user(user)
        if role not in ROLES:
            raise StoreError(f"role {str(role)[:40]!r}: give read or write")
        token_id, secret = secrets.token_hex(4), secrets.token_urlsafe(32)
        with self._session() as session:
            session.add(
                TokenRow(
                    id=token_id,
                    user=user,
                    role=role,
                    secret_hash=_secret_hash(secret),
                    created=_now(),
                    revoked=None,
                )
            )
        return token_id, secret

    def revoke_token(self, token_id: str) -> None:
        with self._session() as session:
            row = session.get(TokenRow, token_id)
            if row is None:
                raise StoreError(
                    f"token {token_id[:40]!r}: not found; `clusterloom store token ls` lists them"
                )
            if row.revoked is None:
                row.revoked = _now()

    def check_token(self, secret: str) -> TokenRecord | None:
        """The token whose secret is ``secret``; None when unknown or revoked."""
        if not secret or len(secret) > 200:
            return None
        digest = _secret_hash(secret)
        with self._session() as session:
            row = session.scalars(select(TokenRow).where(TokenRow.secret_hash == digest)).first()
            if row is None or not hmac.compare_digest(row.secret_hash, digest):
                return None
            return None if row.revoked is not None else _token_record(row)

    def tokens(self) -> list[TokenRecord]:
        with self._session() as session:
            return [
                _token_record(r)
                for r in session.scalars(select(TokenRow).order_by(TokenRow.created))
            ]

    # --- change records --------------------------------------------------------------------

    def record(self, rec: Record, *, user: str = "cli", design_id: str | None = None) -> str:
        """Store one record of ``clusterloom.changes``; its id. A plan and a proposal keep
        their own id, an approval or a decision gets the hash of its content, so recording
        the same record again changes nothing. ``design_id`` (a reference) ties it to a
        design; by default a plan or proposal goes with the newest design of its target spec,
        an approval or decision with its proposal's design."""
        _check_user(user)
        body = to_json(rec)
        if isinstance(rec, ChangePlan | Proposal):
            rec_id = rec.id
        else:
            rec_id = hashlib.sha256(body.encode()).hexdigest()[:16]
        with self._session() as session:
            known = session.get(ChangeRecordRow, rec_id)
            if known is not None:
                if known.body != body:
                    raise StoreError(
                        f"{rec.kind} {rec_id[:64]!r}: recorded already with other content; "
                        "give the new record its own id"
                    )
                return rec_id
            proposal = rec.proposal if isinstance(rec, Approval | Decision) else None
            if isinstance(rec, Approval) and session.get(ChangeRecordRow, rec.proposal) is not None:
                self._check_decidable(session, rec.proposal)
            design = self._record_design(session, rec, design_id, proposal)
            session.add(
                ChangeRecordRow(
                    id=rec_id,
                    kind=rec.kind,
                    design_id=design,
                    proposal_id=rec.id if isinstance(rec, Proposal) else proposal,
                    actor=rec.author
                    if isinstance(rec, Proposal)
                    else rec.approver
                    if isinstance(rec, Approval)
                    else "",
                    approved=rec.approved if isinstance(rec, Approval) else None,
                    user=user,
                    created=_now(),
                    body=body,
                )
            )
        return rec_id

    def _record_design(
        self, session: Session, rec: Record, design_id: str | None, proposal: str | None
    ) -> str | None:
        if design_id is not None:
            return self._design_row(session, design_id).id
        if proposal is not None:
            owner = session.get(ChangeRecordRow, proposal)
            return owner.design_id if owner is not None else None
        plan = (
            rec if isinstance(rec, ChangePlan) else rec.plan if isinstance(rec, Proposal) else None
        )
        if plan is None:
            return None
        target = plan.target
        newest = session.scalars(
            select(DesignRow.id)
            .where(DesignRow.spec_hash == target)
            .order_by(DesignRow.created.desc())
            .limit(1)
        ).first()
        return newest

    def records(
        self, *, kind: str | None = None, design_id: str | None = None
    ) -> list[dict[str, Any]]:
        """Change records in the order recorded: id, kind, design_id, proposal, user, created
        and ``record`` (the record's own fields)."""
        with self._session() as session:
            q = select(ChangeRecordRow).order_by(ChangeRecordRow.created, ChangeRecordRow.id)
            if kind is not None:
                q = q.where(ChangeRecordRow.kind == kind)
            if design_id is not None:
                q = q.where(ChangeRecordRow.design_id == self._design_row(session, design_id).id)
            return [
                {
                    "id": r.id,
                    "kind": r.kind,
                    "design_id": r.design_id,
                    "proposal": r.proposal_id,
                    "user": r.user,
                    "created": r.created,
                    "record": json.loads(r.body),
                }
                for r in session.scalars(q)
            ]

    def change_record(self, record_id: str) -> Record:
        """A stored record as its ``clusterloom.changes`` type."""
        with self._session() as session:
            row = session.get(ChangeRecordRow, record_id)
            if row is None:
                raise StoreError(f"record {record_id[:64]!r}: not found")
            return from_json(row.body)

    def proposal_status(self, proposal_id: str) -> str:
        """``superseded`` when a stored proposal names it in ``supersedes`` (whatever was
        decided on it before), else ``approved`` or ``rejected`` by its first decision, else
        ``proposed``; ``StoreError`` when there is no such proposal."""
        with self._session() as session:
            return self._status(session, proposal_id)[0]

    def _status(self, session: Session, proposal_id: str) -> tuple[str, str]:
        """The status and what decided it (the superseding proposal, the approval's id)."""
        row = session.get(ChangeRecordRow, proposal_id)
        if row is None or row.kind != "proposal":
            raise StoreError(f"proposal {proposal_id[:64]!r}: not found")
        needle = f'"supersedes":{json.dumps(proposal_id)}'
        later = session.scalars(
            select(ChangeRecordRow)
            .where(ChangeRecordRow.kind == "proposal")
            .where(ChangeRecordRow.body.contains(needle, autoescape=True))
            .order_by(ChangeRecordRow.created, ChangeRecordRow.id)
        ).all()
        for r in later:
            if json.loads(r.body).get("supersedes") == proposal_id:
                return "superseded", r.id
        decided = _deciding(session, proposal_id)
        if decided is not None:
            return ("approved" if decided.approved else "rejected"), decided.id
        return "proposed", ""

    def decision(self, proposal_id: str) -> Approval | None:
        """The approval (or rejection) that decided a proposal, None while undecided."""
        with self._session() as session:
            self._status(session, proposal_id)  # not found: refused
            approval = _deciding(session, proposal_id)
        if approval is None:
            return None
        rec = from_json(approval.body)
        assert isinstance(rec, Approval)
        return rec

    def open_proposal(self, baseline: str, target: str) -> str | None:
        """The newest proposal of a plan from ``baseline`` to ``target`` (spec hashes) that no
        proposal supersedes: the one a new plan for the same change supersedes."""
        with self._session() as session:
            rows = session.scalars(
                select(ChangeRecordRow)
                .where(ChangeRecordRow.kind == "proposal")
                .order_by(ChangeRecordRow.created.desc(), ChangeRecordRow.id.desc())
            ).all()
            for r in rows:
                plan = json.loads(r.body).get("plan", {})
                same = plan.get("baseline") == baseline and plan.get("target") == target
                if same and self._status(session, r.id)[0] != "superseded":
                    return r.id
        return None

    def _check_decidable(self, session: Session, proposal_id: str) -> None:
        """Refuse a decision on a proposal that is superseded or decided already."""
        status, by = self._status(session, proposal_id)
        if status == "superseded":
            raise StoreError(
                f"proposal {proposal_id[:64]!r} is superseded by {by!r}: decide on that one"
            )
        if status != "proposed":
            raise StoreError(
                f"proposal {proposal_id[:64]!r} is {status} already (record {by}); a decision "
                "is made once: propose again to change it"
            )

    def approve(self, proposal_id: str, *, user: str, reason: str, approved: bool = True) -> str:
        """Record ``user``'s approval (or refusal) of a stored proposal, with the reason;
        refused (``StoreError``) for a proposal superseded or decided already."""
        with self._session() as session:
            self._check_decidable(session, proposal_id)  # not found, superseded, decided
        if not reason.strip():
            raise StoreError(f"proposal {proposal_id[:64]!r}: give the reason for the decision")
        return self.record(
            Approval(proposal=proposal_id, approver=user, approved=approved, note=reason),
            user=user,
        )

    def import_records(self, path: Path, *, user: str = "cli") -> list[str]:
        """Store every record of a JSON-lines change log (``changes.append_record``); the ids.
        A line that is not a record is refused with its number, and nothing is stored."""
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise StoreError(f"{path}: cannot be read ({exc})") from exc
        parsed: list[Record] = []
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                parsed.append(from_json(line))
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                raise StoreError(f"{path}: line {n}: not a change record ({exc})") from exc
        return [self.record(rec, user=user) for rec in parsed]

    # --- incidents -------------------------------------------------------------------------

    def record_incident(
        self, body: str, *, user: str = "cli", design_id: str | None = None
    ) -> IncidentRecord:
        """Store an incident (``ops.incident.incident_json``'s text), or its newer state
        under the same id (its mitigation checked, decided, measured): the row is replaced,
        ``created`` kept. It goes with the design ``design_id`` (a reference), else the
        newest design of the spec hash the incident names, else its proposal's design, else
        none. An incident recorded for another design is refused."""
        _check_user(user)
        f = _incident_fields(body)
        with self._session() as session:
            design: str | None
            if design_id is not None:
                design = self._design_row(session, design_id).id
            else:
                design = session.scalars(
                    select(DesignRow.id)
                    .where(DesignRow.spec_hash == f["design"])
                    .order_by(DesignRow.created.desc())
                    .limit(1)
                ).first()
                if design is None and f["proposal"] is not None:
                    owner = session.get(ChangeRecordRow, f["proposal"])
                    design = owner.design_id if owner is not None else None
            row = session.get(IncidentRow, f["id"])
            now = _now()
            if row is None:
                row = IncidentRow(id=f["id"], user=user, created=now)
                session.add(row)
            elif row.design != f["design"]:
                raise StoreError(
                    f"incident {f['id']!r}: recorded already for design {row.design[:16]!r}, "
                    f"not {f['design'][:16]!r}; an incident keeps its design"
                )
            elif row.body == body:
                return _incident_record(row)
            row.design_id = design if design is not None else row.design_id
            row.design = f["design"]
            row.opened_ms = f["opened_ms"]
            row.last_ms = f["last_ms"]
            row.status = f["status"]
            row.proposal_id = f["proposal"]
            row.updated = now
            row.body = body
            session.flush()
            return _incident_record(row)

    def incidents(self, design_id: str | None = None) -> list[IncidentRecord]:
        """The incidents (of one design, a reference), the latest opened first."""
        with self._session() as session:
            q = select(IncidentRow).order_by(IncidentRow.opened_ms.desc(), IncidentRow.id)
            if design_id is not None:
                q = q.where(IncidentRow.design_id == self._design_row(session, design_id).id)
            return [_incident_record(r) for r in session.scalars(q)]

    def incident(self, incident_id: str) -> IncidentRecord:
        with self._session() as session:
            row = session.get(IncidentRow, incident_id)
            if row is None:
                raise StoreError(
                    f"incident {incident_id[:64]!r}: not found; `clusterloom store incidents` "
                    "lists them"
                )
            return _incident_record(row)

    # --- comparing, collecting -------------------------------------------------------------

    def diff(self, a: str, b: str) -> dict[str, Any]:
        """Two designs compared (``diff.design_diff``): summary figure deltas, the BOM's
        lines that differ, findings that appear and clear."""
        from clusterloom.store.diff import design_diff

        return design_diff(self, self.design(a), self.design(b))

    def table_source(self, owner_id: str, name: str) -> Path | None:
        """The Parquet blob of the owner's table ``name``, or None when it has none."""
        try:
            return self._table(owner_id, name)[0]
        except StoreError:
            return None

    def gc(self, *, grace_s: float = 3600.0) -> tuple[int, int]:
        """Remove blobs no artifact, table or picture references (and older than
        ``grace_s``, so a record being written now keeps its blobs); (removed, bytes freed)."""
        import time

        with self._session() as session:
            used = set(session.scalars(select(ArtifactRow.sha256)))
            used |= set(session.scalars(select(TableRow.sha256)))
            used |= set(session.scalars(select(PictureRow.sha256)))
            rows = set(session.scalars(select(BlobRow.sha256)))
        cutoff = time.time() - grace_s
        removed = freed = 0
        stored = self.blobs.stored()
        for sha in sorted((set(stored) | rows) - used):
            path = self.blobs.path(sha)
            if path.is_file() and path.stat().st_mtime > cutoff:
                continue
            gone = self.blobs.remove(sha)
            removed += 1 if sha in stored else 0
            freed += gone
            with self._session() as session:
                blob = session.get(BlobRow, sha)
                if blob is not None:
                    session.delete(blob)
        return removed, freed

    def __repr__(self) -> str:
        return f"Store({self.url!r})"


def asdict_record(
    rec: DesignRecord | RunRecord | Artifact | TokenRecord | IncidentRecord,
) -> dict[str, Any]:
    """A record as plain data (for ``--json``)."""
    return asdict(rec)
