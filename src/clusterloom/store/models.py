"""The store's tables as SQLAlchemy 2 typed ORM models. The schema itself is made by the
Alembic migrations in ``migrations/versions`` (a test checks that the two agree); these models
are how the store reads and writes it.

Large content never sits in a row: files, Parquet tables and pictures are blobs named by their
SHA-256 in the blob directory (``blobs.py``); a row holds the hash, and ``blobs`` lists every
hash the store has written, so ``gc`` can find the unreferenced ones.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class SpecRow(Base):
    """A cluster spec by its hash; ``version`` counts the specs of one name (1..), ``parent``
    is the hash of the one recorded before it under that name."""

    __tablename__ = "specs"
    __table_args__ = (UniqueConstraint("name", "version", name="uq_specs_name_version"),)

    hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(200), index=True)
    version: Mapped[int] = mapped_column(Integer)
    parent: Mapped[str | None] = mapped_column(String(64), ForeignKey("specs.hash"))
    created: Mapped[str] = mapped_column(String(32))
    #: the parsed spec as JSON (``ClusterSpec.model_dump``)
    document: Mapped[str] = mapped_column(Text)


class BlobRow(Base):
    """A blob the store wrote into its blob directory."""

    __tablename__ = "blobs"

    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger)


class DesignRow(Base):
    __tablename__ = "designs"
    __table_args__ = (UniqueConstraint("name", "version", name="uq_designs_name_version"),)

    id: Mapped[str] = mapped_column(String(12), primary_key=True)
    name: Mapped[str] = mapped_column(String(200), index=True)
    version: Mapped[int] = mapped_column(Integer)
    spec_hash: Mapped[str] = mapped_column(String(64), ForeignKey("specs.hash"), index=True)
    parent: Mapped[str | None] = mapped_column(String(12), ForeignKey("designs.id"))
    created: Mapped[str] = mapped_column(String(32), index=True)
    user: Mapped[str] = mapped_column(String(200))
    clusterloom_version: Mapped[str] = mapped_column(String(40))
    #: summary figures as JSON (``DesignRecord.summary``)
    summary: Mapped[str] = mapped_column(Text)


class FindingRow(Base):
    __tablename__ = "findings"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    design_id: Mapped[str] = mapped_column(String(12), ForeignKey("designs.id"), index=True)
    seq: Mapped[int] = mapped_column(Integer)
    stage: Mapped[str] = mapped_column(String(200))
    severity: Mapped[str] = mapped_column(String(16))
    code: Mapped[str] = mapped_column(String(200))
    object: Mapped[str] = mapped_column(Text)
    message: Mapped[str] = mapped_column(Text)


class RunRow(Base):
    """A simulation run (a ``clusterloom simulate -o DIR`` directory)."""

    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(String(12), primary_key=True)
    design_id: Mapped[str | None] = mapped_column(String(12), ForeignKey("designs.id"), index=True)
    created: Mapped[str] = mapped_column(String(32), index=True)
    user: Mapped[str] = mapped_column(String(200))
    #: ``scenario.json`` as recorded
    scenario: Mapped[str] = mapped_column(Text)
    #: per-transport figures as JSON (``RunRecord.summary``)
    summary: Mapped[str] = mapped_column(Text)


class ArtifactRow(Base):
    """One file of a design's or a run's directory, by the hash of its content."""

    __tablename__ = "artifacts"
    __table_args__ = (UniqueConstraint("owner_id", "name", name="uq_artifacts_owner_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    owner_id: Mapped[str] = mapped_column(String(12), index=True)
    owner_kind: Mapped[str] = mapped_column(String(8))  # design | run
    name: Mapped[str] = mapped_column(String(500))
    sha256: Mapped[str] = mapped_column(String(64), ForeignKey("blobs.sha256"), index=True)
    size: Mapped[int] = mapped_column(BigInteger)
    media_type: Mapped[str] = mapped_column(String(100))


class TableRow(Base):
    """A table of an owner as a Parquet blob, queried with DuckDB."""

    __tablename__ = "tables"
    __table_args__ = (UniqueConstraint("owner_id", "name", name="uq_tables_owner_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    owner_id: Mapped[str] = mapped_column(String(12), index=True)
    name: Mapped[str] = mapped_column(String(100))
    #: the artifact it was made from (``cabling/cut_sheet.csv``, ``flows.parquet``)
    source: Mapped[str] = mapped_column(String(500))
    sha256: Mapped[str] = mapped_column(String(64), ForeignKey("blobs.sha256"), index=True)
    rows: Mapped[int] = mapped_column(BigInteger)
    #: the Parquet schema as JSON: [[column, arrow type], ...]
    columns: Mapped[str] = mapped_column(Text)


class PictureRow(Base):
    """An SVG picture of a design (``report.pictures.pictures``), as a blob."""

    __tablename__ = "pictures"
    __table_args__ = (UniqueConstraint("design_id", "name", name="uq_pictures_design_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    design_id: Mapped[str] = mapped_column(String(12), ForeignKey("designs.id"), index=True)
    name: Mapped[str] = mapped_column(String(300))
    sha256: Mapped[str] = mapped_column(String(64), ForeignKey("blobs.sha256"), index=True)


class TokenRow(Base):
    """An access token: only the SHA-256 of its secret is kept."""

    __tablename__ = "tokens"

    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    user: Mapped[str] = mapped_column(String(200))
    role: Mapped[str] = mapped_column(String(8))  # read | write
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created: Mapped[str] = mapped_column(String(32))
    revoked: Mapped[str | None] = mapped_column(String(32))


class ChangeRecordRow(Base):
    """A record of the one model of changes (``clusterloom.changes``): its typed columns and
    the record itself as JSON (``changes.to_json``)."""

    __tablename__ = "change_records"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), index=True)
    design_id: Mapped[str | None] = mapped_column(String(12), ForeignKey("designs.id"), index=True)
    #: the proposal an approval or decision refers to
    proposal_id: Mapped[str | None] = mapped_column(String(64), index=True)
    #: the proposal's author, the approver; empty for a plan or a decision
    actor: Mapped[str] = mapped_column(String(200))
    approved: Mapped[bool | None] = mapped_column(Boolean)
    user: Mapped[str] = mapped_column(String(200))
    created: Mapped[str] = mapped_column(String(32), index=True)
    body: Mapped[str] = mapped_column(Text)


class IncidentRow(Base):
    """An incident of runtime operations (``clusterloom.ops.incident``): the columns the
    explorer lists and filters by, and the incident itself as JSON (``incident_json``),
    replaced as the incident grows (mitigation checked, decided, measured)."""

    __tablename__ = "incidents"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    design_id: Mapped[str | None] = mapped_column(String(12), ForeignKey("designs.id"), index=True)
    #: the design as the incident names it (its spec hash, or its source)
    design: Mapped[str] = mapped_column(String(200))
    opened_ms: Mapped[int] = mapped_column(BigInteger, index=True)
    last_ms: Mapped[int] = mapped_column(BigInteger)
    #: open, proposed, approved, rejected or measured
    status: Mapped[str] = mapped_column(String(16))
    proposal_id: Mapped[str | None] = mapped_column(String(64), index=True)
    user: Mapped[str] = mapped_column(String(200))
    created: Mapped[str] = mapped_column(String(32))
    updated: Mapped[str] = mapped_column(String(32), index=True)
    body: Mapped[str] = mapped_column(Text)
