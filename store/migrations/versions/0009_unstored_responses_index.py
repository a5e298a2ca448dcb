"""A partial index for the sweep that deletes ended `store: false` responses (api/turn_sweep.py).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("responses", schema=None) as batch_op:
        batch_op.create_index(
            "ix_responses_unstored",
            ["turn_id"],
            unique=False,
            sqlite_where=sa.text("store = 0"),
            postgresql_where=sa.text("store = false"),
        )


def downgrade() -> None:
    with op.batch_alter_table("responses", schema=None) as batch_op:
        batch_op.drop_index(
            "ix_responses_unstored", sqlite_where=sa.text("store = 0"), postgresql_where=sa.text("store = false")
        )
