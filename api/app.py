"""The FastAPI application: `uvicorn api.app:app`, or `create_app()` for a custom setup."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from api.auth import BearerAuth
from api.body_limit import BodySizeLimit
from api.errors import install_error_handlers
from api.event_hub import EventHub
from api.openapi import install_openapi
from api.routers import agents, health, sessions, shields, tools, turns
from api.runtime import Runtime
from api.turn_gateway import TurnGateway
from settings import Settings, get_settings
from store.database import open_database
from store.repository import Store
from store.upgrade import upgrade_store
from temporal_connection import connect_temporal, require_search_attributes
from tool_runtime.catalog import ToolCatalog


def create_app(settings: Settings | None = None) -> FastAPI:
    def current_settings() -> Settings:
        return settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        config = current_settings()
        await upgrade_store(config.store_url)
        database = open_database(config.store_url)
        client = await connect_temporal(config)
        await require_search_attributes(client)
        store = Store(database)
        events = EventHub(store)
        poller = asyncio.create_task(events.run())
        turns = TurnGateway(client, config.task_queue, eager_start=config.worker_in_api)
        app.state.runtime = Runtime(config, store, turns, ToolCatalog(store), events)
        try:
            if config.worker_in_api:
                # Imported here: the worker's dependencies (the OpenAI SDK among them) add ~0.8 s to
                # the start of every API process, and only this one needs them.
                from worker import build_worker

                async with build_worker(client, config, store):
                    yield
            else:
                yield
        finally:
            poller.cancel()
            await database.dispose()

    app = FastAPI(
        title="durable-agents",
        summary="A durable agent runtime on Temporal, wire-compatible with the llama-stack Agents API",
        lifespan=lifespan,
    )
    install_error_handlers(app)
    # The last added runs first: a caller without a valid key is refused before its body is even counted.
    app.add_middleware(BodySizeLimit, settings=current_settings)
    app.add_middleware(BearerAuth, settings=current_settings)
    routers = (agents.router, sessions.router, turns.router, tools.router, shields.router, health.router)
    for router in routers:
        app.include_router(router, prefix="/v1")
    install_openapi(app, routers, prefix="/v1")
    return app


app = create_app()
