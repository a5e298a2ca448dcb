"""Tenancy: agents and toolgroups belong to a tenant; the same toolgroup id may exist in two tenants.

Rows made before this revision belong to tenant `default`, the one tenant of no-auth mode. With
API keys, give a key that tenant (`DA_API_KEYS=default:<key>`) to keep seeing them.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

DEFAULT_TENANT = "default"


def _tenant_column() -> sa.Column[str]:
    return sa.Column("tenant_id", sa.String(64), nullable=False, server_default=DEFAULT_TENANT)


def _copy_toolgroups(key: list[str], tenant: bool) -> None:
    """Replace the toolgroups table by a copy keyed by `key`, with or without the tenant column."""
    columns: list[sa.Column[Any]] = [
        *([_tenant_column()] if tenant else []),
        sa.Column("toolgroup_id", sa.String(200), nullable=False),
        sa.Column("provider_id", sa.String(100), nullable=False),
        sa.Column("mcp_uri", sa.Text(), nullable=True),
        sa.Column("args", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    ]
    op.create_table("toolgroups_copy", *columns, sa.PrimaryKeyConstraint(*key))
    kept = "toolgroup_id, provider_id, mcp_uri, args, created_at"
    op.execute(f"INSERT INTO toolgroups_copy ({kept}) SELECT {kept} FROM toolgroups")
    op.drop_table("toolgroups")
    op.rename_table("toolgroups_copy", "toolgroups")


def upgrade() -> None:
    with op.batch_alter_table("agents") as batch_op:
        batch_op.add_column(_tenant_column())
    op.create_index("ix_agents_tenant_order", "agents", ["tenant_id", "created_at"])
    # The toolgroups' key becomes (tenant, id). SQLite cannot alter a primary key: the table is copied.
    if op.get_bind().dialect.name == "sqlite":
        _copy_toolgroups(["tenant_id", "toolgroup_id"], tenant=True)
    else:
        op.add_column("toolgroups", _tenant_column())
        op.drop_constraint("toolgroups_pkey", "toolgroups", type_="primary")
        op.create_primary_key("toolgroups_pkey", "toolgroups", ["tenant_id", "toolgroup_id"])


def downgrade() -> None:
    # Only the `default` tenant's toolgroups fit the old key; the others' are dropped.
    op.execute(sa.text("DELETE FROM toolgroups WHERE tenant_id != :tenant").bindparams(tenant=DEFAULT_TENANT))
    if op.get_bind().dialect.name == "sqlite":
        _copy_toolgroups(["toolgroup_id"], tenant=False)
    else:
        op.drop_constraint("toolgroups_pkey", "toolgroups", type_="primary")
        op.drop_column("toolgroups", "tenant_id")
        op.create_primary_key("toolgroups_pkey", "toolgroups", ["toolgroup_id"])
    op.drop_index("ix_agents_tenant_order", table_name="agents")
    with op.batch_alter_table("agents") as batch_op:
        batch_op.drop_column("tenant_id")
