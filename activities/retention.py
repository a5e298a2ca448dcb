"""Retention's activities: one bounded batch of deletes per call (store/retention.py), counted in metrics.

Files and vector stores (store/knowledge/retention.py picks them) and webhook endpoints are deleted as their
DELETE routes delete them, one at a time, through the same calls: a file leaves every vector store (chunks
and index entries go), then its bytes go, then its row — bytes before row, so that a crash between the two
leaves a row the next batch finds again rather than bytes nothing names; an endpoint goes with its
deliveries and their log, and the workflows of its pending deliveries are stopped.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import Connection
from temporalio import activity
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from activities.container_retention import ContainerRetention
from activities.heartbeat import heartbeating
from agent_sessions.automation_schedules import delete_schedule
from configuration.settings import Settings
from hosting.fault_points import AFTER_ERASE_BATCH, crash_point
from knowledge.blobs import BlobStore
from knowledge.deletion import delete_file, delete_vector_store
from observability.metrics import RETENTION_OLDEST_AGE, RETENTION_PRUNED
from store.knowledge.files import FileStore
from store.knowledge.retention import (
    KNOWLEDGE_KINDS,
    expired_files,
    expired_vector_stores,
    idle_vector_stores,
    old_files,
    tenant_files,
    tenant_vector_stores,
)
from store.knowledge.vector_stores import VectorStores
from store.repository import Store
from store.retention import (
    KINDS,
    delete_automations,
    delete_stopped_turns,
    tenant_automations,
    unfinished_turns_of,
)
from store.webhooks.webhook_store import WebhookStore, tenant_endpoints
from webhooks.dispatch import DeliveryStarter
from workflows.contracts import turn_workflow_id
from workflows.retention import (
    ERASE_ACTIVITY,
    EXPIRED_CONTAINERS,
    EXPIRED_FILES,
    EXPIRED_VECTOR_STORES,
    POLICY_ACTIVITY,
    PRUNE_ACTIVITY,
    STOP_TURNS_ACTIVITY,
    EraseRequest,
    EraseResult,
    PruneRequest,
    PruneResult,
    RetentionPolicy,
)

WEBHOOK_LOG_KIND = "webhook_deliveries"
COMPACTION_KIND = "compactions"
_EXPIRY_KINDS = {EXPIRED_VECTOR_STORES: "vector_stores", EXPIRED_FILES: "files"}
"""The sweeps of things past their own `expires_after`, by the kind their metrics count them as."""


def worker_policy(settings: Settings) -> RetentionPolicy:
    """The TTLs this worker's sweeps apply: DA_RETENTION's, and the defaults of the kinds that have one
    (DA_WEBHOOK_LOG_RETENTION, DA_COMPACTION_RETENTION) unless DA_RETENTION names them."""
    defaults = {
        WEBHOOK_LOG_KIND: timedelta(seconds=settings.webhook_log_retention),
        COMPACTION_KIND: timedelta(seconds=settings.compaction_retention),
    }
    ttls = defaults | settings.retention
    return RetentionPolicy(ttls=ttls, batch=settings.retention_batch)


class KnowledgeRetention:
    """Deletes files and vector stores exactly as `DELETE /v1/files/{id}` and `DELETE /v1/vector_stores/{id}` do."""

    def __init__(self, files: FileStore, stores: VectorStores, blobs: BlobStore) -> None:
        self.files = files
        self.stores = stores
        self.blobs = blobs

    async def prune(self, kind: str, cutoff: datetime, limit: int) -> int:
        database = self.files.database
        if kind in ("files", EXPIRED_FILES):
            pick_files = expired_files if kind == EXPIRED_FILES else old_files
            files = await database.read(lambda tx: pick_files(tx, cutoff, limit))
            for tenant, file_id in files:
                await self._delete_file(tenant, file_id)
            return len(files)
        pick = expired_vector_stores if kind == EXPIRED_VECTOR_STORES else idle_vector_stores
        stores = await database.read(lambda tx: pick(tx, cutoff, limit))
        for tenant, vector_store_id in stores:
            await delete_vector_store(self.stores, self.files, self.blobs, tenant, vector_store_id)
        return len(stores)

    async def erase(self, tenant: str, limit: int) -> EraseResult | None:
        """A batch of the tenant's vector stores (vector DBs too), once none is left a batch of its files."""
        database = self.files.database
        stores = await database.read(lambda tx: tenant_vector_stores(tx, tenant, limit))
        for vector_store_id in stores:
            await delete_vector_store(self.stores, self.files, self.blobs, tenant, vector_store_id)
        if stores:
            return EraseResult(kind="vector_stores", deleted=len(stores))
        files = await database.read(lambda tx: tenant_files(tx, tenant, limit))
        for file_id in files:
            await self._delete_file(tenant, file_id)
        return EraseResult(kind="files", deleted=len(files)) if files else None

    async def _delete_file(self, tenant: str, file_id: str) -> None:
        await delete_file(self.stores, self.files, self.blobs, tenant, file_id)


class WebhookErasure:
    """Deletes a tenant's webhook endpoints exactly as `DELETE /v1/webhook_endpoints/{id}` does."""

    def __init__(self, store: WebhookStore, starter: DeliveryStarter) -> None:
        self.store = store
        self.starter = starter

    async def erase(self, tenant: str, limit: int) -> EraseResult | None:
        endpoints = await self.store.database.read(lambda tx: tenant_endpoints(tx, tenant, limit))
        for endpoint_id in endpoints:
            pending = await self.store.delete_endpoint(tenant, endpoint_id)
            if pending:
                await self.starter.stop(pending)
        return EraseResult(kind="webhook_endpoints", deleted=len(endpoints)) if endpoints else None


class RetentionActivities:
    def __init__(
        self,
        store: Store,
        client: Client,
        knowledge: KnowledgeRetention,
        webhooks: WebhookErasure,
        settings: Settings,
        containers: ContainerRetention | None = None,
    ) -> None:
        """`containers`: deletes containers (their workspaces are on this worker's data directory)."""
        self._containers = containers
        self._store = store
        self._client = client
        self._knowledge = knowledge
        self._webhooks = webhooks
        self._settings = settings

    @activity.defn(name=POLICY_ACTIVITY)
    async def retention_policy(self) -> RetentionPolicy:
        """This worker's TTLs, read by each sweep it runs."""
        return worker_policy(self._settings)

    @activity.defn(name=PRUNE_ACTIVITY)
    async def prune_expired(self, request: PruneRequest) -> PruneResult:
        if request.kind == EXPIRED_CONTAINERS:
            if self._containers is None:
                return PruneResult(deleted=0)
            async with heartbeating():
                deleted = await self._containers.prune_expired(request.cutoff, request.limit)
            RETENTION_PRUNED.labels("containers", "expires_after").inc(deleted)
            return PruneResult(deleted=deleted)
        if request.kind in (*KNOWLEDGE_KINDS, *_EXPIRY_KINDS):
            async with heartbeating():
                deleted = await self._knowledge.prune(request.kind, request.cutoff, request.limit)
            if request.kind in _EXPIRY_KINDS:
                RETENTION_PRUNED.labels(_EXPIRY_KINDS[request.kind], "expires_after").inc(deleted)
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
                await self._store.database.write(lambda tx: delete_stopped_turns(tx, turns))
        RETENTION_PRUNED.labels("turns", "tenant").inc(len(turns))
        return PruneResult(deleted=len(turns))

    @activity.defn(name=ERASE_ACTIVITY)
    async def erase_tenant_batch(self, request: EraseRequest) -> EraseResult:
        """One batch of the first kind the tenant still has rows of: webhook endpoints first (stopping their
        pending deliveries before the outbox goes), automations (their Schedules, then their rows), then the
        store's registered kinds, then vector stores and files, then containers with their workspaces."""

        def run(tx: Connection) -> EraseResult | None:
            for name, kind in KINDS.items():
                deleted = kind.erase(tx, request.tenant, request.limit)
                if deleted:
                    return EraseResult(kind=name, deleted=deleted)
            return None

        async with heartbeating():
            result = (
                await self._webhooks.erase(request.tenant, request.limit)
                or await self._erase_automations(request.tenant, request.limit)
                or await self._store.database.write(run)
                or await self._knowledge.erase(request.tenant, request.limit)
                or (await self._containers.erase(request.tenant, request.limit) if self._containers else None)
                or EraseResult(kind=None, deleted=0)
            )
        if result.kind is not None:
            RETENTION_PRUNED.labels(result.kind, "tenant").inc(result.deleted)
            crash_point(AFTER_ERASE_BATCH)
        return result

    async def _erase_automations(self, tenant: str, limit: int) -> EraseResult | None:
        """A batch of the tenant's automations: Schedules first (a paused one has no next run to delete itself
        with), rows after, so a crash between the two leaves rows the next batch finds again."""
        automations = await self._store.database.read(lambda tx: tenant_automations(tx, tenant, limit))
        if not automations:
            return None
        for automation_id in automations:
            await delete_schedule(self._client, automation_id)
        deleted = await self._store.database.write(lambda tx: delete_automations(tx, automations))
        return EraseResult(kind="automations", deleted=deleted)
