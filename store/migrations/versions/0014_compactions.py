"""The summaries `/responses/compact` requests have a workflow write (compaction/).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "compactions",
        sa.Column("compaction_id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("source", sa.JSON(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=True),
        sa.Column("input_tokens", sa.Integer(), nullable=True),
        sa.Column("output_tokens", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("compaction_id"),
    )
    with op.batch_alter_table("compactions", schema=None) as batch_op:
        batch_op.create_index("ix_compactions_tenant_order", ["tenant_id", "created_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("compactions", schema=None) as batch_op:
        batch_op.drop_index("ix_compactions_tenant_order")
    op.drop_table("compactions")
