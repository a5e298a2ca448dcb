"""Responses: the Responses-API responses, each a segment of a turn (api/openai/responses/).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "responses",
        sa.Column("response_id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("turn_id", sa.String(length=64), nullable=False),
        sa.Column("segment_index", sa.Integer(), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=True),
        sa.Column("previous_response_id", sa.String(length=64), nullable=True),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("request", sa.JSON(), nullable=False),
        sa.Column("background", sa.Boolean(), nullable=False),
        sa.Column("store", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("appended_to_conversation", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.ForeignKeyConstraint(["turn_id"], ["turns.turn_id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("response_id"),
    )
    op.create_index("ix_responses_tenant_order", "responses", ["tenant_id", "created_at"])
    op.create_index("ix_responses_conversation_order", "responses", ["conversation_id", "created_at"])
    op.create_index(op.f("ix_responses_turn_id"), "responses", ["turn_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_responses_turn_id"), table_name="responses")
    op.drop_index("ix_responses_conversation_order", table_name="responses")
    op.drop_index("ix_responses_tenant_order", table_name="responses")
    op.drop_table("responses")
