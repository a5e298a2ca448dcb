"""Detached turns: turns of no agent or session (the Responses dialect), with their tenant, their
prior context, their per-segment settings, and the call ids a paused one waits for.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("turns") as batch_op:
        batch_op.add_column(sa.Column("tenant_id", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("context_messages", sa.JSON(), nullable=True))
        batch_op.alter_column("session_id", existing_type=sa.String(length=64), nullable=True)
        batch_op.alter_column("agent_id", existing_type=sa.String(length=64), nullable=True)
    op.create_table(
        "turn_settings",
        sa.Column("settings_id", sa.String(length=64), nullable=False),
        sa.Column("turn_id", sa.String(length=64), nullable=False),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["turn_id"], ["turns.turn_id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("settings_id"),
    )
    op.create_index("ix_turn_settings_turn_id", "turn_settings", ["turn_id"])
    op.create_table(
        "turn_pending_calls",
        sa.Column("turn_id", sa.String(length=64), nullable=False),
        sa.Column("call_id", sa.String(length=200), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(["turn_id"], ["turns.turn_id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("turn_id", "call_id"),
    )
    op.create_index("ix_turn_pending_calls_tenant_call", "turn_pending_calls", ["tenant_id", "call_id"])


def downgrade() -> None:
    op.drop_index("ix_turn_pending_calls_tenant_call", table_name="turn_pending_calls")
    op.drop_table("turn_pending_calls")
    op.drop_index("ix_turn_settings_turn_id", table_name="turn_settings")
    op.drop_table("turn_settings")
    # Detached turns have no session to belong to under the old schema.
    detached = "SELECT turn_id FROM turns WHERE session_id IS NULL OR agent_id IS NULL"
    for table in ("turn_events", "steps", "turn_credentials"):
        op.execute(f"DELETE FROM {table} WHERE turn_id IN ({detached})")
    op.execute("DELETE FROM turns WHERE session_id IS NULL OR agent_id IS NULL")
    with op.batch_alter_table("turns") as batch_op:
        batch_op.alter_column("agent_id", existing_type=sa.String(length=64), nullable=False)
        batch_op.alter_column("session_id", existing_type=sa.String(length=64), nullable=False)
        batch_op.drop_column("context_messages")
        batch_op.drop_column("tenant_id")
