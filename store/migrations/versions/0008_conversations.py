"""Conversations of the Responses dialect: a tenant's conversations and their ordered items.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "conversations",
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("metadata", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("conversation_id"),
    )
    op.create_table(
        "conversation_items",
        # SQLite only auto-increments a column declared exactly INTEGER PRIMARY KEY.
        sa.Column("position", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("item_id", sa.String(length=128), nullable=False),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversations.conversation_id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("position"),
        sa.UniqueConstraint("conversation_id", "item_id", name="uq_conversation_items_item"),
    )
    op.create_index("ix_conversation_items_order", "conversation_items", ["conversation_id", "position"])


def downgrade() -> None:
    op.drop_index("ix_conversation_items_order", table_name="conversation_items")
    op.drop_table("conversation_items")
    op.drop_table("conversations")
