"""Turns keep their own toolgroups and tool_config, so a reopened turn runs with them again.

Turns recorded before this revision have neither (NULL): reopened, they use the agent's, as before.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("turns") as batch_op:
        batch_op.add_column(sa.Column("toolgroups", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("tool_config", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("turns") as batch_op:
        batch_op.drop_column("tool_config")
        batch_op.drop_column("toolgroups")
