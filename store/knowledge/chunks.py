"""The chunks of vector stores' files: ingestion's writes (by the ids its workflow was started with, which the API
checked), the llama-stack dialect's whole-chunk inserts, and search's reads. The vector and keyword index
(vector_index.py) is written and cleaned in the same transactions as the chunks, so a chunk is searchable exactly
when its row says it is embedded. `VectorStores` (vector_stores.py) adds the tenant-scoped catalogue."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import numpy as np
from sqlalchemy import Connection, delete, func, insert, select, update

from store.database import Database
from store.knowledge.records import Detached, IngestionTarget, LimitReached, StoredChunk
from store.knowledge.tables import ChunkRow, FileRow, VectorStoreFileRow, VectorStoreRow
from store.knowledge.vector_index import IndexedChunk, VectorIndex

T = TypeVar("T")

STORE_COLUMNS = (
    VectorStoreRow.vector_store_id,
    VectorStoreRow.name,
    VectorStoreRow.metadata_,
    VectorStoreRow.embedding_model,
    VectorStoreRow.embedding_dimension,
    VectorStoreRow.expires_after,
    VectorStoreRow.created_at,
    VectorStoreRow.last_active_at,
    VectorStoreRow.provider_vector_db_id,
)


def attachment_is(tx: Connection, vector_store_id: str, file_id: str, ingestion_id: str | None) -> None:
    """Raise Detached unless the file is attached, in progress, by the attachment `ingestion_id` names."""
    row = tx.execute(
        select(VectorStoreFileRow.status, VectorStoreFileRow.ingestion_id).where(
            VectorStoreFileRow.vector_store_id == vector_store_id, VectorStoreFileRow.file_id == file_id
        )
    ).first()
    if row is None or row.status != "in_progress" or row.ingestion_id != ingestion_id:
        raise Detached(f"File {file_id} is no longer attached to vector store {vector_store_id} by this ingestion")


def owned_store(tenant: str, vector_store_id: str) -> Any:
    return select(*STORE_COLUMNS).where(
        VectorStoreRow.tenant_id == tenant, VectorStoreRow.vector_store_id == vector_store_id
    )


class VectorStoreChunks:
    def __init__(self, database: Database, index: VectorIndex) -> None:
        self.database = database
        self.index = index
        self._touched: dict[str, float] = {}
        """When (monotonic) this process last marked each store in use (VectorStores.touch)."""

    def remove_chunks(self, tx: Connection, dimension: int, *where: Any) -> None:
        chunk_ids = list(tx.execute(select(ChunkRow.chunk_id).where(*where)).scalars())
        self.index.remove(tx, dimension, chunk_ids)
        for start in range(0, len(chunk_ids), 500):
            tx.execute(delete(ChunkRow).where(ChunkRow.chunk_id.in_(chunk_ids[start : start + 500])))

    # Ingestion's operations, by the ids its workflow was started with.

    async def ingestion_target(self, vector_store_id: str, file_id: str) -> IngestionTarget | None:
        def read(tx: Connection) -> IngestionTarget | None:
            row = tx.execute(
                select(
                    VectorStoreFileRow.status,
                    FileRow.filename,
                    VectorStoreFileRow.chunking_strategy,
                    VectorStoreRow.embedding_model,
                    VectorStoreRow.embedding_dimension,
                    VectorStoreFileRow.ingestion_id,
                )
                .join(VectorStoreRow, VectorStoreRow.vector_store_id == VectorStoreFileRow.vector_store_id)
                .join(FileRow, FileRow.file_id == VectorStoreFileRow.file_id)
                .where(VectorStoreFileRow.vector_store_id == vector_store_id, VectorStoreFileRow.file_id == file_id)
            ).first()
            return IngestionTarget(*row) if row is not None else None

        return await self.database.read(read)

    async def write_chunks(
        self,
        vector_store_id: str,
        file_id: str,
        ingestion_id: str | None,
        first: int,
        total: int,
        chunks: Sequence[tuple[str, int]],
        max_chunks: int,
    ) -> int:
        """Chunks `first`, `first + 1` … of the file's `total` (text, tokens), written not yet embedded (a remote
        model embeds them afterwards): `write_embedded_chunks` without vectors."""
        batch = [(text, tokens, None) for text, tokens in chunks]
        return await self.database.write(
            lambda tx: self._write_batch(
                tx, vector_store_id, file_id, ingestion_id, None, first, total, batch, max_chunks
            )
        )

    async def written_chunks(self, vector_store_id: str, file_id: str) -> int:
        def read(tx: Connection) -> int:
            mine = (ChunkRow.vector_store_id == vector_store_id, ChunkRow.file_id == file_id)
            return tx.execute(select(func.count()).where(*mine)).scalar_one()

        return await self.database.read(read)

    async def write_embedded_chunks(
        self,
        vector_store_id: str,
        file_id: str,
        ingestion_id: str | None,
        dimension: int,
        first: int,
        total: int,
        chunks: Sequence[tuple[str, int, np.ndarray]],
        max_chunks: int,
    ) -> int:
        """Chunks `first`, `first + 1` … of the file's `total` (text, tokens, vector), written, indexed and
        marked embedded in one transaction; how many were written: 0 if an earlier attempt wrote them. The file's
        chunks are written in order, so its count of rows says which batches are in; a batch written twice at
        once (two attempts of one activity) breaks the (store, file, seq) key and rolls back. The first batch
        raises LimitReached if `total` more chunks would pass the store's chunk limit (so a file too large for
        its store fails before any of it is written; a caller that passed a bound on its chunks rather than their
        count may count them and try again); every batch raises Detached if the attachment `ingestion_id` names
        is gone."""
        return await self.database.write(
            lambda tx: self._write_batch(
                tx, vector_store_id, file_id, ingestion_id, dimension, first, total, chunks, max_chunks
            )
        )

    def _write_batch(
        self,
        tx: Connection,
        vector_store_id: str,
        file_id: str,
        ingestion_id: str | None,
        dimension: int | None,
        first: int,
        total: int,
        chunks: Sequence[tuple[str, int, np.ndarray | None]],
        max_chunks: int,
    ) -> int:
        """A batch of a file's chunks, indexed with their vectors if `dimension` is given (see
        `write_embedded_chunks`)."""
        # The store row locked, so that files ingested side by side cannot pass the chunk limit together.
        tx.execute(
            select(VectorStoreRow.vector_store_id)
            .where(VectorStoreRow.vector_store_id == vector_store_id)
            .with_for_update()
        )
        attachment_is(tx, vector_store_id, file_id, ingestion_id)
        mine = (ChunkRow.vector_store_id == vector_store_id, ChunkRow.file_id == file_id)
        written = tx.execute(select(func.count()).where(*mine)).scalar_one()
        if written >= first + len(chunks):
            return 0
        if written != first:
            raise RuntimeError(f"{written} chunks of file {file_id} are written; expected {first}")
        if first == 0:
            stored = tx.execute(select(func.count()).where(ChunkRow.vector_store_id == vector_store_id)).scalar_one()
            if stored + total > max_chunks:
                raise LimitReached(
                    f"This file has {total} chunks and its vector store {stored} already: more than this "
                    f"server's limit of {max_chunks} chunks per vector store (DA_MAX_CHUNKS_PER_VECTOR_STORE). "
                    "Use another vector store, or a larger chunk size."
                )
        rows = [
            {
                "vector_store_id": vector_store_id,
                "file_id": file_id,
                "seq": first + offset,
                "text": text,
                "tokens": tokens,
                "embedded": dimension is not None,
                "metadata": None,
            }
            for offset, (text, tokens, _) in enumerate(chunks)
        ]
        ids = tx.execute(insert(ChunkRow).returning(ChunkRow.chunk_id, sort_by_parameter_order=True), rows)
        if dimension is not None:
            indexed = [
                IndexedChunk(chunk_id, file_id, text, vector)
                for chunk_id, (text, _, vector) in zip(ids.scalars(), chunks, strict=True)
                if vector is not None
            ]
            self.index.add(tx, vector_store_id, dimension, indexed)
        return len(rows)

    async def unembedded(self, vector_store_id: str, file_id: str, limit: int) -> list[StoredChunk]:
        def read(tx: Connection) -> list[StoredChunk]:
            rows = tx.execute(
                select(ChunkRow.chunk_id, ChunkRow.file_id, ChunkRow.seq, ChunkRow.text, ChunkRow.metadata_)
                .where(
                    ChunkRow.vector_store_id == vector_store_id,
                    ChunkRow.file_id == file_id,
                    ChunkRow.embedded.is_(False),
                )
                .order_by(ChunkRow.seq)
                .limit(limit)
            ).all()
            return [StoredChunk(*row) for row in rows]

        return await self.database.read(read)

    async def write_vectors(self, vector_store_id: str, dimension: int, chunks: Sequence[IndexedChunk]) -> int:
        """Index a batch and mark its chunks embedded, in one transaction. Chunks another attempt has indexed
        meanwhile (or that are gone: the file was detached) are skipped, so a retried batch adds nothing twice."""

        def write(tx: Connection) -> int:
            ids = [chunk.chunk_id for chunk in chunks]
            pending = set(
                tx.execute(
                    select(ChunkRow.chunk_id).where(ChunkRow.chunk_id.in_(ids), ChunkRow.embedded.is_(False))
                ).scalars()
            )
            fresh = [chunk for chunk in chunks if chunk.chunk_id in pending]
            if fresh:
                self.index.add(tx, vector_store_id, dimension, fresh)
                tx.execute(
                    update(ChunkRow).where(ChunkRow.chunk_id.in_([c.chunk_id for c in fresh])).values(embedded=True)
                )
            return len(fresh)

        return await self.database.write(write)

    async def finish_file(
        self,
        vector_store_id: str,
        file_id: str,
        ingestion_id: str | None,
        status: str,
        last_error: dict[str, Any] | None,
        vector_bytes: int,
    ) -> None:
        """Record the outcome; a file that did not complete keeps no chunks. Nothing changes if the attachment
        `ingestion_id` names is gone (a run that outlived it)."""

        def write(tx: Connection) -> None:
            try:
                attachment_is(tx, vector_store_id, file_id, ingestion_id)
            except Detached:
                return
            store = tx.execute(
                select(VectorStoreRow.embedding_dimension).where(VectorStoreRow.vector_store_id == vector_store_id)
            ).first()
            if store is None:
                return
            mine = (ChunkRow.vector_store_id == vector_store_id, ChunkRow.file_id == file_id)
            if status != "completed":
                self.remove_chunks(tx, store.embedding_dimension, *mine)
            count, text_bytes = tx.execute(
                select(func.count(), func.coalesce(func.sum(func.length(ChunkRow.text)), 0)).where(*mine)
            ).one()
            tx.execute(
                update(VectorStoreFileRow)
                .where(VectorStoreFileRow.vector_store_id == vector_store_id, VectorStoreFileRow.file_id == file_id)
                .values(
                    status=status,
                    last_error=last_error,
                    chunk_count=count,
                    usage_bytes=int(text_bytes) + count * vector_bytes,
                )
            )

        await self.database.write(write)

    async def insert_chunks(
        self,
        tenant: str,
        vector_store_id: str,
        document_id: str,
        chunks: Sequence[tuple[str, int, dict[str, Any], Any]],
        created_at: datetime,
        max_chunks: int,
        max_files: int,
    ) -> bool:
        """Chunks given whole with their vectors (text, tokens, metadata, vector) — the llama-stack dialect's
        `vector-io/insert` — added to the document's attachment, which is made `completed` if new (a file of
        the store, within its files limit). One transaction, which marks the store in use; False if the tenant
        has no such vector store."""

        def write(tx: Connection) -> bool:
            # Locked, so that concurrent inserts and ingestions cannot pass the limits together.
            store = tx.execute(owned_store(tenant, vector_store_id).with_for_update()).first()
            if store is None:
                return False
            total = tx.execute(select(func.count()).where(ChunkRow.vector_store_id == vector_store_id)).scalar_one()
            if total + len(chunks) > max_chunks:
                raise LimitReached(
                    f"Vector DB {vector_store_id} holds {total} chunks; {len(chunks)} more would pass this server's "
                    f"limit of {max_chunks} (DA_MAX_CHUNKS_PER_VECTOR_STORE)."
                )
            where = (VectorStoreFileRow.vector_store_id == vector_store_id, VectorStoreFileRow.file_id == document_id)
            if tx.execute(select(VectorStoreFileRow.status).where(*where)).first() is None:
                files = tx.execute(
                    select(func.count()).where(VectorStoreFileRow.vector_store_id == vector_store_id)
                ).scalar_one()
                if files + 1 > max_files:
                    raise LimitReached(
                        f"Vector DB {vector_store_id} has {files} documents; another would pass this server's limit "
                        f"of {max_files} (DA_MAX_FILES_PER_VECTOR_STORE)."
                    )
                tx.execute(
                    insert(VectorStoreFileRow),
                    {
                        "vector_store_id": vector_store_id,
                        "file_id": document_id,
                        "status": "completed",
                        "attributes": {"document_id": document_id},
                        "chunking_strategy": {"type": "other"},
                        "last_error": None,
                        "usage_bytes": 0,
                        "chunk_count": 0,
                        "created_at": created_at,
                    },
                )
            mine = (ChunkRow.vector_store_id == vector_store_id, ChunkRow.file_id == document_id)
            first = tx.execute(select(func.coalesce(func.max(ChunkRow.seq) + 1, 0)).where(*mine)).scalar_one()
            rows = [
                {
                    "vector_store_id": vector_store_id,
                    "file_id": document_id,
                    "seq": first + offset,
                    "text": text,
                    "tokens": tokens,
                    "embedded": True,
                    "metadata": metadata,
                }
                for offset, (text, tokens, metadata, _) in enumerate(chunks)
            ]
            ids = tx.execute(insert(ChunkRow).returning(ChunkRow.chunk_id, sort_by_parameter_order=True), rows)
            indexed = [
                IndexedChunk(chunk_id, document_id, text, vector)
                for chunk_id, (text, _, _, vector) in zip(ids.scalars(), chunks, strict=True)
            ]
            self.index.add(tx, vector_store_id, store.embedding_dimension, indexed)
            tx.execute(
                update(VectorStoreRow)
                .where(VectorStoreRow.vector_store_id == vector_store_id, VectorStoreRow.last_active_at < created_at)
                .values(last_active_at=created_at)
            )
            count, text_bytes = tx.execute(
                select(func.count(), func.coalesce(func.sum(func.length(ChunkRow.text)), 0)).where(*mine)
            ).one()
            tx.execute(
                update(VectorStoreFileRow)
                .where(*where)
                .values(chunk_count=count, usage_bytes=int(text_bytes) + count * store.embedding_dimension * 4)
            )
            return True

        return await self.database.write(write)

    # Search's reads: functions of the connection of one read transaction (`search`).

    @staticmethod
    def searchable_files(
        tx: Connection, tenant: str, vector_store_id: str
    ) -> dict[str, tuple[str, dict[str, Any]]] | None:
        """file id → (filename, attributes) of the store's completed files; None if there is no such store."""
        if tx.execute(owned_store(tenant, vector_store_id)).first() is None:
            return None
        rows = tx.execute(
            select(VectorStoreFileRow.file_id, FileRow.filename, VectorStoreFileRow.attributes)
            .outerjoin(FileRow, FileRow.file_id == VectorStoreFileRow.file_id)
            .where(VectorStoreFileRow.vector_store_id == vector_store_id, VectorStoreFileRow.status == "completed")
        ).all()
        return {row[0]: (row[1] or row[0], row[2] or {}) for row in rows}

    async def search(self, operation: Callable[[Connection], T]) -> T:
        """Run a search's reads (a function of a connection) in one read transaction."""
        return await self.database.read(operation)

    @staticmethod
    def chunks(tx: Connection, chunk_ids: Sequence[int]) -> dict[int, StoredChunk]:
        rows = tx.execute(
            select(ChunkRow.chunk_id, ChunkRow.file_id, ChunkRow.seq, ChunkRow.text, ChunkRow.metadata_).where(
                ChunkRow.chunk_id.in_(list(chunk_ids))
            )
        ).all()
        return {row[0]: StoredChunk(*row) for row in rows}

    async def file_chunks(self, vector_store_id: str, file_id: str, limit: int) -> list[StoredChunk]:
        def read(tx: Connection) -> list[StoredChunk]:
            rows = tx.execute(
                select(ChunkRow.chunk_id, ChunkRow.file_id, ChunkRow.seq, ChunkRow.text, ChunkRow.metadata_)
                .where(ChunkRow.vector_store_id == vector_store_id, ChunkRow.file_id == file_id)
                .order_by(ChunkRow.seq)
                .limit(limit)
            ).all()
            return [StoredChunk(*row) for row in rows]

        return await self.database.read(read)
