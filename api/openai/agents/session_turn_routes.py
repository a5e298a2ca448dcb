"""`/v1/agents/sessions/{id}/items` and `/turns`: a session's items and turns, replayed from the store."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Query

from api.guards.tenancy import TenantDep
from api.openai.agents.routing import beta_router
from api.openai.agents.session_routes import stored_session
from api.openai.agents.session_view import turn_items
from api.openai.errors import OpenAIError, not_found
from api.openai.pages import list_page
from api.services import Services, ServicesDep
from store.agent_sessions.sessions import BetaSessionRecord, SessionTurnRecord

router = beta_router(tags=["agent sessions (beta)"])

Limit = Annotated[int, Query(ge=1, le=100)]
Order = Literal["asc", "desc"]


def _paged(objects: list[dict[str, Any]], after: str | None, limit: int, order: Order) -> dict[str, Any]:
    if order == "desc":
        objects = objects[::-1]
    if after is not None:
        ids = [found["id"] for found in objects]
        if after not in ids:
            raise OpenAIError(404, f"No item with id '{after}' here to list after.", "after")
        objects = objects[ids.index(after) + 1 :]
    return list_page(objects[:limit], len(objects) > limit)


async def _turn(services: Services, record: BetaSessionRecord, turn_id: str) -> SessionTurnRecord:
    turn = await services.store.agent_sessions.session_turn(turn_id)
    if turn is None or turn.session_id != record.session_id:
        raise not_found("Turn", turn_id)
    return turn


@router.get("/agents/sessions/{session_id}/items")
async def list_items(
    session_id: str,
    services: ServicesDep,
    tenant: TenantDep,
    after: str | None = None,
    limit: Limit = 20,
    order: Order = "asc",
) -> Any:
    """Every item of the session, turn after turn: the user's messages, the agent's, calls and their outputs."""
    record = await stored_session(services, tenant, session_id)
    items: list[dict[str, Any]] = []
    for turn in await services.store.agent_sessions.session_turns(session_id):
        items += (await turn_items(services, record, turn))[1]
    return _paged(items, after, limit, order)


@router.get("/agents/sessions/{session_id}/turns")
async def list_turns(
    session_id: str,
    services: ServicesDep,
    tenant: TenantDep,
    after: str | None = None,
    limit: Limit = 20,
    order: Order = "desc",
) -> Any:
    record = await stored_session(services, tenant, session_id)
    turns = [
        (await turn_items(services, record, turn))[0]
        for turn in await services.store.agent_sessions.session_turns(session_id)
    ]
    return _paged(turns, after, limit, order)


@router.get("/agents/sessions/{session_id}/turns/{turn_id}")
async def retrieve_turn(session_id: str, turn_id: str, services: ServicesDep, tenant: TenantDep) -> Any:
    record = await stored_session(services, tenant, session_id)
    return (await turn_items(services, record, await _turn(services, record, turn_id)))[0]


@router.get("/agents/sessions/{session_id}/turns/{turn_id}/items")
async def list_turn_items(
    session_id: str,
    turn_id: str,
    services: ServicesDep,
    tenant: TenantDep,
    after: str | None = None,
    limit: Limit = 20,
    order: Order = "asc",
) -> Any:
    record = await stored_session(services, tenant, session_id)
    items = (await turn_items(services, record, await _turn(services, record, turn_id)))[1]
    return _paged(items, after, limit, order)
