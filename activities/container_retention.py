"""Containers leave as `DELETE /v1/containers/{id}` removes them: the workspace (on this worker's data
directory) first, then the rows, so a crash between the two leaves a row the next batch finds again rather
than files nothing names. Expired containers (idle past their `expires_after`) go at every sweep; a tenant's
all go with its erasure."""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path

from code_sandbox.workspaces import delete_workspace
from store.containers.containers import ContainerStore
from workflows.retention import EraseResult

EXPIRED_CONTAINERS_KIND = "containers"


class ContainerRetention:
    def __init__(self, store: ContainerStore, data_dir: Path) -> None:
        self.store = store
        self.data_dir = data_dir

    async def prune_expired(self, now: datetime, limit: int) -> int:
        expired = await self.store.expired(now, limit)
        for tenant, container_id in expired:
            await self._delete(tenant, container_id)
        return len(expired)

    async def erase(self, tenant: str, limit: int) -> EraseResult | None:
        containers = await self.store.of_tenant(tenant, limit)
        for container_id in containers:
            await self._delete(tenant, container_id)
        return EraseResult(kind=EXPIRED_CONTAINERS_KIND, deleted=len(containers)) if containers else None

    async def _delete(self, tenant: str, container_id: str) -> None:
        await asyncio.to_thread(delete_workspace, self.data_dir, container_id)
        await self.store.delete(tenant, container_id)
