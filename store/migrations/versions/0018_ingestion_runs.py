"""Each attachment of a file to a vector store has an ingestion id of its own, which names its ingestion workflow:
attaching a file again starts a fresh run, and a run that outlived its attachment writes nothing.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Files attached before have none: their workflows keep the id they were started with.
    with op.batch_alter_table("vector_store_files", schema=None) as batch_op:
        batch_op.add_column(sa.Column("ingestion_id", sa.String(length=32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("vector_store_files", schema=None) as batch_op:
        batch_op.drop_column("ingestion_id")
