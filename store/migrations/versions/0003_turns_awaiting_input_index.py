"""A partial index of the turns awaiting input: the metrics scrape counts them at every scrape.

Only paused turns are in it, so it stays as small as they are few and costs the other writes nothing.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_AWAITING_INPUT = sa.text("status = 'awaiting_input'")


def upgrade() -> None:
    op.create_index(
        "ix_turns_awaiting_input",
        "turns",
        ["status"],
        sqlite_where=_AWAITING_INPUT,
        postgresql_where=_AWAITING_INPUT,
    )


def downgrade() -> None:
    op.drop_index("ix_turns_awaiting_input", table_name="turns")
