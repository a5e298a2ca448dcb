"""Which files and vector stores retention deletes: the selection only. The deletes themselves are the very
ones `DELETE /v1/files/{id}` and `DELETE /v1/vector_stores/{id}` run (activities/retention.py calls them),
because a file's bytes live in the blob store, which this layer does not reach.

Each call returns at most `limit` (tenant, id) pairs (ids alone for one tenant's), oldest first.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import Connection, exists, select

from store.knowledge.tables import FileRow, VectorStoreFileRow, VectorStoreRow

KNOWLEDGE_KINDS = ("files", "vector_stores")
"""The DA_RETENTION kinds pruned here rather than by a store/retention.py entry."""

_SCAN_PAGE = 500


def idle_vector_stores(tx: Connection, cutoff: datetime, limit: int) -> list[tuple[str, str]]:
    """Vector stores not active (created, updated, files attached or searched) since the cutoff."""
    rows = tx.execute(
        select(VectorStoreRow.tenant_id, VectorStoreRow.vector_store_id)
        .where(VectorStoreRow.last_active_at < cutoff)
        .order_by(VectorStoreRow.last_active_at, VectorStoreRow.vector_store_id)
        .limit(limit)
    ).all()
    return [(row.tenant_id, row.vector_store_id) for row in rows]


def expired_vector_stores(tx: Connection, now: datetime, limit: int) -> list[tuple[str, str]]:
    """Vector stores whose own `expires_after` ({"anchor": "last_active_at", "days": N}) has passed, which the
    API already shows as `status: "expired"`. The days live in JSON, read alike by every engine only here, so
    the stores with one are scanned by last activity, a page at a time, until `limit` are found."""
    found: list[tuple[str, str]] = []
    after: tuple[datetime, str] | None = None
    while len(found) < limit:
        query = select(
            VectorStoreRow.tenant_id,
            VectorStoreRow.vector_store_id,
            VectorStoreRow.last_active_at,
            VectorStoreRow.expires_after,
        ).where(VectorStoreRow.expires_after.is_not(None), VectorStoreRow.last_active_at < now)
        if after is not None:
            query = query.where(
                (VectorStoreRow.last_active_at > after[0])
                | ((VectorStoreRow.last_active_at == after[0]) & (VectorStoreRow.vector_store_id > after[1]))
            )
        rows = tx.execute(
            query.order_by(VectorStoreRow.last_active_at, VectorStoreRow.vector_store_id).limit(_SCAN_PAGE)
        ).all()
        for row in rows:
            days = (row.expires_after or {}).get("days")
            if isinstance(days, int) and row.last_active_at + timedelta(days=days) <= now:
                found.append((row.tenant_id, row.vector_store_id))
                if len(found) == limit:
                    break
        if len(rows) < _SCAN_PAGE:
            break
        after = (rows[-1].last_active_at, rows[-1].vector_store_id)
    return found


_INGESTING = exists().where(VectorStoreFileRow.file_id == FileRow.file_id, VectorStoreFileRow.status == "in_progress")


def old_files(tx: Connection, cutoff: datetime, limit: int) -> list[tuple[str, str]]:
    """Files uploaded before the cutoff, except those a vector store is still ingesting."""
    rows = tx.execute(
        select(FileRow.tenant_id, FileRow.file_id)
        .where(FileRow.created_at < cutoff, ~_INGESTING)
        .order_by(FileRow.created_at, FileRow.file_id)
        .limit(limit)
    ).all()
    return [(row.tenant_id, row.file_id) for row in rows]


def expired_files(tx: Connection, now: datetime, limit: int) -> list[tuple[str, str]]:
    """Files past their own `expires_at` (from `expires_after` at upload), which the API already answers 404
    for; a file a vector store is still ingesting waits for the next sweep."""
    rows = tx.execute(
        select(FileRow.tenant_id, FileRow.file_id)
        .where(FileRow.expires_at.is_not(None), FileRow.expires_at <= now, ~_INGESTING)
        .order_by(FileRow.expires_at, FileRow.file_id)
        .limit(limit)
    ).all()
    return [(row.tenant_id, row.file_id) for row in rows]


def tenant_vector_stores(tx: Connection, tenant: str, limit: int) -> list[str]:
    """The tenant's vector stores, llama-stack vector DBs included (they are the same rows)."""
    query = select(VectorStoreRow.vector_store_id).where(VectorStoreRow.tenant_id == tenant)
    return list(tx.scalars(query.order_by(VectorStoreRow.vector_store_id).limit(limit)))


def tenant_files(tx: Connection, tenant: str, limit: int) -> list[str]:
    query = select(FileRow.file_id).where(FileRow.tenant_id == tenant)
    return list(tx.scalars(query.order_by(FileRow.file_id).limit(limit)))
