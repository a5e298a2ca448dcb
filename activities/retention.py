"""Retention's activities: one bounded batch of deletes per call (store/retention.py), counted in metrics.

Files and vector stores (store/knowledge_retention.py picks them) are deleted as their DELETE routes delete
them, one at a time, through the same calls: a file leaves every vector store (chunks and index entries go),
then its row, then its bytes in the blob store.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Connection
from temporalio import activity
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from activities.heartbeat import heartbeating
from hosting.fault_points import AFTER_ERASE_BATCH, crash_point
from knowledge.blobs import BlobStore
from observability.metrics import RETENTION_OLDEST_AGE, RETENTION_PRUNED
from store.files import FileStore
from store.knowledge_retention import KNOWLEDGE_KINDS, expired_vector_stores, idle_vector_stores, old_files
from store.repository import Store
from store.retention import KINDS, unfinished_turns_of
from store.rows import delete_turns
from store.tables import TurnRow
from store.vector_stores import VectorStores
from workflows.contracts import turn_workflow_id
from workflows.retention import (
    ERASE_ACTIVITY,
    EXPIRED_VECTOR_STORES,
    PRUNE_ACTIVITY,
    STOP_TURNS_ACTIVITY,
    EraseRequest,
    EraseResult,
    PruneRequest,
    PruneResult,
)


class KnowledgeRetention:
    """Deletes files and vector stores exactly as `DELETE /v1/files/{id}` and `DELETE /v1/vector_stores/{id}` do."""

    def __init__(self, files: FileStore, stores: VectorStores, blobs: BlobStore) -> None:
        self.files = files
        self.stores = stores
        self.blobs = blobs

    async def prune(self, kind: str, cutoff: datetime, limit: int) -> int:
        database = self.files.database
        if kind == "files":
            files = await database.read(lambda tx: old_files(tx, cutoff, limit))
            for tenant, file_id in files:
                await self.stores.detach_everywhere(tenant, file_id)
                await self.files.delete(tenant, file_id)
                await self.blobs.delete(file_id)
            return len(files)
        pick = expired_vector_stores if kind == EXPIRED_VECTOR_STORES else idle_vector_stores
        stores = await database.read(lambda tx: pick(tx, cutoff, limit))
        for tenant, vector_store_id in stores:
            await self.stores.delete(tenant, vector_store_id)
        return len(stores)


class RetentionActivities:
    def __init__(self, store: Store, client: Client, knowledge: KnowledgeRetention) -> None:
        self._store = store
        self._client = client
        self._knowledge = knowledge

    @activity.defn(name=PRUNE_ACTIVITY)
    async def prune_expired(self, request: PruneRequest) -> PruneResult:
        if request.kind in (*KNOWLEDGE_KINDS, EXPIRED_VECTOR_STORES):
            async with heartbeating():
                deleted = await self._knowledge.prune(request.kind, request.cutoff, request.limit)
            if request.kind == EXPIRED_VECTOR_STORES:
                RETENTION_PRUNED.labels("vector_stores", "expires_after").inc(deleted)
            else:
                RETENTION_PRUNED.labels(request.kind, "ttl").inc(deleted)
            return PruneResult(deleted=deleted)
        kind = KINDS[request.kind]
        if kind.prune is None:
            return PruneResult(deleted=0)
        prune = kind.prune
        async with heartbeating():
            deleted = await self._store.database.write(lambda tx: prune(tx, request.cutoff, request.limit))
        RETENTION_PRUNED.labels(request.kind, "ttl").inc(deleted)
        if deleted < request.limit and kind.oldest is not None:  # the kind's last batch of this sweep
            oldest = await self._store.database.read(kind.oldest)
            age = (datetime.now(UTC) - oldest).total_seconds() if oldest is not None else 0.0
            RETENTION_OLDEST_AGE.labels(request.kind).set(max(age, 0.0))
        return PruneResult(deleted=deleted)

    @activity.defn(name=STOP_TURNS_ACTIVITY)
    async def stop_tenant_turns(self, request: EraseRequest) -> PruneResult:
        """Terminate a batch of the tenant's running or paused turns' workflows and delete those turns."""
        turns = await self._store.database.read(lambda tx: unfinished_turns_of(tx, request.tenant, request.limit))
        for turn_id in turns:
            try:
                await self._client.get_workflow_handle(turn_workflow_id(turn_id)).terminate(
                    reason="its tenant's data is being erased"
                )
            except RPCError as error:
                if error.status != RPCStatusCode.NOT_FOUND:
                    raise
        if turns:
            async with heartbeating():
                await self._store.database.write(lambda tx: delete_turns(tx, TurnRow.turn_id.in_(turns)))
        RETENTION_PRUNED.labels("turns", "tenant").inc(len(turns))
        return PruneResult(deleted=len(turns))

    @activity.defn(name=ERASE_ACTIVITY)
    async def erase_tenant_batch(self, request: EraseRequest) -> EraseResult:
        """One batch of the first registered kind the tenant still has rows of."""

        def run(tx: Connection) -> EraseResult:
            for name, kind in KINDS.items():
                deleted = kind.erase(tx, request.tenant, request.limit)
                if deleted:
                    return EraseResult(kind=name, deleted=deleted)
            return EraseResult(kind=None, deleted=0)

        async with heartbeating():
            result = await self._store.database.write(run)
        if result.kind is not None:
            RETENTION_PRUNED.labels(result.kind, "tenant").inc(result.deleted)
            crash_point(AFTER_ERASE_BATCH)
        return result
