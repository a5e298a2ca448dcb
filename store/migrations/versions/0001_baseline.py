"""Baseline: the store's tables exactly as `create_all` made them before migrations existed.

A store made that way has these tables and no alembic_version table; `store.upgrade` stamps it
with this revision and upgrades it from here.

Revision ID: 0001
Revises:
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "agents",
        sa.Column("agent_id", sa.String(64), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("agent_id"),
    )
    op.create_table(
        "toolgroups",
        sa.Column("toolgroup_id", sa.String(200), nullable=False),
        sa.Column("provider_id", sa.String(100), nullable=False),
        sa.Column("mcp_uri", sa.Text(), nullable=True),
        sa.Column("args", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("toolgroup_id"),
    )
    op.create_table(
        "sessions",
        sa.Column("session_id", sa.String(64), nullable=False),
        sa.Column("agent_id", sa.String(64), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("active_turn_id", sa.String(64), nullable=True),
        sa.PrimaryKeyConstraint("session_id"),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.agent_id"], ondelete="CASCADE"),
    )
    op.create_index("ix_sessions_agent_id", "sessions", ["agent_id"])
    op.create_table(
        "turns",
        sa.Column("turn_id", sa.String(64), nullable=False),
        sa.Column("session_id", sa.String(64), nullable=False),
        sa.Column("agent_id", sa.String(64), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("input_messages", sa.JSON(), nullable=False),
        sa.Column("output_message", sa.JSON(), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("turn_id"),
        sa.ForeignKeyConstraint(["session_id"], ["sessions.session_id"], ondelete="CASCADE"),
    )
    op.create_index("ix_turns_session_order", "turns", ["session_id", "started_at"])
    op.create_table(
        "steps",
        sa.Column("turn_id", sa.String(64), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("step_id", sa.String(64), nullable=False),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("turn_id", "position"),
        sa.ForeignKeyConstraint(["turn_id"], ["turns.turn_id"], ondelete="CASCADE"),
    )
    op.create_table(
        "turn_events",
        # SQLite only auto-increments a column declared exactly INTEGER PRIMARY KEY.
        sa.Column("event_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("turn_id", sa.String(64), nullable=False),
        sa.Column("key", sa.String(200), nullable=False),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("event_id"),
        sa.UniqueConstraint("turn_id", "key", name="uq_turn_events_key"),
        sa.ForeignKeyConstraint(["turn_id"], ["turns.turn_id"], ondelete="CASCADE"),
    )
    op.create_index("ix_turn_events_tail", "turn_events", ["turn_id", "event_id"])


def downgrade() -> None:
    for table in ("turn_events", "steps", "turns", "sessions", "toolgroups", "agents"):
        op.drop_table(table)
