"""Responses remember the hash of an unkeyed create's request, so that the SDK's retries of it find it.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("responses", schema=None) as batch_op:
        batch_op.add_column(sa.Column("request_hash", sa.String(length=64), nullable=True))
        batch_op.create_index("ix_responses_request_hash", ["tenant_id", "request_hash"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("responses", schema=None) as batch_op:
        batch_op.drop_index("ix_responses_request_hash")
        batch_op.drop_column("request_hash")
