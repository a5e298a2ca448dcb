"""What the container routes share (the Containers API, and the Responses tools' auto containers): a
container's row and its workspace made and removed together, files copied in, made once per process by the
app's lifespan.

A container's workspace is a directory under this host's data directory (code_sandbox/workspaces.py): the
API process writes the files a caller adds, the worker's sandbox runs code in it, so both must share that
directory (one host, or the container's host: docs/code-sandbox.md)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request

from code_sandbox.workspace_files import CHUNK, inside_path, write_file
from code_sandbox.workspaces import create_workspace, delete_workspace, workspace_path
from configuration.settings import Settings
from knowledge.blobs import BlobStore
from store.containers.containers import Container, ContainerFile, ContainerLimitReached, ContainerStore
from store.knowledge.files import FileStore

MEMORY_LIMITS_MB = {"1g": 1024, "4g": 4096, "16g": 16384, "64g": 65536}
"""The `memory_limit` values of the wire; one above the operator's DA_SANDBOX_MEMORY_MB is refused."""


@dataclass(frozen=True)
class Containers:
    settings: Settings
    store: ContainerStore
    files: FileStore
    blobs: BlobStore

    def workspace(self, container_id: str) -> Path:
        return workspace_path(self.settings.data_dir, container_id)

    async def create(
        self,
        tenant: str,
        name: str,
        file_ids: list[str],
        memory_limit: str | None,
        expires_after_minutes: int | None,
    ) -> Container:
        """A new container with the tenant's files copied in (a 404 names an unknown file, a 400 the quota)."""
        limit = memory_limit or _default_memory_limit(self.settings)
        now = datetime.now(UTC)
        for file_id in file_ids:  # all known before anything is made
            await self._owned_file(tenant, file_id)
        container = Container(
            container_id="cntr_" + secrets.token_hex(16),
            tenant_id=tenant,
            name=name,
            memory_limit=limit,
            network_policy={"type": "disabled"},
            expires_after_minutes=expires_after_minutes or self.settings.container_idle_minutes,
            host=None,
            created_at=now,
            last_active_at=now,
        )
        try:
            await self.store.create(container, self.settings.max_containers_per_tenant, now)
        except ContainerLimitReached:
            raise HTTPException(
                400,
                f"You hold {self.settings.max_containers_per_tenant} containers, as many as you may "
                "(DA_MAX_CONTAINERS_PER_TENANT): delete one first.",
            ) from None
        await asyncio.to_thread(create_workspace, self.settings.data_dir, container.container_id)
        try:
            for file_id in file_ids:
                await self.copy_file(tenant, container, file_id)
        except BaseException:
            await self.delete(tenant, container.container_id)
            raise
        return container

    async def delete(self, tenant: str, container_id: str) -> bool:
        gone = await self.store.delete(tenant, container_id)
        if gone:
            await asyncio.to_thread(delete_workspace, self.settings.data_dir, container_id)
        return gone

    async def owned(self, tenant: str, container_id: str) -> Container:
        """The tenant's live container, or the 404 an unknown (expired, another tenant's) one gets."""
        container = await self.store.get(tenant, container_id, datetime.now(UTC))
        if container is None:
            raise HTTPException(404, f"Container with id '{container_id}' not found.")
        return container

    async def _owned_file(self, tenant: str, file_id: str) -> Any:
        file = await self.files.get(tenant, file_id)
        if file is None or (file.expires_at is not None and file.expires_at <= datetime.now(UTC)):
            raise HTTPException(404, f"File with id '{file_id}' not found.")
        return file

    async def copy_file(self, tenant: str, container: Container, file_id: str) -> ContainerFile:
        """Copies one of the tenant's files (the Files API) into the container as `/workspace/<its name>`."""
        file = await self._owned_file(tenant, file_id)
        path = _file_path(file.filename)
        async with self.blobs.local_copy(file_id) as local:
            size = await asyncio.to_thread(_copy_from, local, self.workspace(container.container_id), path)
        return await self.record(tenant, container, path, size, "user")

    async def add_upload(
        self, tenant: str, container: Container, filename: str, chunks: AsyncIterator[bytes]
    ) -> ContainerFile:
        """Writes an upload's bytes into the container as `/workspace/<filename>`."""
        path = _file_path(filename)
        body = [chunk async for chunk in chunks]
        size = await asyncio.to_thread(write_file, self.workspace(container.container_id), path, body)
        return await self.record(tenant, container, path, size, "user")

    async def record(self, tenant: str, container: Container, path: str, size: int, source: str) -> ContainerFile:
        now = datetime.now(UTC)
        file = ContainerFile("cfile_" + secrets.token_hex(16), container.container_id, path, size, source, now)
        recorded = await self.store.put_file(tenant, file)
        await self.store.touch(container.container_id, now)
        return recorded


def _default_memory_limit(settings: Settings) -> str:
    fitting = [name for name, mb in MEMORY_LIMITS_MB.items() if mb <= settings.sandbox_memory_mb]
    return fitting[-1] if fitting else "1g"


def _file_path(filename: str) -> str:
    try:
        return inside_path(Path(filename).name or "upload")
    except LookupError:
        raise HTTPException(400, f"File name {filename!r} cannot be a file of a container.") from None


def _copy_from(local: Path, workspace: Path, path: str) -> int:
    with local.open("rb") as source:
        return write_file(workspace, path, iter(lambda: source.read(CHUNK), b""))


def containers_for(settings: Settings, store: ContainerStore, files: FileStore, blobs: BlobStore) -> Containers:
    return Containers(settings, store, files, blobs)


async def get_containers(request: Request) -> Containers:
    containers: Containers = request.app.state.containers
    return containers


ContainersDep = Annotated[Containers, Depends(get_containers)]
