"""Every route of the llama-stack dialect: the app mounts this one router, after the OpenAI family's (whose
Agents API routes share `/v1/agents` paths and answer only requests that send `OpenAI-Beta: agents=v1`)."""

from __future__ import annotations

from fastapi import APIRouter

from api.llama_stack import (
    agent_routes,
    embedding_routes,
    rag_tool_routes,
    session_routes,
    shield_routes,
    tool_routes,
    turn_routes,
    vector_db_routes,
    vector_io_routes,
)

RESOURCE_ROUTERS = tuple(
    module.router
    for module in (
        agent_routes,
        session_routes,
        turn_routes,
        tool_routes,
        shield_routes,
        embedding_routes,
        vector_db_routes,
        vector_io_routes,
        rag_tool_routes,
    )
)
"""A router per resource: the OpenAPI document reads their routes (api/http/openapi.py)."""

router = APIRouter()
for resource_router in RESOURCE_ROUTERS:
    router.include_router(resource_router)
