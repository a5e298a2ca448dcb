"""Every route of the OpenAI family, in the order they must be matched: the app mounts this one router."""

from __future__ import annotations

from fastapi import APIRouter

from api.openai.agents import (
    agent_routes,
    automation_routes,
    out_of_scope_routes,
    session_input_routes,
    session_routes,
    session_turn_routes,
)
from api.openai.platform import (
    container_file_routes,
    container_routes,
    embedding_routes,
    file_routes,
    vector_store_file_routes,
    vector_store_routes,
    webhook_endpoint_routes,
)
from api.openai.responses import compact_routes, conversation_routes, response_routes, websocket_routes

router = APIRouter()
# The Agents API beta first, literal paths before `{agent_id}`: its routes match only requests that send
# `OpenAI-Beta: agents=v1`, and the llama-stack routes on the same paths (mounted after this router) answer
# every other request.
for agents_route in (
    out_of_scope_routes,
    session_routes,
    session_input_routes,
    session_turn_routes,
    automation_routes,
    agent_routes,
):
    router.include_router(agents_route.router)
router.include_router(conversation_routes.router)
router.include_router(compact_routes.router)  # before response_routes': /responses/compact is no response id
router.include_router(response_routes.router)
router.include_router(websocket_routes.router)  # the WebSocket mode of /responses
for platform_route in (
    webhook_endpoint_routes,
    embedding_routes,
    file_routes,
    vector_store_routes,
    vector_store_file_routes,
    container_routes,
    container_file_routes,
):
    router.include_router(platform_route.router)
