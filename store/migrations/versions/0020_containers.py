"""Containers (the Containers API and the code tools), the files known in them, and the record of each call run
in one, so a call cut by a crash is never run twice.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "containers",
        sa.Column("container_id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("memory_limit", sa.String(length=8), nullable=False),
        sa.Column("network_policy", sa.JSON(), nullable=False),
        sa.Column("expires_after_minutes", sa.Integer(), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_active_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("container_id"),
    )
    with op.batch_alter_table("containers", schema=None) as batch_op:
        batch_op.create_index("ix_containers_expiry", ["expires_at"], unique=False)
        batch_op.create_index("ix_containers_tenant_order", ["tenant_id", "created_at"], unique=False)

    op.create_table(
        "container_calls",
        sa.Column("call_key", sa.String(length=200), nullable=False),
        sa.Column("container_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["container_id"], ["containers.container_id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("call_key"),
    )
    with op.batch_alter_table("container_calls", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_container_calls_container_id"), ["container_id"], unique=False)

    op.create_table(
        "container_files",
        sa.Column("file_id", sa.String(length=64), nullable=False),
        sa.Column("container_id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("bytes", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["container_id"], ["containers.container_id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("file_id"),
        sa.UniqueConstraint("container_id", "path", name="uq_container_files_path"),
    )
    with op.batch_alter_table("container_files", schema=None) as batch_op:
        batch_op.create_index("ix_container_files_order", ["container_id", "created_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("container_files", schema=None) as batch_op:
        batch_op.drop_index("ix_container_files_order")

    op.drop_table("container_files")
    with op.batch_alter_table("container_calls", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_container_calls_container_id"))

    op.drop_table("container_calls")
    with op.batch_alter_table("containers", schema=None) as batch_op:
        batch_op.drop_index("ix_containers_tenant_order")
        batch_op.drop_index("ix_containers_expiry")

    op.drop_table("containers")
