"""Uploaded files in the store: their rows, scoped to a tenant (the bytes are in knowledge/blobs.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import Connection, delete, func, insert, or_, select, tuple_

from store.database import Database
from store.knowledge.quotas import FileQuota
from store.knowledge.records import LimitReached
from store.knowledge.tables import FileRow
from store.tenancy.quotas import serialise_tenant

Order = Literal["asc", "desc"]


@dataclass(frozen=True)
class StoredFile:
    file_id: str
    filename: str
    purpose: str
    bytes: int
    created_at: datetime
    expires_at: datetime | None
    vector_store_id: str | None = None
    """The vector DB `rag-tool/insert` made this file for (it goes with it); None for an upload."""


class UnknownCursor(LookupError):
    """The `after` id of a listing is not one of the caller's objects."""


def _file(row: Any) -> StoredFile:
    return StoredFile(
        file_id=row.file_id,
        filename=row.filename,
        purpose=row.purpose,
        bytes=row.bytes,
        created_at=row.created_at,
        expires_at=row.expires_at,
    )


_COLUMNS = (FileRow.file_id, FileRow.filename, FileRow.purpose, FileRow.bytes, FileRow.created_at, FileRow.expires_at)


class FileStore:
    def __init__(self, database: Database) -> None:
        self.database = database

    async def add(self, tenant: str, file: StoredFile, quota: FileQuota) -> None:
        """Add the file's row; raises LimitReached, naming the setting, past the tenant's quota."""
        values = {**file.__dict__, "tenant_id": tenant}

        def write(tx: Connection) -> None:
            serialise_tenant(tx, "files", tenant)
            count, total = tx.execute(
                select(func.count(), func.coalesce(func.sum(FileRow.bytes), 0)).where(FileRow.tenant_id == tenant)
            ).one()
            if count + 1 > quota.max_files:
                raise LimitReached(
                    f"You have {count} files, this server's quota per tenant (DA_MAX_FILES_PER_TENANT); "
                    "delete some to upload more."
                )
            if total + file.bytes > quota.max_bytes:
                raise LimitReached(
                    f"Your files hold {total} bytes; {file.bytes} more would pass this server's quota of "
                    f"{quota.max_bytes} bytes per tenant (DA_MAX_FILE_BYTES_PER_TENANT); delete some to upload more."
                )
            tx.execute(insert(FileRow), values)

        await self.database.write(write)

    async def get(self, tenant: str, file_id: str) -> StoredFile | None:
        def read(tx: Connection) -> StoredFile | None:
            row = tx.execute(select(*_COLUMNS).where(FileRow.tenant_id == tenant, FileRow.file_id == file_id)).first()
            return _file(row) if row is not None else None

        return await self.database.read(read)

    async def page(
        self, tenant: str, purpose: str | None, order: Order, after: str | None, limit: int
    ) -> tuple[list[StoredFile], bool]:
        now = datetime.now(UTC)

        def read(tx: Connection) -> tuple[list[StoredFile], bool]:
            # An expired file is not listed, as retrieve and delete answer 404 for it until retention deletes it.
            live = or_(FileRow.expires_at.is_(None), FileRow.expires_at > now)
            query = select(*_COLUMNS).where(FileRow.tenant_id == tenant, live)
            if purpose is not None:
                query = query.where(FileRow.purpose == purpose)
            position = tuple_(FileRow.created_at, FileRow.file_id)
            if after is not None:
                cursor = tx.execute(
                    select(FileRow.created_at, FileRow.file_id).where(
                        FileRow.tenant_id == tenant, FileRow.file_id == after
                    )
                ).first()
                if cursor is None:
                    raise UnknownCursor(after)
                query = query.where(position < tuple_(*cursor) if order == "desc" else position > tuple_(*cursor))
            ordering = (
                (FileRow.created_at.desc(), FileRow.file_id.desc())
                if order == "desc"
                else (FileRow.created_at.asc(), FileRow.file_id.asc())
            )
            rows = tx.execute(query.order_by(*ordering).limit(limit + 1)).all()
            return [_file(row) for row in rows[:limit]], len(rows) > limit

        return await self.database.read(read)

    async def made_for(self, tenant: str, vector_store_id: str) -> list[str]:
        """The files `rag-tool/insert` made for the vector store."""
        query = select(FileRow.file_id).where(FileRow.tenant_id == tenant, FileRow.vector_store_id == vector_store_id)
        return await self.database.read(lambda tx: list(tx.execute(query).scalars()))

    async def existing(self, file_ids: list[str]) -> set[str]:
        """Those of the ids that have a file row, of any tenant (the blob sweep's question)."""
        query = select(FileRow.file_id).where(FileRow.file_id.in_(file_ids))
        return await self.database.read(lambda tx: set(tx.execute(query).scalars()))

    async def delete(self, tenant: str, file_id: str) -> bool:
        def remove(tx: Connection) -> bool:
            gone = tx.execute(delete(FileRow).where(FileRow.tenant_id == tenant, FileRow.file_id == file_id))
            return gone.rowcount > 0

        return await self.database.write(remove)
