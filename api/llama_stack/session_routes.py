"""Sessions of an agent: create, read (with its turns), list, delete."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from functools import partial
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query

from api.http.errors import not_found
from api.http.pagination import PageDep
from api.llama_stack.agent_routes import AgentDep
from api.llama_stack.schemas import CreateSessionRequest, CreateSessionResponse, PaginatedResponse
from api.services import ServicesDep
from api.turns.deletion import delete_with_turns
from domain.turns import Session, TurnStatus
from store.turns.records import LimitReached

router = APIRouter(tags=["sessions"])


@router.post("/agents/{agent_id}/session", response_model=CreateSessionResponse)
async def create_session(
    agent: AgentDep,
    services: ServicesDep,
    body: CreateSessionRequest,
) -> CreateSessionResponse:
    session_id = str(uuid.uuid4())
    most = services.settings.max_sessions_per_agent
    try:
        await services.store.turns.create_session(
            agent.agent_id, session_id, body.session_name, datetime.now(UTC), most
        )
    except LimitReached as limit:
        raise HTTPException(409, str(limit)) from limit
    return CreateSessionResponse(session_id=session_id)


@router.get("/agents/{agent_id}/session/{session_id}", response_model=Session)
async def get_session(
    agent: AgentDep,
    services: ServicesDep,
    session_id: str,
    turn_ids: Annotated[list[str] | None, Query(description="Only these turns; comma-separated or repeated")] = None,
) -> Session:
    wanted = [t for value in turn_ids or [] for t in value.split(",") if t] or None
    session = await services.store.turns.get_session(agent.agent_id, session_id, turn_ids=wanted)
    if session is None:
        raise not_found("Session", session_id)
    for index, turn in enumerate(session.turns):
        if turn.status == TurnStatus.RUNNING:
            session.turns[index] = await services.turns.live_turn(turn)
    return session


@router.delete("/agents/{agent_id}/session/{session_id}", response_model=None)
async def delete_session(
    agent: AgentDep,
    services: ServicesDep,
    session_id: str,
) -> None:
    """Delete the session and its turns; a turn still running or awaiting input is stopped first."""
    unfinished = await services.store.turns.unfinished_turn_ids(agent.agent_id, session_id)
    delete = partial(services.store.turns.delete_session, agent.agent_id, session_id)
    if not await delete_with_turns(services, f"Session {session_id}", unfinished, delete):
        raise not_found("Session", session_id)


@router.get("/agents/{agent_id}/sessions", response_model=PaginatedResponse)
async def list_sessions(
    agent: AgentDep,
    services: ServicesDep,
    window: PageDep,
) -> PaginatedResponse:
    page = await services.store.turns.list_sessions(agent.agent_id, window.start_index, window.limit)
    return PaginatedResponse(
        data=[session.model_dump(mode="json") for session in page.items],
        has_more=page.has_more,
        url=f"/v1/agents/{agent.agent_id}/sessions",
    )
