"""A partial index for the sweep that starts ingestions a crash left unstarted (knowledge/ingestion_sweep.py).

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_IN_PROGRESS = sa.text("status = 'in_progress'")


def upgrade() -> None:
    with op.batch_alter_table("vector_store_files", schema=None) as batch_op:
        batch_op.create_index(
            "ix_vector_store_files_in_progress",
            ["created_at"],
            unique=False,
            sqlite_where=_IN_PROGRESS,
            postgresql_where=_IN_PROGRESS,
        )


def downgrade() -> None:
    with op.batch_alter_table("vector_store_files", schema=None) as batch_op:
        batch_op.drop_index(
            "ix_vector_store_files_in_progress", sqlite_where=_IN_PROGRESS, postgresql_where=_IN_PROGRESS
        )
