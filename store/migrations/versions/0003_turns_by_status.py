"""An index on turns by status and start time, for the sweep of unstarted turns.

Every API process looks for running turns older than a cutoff every `DA_UNSTARTED_TURN_SWEEP`
seconds; without this index that is a scan of all turns each time.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_turns_status_started", "turns", ["status", "started_at"])


def downgrade() -> None:
    op.drop_index("ix_turns_status_started", table_name="turns")
