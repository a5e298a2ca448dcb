"""Agents API sessions' spending limits and spend ledger; automations and their invocation log.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

_ID = sa.String(length=64)
_WHEN = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "session_budgets",
        sa.Column("session_id", _ID, nullable=False),
        sa.Column("limit_cents", sa.BigInteger(), nullable=True),
        sa.Column("waiting_turn_id", _ID, nullable=True),
        sa.Column("updated_at", _WHEN, nullable=False),
        sa.PrimaryKeyConstraint("session_id"),
    )
    op.create_table(
        "session_spend",
        sa.Column("step_id", _ID, nullable=False),
        sa.Column("session_id", _ID, nullable=False),
        sa.Column("turn_id", _ID, nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("input_tokens", sa.Integer(), nullable=False),
        sa.Column("output_tokens", sa.Integer(), nullable=False),
        sa.Column("cost_microcents", sa.BigInteger(), nullable=False),
        sa.Column("created_at", _WHEN, nullable=False),
        sa.PrimaryKeyConstraint("step_id"),
    )
    op.create_index("ix_session_spend_session_id", "session_spend", ["session_id"], unique=False)
    op.create_table(
        "beta_automations",
        sa.Column("automation_id", _ID, nullable=False),
        sa.Column("tenant_id", _ID, nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("pause_reason", _ID, nullable=True),
        sa.Column("target_session_id", _ID, nullable=True),
        sa.Column("created_at", _WHEN, nullable=False),
        sa.Column("updated_at", _WHEN, nullable=False),
        sa.PrimaryKeyConstraint("automation_id"),
    )
    op.create_index("ix_beta_automations_tenant_order", "beta_automations", ["tenant_id", "created_at"], unique=False)
    op.create_index("ix_beta_automations_target_session_id", "beta_automations", ["target_session_id"], unique=False)
    op.create_table(
        "beta_automation_invocations",
        sa.Column("invocation_id", _ID, nullable=False),
        sa.Column("automation_id", _ID, nullable=False),
        sa.Column("tenant_id", _ID, nullable=False),
        sa.Column("run_key", _ID, nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("snapshot", sa.JSON(), nullable=True),
        sa.Column("scheduled_at", _WHEN, nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("session_id", _ID, nullable=True),
        sa.Column("skip_reason", sa.String(length=32), nullable=True),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("created_at", _WHEN, nullable=False),
        sa.Column("updated_at", _WHEN, nullable=False),
        sa.ForeignKeyConstraint(["automation_id"], ["beta_automations.automation_id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("invocation_id"),
        sa.UniqueConstraint("automation_id", "run_key", name="uq_beta_automation_invocations_run"),
    )
    op.create_index(
        "ix_beta_automation_invocations_order",
        "beta_automation_invocations",
        ["automation_id", "created_at"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_table("beta_automation_invocations")
    op.drop_table("beta_automations")
    op.drop_index("ix_session_spend_session_id", table_name="session_spend")
    op.drop_table("session_spend")
    op.drop_table("session_budgets")
