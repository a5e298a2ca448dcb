"""`GET /v1/inbox`: every turn of the caller's tenant that waits for a tool's output, an approval or a lifted
spend limit, oldest first, in keyset pages; each item says what it waits for and how to act on it."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Path, Query
from pydantic import BaseModel, ValidationError

from api.guards.tenancy import TenantDep
from api.services import ServicesDep
from store.inbox import InboxCursor, InboxItem, InboxKind, InboxQuery, keyset_of

router = APIRouter(tags=["Inbox"])

PAGE_MAX = 100
AGE_MAX = 10 * 366 * 86_400
"""Ten years: an age filter beyond any turn's, and within what a date can be shifted by."""


class InboxEntry(BaseModel):
    """An item as the API shows it: the waiting turn, its age in seconds, and the actions it takes."""

    id: str
    object: str = "inbox.item"
    kind: InboxKind
    dialect: str
    created_at: int
    """When the turn started."""
    waiting_since: int
    """When the turn began to wait (its pause, or its hold at the spend limit)."""
    age_seconds: int
    """How long it has waited: since `waiting_since`."""
    agent_id: str | None
    session_id: str | None
    response_id: str | None
    model: str | None
    tool_calls: list[dict[str, Any]]
    approvals: list[dict[str, Any]]
    approvals_expire_at: int | None
    """When the approvals are denied by the system if nobody decides them (DA_APPROVAL_TIMEOUT); None: never."""
    act: dict[str, Any]
    """How to act: `POST /v1/inbox/{id}/actions` with one of `actions`, or the dialect's own request."""


class InboxPage(BaseModel):
    object: str = "list"
    data: list[InboxEntry]
    has_more: bool
    next_after: str | None
    """The cursor of the next page: pass it as `after`."""


def encode_cursor(cursor: InboxCursor) -> str:
    return base64.urlsafe_b64encode(cursor.model_dump_json().encode()).decode()


def decode_cursor(after: str) -> InboxCursor:
    try:
        return InboxCursor.model_validate(json.loads(base64.urlsafe_b64decode(after.encode())))
    except (binascii.Error, ValueError, ValidationError, UnicodeDecodeError):
        raise HTTPException(400, "'after' is not a cursor this inbox gave (take it from 'next_after').") from None


def _actions(item: InboxItem) -> list[str]:
    if item.kind == "spend_limit":
        return ["lift_limit"]
    return (["submit_tool_output"] if item.calls else []) + (["approve", "reject"] if item.approvals else [])


def _dialect_request(item: InboxItem) -> str:
    if item.dialect == "llama_stack":
        return f"POST /v1/agents/{item.agent_id}/session/{item.session_id}/turn/{item.turn_id}/resume"
    if item.dialect == "agents":
        if item.kind == "spend_limit":
            return f"POST /v1/agents/sessions/{item.session_id} with spend_control"
        return f"POST /v1/agents/sessions/{item.session_id}/events"
    return f"POST /v1/responses with previous_response_id {item.response_id}"


def entry_of(item: InboxItem, now: datetime) -> InboxEntry:
    return InboxEntry(
        id=item.turn_id,
        kind=item.kind,
        dialect=item.dialect,
        created_at=int(item.started_at.timestamp()),
        waiting_since=int(item.waiting_since.timestamp()),
        age_seconds=max(0, int((now - item.waiting_since).total_seconds())),
        agent_id=item.agent_id,
        session_id=item.session_id,
        response_id=item.response_id,
        model=item.model,
        tool_calls=[
            {"call_id": call.call_id, "name": call.tool_name, "arguments": call.arguments_json or call.arguments}
            for call in item.calls
        ],
        approvals=[
            {
                "approval_request_id": request.approval_request_id,
                "server_label": request.server_label,
                "name": request.call.tool_name,
                "arguments": request.call.arguments_json or request.call.arguments,
            }
            for request in item.approvals
        ],
        approvals_expire_at=int(item.approvals_expire_at.timestamp()) if item.approvals_expire_at else None,
        act={
            "actions": _actions(item),
            "url": f"/v1/inbox/{item.turn_id}/actions",
            "dialect_request": _dialect_request(item),
        },
    )


async def inbox_page(
    services: Any,
    tenant: str,
    kind: InboxKind | None = None,
    agent_id: str | None = None,
    older_than: int | None = None,
    after: str | None = None,
    limit: int = 20,
) -> InboxPage:
    """One page of the tenant's inbox; the console reads the same."""
    now = datetime.now(UTC)
    query = InboxQuery(
        tenant=tenant,
        kind=kind,
        agent_id=agent_id,
        started_before=now - timedelta(seconds=older_than) if older_than is not None else None,
        after=decode_cursor(after) if after else None,
        limit=limit,
    )
    items, more = await services.store.inbox.waiting(query)
    return InboxPage(
        data=[entry_of(item, now) for item in items],
        has_more=more,
        next_after=encode_cursor(keyset_of(items[-1])) if more and items else None,
    )


class Decision(BaseModel):
    """One approval decision as the turn records it: what was decided, why, by whom and when."""

    approval_request_id: str
    call_id: str | None
    tool_name: str | None
    decision: Literal["approved", "denied"]
    reason: str | None
    decided_by: str | None
    """The API key's id (`key-…`, never the key; `anonymous` without keys), or `system` for a timed-out approval."""
    tenant: str | None
    decided_at: str | None
    """ISO 8601, UTC."""


class Decisions(BaseModel):
    object: str = "list"
    turn_id: str
    data: list[Decision]


@router.get("/inbox/{turn_id}/decisions", response_model=Decisions)
async def list_decisions(
    services: ServicesDep, tenant: TenantDep, turn_id: Annotated[str, Path(max_length=64)]
) -> Decisions:
    """Every approval decision recorded in the turn, waiting or not, oldest first."""
    found = await services.store.inbox.decisions(tenant, turn_id)
    if found is None:
        raise HTTPException(404, f"No turn {turn_id} of this tenant")
    return Decisions(turn_id=turn_id, data=[Decision.model_validate(decision) for decision in found])


@router.get("/inbox", response_model=InboxPage)
async def list_inbox(
    services: ServicesDep,
    tenant: TenantDep,
    kind: Annotated[InboxKind | None, Query(description="Only items waiting for this")] = None,
    agent_id: Annotated[str | None, Query(description="Only turns of this agent (llama-stack or Agents API)")] = None,
    older_than: Annotated[
        int | None, Query(ge=0, le=AGE_MAX, description="Only turns started at least this many seconds ago")
    ] = None,
    after: Annotated[str | None, Query(description="The `next_after` of the page before")] = None,
    limit: Annotated[int, Query(ge=1, le=PAGE_MAX, description="Items per page")] = 20,
) -> InboxPage:
    return await inbox_page(services, tenant, kind, agent_id, older_than, after, limit)
