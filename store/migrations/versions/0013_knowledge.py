"""Knowledge: uploaded files (their bytes in parts on PostgreSQL), vector stores, their files and file batches, and
the chunks of text ingested from them. Each engine keeps its vector and keyword index beside these itself.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_ID = sa.String(length=64)
_WHEN = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "files",
        sa.Column("file_id", _ID, nullable=False),
        sa.Column("tenant_id", _ID, nullable=False),
        sa.Column("filename", sa.Text(), nullable=False),
        sa.Column("purpose", sa.String(length=32), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.Column("created_at", _WHEN, nullable=False),
        sa.Column("expires_at", _WHEN, nullable=True),
        sa.PrimaryKeyConstraint("file_id"),
    )
    op.create_index("ix_files_tenant_order", "files", ["tenant_id", "created_at"], unique=False)
    op.create_table(
        "file_blob_parts",
        sa.Column("file_id", _ID, nullable=False),
        sa.Column("part", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("file_id", "part"),
    )
    op.create_table(
        "vector_stores",
        sa.Column("vector_store_id", _ID, nullable=False),
        sa.Column("tenant_id", _ID, nullable=False),
        sa.Column("name", sa.Text(), nullable=True),
        sa.Column("metadata", sa.JSON(), nullable=False),
        sa.Column("embedding_model", sa.Text(), nullable=False),
        sa.Column("embedding_dimension", sa.Integer(), nullable=False),
        sa.Column("expires_after", sa.JSON(), nullable=True),
        sa.Column("created_at", _WHEN, nullable=False),
        sa.Column("last_active_at", _WHEN, nullable=False),
        sa.Column("provider_vector_db_id", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("vector_store_id"),
    )
    op.create_index("ix_vector_stores_tenant_order", "vector_stores", ["tenant_id", "created_at"], unique=False)
    op.create_table(
        "vector_store_file_batches",
        sa.Column("batch_id", _ID, nullable=False),
        sa.Column("vector_store_id", _ID, nullable=False),
        sa.Column("created_at", _WHEN, nullable=False),
        sa.Column("cancelled", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("batch_id"),
    )
    op.create_index(
        op.f("ix_vector_store_file_batches_vector_store_id"),
        "vector_store_file_batches",
        ["vector_store_id"],
        unique=False,
    )
    op.create_table(
        "vector_store_files",
        sa.Column("vector_store_id", _ID, nullable=False),
        sa.Column("file_id", _ID, nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attributes", sa.JSON(), nullable=False),
        sa.Column("chunking_strategy", sa.JSON(), nullable=False),
        sa.Column("last_error", sa.JSON(), nullable=True),
        sa.Column("usage_bytes", sa.BigInteger(), nullable=False),
        sa.Column("chunk_count", sa.Integer(), nullable=False),
        sa.Column("batch_id", _ID, nullable=True),
        sa.Column("created_at", _WHEN, nullable=False),
        sa.PrimaryKeyConstraint("vector_store_id", "file_id"),
    )
    op.create_index(op.f("ix_vector_store_files_batch_id"), "vector_store_files", ["batch_id"], unique=False)
    op.create_index(
        "ix_vector_store_files_order", "vector_store_files", ["vector_store_id", "created_at"], unique=False
    )
    op.create_table(
        "knowledge_chunks",
        sa.Column("chunk_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("vector_store_id", _ID, nullable=False),
        sa.Column("file_id", _ID, nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column("embedded", sa.Boolean(), nullable=False),
        sa.Column("metadata", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("chunk_id"),
        sa.UniqueConstraint("vector_store_id", "file_id", "seq", name="uq_knowledge_chunks_position"),
    )


def downgrade() -> None:
    op.drop_table("knowledge_chunks")
    op.drop_index("ix_vector_store_files_order", table_name="vector_store_files")
    op.drop_index(op.f("ix_vector_store_files_batch_id"), table_name="vector_store_files")
    op.drop_table("vector_store_files")
    op.drop_index(op.f("ix_vector_store_file_batches_vector_store_id"), table_name="vector_store_file_batches")
    op.drop_table("vector_store_file_batches")
    op.drop_index("ix_vector_stores_tenant_order", table_name="vector_stores")
    op.drop_table("vector_stores")
    op.drop_table("file_blob_parts")
    op.drop_index("ix_files_tenant_order", table_name="files")
    op.drop_table("files")
