"""Turn credentials: the MCP headers a running or paused turn's request brought, encrypted with
DA_CREDENTIALS_KEY; a row lives until its turn ends.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "turn_credentials",
        sa.Column("turn_id", sa.String(length=64), nullable=False),
        sa.Column("ciphertext", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["turn_id"], ["turns.turn_id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("turn_id"),
    )


def downgrade() -> None:
    op.drop_table("turn_credentials")
