"""The OpenAI Agents API (beta): saved agents, sessions, their turns' order, pending tool results, input keys.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "beta_agents",
        sa.Column("agent_id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("agent_id"),
    )
    op.create_index("ix_beta_agents_tenant_order", "beta_agents", ["tenant_id", "created_at"])
    op.create_table(
        "beta_sessions",
        sa.Column("session_id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("agent_id", sa.String(length=64), nullable=True),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.Column("current_turn_id", sa.String(length=64), nullable=True),
        sa.Column("turn_count", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_active_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("session_id"),
    )
    op.create_index("ix_beta_sessions_tenant_order", "beta_sessions", ["tenant_id", "created_at"])
    op.create_index("ix_beta_sessions_agent", "beta_sessions", ["tenant_id", "agent_id"])
    op.create_table(
        "beta_session_turns",
        sa.Column("turn_id", sa.String(length=64), nullable=False),
        sa.Column("session_id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("turn_id"),
        sa.UniqueConstraint("session_id", "ordinal", name="uq_beta_session_turns_ordinal"),
    )
    op.create_table(
        "beta_tool_results",
        sa.Column("turn_id", sa.String(length=64), nullable=False),
        sa.Column("call_id", sa.String(length=200), nullable=False),
        sa.Column("content", sa.JSON(), nullable=True),
        sa.Column("is_error", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("turn_id", "call_id"),
    )
    op.create_table(
        "beta_input_keys",
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("session_id", sa.String(length=64), nullable=False),
        sa.Column("idempotency_key", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("tenant_id", "session_id", "idempotency_key"),
    )


def downgrade() -> None:
    op.drop_table("beta_input_keys")
    op.drop_table("beta_tool_results")
    op.drop_table("beta_session_turns")
    op.drop_index("ix_beta_sessions_agent", table_name="beta_sessions")
    op.drop_index("ix_beta_sessions_tenant_order", table_name="beta_sessions")
    op.drop_table("beta_sessions")
    op.drop_index("ix_beta_agents_tenant_order", table_name="beta_agents")
    op.drop_table("beta_agents")
