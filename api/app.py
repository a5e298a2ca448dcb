"""The FastAPI application: `uvicorn api.app:app`, or `create_app()` for a custom setup."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI
from sqlalchemy.engine import make_url

from activities.early_inference import EarlyInference
from agent_sessions.refusals import SessionRefused
from api import model_routes
from api.console.pages import install_console_pages
from api.console.playground import router as playground_router
from api.console.routes import install_console
from api.console.turn_pages import router as console_turns
from api.containers import containers_for
from api.guards.auth import BearerAuth
from api.guards.body_limit import BodySizeLimit
from api.guards.host_check import HostOriginCheck
from api.guards.rate_limit import ProcessRateBuckets, RateLimit
from api.guards.tenancy import DEFAULT_TENANT, principals
from api.http.errors import install_error_handlers
from api.http.openapi import install_openapi
from api.inbox import actions as inbox_actions
from api.inbox import routes as inbox
from api.knowledge import knowledge_for
from api.llama_stack import routes as llama_stack
from api.openai import routes as openai_family
from api.openai.agents.refusals import answer_refusal
from api.openai.agents.routing import AgentsBetaByShape
from api.openai.errors import OpenAIErrorEnvelope
from api.openai.platform.webhook_endpoint_routes import Webhooks
from api.openai.responses.view import settle_conversation
from api.operations import routes as operations
from api.services import Services
from api.streams.event_hub import EventHub
from api.streams.stream_slots import StreamSlots
from api.turn_gateway import TurnGateway
from api.turns.sweep import sweep_forever
from configuration.loading import get_settings
from configuration.settings import Settings, SettingsError
from hosting import startup_heap
from hosting.search_attribute_schema import MissingSearchAttributes, require_search_attributes
from hosting.temporal_connection import connect_temporal
from knowledge import blob_sweep, ingestion_sweep
from knowledge.engines import vector_index
from observability.api_tracing import fastapi_native_telemetry_off, instrument_api
from observability.logs import configure_logging
from observability.tracing import setup_tracing
from observability.worker_metrics import sdk_metrics_runtime
from outbound.http import outbound_from
from store.database import open_database
from store.pg_wake import PostgresWakeReceiver
from store.repository import Store
from store.tenancy.rate_buckets import StoreRateBuckets
from store.upgrade import upgrade_store
from store.wake import WakeReceiver, WakeSender, wake_dir
from tool_runtime.catalog import ToolCatalog
from webhooks import dispatch
from workflows.retention_schedule import ensure_retention_schedule

log = logging.getLogger(__name__)


def _announce_tenancy(settings: Settings) -> None:
    """Say at start who may call and as which tenant; a bad key entry stops the start here."""
    tenants = {principal.tenant for principal in principals(settings.key_entries()).values()}
    if not tenants:
        log.warning(
            "No API keys (DA_API_KEYS): every caller is tenant %r; host names served: %s",
            DEFAULT_TENANT,
            ", ".join(settings.allowed_hosts or ("loopback only",)),
        )
    else:
        log.info("API keys for %d tenants; each sees only its own agents, sessions and toolgroups", len(tenants))


def _configure_logging(settings: Callable[[], Settings]) -> None:
    """Before uvicorn's first line, so that with JSON logs every line is JSON; a process whose logging is
    set up already (a test runner) keeps it. A configuration error is reported by the lifespan instead."""
    try:
        log_format = settings().log_format
    except SettingsError:
        return
    configure_logging("api", log_format, force=False)


def create_app(settings: Settings | None = None) -> FastAPI:
    def current_settings() -> Settings:
        return settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        config = current_settings()
        _announce_tenancy(config)
        await upgrade_store(config.store_url)
        database = open_database(config.store_url)
        # With the worker in this process, its Temporal SDK metrics join this API's /metrics.
        client = await connect_temporal(config, sdk_metrics_runtime() if config.worker_in_api else None)
        try:
            await require_search_attributes(client)
        except MissingSearchAttributes as missing:
            log.error("%s", missing)  # the message, before uvicorn's traceback of the failed start
            raise
        if config.worker_in_api:  # the retention schedule is the workers' (workflows/retention_schedule.py)
            await ensure_retention_schedule(client, config)
        store = Store(database, vector_index(config.store_url, config.vector_cache_mb))
        events = EventHub(store)
        poller = asyncio.create_task(events.run())
        wake_receiver = WakeReceiver(wake_dir(config.data_dir), events.wake)
        wake_receiver.open()
        store_wake: PostgresWakeReceiver | None = None
        if make_url(config.store_url).get_backend_name() == "postgresql":  # shared by API processes on any host
            app.state.rate_buckets = StoreRateBuckets(database)
            store_wake = PostgresWakeReceiver(config.store_url, events.wake)
            store_wake.start()
        wake_sender = WakeSender(wake_dir(config.data_dir), own=wake_receiver.path)
        store.turns.on_events_written(wake_sender)  # other APIs on this host streaming a turn this one writes to
        turns = TurnGateway(client, config.task_queue, eager_start=config.worker_in_api)
        streams = StreamSlots(config.max_streams_per_key)
        early = EarlyInference() if config.worker_in_api and config.early_model_calls else None
        app.state.services = services = Services(
            config,
            store,
            turns,
            ToolCatalog.from_settings(store, config),
            events,
            streams,
            settle_conversation=settle_conversation,
            early_inference=early,
        )
        webhook_store = store.webhooks
        starter = dispatch.DeliveryStarter(client, config.task_queue, webhook_store)
        app.state.webhooks = Webhooks(config, webhook_store, starter, outbound_from(config))
        outbox = dispatch.sweep_forever(starter, config.webhook_sweep_interval)
        app.state.knowledge = knowledge = knowledge_for(config, store, client)
        app.state.containers = containers_for(config, store.containers, store.files, knowledge.blobs)
        background = [poller, asyncio.create_task(outbox)]
        if config.unstarted_turn_sweep is not None:
            background.append(asyncio.create_task(sweep_forever(services, config.unstarted_turn_sweep)))
        if config.ingestion_sweep is not None:
            ingestions = ingestion_sweep.sweep_forever(knowledge.stores, knowledge.ingestion, config.ingestion_sweep)
            background.append(asyncio.create_task(ingestions))
            background.append(asyncio.create_task(blob_sweep.sweep_forever(knowledge.blobs, knowledge.files)))
        try:
            if config.worker_in_api:
                # Imported here: the worker's dependencies (the OpenAI SDK among them) add ~0.8 s to
                # the start of every API process, and only this one needs them.
                from worker import build_worker

                async with build_worker(client, config, store, early=early):
                    startup_heap.freeze()
                    yield
            else:
                startup_heap.freeze()
                yield
        finally:
            for task in background:
                task.cancel()
            wake_receiver.close()
            wake_sender.close()
            if store_wake is not None:
                await store_wake.close()
            await database.dispose()

    _configure_logging(current_settings)
    setup_tracing("durable-agents-api")
    app = FastAPI(
        title="durable-agents",
        summary="A durable agent runtime on Temporal: the llama-stack Agents API, the OpenAI Responses and Agents APIs",
        lifespan=lifespan,
        **fastapi_native_telemetry_off(),
    )
    install_error_handlers(app)
    app.add_exception_handler(SessionRefused, answer_refusal)  # type: ignore[arg-type]
    app.state.rate_buckets = ProcessRateBuckets()  # the lifespan moves them into a PostgreSQL store
    # The last added runs first: a request for a foreign host name or origin is refused first, then a caller
    # without a valid key, then one over its rate, all before the body is even counted.
    app.add_middleware(AgentsBetaByShape)  # innermost: it reads the body of `POST /v1/agents` once bounded
    app.add_middleware(BodySizeLimit, settings=current_settings)
    app.add_middleware(RateLimit, settings=current_settings)
    app.add_middleware(BearerAuth, settings=current_settings)
    app.add_middleware(HostOriginCheck, settings=current_settings)
    app.add_middleware(OpenAIErrorEnvelope)  # outermost: the Responses paths' errors in OpenAI's shape
    # The OpenAI family first: its Agents API routes share `/v1/agents` paths with llama-stack's (api/openai/routes.py).
    for router in (
        openai_family.router,
        llama_stack.router,
        model_routes.router,
        operations.router,
        inbox.router,
        inbox_actions.router,
    ):
        app.include_router(router, prefix="/v1")
    install_openapi(app, llama_stack.RESOURCE_ROUTERS, prefix="/v1")
    app.include_router(operations.root_router)
    install_console(app)
    app.include_router(playground_router)
    app.include_router(console_turns)
    install_console_pages(app)
    instrument_api(app, lambda turn_id: app.state.services.turns.trace_carrier(turn_id))
    return app


app = create_app()
