"""Incidents of runtime operations (``clusterloom.store.models.IncidentRow``).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "incidents",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("design_id", sa.String(length=12), nullable=True),
        sa.Column("design", sa.String(length=200), nullable=False),
        sa.Column("opened_ms", sa.BigInteger(), nullable=False),
        sa.Column("last_ms", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("proposal_id", sa.String(length=64), nullable=True),
        sa.Column("user", sa.String(length=200), nullable=False),
        sa.Column("created", sa.String(length=32), nullable=False),
        sa.Column("updated", sa.String(length=32), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["design_id"], ["designs.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("incidents", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_incidents_design_id"), ["design_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_incidents_opened_ms"), ["opened_ms"], unique=False)
        batch_op.create_index(batch_op.f("ix_incidents_proposal_id"), ["proposal_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_incidents_updated"), ["updated"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("incidents", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_incidents_updated"))
        batch_op.drop_index(batch_op.f("ix_incidents_proposal_id"))
        batch_op.drop_index(batch_op.f("ix_incidents_opened_ms"))
        batch_op.drop_index(batch_op.f("ix_incidents_design_id"))
    op.drop_table("incidents")
