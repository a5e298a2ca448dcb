"""Vector stores in the store, scoped to a tenant: the stores, the files attached to them and file batches.

Another tenant's vector store is as absent as one that never existed. The chunks ingested from the files, and
search's reads of them, are `VectorStoreChunks` (store/knowledge/chunks.py), which this class extends; the
records it hands out are in store/knowledge/records.py.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, String, delete, func, insert, literal_column, select, tuple_, update

from store.knowledge.chunks import STORE_COLUMNS, VectorStoreChunks, attachment_is, owned_store
from store.knowledge.files import UnknownCursor
from store.knowledge.records import (
    FINAL,
    Attachment,
    Detached,
    FileBatch,
    FileCounts,
    FileGone,
    LimitReached,
    Order,
    PendingIngestion,
    VectorStore,
    VectorStoreFile,
)
from store.knowledge.tables import ChunkRow, FileRow, VectorStoreFileBatchRow, VectorStoreFileRow, VectorStoreRow
from store.tenancy.quotas import serialise_tenant

_IN_PROGRESS = literal_column("'in_progress'", String)


_FILE_COLUMNS = (
    VectorStoreFileRow.vector_store_id,
    VectorStoreFileRow.file_id,
    VectorStoreFileRow.status,
    VectorStoreFileRow.attributes,
    VectorStoreFileRow.chunking_strategy,
    VectorStoreFileRow.last_error,
    VectorStoreFileRow.usage_bytes,
    VectorStoreFileRow.chunk_count,
    VectorStoreFileRow.batch_id,
    VectorStoreFileRow.created_at,
    VectorStoreFileRow.ingestion_id,
)


def _counts(tx: Connection, *where: Any) -> tuple[FileCounts, int]:
    rows = tx.execute(
        select(VectorStoreFileRow.status, func.count(), func.coalesce(func.sum(VectorStoreFileRow.usage_bytes), 0))
        .where(*where)
        .group_by(VectorStoreFileRow.status)
    ).all()
    by_status = {row[0]: int(row[1]) for row in rows}
    return FileCounts(**{status: by_status.get(status, 0) for status in ("in_progress", *FINAL)}), sum(
        int(row[2]) for row in rows
    )


def _store(tx: Connection, row: Any) -> VectorStore:
    counts, usage = _counts(tx, VectorStoreFileRow.vector_store_id == row[0])
    return VectorStore(
        vector_store_id=row[0],
        name=row[1],
        metadata=row[2],
        embedding_model=row[3],
        embedding_dimension=row[4],
        expires_after=row[5],
        created_at=row[6],
        last_active_at=row[7],
        provider_vector_db_id=row[8],
        file_counts=counts,
        usage_bytes=usage,
    )


def vector_db_store_id(tenant: str, vector_db_id: str) -> str:
    """The id of the vector store under the tenant's llama-stack vector DB of this id: a vector DB id is its
    tenant's own name, so the store's id is made of both (and shaped like any vector store's)."""
    return "vs_" + hashlib.sha256(f"{tenant}\0{vector_db_id}".encode()).hexdigest()[:24]


def _after(tx: Connection, query: Any, position: Any, cursor_query: Any, after: str | None, order: Order) -> Any:
    if after is None:
        return query
    cursor = tx.execute(cursor_query).first()
    if cursor is None:
        raise UnknownCursor(after)
    return query.where(position < tuple_(*cursor) if order == "desc" else position > tuple_(*cursor))


TOUCH_EVERY_SECONDS = 60.0
"""A store's `last_active_at` is written at most this often per process by searches and inserts."""


class VectorStores(VectorStoreChunks):
    # The API's reads and writes, scoped to a tenant.

    async def touch(self, vector_store_id: str) -> None:
        """Mark the store in use (searched, chunks inserted), so its `expires_after` and the vector-store TTL
        count from now. At most once a minute per store and process, so a search stays one read."""
        now = time.monotonic()
        touched = self._touched.get(vector_store_id)
        if touched is not None and now - touched < TOUCH_EVERY_SECONDS:
            return
        if len(self._touched) > 10_000:
            self._touched = {key: at for key, at in self._touched.items() if now - at < TOUCH_EVERY_SECONDS}
        self._touched[vector_store_id] = now
        at = datetime.now(UTC)
        await self.database.write(
            lambda tx: tx.execute(
                update(VectorStoreRow)
                .where(VectorStoreRow.vector_store_id == vector_store_id, VectorStoreRow.last_active_at < at)
                .values(last_active_at=at)
            )
        )

    async def create(self, tenant: str, store: VectorStore, max_stores: int) -> None:
        """Raises LimitReached, naming the setting, past the tenant's quota of vector stores."""
        values = {
            "vector_store_id": store.vector_store_id,
            "tenant_id": tenant,
            "name": store.name,
            "metadata": store.metadata,
            "embedding_model": store.embedding_model,
            "embedding_dimension": store.embedding_dimension,
            "expires_after": store.expires_after,
            "created_at": store.created_at,
            "last_active_at": store.last_active_at,
            "provider_vector_db_id": store.provider_vector_db_id,
        }

        def write(tx: Connection) -> None:
            serialise_tenant(tx, "vector_stores", tenant)
            count = tx.execute(select(func.count()).where(VectorStoreRow.tenant_id == tenant)).scalar_one()
            if count + 1 > max_stores:
                raise LimitReached(
                    f"You have {count} vector stores (vector DBs included), this server's quota per tenant "
                    "(DA_MAX_VECTOR_STORES_PER_TENANT); delete some to make more."
                )
            tx.execute(insert(VectorStoreRow), values)

        await self.database.write(write)

    async def get(self, tenant: str, vector_store_id: str) -> VectorStore | None:
        def read(tx: Connection) -> VectorStore | None:
            row = tx.execute(owned_store(tenant, vector_store_id)).first()
            return _store(tx, row) if row is not None else None

        return await self.database.read(read)

    async def get_vector_db(self, tenant: str, vector_db_id: str) -> VectorStore | None:
        """The tenant's vector DB of this id, else its vector store of this id (a `vs_…` id, or a vector DB
        registered before ids were per tenant)."""

        def read(tx: Connection) -> VectorStore | None:
            for candidate in (vector_db_store_id(tenant, vector_db_id), vector_db_id):
                row = tx.execute(owned_store(tenant, candidate)).first()
                if row is not None:
                    return _store(tx, row)
            return None

        return await self.database.read(read)

    async def page(self, tenant: str, order: Order, after: str | None, limit: int) -> tuple[list[VectorStore], bool]:
        def read(tx: Connection) -> tuple[list[VectorStore], bool]:
            rows_ = VectorStoreRow
            position = tuple_(rows_.created_at, rows_.vector_store_id)
            query = _after(
                tx,
                select(*STORE_COLUMNS).where(rows_.tenant_id == tenant),
                position,
                select(rows_.created_at, rows_.vector_store_id).where(
                    rows_.tenant_id == tenant, rows_.vector_store_id == after
                ),
                after,
                order,
            )
            keys = (
                (rows_.created_at.desc(), rows_.vector_store_id.desc())
                if order == "desc"
                else (rows_.created_at.asc(), rows_.vector_store_id.asc())
            )
            rows = tx.execute(query.order_by(*keys).limit(limit + 1)).all()
            return [_store(tx, row) for row in rows[:limit]], len(rows) > limit

        return await self.database.read(read)

    async def update(self, tenant: str, vector_store_id: str, changes: dict[str, Any]) -> VectorStore | None:
        def write(tx: Connection) -> VectorStore | None:
            if changes:
                tx.execute(
                    update(VectorStoreRow)
                    .where(VectorStoreRow.tenant_id == tenant, VectorStoreRow.vector_store_id == vector_store_id)
                    .values(**changes)
                )
            row = tx.execute(owned_store(tenant, vector_store_id)).first()
            return _store(tx, row) if row is not None else None

        return await self.database.write(write)

    async def delete(self, tenant: str, vector_store_id: str) -> bool:
        """The store, its file attachments and batches, its chunks and their index entries, in one transaction."""

        def write(tx: Connection) -> bool:
            # Locked, as attach locks it: an attach racing this delete either commits first (and its rows go
            # here) or finds the store gone; it never leaves an attachment of a deleted store.
            row = tx.execute(owned_store(tenant, vector_store_id).with_for_update()).first()
            if row is None:
                return False
            self.remove_chunks(tx, row.embedding_dimension, ChunkRow.vector_store_id == vector_store_id)
            tx.execute(delete(VectorStoreFileRow).where(VectorStoreFileRow.vector_store_id == vector_store_id))
            tx.execute(
                delete(VectorStoreFileBatchRow).where(VectorStoreFileBatchRow.vector_store_id == vector_store_id)
            )
            tx.execute(delete(VectorStoreRow).where(VectorStoreRow.vector_store_id == vector_store_id))
            return True

        return await self.database.write(write)

    async def attach(
        self,
        tenant: str,
        vector_store_id: str,
        attachments: Sequence[Attachment],
        created_at: datetime,
        max_files: int,
        batch_id: str | None = None,
    ) -> list[VectorStoreFile] | None:
        """Attach files (owned by the tenant, which the caller checked) as `in_progress`; one already attached is
        attached anew (its chunks removed). None if the tenant has no such vector store."""

        def write(tx: Connection) -> list[VectorStoreFile] | None:
            # The store row locked (PostgreSQL; SQLite writes one at a time anyway) against a racing delete, and
            # against another attach passing the files-per-store limit with this one.
            store = tx.execute(owned_store(tenant, vector_store_id).with_for_update()).first()
            if store is None:
                return None
            file_ids = [attachment.file_id for attachment in attachments]
            # The files locked against a racing delete, which detaches a file only once this has committed; a
            # file deleted since the caller looked is refused, never attached to fail and be counted forever.
            present = set(
                tx.execute(
                    select(FileRow.file_id)
                    .where(FileRow.tenant_id == tenant, FileRow.file_id.in_(file_ids))
                    .with_for_update(read=True)
                ).scalars()
            )
            if missing := [file_id for file_id in file_ids if file_id not in present]:
                raise FileGone(missing[0])
            existing = set(
                tx.execute(
                    select(VectorStoreFileRow.file_id).where(
                        VectorStoreFileRow.vector_store_id == vector_store_id,
                        VectorStoreFileRow.file_id.in_(file_ids),
                    )
                ).scalars()
            )
            attached = tx.execute(
                select(func.count()).where(VectorStoreFileRow.vector_store_id == vector_store_id)
            ).scalar_one()
            if attached + len(set(file_ids) - existing) > max_files:
                raise LimitReached(
                    f"Vector store {vector_store_id} has {attached} files; attaching {len(set(file_ids) - existing)} "
                    f"more would pass this server's limit of {max_files} (DA_MAX_FILES_PER_VECTOR_STORE)."
                )
            if batch_id is not None:
                tx.execute(
                    insert(VectorStoreFileBatchRow),
                    {"batch_id": batch_id, "vector_store_id": vector_store_id, "created_at": created_at},
                )
            for file_id in existing:
                self._detach(tx, store.embedding_dimension, vector_store_id, file_id)
            rows: list[dict[str, Any]] = [
                {
                    "vector_store_id": vector_store_id,
                    "file_id": attachment.file_id,
                    "status": "in_progress",
                    "attributes": attachment.attributes,
                    "chunking_strategy": attachment.chunking_strategy,
                    "last_error": None,
                    "usage_bytes": 0,
                    "chunk_count": 0,
                    "batch_id": batch_id,
                    "created_at": created_at,
                    "ingestion_id": secrets.token_hex(8),
                }
                for attachment in attachments
            ]
            tx.execute(insert(VectorStoreFileRow), rows)
            tx.execute(
                update(VectorStoreRow)
                .where(VectorStoreRow.vector_store_id == vector_store_id)
                .values(last_active_at=created_at)
            )
            return [VectorStoreFile(**{key: row[key] for key in _file_keys()}) for row in rows]

        return await self.database.write(write)

    def _detach(self, tx: Connection, dimension: int, vector_store_id: str, file_id: str) -> None:
        self.remove_chunks(tx, dimension, ChunkRow.vector_store_id == vector_store_id, ChunkRow.file_id == file_id)
        tx.execute(
            delete(VectorStoreFileRow).where(
                VectorStoreFileRow.vector_store_id == vector_store_id, VectorStoreFileRow.file_id == file_id
            )
        )

    async def get_file(self, tenant: str, vector_store_id: str, file_id: str) -> VectorStoreFile | None:
        def read(tx: Connection) -> VectorStoreFile | None:
            if tx.execute(owned_store(tenant, vector_store_id)).first() is None:
                return None
            row = tx.execute(
                select(*_FILE_COLUMNS).where(
                    VectorStoreFileRow.vector_store_id == vector_store_id, VectorStoreFileRow.file_id == file_id
                )
            ).first()
            return VectorStoreFile(*row) if row is not None else None

        return await self.database.read(read)

    async def list_files(
        self,
        tenant: str,
        vector_store_id: str,
        status: str | None,
        order: Order,
        after: str | None,
        limit: int,
        batch_id: str | None = None,
    ) -> tuple[list[VectorStoreFile], bool] | None:
        def read(tx: Connection) -> tuple[list[VectorStoreFile], bool] | None:
            if tx.execute(owned_store(tenant, vector_store_id)).first() is None:
                return None
            rows_ = VectorStoreFileRow
            query = select(*_FILE_COLUMNS).where(rows_.vector_store_id == vector_store_id)
            if status is not None:
                query = query.where(rows_.status == status)
            if batch_id is not None:
                query = query.where(rows_.batch_id == batch_id)
            query = _after(
                tx,
                query,
                tuple_(rows_.created_at, rows_.file_id),
                select(rows_.created_at, rows_.file_id).where(
                    rows_.vector_store_id == vector_store_id, rows_.file_id == after
                ),
                after,
                order,
            )
            keys = (
                (rows_.created_at.desc(), rows_.file_id.desc())
                if order == "desc"
                else (rows_.created_at.asc(), rows_.file_id.asc())
            )
            rows = tx.execute(query.order_by(*keys).limit(limit + 1)).all()
            return [VectorStoreFile(*row) for row in rows[:limit]], len(rows) > limit

        return await self.database.read(read)

    async def update_attributes(
        self, tenant: str, vector_store_id: str, file_id: str, attributes: dict[str, Any]
    ) -> VectorStoreFile | None:
        def write(tx: Connection) -> VectorStoreFile | None:
            if tx.execute(owned_store(tenant, vector_store_id)).first() is None:
                return None
            where = (VectorStoreFileRow.vector_store_id == vector_store_id, VectorStoreFileRow.file_id == file_id)
            tx.execute(update(VectorStoreFileRow).where(*where).values(attributes=attributes))
            row = tx.execute(select(*_FILE_COLUMNS).where(*where)).first()
            return VectorStoreFile(*row) if row is not None else None

        return await self.database.write(write)

    async def detach(self, tenant: str, vector_store_id: str, file_id: str) -> bool:
        """The file's attachment, chunks and index entries; False if there was none to remove."""

        def write(tx: Connection) -> bool:
            store = tx.execute(owned_store(tenant, vector_store_id)).first()
            if store is None:
                return False
            found = tx.execute(
                select(VectorStoreFileRow.file_id).where(
                    VectorStoreFileRow.vector_store_id == vector_store_id, VectorStoreFileRow.file_id == file_id
                )
            ).first()
            if found is None:
                return False
            self._detach(tx, store.embedding_dimension, vector_store_id, file_id)
            return True

        return await self.database.write(write)

    async def detach_everywhere(self, tenant: str, file_id: str) -> list[str]:
        """A deleted file leaves every vector store of its tenant; the ids of those it was attached to."""

        def write(tx: Connection) -> list[str]:
            stores = tx.execute(
                select(VectorStoreRow.vector_store_id, VectorStoreRow.embedding_dimension)
                .join(VectorStoreFileRow, VectorStoreFileRow.vector_store_id == VectorStoreRow.vector_store_id)
                .where(VectorStoreRow.tenant_id == tenant, VectorStoreFileRow.file_id == file_id)
            ).all()
            for vector_store_id, dimension in stores:
                self._detach(tx, dimension, vector_store_id, file_id)
            return [row[0] for row in stores]

        return await self.database.write(write)

    async def get_batch(self, tenant: str, vector_store_id: str, batch_id: str) -> FileBatch | None:
        def read(tx: Connection) -> FileBatch | None:
            if tx.execute(owned_store(tenant, vector_store_id)).first() is None:
                return None
            row = tx.execute(
                select(VectorStoreFileBatchRow.created_at, VectorStoreFileBatchRow.cancelled).where(
                    VectorStoreFileBatchRow.batch_id == batch_id,
                    VectorStoreFileBatchRow.vector_store_id == vector_store_id,
                )
            ).first()
            if row is None:
                return None
            counts, _ = _counts(tx, VectorStoreFileRow.batch_id == batch_id)
            return FileBatch(batch_id, vector_store_id, row.created_at, row.cancelled, counts)

        return await self.database.read(read)

    async def cancel_batch(
        self, tenant: str, vector_store_id: str, batch_id: str
    ) -> list[tuple[str, str | None]] | None:
        """Mark the batch cancelled; its files still in progress, with their ingestion ids (whose workflows to
        cancel)."""

        def write(tx: Connection) -> list[tuple[str, str | None]] | None:
            if tx.execute(owned_store(tenant, vector_store_id)).first() is None:
                return None
            done = tx.execute(
                update(VectorStoreFileBatchRow)
                .where(
                    VectorStoreFileBatchRow.batch_id == batch_id,
                    VectorStoreFileBatchRow.vector_store_id == vector_store_id,
                )
                .values(cancelled=True)
            )
            if done.rowcount == 0:
                return None
            pending = tx.execute(
                select(VectorStoreFileRow.file_id, VectorStoreFileRow.ingestion_id).where(
                    VectorStoreFileRow.batch_id == batch_id, VectorStoreFileRow.status == "in_progress"
                )
            )
            return [(row.file_id, row.ingestion_id) for row in pending]

        return await self.database.write(write)

    async def in_progress_since(self, created_before: datetime, limit: int) -> list[PendingIngestion]:
        """Files still in progress that were attached before `created_before`, oldest first (a partial index
        holds only files in progress, so with nothing to do this reads nothing)."""

        def read(tx: Connection) -> list[PendingIngestion]:
            rows = tx.execute(
                select(
                    VectorStoreFileRow.vector_store_id,
                    VectorStoreFileRow.file_id,
                    func.coalesce(VectorStoreFileBatchRow.cancelled, False),
                    VectorStoreFileRow.ingestion_id,
                    VectorStoreRow.vector_store_id.is_(None),
                )
                .outerjoin(VectorStoreFileBatchRow, VectorStoreFileBatchRow.batch_id == VectorStoreFileRow.batch_id)
                .outerjoin(VectorStoreRow, VectorStoreRow.vector_store_id == VectorStoreFileRow.vector_store_id)
                # A literal, not a parameter: so that a generic (prepared) plan can still use the partial index.
                .where(VectorStoreFileRow.status == _IN_PROGRESS, VectorStoreFileRow.created_at < created_before)
                .order_by(VectorStoreFileRow.created_at)
                .limit(limit)
            )
            return [PendingIngestion(*row) for row in rows]

        return await self.database.read(read)

    async def batch_cancelled(self, vector_store_id: str, file_id: str) -> bool:
        """Whether the file belongs to a file batch that was cancelled."""

        def read(tx: Connection) -> bool:
            return bool(
                tx.execute(
                    select(VectorStoreFileBatchRow.cancelled)
                    .join(VectorStoreFileRow, VectorStoreFileRow.batch_id == VectorStoreFileBatchRow.batch_id)
                    .where(VectorStoreFileRow.vector_store_id == vector_store_id, VectorStoreFileRow.file_id == file_id)
                ).scalar()
            )

        return await self.database.read(read)

    async def fail_ended(
        self, vector_store_id: str, file_id: str, ingestion_id: str | None, last_error: dict[str, Any]
    ) -> bool:
        """Mark a file `failed` whose ingestion run ended without recording an outcome (terminated, timed
        out), if it is still in progress by that run's attachment; its chunks go."""

        def write(tx: Connection) -> bool:
            try:
                attachment_is(tx, vector_store_id, file_id, ingestion_id)
            except Detached:
                return False
            dimension = tx.execute(
                select(VectorStoreRow.embedding_dimension).where(VectorStoreRow.vector_store_id == vector_store_id)
            ).scalar()
            if dimension is None:
                self._drop_orphan(tx, vector_store_id, file_id)
                return True
            self.remove_chunks(tx, dimension, ChunkRow.vector_store_id == vector_store_id, ChunkRow.file_id == file_id)
            tx.execute(
                update(VectorStoreFileRow)
                .where(VectorStoreFileRow.vector_store_id == vector_store_id, VectorStoreFileRow.file_id == file_id)
                .values(status="failed", last_error=last_error, chunk_count=0, usage_bytes=0)
            )
            return True

        return await self.database.write(write)

    def _drop_orphan(self, tx: Connection, vector_store_id: str, file_id: str) -> None:
        """An attachment whose vector store is gone (left by a release without the store lock): its rows go; its
        index entries, if any, went with the store's."""
        where = (VectorStoreFileRow.vector_store_id == vector_store_id, VectorStoreFileRow.file_id == file_id)
        tx.execute(delete(ChunkRow).where(ChunkRow.vector_store_id == vector_store_id, ChunkRow.file_id == file_id))
        tx.execute(delete(VectorStoreFileRow).where(*where))

    async def drop_orphan(self, vector_store_id: str, file_id: str) -> bool:
        """Remove the attachment if its vector store is gone; whether it was."""

        def write(tx: Connection) -> bool:
            store = tx.execute(
                select(VectorStoreRow.vector_store_id).where(VectorStoreRow.vector_store_id == vector_store_id)
            ).first()
            if store is not None:
                return False
            self._drop_orphan(tx, vector_store_id, file_id)
            return True

        return await self.database.write(write)

    async def cancel_unstarted(self, vector_store_id: str, file_id: str) -> bool:
        """Mark a file still in progress `cancelled` (its batch was, and it has no ingestion to do it)."""

        def write(tx: Connection) -> bool:
            done = tx.execute(
                update(VectorStoreFileRow)
                .where(
                    VectorStoreFileRow.vector_store_id == vector_store_id,
                    VectorStoreFileRow.file_id == file_id,
                    VectorStoreFileRow.status == "in_progress",
                )
                .values(status="cancelled")
            )
            return done.rowcount > 0

        return await self.database.write(write)


def _file_keys() -> tuple[str, ...]:
    return tuple(column.key for column in _FILE_COLUMNS)
