"""Attachments that earlier releases left `failed` after their file was deleted mid-attach go: their file is
gone, they hold no chunks (a failed ingestion drops them), and they were counted in the store's `file_counts`
forever. The release that adds this no longer makes them (deleting a file detaches it everywhere, first and
last).

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

_FILELESS = "status = 'failed' AND NOT EXISTS (SELECT 1 FROM files WHERE files.file_id = vector_store_files.file_id)"


def upgrade() -> None:
    op.execute(f"DELETE FROM vector_store_files WHERE {_FILELESS}")


def downgrade() -> None:
    """Nothing to restore: the rows named files that no longer exist."""
