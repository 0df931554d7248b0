"""The initial schema: specs, blobs, designs and their findings, runs, artifacts, tables,
pictures, tokens and change records (``clusterloom.store.models``).

Revision ID: 0001
Revises: (none)
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "blobs",
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("sha256"),
    )
    op.create_table(
        "specs",
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("parent", sa.String(length=64), nullable=True),
        sa.Column("created", sa.String(length=32), nullable=False),
        sa.Column("document", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["parent"],
            ["specs.hash"],
        ),
        sa.PrimaryKeyConstraint("hash"),
        sa.UniqueConstraint("name", "version", name="uq_specs_name_version"),
    )
    with op.batch_alter_table("specs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_specs_name"), ["name"], unique=False)

    op.create_table(
        "tokens",
        sa.Column("id", sa.String(length=16), nullable=False),
        sa.Column("user", sa.String(length=200), nullable=False),
        sa.Column("role", sa.String(length=8), nullable=False),
        sa.Column("secret_hash", sa.String(length=64), nullable=False),
        sa.Column("created", sa.String(length=32), nullable=False),
        sa.Column("revoked", sa.String(length=32), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("secret_hash"),
    )
    op.create_table(
        "artifacts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("owner_id", sa.String(length=12), nullable=False),
        sa.Column("owner_kind", sa.String(length=8), nullable=False),
        sa.Column("name", sa.String(length=500), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("media_type", sa.String(length=100), nullable=False),
        sa.ForeignKeyConstraint(
            ["sha256"],
            ["blobs.sha256"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("owner_id", "name", name="uq_artifacts_owner_name"),
    )
    with op.batch_alter_table("artifacts", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_artifacts_owner_id"), ["owner_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_artifacts_sha256"), ["sha256"], unique=False)

    op.create_table(
        "designs",
        sa.Column("id", sa.String(length=12), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("spec_hash", sa.String(length=64), nullable=False),
        sa.Column("parent", sa.String(length=12), nullable=True),
        sa.Column("created", sa.String(length=32), nullable=False),
        sa.Column("user", sa.String(length=200), nullable=False),
        sa.Column("clusterloom_version", sa.String(length=40), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["parent"],
            ["designs.id"],
        ),
        sa.ForeignKeyConstraint(
            ["spec_hash"],
            ["specs.hash"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name", "version", name="uq_designs_name_version"),
    )
    with op.batch_alter_table("designs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_designs_created"), ["created"], unique=False)
        batch_op.create_index(batch_op.f("ix_designs_name"), ["name"], unique=False)
        batch_op.create_index(batch_op.f("ix_designs_spec_hash"), ["spec_hash"], unique=False)

    op.create_table(
        "tables",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("owner_id", sa.String(length=12), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("source", sa.String(length=500), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("rows", sa.BigInteger(), nullable=False),
        sa.Column("columns", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["sha256"],
            ["blobs.sha256"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("owner_id", "name", name="uq_tables_owner_name"),
    )
    with op.batch_alter_table("tables", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_tables_owner_id"), ["owner_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_tables_sha256"), ["sha256"], unique=False)

    op.create_table(
        "change_records",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("design_id", sa.String(length=12), nullable=True),
        sa.Column("proposal_id", sa.String(length=64), nullable=True),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("approved", sa.Boolean(), nullable=True),
        sa.Column("user", sa.String(length=200), nullable=False),
        sa.Column("created", sa.String(length=32), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["design_id"],
            ["designs.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("change_records", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_change_records_created"), ["created"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_change_records_design_id"), ["design_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_change_records_kind"), ["kind"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_change_records_proposal_id"), ["proposal_id"], unique=False
        )

    op.create_table(
        "findings",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("design_id", sa.String(length=12), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("stage", sa.String(length=200), nullable=False),
        sa.Column("severity", sa.String(length=16), nullable=False),
        sa.Column("code", sa.String(length=200), nullable=False),
        sa.Column("object", sa.Text(), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["design_id"],
            ["designs.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("findings", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_findings_design_id"), ["design_id"], unique=False)

    op.create_table(
        "pictures",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("design_id", sa.String(length=12), nullable=False),
        sa.Column("name", sa.String(length=300), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["design_id"],
            ["designs.id"],
        ),
        sa.ForeignKeyConstraint(
            ["sha256"],
            ["blobs.sha256"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("design_id", "name", name="uq_pictures_design_name"),
    )
    with op.batch_alter_table("pictures", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_pictures_design_id"), ["design_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_pictures_sha256"), ["sha256"], unique=False)

    op.create_table(
        "runs",
        sa.Column("id", sa.String(length=12), nullable=False),
        sa.Column("design_id", sa.String(length=12), nullable=True),
        sa.Column("created", sa.String(length=32), nullable=False),
        sa.Column("user", sa.String(length=200), nullable=False),
        sa.Column("scenario", sa.Text(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["design_id"],
            ["designs.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_runs_created"), ["created"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_design_id"), ["design_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_runs_design_id"))
        batch_op.drop_index(batch_op.f("ix_runs_created"))

    op.drop_table("runs")
    with op.batch_alter_table("pictures", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_pictures_sha256"))
        batch_op.drop_index(batch_op.f("ix_pictures_design_id"))

    op.drop_table("pictures")
    with op.batch_alter_table("findings", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_findings_design_id"))

    op.drop_table("findings")
    with op.batch_alter_table("change_records", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_change_records_proposal_id"))
        batch_op.drop_index(batch_op.f("ix_change_records_kind"))
        batch_op.drop_index(batch_op.f("ix_change_records_design_id"))
        batch_op.drop_index(batch_op.f("ix_change_records_created"))

    op.drop_table("change_records")
    with op.batch_alter_table("tables", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tables_sha256"))
        batch_op.drop_index(batch_op.f("ix_tables_owner_id"))

    op.drop_table("tables")
    with op.batch_alter_table("designs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_designs_spec_hash"))
        batch_op.drop_index(batch_op.f("ix_designs_name"))
        batch_op.drop_index(batch_op.f("ix_designs_created"))

    op.drop_table("designs")
    with op.batch_alter_table("artifacts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_artifacts_sha256"))
        batch_op.drop_index(batch_op.f("ix_artifacts_owner_id"))

    op.drop_table("artifacts")
    op.drop_table("tokens")
    with op.batch_alter_table("specs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_specs_name"))

    op.drop_table("specs")
    op.drop_table("blobs")
