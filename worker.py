"""The Temporal worker: runs turn workflows and their activities.

python worker.py        # connects with the settings in configuration/settings.py
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta

import uvloop
from temporalio.client import Client
from temporalio.runtime import Runtime
from temporalio.worker import UnsandboxedWorkflowRunner, Worker, WorkflowRunner

from activities.automation_delivery import AutomationDeliveries, WorkerSessionServices
from activities.code_calls import CodeActivities
from activities.compaction import CompactionActivities
from activities.container_retention import ContainerRetention
from activities.documents import DocumentActivities
from activities.early_inference import EarlyInference
from activities.inference import InferenceActivities
from activities.ingestion import IngestionActivities
from activities.knowledge_search import KnowledgeSearch
from activities.retention import KnowledgeRetention, RetentionActivities, WebhookErasure
from activities.session_deletion import SessionDeletionActivities
from activities.shields import ShieldActivities
from activities.spend import SpendActivities
from activities.tools import ToolActivities
from activities.turn_progress import TurnProgressActivities
from activities.webhook_delivery import WebhookDeliveryActivities
from compaction.seal import CompactionSeal
from configuration.loading import get_settings
from configuration.settings import Settings
from hosting import startup_heap
from hosting.search_attribute_schema import MissingSearchAttributes, require_search_attributes
from hosting.supervision import EXIT_CANNOT_START
from hosting.temporal_connection import connect_temporal
from hosting.workers import Workers
from knowledge.blobs import blob_store
from knowledge.embeddings import EmbeddingCatalog
from knowledge.engines import vector_index
from observability.logs import configure_logging
from observability.tracing import setup_tracing
from observability.worker_metrics import serve_worker_metrics
from outbound.http import outbound_from
from providers.registry import ModelRegistry
from store.database import open_database
from store.repository import Store
from store.upgrade import StoreNotUpgradable, upgrade_store
from store.wake import WakeSender, wake_dir
from tool_runtime.catalog import ToolCatalog
from tool_runtime.credential_seal import CredentialSeal
from turn_client.starter import TurnStarter
from webhooks.dispatch import DeliveryStarter
from webhooks.secrets import SecretSeal
from workflows.automation_run import AutomationRun
from workflows.compaction import CompactionWorkflow
from workflows.ingestion import IngestFileWorkflow
from workflows.retention import RetentionSweep, TenantErasure
from workflows.retention_schedule import ensure_retention_schedule
from workflows.session_deletion import AgentSessionDeletion
from workflows.turn import TurnWorkflow
from workflows.webhook_delivery import WebhookDeliveryWorkflow


def workflow_runner() -> WorkflowRunner:
    """Turns run outside Temporal's sandbox, which costs a new turn's first workflow task about 5 ms
    (executing workflows/turn.py anew for the instance, and each payload's serialization context
    fetched through it): a quarter of the worker's CPU per turn. What the sandbox catches, a
    nondeterministic call (the clock, randomness, I/O) in workflow code, the test suite still does:
    its in-process stacks and the replays of recorded histories run turns in the sandbox
    (tests/support/sandbox.py), and the replays run them in this runner too.
    """
    return UnsandboxedWorkflowRunner()


def build_worker(
    client: Client,
    settings: Settings,
    store: Store,
    runner: WorkflowRunner | None = None,
    early: EarlyInference | None = None,
) -> Workers:
    """The worker on the shared task queue and the one on this host's own (DA_WORKER_HOST), which takes the
    code calls of the containers held here (docs/code-sandbox.md).

    `runner`: the one turns run in (tests pass Temporal's sandbox); by default `workflow_runner()`.
    `early`: the model calls an API in this process begins for its foreground responses, to adopt."""
    models = ModelRegistry(settings)
    models.warm()
    inference = InferenceActivities(store, models, settings.max_history_bytes, early=early)
    shields = ShieldActivities(store, models, settings)
    progress = TurnProgressActivities(store)
    spend = SpendActivities(store.spend)
    seal = CredentialSeal(settings.credentials_key) if settings.credentials_key else None
    vector_stores = store.vector_stores
    embeddings = EmbeddingCatalog(settings)
    search = KnowledgeSearch(vector_stores, embeddings, settings.max_search_results)
    catalog = ToolCatalog.from_settings(store, settings)
    # Automations create and feed Agents API sessions through the same session service as the API's routes.
    sessions = WorkerSessionServices(settings, store, TurnStarter(client, settings.task_queue), catalog)
    automations = AutomationDeliveries(sessions, store.automations)
    tools = ToolActivities(store, catalog, settings.max_tool_output_chars, seal, search)
    code = CodeActivities(store, settings)
    documents = DocumentActivities(store, outbound_from(settings), settings.max_document_bytes)
    compaction_seal = CompactionSeal(settings.credentials_key) if settings.credentials_key else None
    compaction = CompactionActivities(store, models, compaction_seal, settings.max_history_bytes)
    blobs = blob_store(settings.store_url, store.database, settings.blob_dir)
    knowledge_retention = KnowledgeRetention(store.files, vector_stores, blobs)
    webhook_store = store.webhooks
    webhook_erasure = WebhookErasure(webhook_store, DeliveryStarter(client, settings.task_queue, webhook_store))
    containers = ContainerRetention(store.containers, settings.data_dir)
    retention = RetentionActivities(store, client, knowledge_retention, webhook_erasure, settings, containers)
    webhooks = WebhookDeliveryActivities(
        webhook_store,
        outbound_from(settings),
        SecretSeal(settings.credentials_key) if settings.credentials_key else None,
        settings.webhook_retry_delays,
        settings.webhook_timeout,
    )
    ingestion = IngestionActivities(
        vector_stores,
        blobs,
        embeddings,
        settings,
    )
    shared = Worker(
        client,
        task_queue=settings.task_queue,
        workflows=[
            TurnWorkflow,
            WebhookDeliveryWorkflow,
            IngestFileWorkflow,
            CompactionWorkflow,
            RetentionSweep,
            TenantErasure,
            AutomationRun,
            AgentSessionDeletion,
        ],
        activities=[
            inference.infer,
            progress.save_turn_progress,
            progress.load_turn_steps,
            spend.check_session_spend,
            documents.fetch_documents,
            tools.resolve_tools,
            tools.list_mcp_server,
            tools.run_tool,
            code.code_host,
            code.run_code_call,  # the calls of turns from before they were sent to their container's host
            code.code_call_outcome,
            shields.run_shields,
            webhooks.attempt,
            ingestion.chunk_file,
            ingestion.embed_chunks,
            ingestion.finish_file,
            compaction.write_summary,
            compaction.compact_turn,
            retention.retention_policy,
            retention.prune_expired,
            retention.stop_tenant_turns,
            retention.erase_tenant_batch,
            SessionDeletionActivities(store, client).delete_agent_session,
            automations.deliver_automation,
            automations.fail_automation_invocation,
        ],
        # Cancellation reaches a model call through its heartbeat: send one at least every second.
        max_heartbeat_throttle_interval=timedelta(seconds=1),
        # Bounded memory however many turns wait (docs/scaling.md).
        max_cached_workflows=settings.max_cached_workflows,
        # After a worker dies, its turns' next workflow task moves to another worker after this long.
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=3),
        workflow_runner=runner or workflow_runner(),
    )
    own_host = Worker(
        client,
        task_queue=code.task_queue,
        activities=[code.run_code_call],
        max_heartbeat_throttle_interval=timedelta(seconds=1),
    )
    return Workers(shared, own_host)


@asynccontextmanager
async def running_worker(settings: Settings, runtime: Runtime | None = None) -> AsyncIterator[Workers]:
    """A connected, running worker with its own store engine; shut down on exit."""
    await upgrade_store(settings.store_url)
    database = open_database(settings.store_url)
    client = await connect_temporal(settings, runtime)
    await require_search_attributes(client)
    await ensure_retention_schedule(client, settings)
    store = Store(database, vector_index(settings.store_url, settings.vector_cache_mb))
    wake = WakeSender(wake_dir(settings.data_dir))
    store.turns.on_events_written(wake)
    worker = build_worker(client, settings, store)
    try:
        async with worker:
            yield worker
    finally:
        wake.close()
        await database.dispose()


async def main() -> None:
    settings = get_settings()
    configure_logging("worker", settings.log_format)
    setup_tracing("durable-agents-worker")
    runtime = None
    if settings.worker_metrics_port:
        runtime = serve_worker_metrics(settings.worker_metrics_host, settings.worker_metrics_port)
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    async with running_worker(settings, runtime) as workers:
        startup_heap.freeze()
        queues = [worker.task_queue for worker in workers.workers]
        logging.info("worker polling task queues %s", ", ".join(map(repr, queues)))
        await stop.wait()
        logging.info("worker shutting down")


if __name__ == "__main__":
    try:
        uvloop.run(main())  # the event loop in C: less CPU per task, gRPC reply and HTTP call than asyncio's own
    except (StoreNotUpgradable, MissingSearchAttributes) as refused:
        print(refused, file=sys.stderr)
        sys.exit(EXIT_CANNOT_START)
