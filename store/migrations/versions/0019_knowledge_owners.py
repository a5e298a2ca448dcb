"""Files made by `rag-tool/insert` name their vector DB (deleting it deletes them), and blob parts carry when
they were written (parts no file owns an hour on are swept).

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Parts written before have no date: the sweep dates those it finds unowned, and removes them an hour on.
    with op.batch_alter_table("file_blob_parts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("created_at", sa.DateTime(timezone=True), nullable=True))
    # Files inserted before name none: they stay when their vector DB goes, as they did.
    with op.batch_alter_table("files", schema=None) as batch_op:
        batch_op.add_column(sa.Column("vector_store_id", sa.String(length=64), nullable=True))
        batch_op.create_index("ix_files_vector_store", ["vector_store_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("files", schema=None) as batch_op:
        batch_op.drop_index("ix_files_vector_store")
        batch_op.drop_column("vector_store_id")
    with op.batch_alter_table("file_blob_parts", schema=None) as batch_op:
        batch_op.drop_column("created_at")
