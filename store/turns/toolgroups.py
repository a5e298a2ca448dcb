"""A tenant's registered toolgroups."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Row, delete, func, insert, select

from domain.content import URL
from domain.tools import ToolGroup
from store.turns.records import LimitReached
from store.turns.rows import StoreBase
from store.turns.tables import ToolGroupRow

_TOOLGROUPS = ToolGroupRow.__table__


def _toolgroup(row: Row[Any]) -> ToolGroup:
    endpoint = URL(uri=row.mcp_uri) if row.mcp_uri else None
    return ToolGroup(identifier=row.toolgroup_id, provider_id=row.provider_id, mcp_endpoint=endpoint, args=row.args)


class ToolGroupStore(StoreBase):
    async def register_toolgroup(self, tenant: str, group: ToolGroup, most: int) -> bool:
        """Add a toolgroup of the tenant's; false if it has one with this id. Raises LimitReached when
        the tenant already has `most`."""

        def run(tx: Connection) -> bool:
            owned = ToolGroupRow.tenant_id == tenant
            exists = select(ToolGroupRow.toolgroup_id).where(owned, ToolGroupRow.toolgroup_id == group.identifier)
            if tx.scalar(exists) is not None:
                return False
            if (tx.scalar(select(func.count()).select_from(ToolGroupRow).where(owned)) or 0) >= most:
                raise LimitReached(
                    f"This tenant has {most} toolgroups, the most allowed (DA_MAX_TOOLGROUPS_PER_TENANT); "
                    "unregister one first"
                )
            tx.execute(
                insert(ToolGroupRow).values(
                    tenant_id=tenant,
                    toolgroup_id=group.identifier,
                    provider_id=group.provider_id,
                    mcp_uri=group.mcp_endpoint.uri if group.mcp_endpoint else None,
                    args=group.args,
                    created_at=datetime.now(UTC),
                )
            )
            return True

        return await self.database.write(run)

    async def toolgroups(self, tenant: str) -> list[ToolGroup]:
        query = (
            select(_TOOLGROUPS)
            .where(ToolGroupRow.tenant_id == tenant)
            .order_by(ToolGroupRow.created_at, ToolGroupRow.toolgroup_id)
        )
        rows = await self.database.read(lambda tx: tx.execute(query).all())
        return [_toolgroup(row) for row in rows]

    async def toolgroup(self, tenant: str, toolgroup_id: str) -> ToolGroup | None:
        query = select(_TOOLGROUPS).where(ToolGroupRow.tenant_id == tenant, ToolGroupRow.toolgroup_id == toolgroup_id)
        row = await self.database.read(lambda tx: tx.execute(query).first())
        return _toolgroup(row) if row else None

    async def unregister_toolgroup(self, tenant: str, toolgroup_id: str) -> bool:
        which = (ToolGroupRow.tenant_id == tenant) & (ToolGroupRow.toolgroup_id == toolgroup_id)
        result = await self.database.write(lambda tx: tx.execute(delete(ToolGroupRow).where(which)))
        return result.rowcount > 0
