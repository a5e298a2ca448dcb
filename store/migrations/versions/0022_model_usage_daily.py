"""Every tenant's model usage per UTC day and model, counted as each call's usage event is written (every dialect's
inferences and turn compaction summaries). Calls made before this revision are not counted in it.

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "model_usage_daily",
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("calls", sa.BigInteger(), nullable=False),
        sa.Column("input_tokens", sa.BigInteger(), nullable=False),
        sa.Column("output_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cost_microcents", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "day", "model"),
    )


def downgrade() -> None:
    op.drop_table("model_usage_daily")
