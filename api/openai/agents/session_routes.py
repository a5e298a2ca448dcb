"""`/v1/agents/sessions` of the Agents API (beta): create (streamed or not), retrieve, update, list, delete.

Registered before the `/v1/agents/{agent_id}` routes: `sessions` is a path, never an agent id.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from functools import partial
from typing import Annotated, Any, Literal

from fastapi import Body, Query, Request
from fastapi.responses import StreamingResponse
from temporalio.common import WorkflowIDConflictPolicy

from agent_sessions.agent_snapshot import check_model
from agent_sessions.announce import session_event, start_deliveries
from agent_sessions.creation import create_session
from agent_sessions.mcp_tools import check_mcp_urls
from api.guards.tenancy import Principal, PrincipalDep, TenantDep
from api.openai.agents.agent_routes import unknown_cursor
from api.openai.agents.mcp_tools import credential_seal
from api.openai.agents.routing import beta_router
from api.openai.agents.session_requests import new_session, parse_create
from api.openai.agents.session_stream import Cursor, session_sse
from api.openai.agents.session_view import session_view
from api.openai.agents.spend_control import change_spend_limit
from api.openai.agents.wire import SessionUpdate, agent_body, check_metadata, parse
from api.openai.errors import OpenAIError, invalid, not_found
from api.openai.pages import list_page
from api.services import Services, ServicesDep
from store.agent_sessions.sessions import BetaSessionRecord
from workflows.session_deletion import AgentSessionDeletion, SessionDeletionRequest, session_deletion_workflow_id

log = logging.getLogger(__name__)

router = beta_router(tags=["agent sessions (beta)"])

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


async def stored_session(services: Services, tenant: str, session_id: str) -> BetaSessionRecord:
    """The tenant's session; 404 for unknown ids and other tenants' alike."""
    record = await services.store.agent_sessions.session(tenant, session_id)
    if record is None:
        raise not_found("Session", session_id)
    return record


def streamed(services: Services, principal: Principal, frames: AsyncIterator[bytes]) -> StreamingResponse:
    """SSE holding one of the key's stream slots until it ends (429 when the key has none left)."""
    slot = services.streams.take(principal.key_id)
    return slot.hold_for(StreamingResponse(frames, media_type="text/event-stream", headers=SSE_HEADERS))


@router.post("/agents/sessions")
async def create(
    raw: Annotated[dict[str, Any], Body(description="sessions.create parameters")],
    services: ServicesDep,
    principal: PrincipalDep,
) -> Any:
    """Create a session with `environment: {"type": "none"}` and start its first turn with `input`. With
    `stream: true`, the session's events from `agent.session.created` through its first turn's end."""
    body = parse_create(raw)
    if body.stream:
        services.streams.take(principal.key_id).release()  # refuse (429) before anything starts
    created = await create_session(services, principal.tenant, new_session(services, body))
    if body.stream:
        return streamed(services, principal, session_sse(services, created.session, Cursor(0, created=True), True))
    return await session_view(services, created.session)


@router.get("/agents/sessions")
async def list_sessions(
    request: Request,
    services: ServicesDep,
    tenant: TenantDep,
    after: str | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    order: Literal["asc", "desc"] = "desc",
    agent_id: str | None = None,
) -> Any:
    """The tenant's sessions, newest first by default; `agent_id` and `metadata[key]=value` filter them."""
    metadata = {
        key[len("metadata[") : -1]: value
        for key, value in request.query_params.items()
        if key.startswith("metadata[") and key.endswith("]")
    }
    try:
        found, has_more = await services.store.agent_sessions.sessions(tenant, after, limit, order, agent_id, metadata)
    except LookupError:
        raise unknown_cursor(after or "") from None
    return list_page([await session_view(services, record) for record in found], has_more)


@router.get("/agents/sessions/{session_id}")
async def retrieve(session_id: str, services: ServicesDep, tenant: TenantDep) -> Any:
    return await session_view(services, await stored_session(services, tenant, session_id))


@router.post("/agents/sessions/{session_id}")
async def update(
    session_id: str,
    raw: Annotated[dict[str, Any], Body(description="sessions.update parameters")],
    services: ServicesDep,
    tenant: TenantDep,
) -> Any:
    """`agent` fields apply from the session's next turn; `metadata` replaces; `spend_control: null` (or a
    null limit) removes the limit without resetting what was spent."""
    record = await stored_session(services, tenant, session_id)
    body = parse(SessionUpdate, raw, "session update")
    if body.review not in (None, "none"):
        raise invalid("review: only 'none' is supported by this server.", "review")
    changes: dict[str, Any] = {}
    if body.agent is not None:
        given = {key: value for key, value in raw["agent"].items() if key in body.agent.model_fields_set}
        fresh = agent_body(
            body.agent.model_copy(update={"model": body.agent.model or record.body["agent"]["model"]}),
            seal=credential_seal(services.settings.credentials_key),
        )
        agent = record.body["agent"] | {key: fresh[key] for key in given if key in fresh and key != "metadata"}
        check_model(services, agent.get("model"), "agent.model")
        await check_mcp_urls(agent, services.tools.outbound_policy)
        changes["agent"] = agent
    if "metadata" in raw:
        changes["metadata"] = check_metadata(body.metadata)
    if "prompt_cache_options" in raw:
        changes["prompt_cache_options"] = body.prompt_cache_options
    if "spend_control" in raw:
        limit = body.spend_control.limit if body.spend_control is not None else None
        changes["spend_control"] = {"limit": limit}

    def change(stored: dict[str, Any]) -> dict[str, Any]:
        spend = stored.get("spend_control") or {}
        merged = stored | changes
        if "spend_control" in changes:  # what was spent stays
            merged["spend_control"] = spend | changes["spend_control"]
        return merged

    updated = await services.store.agent_sessions.update_session(tenant, session_id, change)
    if "spend_control" in changes:  # the ledger's limit, and the turn held by the old one woken
        limit = changes["spend_control"]["limit"]
        # The held turn goes on, as its stream says: the event is recorded with the change that lets it.
        occasion = f"budget{uuid.uuid4().hex}"
        resumed = partial(session_event, "agent.session.in_progress", session_id, occasion=occasion)
        spend, recorded = await change_spend_limit(
            services.turns.client, services.store.spend, session_id, limit, (tenant, resumed)
        )
        if recorded and spend.waiting_turn_id is not None:
            await start_deliveries(services, spend.waiting_turn_id)
    return await session_view(services, updated or record)


@router.delete("/agents/sessions/{session_id}")
async def delete(session_id: str, services: ServicesDep, tenant: TenantDep) -> Any:
    """Delete the session with its turns, a running or waiting turn stopped first: one durable workflow, which
    Temporal finishes if this process dies during it (workflows/session_deletion.py)."""
    await stored_session(services, tenant, session_id)
    handle = await services.turns.client.start_workflow(
        AgentSessionDeletion.run,
        SessionDeletionRequest(tenant=tenant, session_id=session_id),
        id=session_deletion_workflow_id(session_id),
        task_queue=services.settings.task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,  # a concurrent delete waits for the same one
    )
    wait = services.settings.response_wait
    try:
        await asyncio.wait_for(handle.result(), wait)
    except TimeoutError:
        raise OpenAIError(
            503,
            f"Session {session_id} is being deleted (not done within {wait:.0f} s, DA_RESPONSE_WAIT); it will "
            "finish: delete again to wait for it.",
        ) from None
    return {"id": session_id, "object": "agent.session.deleted", "deleted": True}
