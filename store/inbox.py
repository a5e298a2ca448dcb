"""What waits for a person or a caller, across the three dialects: the turns paused for client tool results or
approvals (`awaiting_input`), and the Agents API turns held at a model call by their session's spend limit.

One read across aggregates (turns, responses, agent sessions, spend), like retention's: every dialect's turn is a
`turns` row, so one ordered scan of the waiting ones serves them all. Pages are keyset pages on
(started_at, turn_id), read along `ix_turns_status_started`, so the first page costs the same with ten
waiting turns as with ten thousand.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, Field
from sqlalchemy import Connection, exists, func, or_, select, tuple_

from domain.content import ToolCall
from domain.turn_settings import ApprovalRequest
from domain.turns import TurnStatus
from store.agent_sessions.tables import BetaSessionRow, BetaSessionTurnRow
from store.database import Database
from store.responses.tables import ResponseRow
from store.tenancy.tables import SessionBudgetRow
from store.turns.tables import AgentRow, EventRow, PendingCallRow, StepRow, TurnRow

InboxKind = Literal["tool_output", "approval", "spend_limit"]
Dialect = Literal["llama_stack", "responses", "agents"]

APPROVAL_PREFIX = "mcpr_"
"""Approval request ids begin so (workflows/mcp_servers.py); every other pending id is a client call's."""


class InboxItem(BaseModel):
    """One waiting turn and what it waits for: the client calls to answer, the approvals to decide, or a limit."""

    turn_id: str
    tenant_id: str
    kind: InboxKind
    """`approval` when the turn waits only for approvals, `tool_output` when it waits for any call's output."""
    dialect: Dialect
    started_at: datetime
    waiting_since: datetime
    """When the turn began to wait: the end of its last step (the pause follows it), else its start."""
    agent_id: str | None = None
    """The llama-stack agent, or the Agents API session's saved agent."""
    session_id: str | None = None
    """The llama-stack session or the Agents API session."""
    response_id: str | None = None
    """A Responses turn's latest response: the one a continuation names as `previous_response_id`."""
    model: str | None = None
    calls: list[ToolCall] = Field(default_factory=list)
    approvals: list[ApprovalRequest] = Field(default_factory=list)
    approvals_expire_at: datetime | None = None
    """When the system denies the approvals if nobody has (DA_APPROVAL_TIMEOUT): a pause of approvals alone."""


class InboxCursor(BaseModel):
    started_at: datetime
    turn_id: str


class InboxQuery(BaseModel):
    tenant: str
    kind: InboxKind | None = None
    agent_id: str | None = None
    started_before: datetime | None = None
    """Only turns started before this: the age filter."""
    after: InboxCursor | None = None
    turn_id: str | None = None
    """Only this turn: whether it still waits, and for what."""
    limit: int = 20


_tenant = func.coalesce(TurnRow.tenant_id, AgentRow.tenant_id)
_is_approval = PendingCallRow.call_id.like(f"{APPROVAL_PREFIX}%")


def _pending(is_approval: bool) -> Any:
    condition = _is_approval if is_approval else ~_is_approval
    return exists().where(PendingCallRow.turn_id == TurnRow.turn_id, condition)


def _common(query: InboxQuery) -> list[Any]:
    where: list[Any] = [_tenant == query.tenant]
    if query.started_before is not None:
        where.append(TurnRow.started_at < query.started_before)
    if query.after is not None:
        where.append(tuple_(TurnRow.started_at, TurnRow.turn_id) > (query.after.started_at, query.after.turn_id))
    if query.turn_id is not None:
        where.append(TurnRow.turn_id == query.turn_id)
    if query.agent_id is not None:
        of_beta_agent = select(BetaSessionTurnRow.turn_id).join(
            BetaSessionRow, BetaSessionRow.session_id == BetaSessionTurnRow.session_id
        )
        of_beta_agent = of_beta_agent.where(BetaSessionRow.agent_id == query.agent_id)
        where.append(or_(TurnRow.agent_id == query.agent_id, TurnRow.turn_id.in_(of_beta_agent)))
    return where


def _columns() -> Sequence[Any]:
    return (
        TurnRow.turn_id,
        TurnRow.started_at,
        TurnRow.status,
        TurnRow.session_id,
        TurnRow.agent_id,
        TurnRow.output_message,
        _tenant.label("tenant"),
    )


def _awaiting(query: InboxQuery) -> Any:
    where = [TurnRow.status == TurnStatus.AWAITING_INPUT.value, *_common(query)]
    if query.kind == "approval":
        # Detached turns only (llama-stack turns have no approvals); nothing but approvals pending.
        where += [_pending(True), ~_pending(False)]
    elif query.kind == "tool_output":
        where.append(or_(TurnRow.tenant_id.is_(None), _pending(False)))
    return (
        select(*_columns())
        .outerjoin(AgentRow, AgentRow.agent_id == TurnRow.agent_id)
        .where(*where)
        .order_by(TurnRow.started_at, TurnRow.turn_id)
        .limit(query.limit + 1)
    )


def _held(query: InboxQuery) -> Any:
    return (
        select(*_columns())
        .join(SessionBudgetRow, SessionBudgetRow.waiting_turn_id == TurnRow.turn_id)
        .outerjoin(AgentRow, AgentRow.agent_id == TurnRow.agent_id)
        .where(TurnRow.status == TurnStatus.RUNNING.value, *_common(query))
        .order_by(TurnRow.started_at, TurnRow.turn_id)
        .limit(query.limit + 1)
    )


def _approvals(tx: Connection, turn_ids: list[str]) -> tuple[dict[str, list[ApprovalRequest]], dict[str, float]]:
    """The approval requests the turns wait for, from their `approval_requested` events, and for the turns whose
    approvals have a deadline, the shortest (seconds after the pause)."""
    pending = select(PendingCallRow.turn_id, PendingCallRow.call_id).where(
        PendingCallRow.turn_id.in_(turn_ids), _is_approval
    )
    keys = {(row.turn_id, f"approval:{row.call_id}") for row in tx.execute(pending)}
    if not keys:
        return {}, {}
    events = select(EventRow.turn_id, EventRow.key, EventRow.body).where(
        EventRow.turn_id.in_({turn_id for turn_id, _ in keys}), EventRow.key.in_({key for _, key in keys})
    )
    found: dict[str, list[ApprovalRequest]] = {}
    timeouts: dict[str, float] = {}
    for row in tx.execute(events.order_by(EventRow.event_id)):
        if (row.turn_id, row.key) in keys:
            request = ApprovalRequest.model_validate(row.body["runtime"])
            found.setdefault(row.turn_id, []).append(request)
            if (timeout := row.body["runtime"].get("timeout_seconds")) is not None:
                timeouts[row.turn_id] = min(float(timeout), timeouts.get(row.turn_id, float(timeout)))
    return found, timeouts


def _detached_links(tx: Connection, turn_ids: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each detached turn's latest response (Responses) or its session (Agents API)."""
    latest = (
        select(ResponseRow.turn_id, ResponseRow.response_id, ResponseRow.model)
        .where(ResponseRow.turn_id.in_(turn_ids))
        .order_by(ResponseRow.turn_id, ResponseRow.segment_index)
    )
    responses = {row.turn_id: row for row in tx.execute(latest)}  # the last segment of each turn stays
    sessions = select(
        BetaSessionTurnRow.turn_id, BetaSessionRow.session_id, BetaSessionRow.agent_id, BetaSessionRow.body
    ).join(BetaSessionRow, BetaSessionRow.session_id == BetaSessionTurnRow.session_id)
    beta = {row.turn_id: row for row in tx.execute(sessions.where(BetaSessionTurnRow.turn_id.in_(turn_ids)))}
    return responses, beta


def _last_steps_ended(tx: Connection, turn_ids: list[str]) -> dict[str, datetime]:
    """When each turn's last step ended: a paused turn's pause, or a held turn's hold, began right after it."""
    last = (
        select(StepRow.turn_id, func.max(StepRow.position).label("position"))
        .where(StepRow.turn_id.in_(turn_ids))
        .group_by(StepRow.turn_id)
        .subquery()
    )
    query = select(StepRow.turn_id, StepRow.body).join(
        last, (last.c.turn_id == StepRow.turn_id) & (last.c.position == StepRow.position)
    )
    ended: dict[str, datetime] = {}
    for row in tx.execute(query):
        completed_at = (row.body or {}).get("completed_at")
        if isinstance(completed_at, str):
            moment = datetime.fromisoformat(completed_at)
            ended[row.turn_id] = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return ended


def decisions_of(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The approval decisions a turn's steps record (each answered call's `metadata.decision`), in order."""
    found = []
    for step in steps:
        for response in step.get("tool_responses") or []:
            decision = (response.get("metadata") or {}).get("decision")
            if isinstance(decision, dict):
                found.append(decision | {"call_id": response.get("call_id"), "tool_name": response.get("tool_name")})
    return found


def _item(
    row: Any,
    held: bool,
    approvals: list[ApprovalRequest],
    timeout: float | None,
    response: Any,
    beta: Any,
    ended: datetime | None,
) -> InboxItem:
    calls = [] if held else [ToolCall.model_validate(call) for call in (row.output_message or {}).get("tool_calls", [])]
    approved_calls = {request.call.call_id for request in approvals}
    calls = [call for call in calls if call.call_id not in approved_calls]
    kind: InboxKind = "spend_limit" if held else ("tool_output" if calls else "approval")
    since = max(ended, _aware(row.started_at)) if ended is not None else _aware(row.started_at)
    expires = since + timedelta(seconds=timeout) if timeout is not None and kind == "approval" else None
    item = InboxItem(
        turn_id=row.turn_id,
        tenant_id=row.tenant,
        kind=kind,
        dialect="llama_stack",
        started_at=row.started_at,
        waiting_since=since,
        agent_id=row.agent_id,
        session_id=row.session_id,
        calls=calls,
        approvals=approvals,
        approvals_expire_at=expires,
    )
    if beta is not None:
        agent = beta.body.get("agent") or {}
        model = agent.get("model") if isinstance(agent, dict) else None
        return item.model_copy(
            update={"dialect": "agents", "session_id": beta.session_id, "agent_id": beta.agent_id, "model": model}
        )
    if response is not None:
        return item.model_copy(
            update={"dialect": "responses", "response_id": response.response_id, "model": response.model}
        )
    return item


class InboxStore:
    def __init__(self, database: Database) -> None:
        self.database = database

    async def waiting(self, query: InboxQuery) -> tuple[list[InboxItem], bool]:
        """A page of the tenant's waiting turns, oldest first, and whether more follow."""

        def read(tx: Connection) -> tuple[list[InboxItem], bool]:
            rows = [(row, False) for row in tx.execute(_awaiting(query))] if query.kind != "spend_limit" else []
            if query.kind in (None, "spend_limit"):
                rows += [(row, True) for row in tx.execute(_held(query))]
            rows.sort(key=lambda pair: (pair[0].started_at, pair[0].turn_id))
            page = rows[: query.limit]
            turn_ids = [row.turn_id for row, _ in page]
            approvals, timeouts = _approvals(tx, turn_ids)
            responses, beta = _detached_links(tx, turn_ids)
            ended = _last_steps_ended(tx, turn_ids)
            items = [
                _item(
                    row,
                    held,
                    approvals.get(row.turn_id, []),
                    timeouts.get(row.turn_id),
                    responses.get(row.turn_id),
                    beta.get(row.turn_id),
                    ended.get(row.turn_id),
                )
                for row, held in page
            ]
            return items, len(rows) > query.limit

        return await self.database.read(read)

    async def waiting_turn(self, tenant: str, turn_id: str) -> InboxItem | None:
        """What the tenant's turn waits for now; None when it waits for nothing (or is not the tenant's)."""
        items, _ = await self.waiting(InboxQuery(tenant=tenant, turn_id=turn_id, limit=1))
        return items[0] if items else None

    async def decisions(self, tenant: str, turn_id: str) -> list[dict[str, Any]] | None:
        """The approval decisions recorded in the tenant's turn, in order; None when it has no such turn."""

        def read(tx: Connection) -> list[dict[str, Any]] | None:
            owner = tx.execute(
                select(_tenant.label("tenant"))
                .select_from(TurnRow)
                .outerjoin(AgentRow, AgentRow.agent_id == TurnRow.agent_id)
                .where(TurnRow.turn_id == turn_id)
            ).first()
            if owner is None or owner.tenant != tenant:
                return None
            steps = tx.scalars(select(StepRow.body).where(StepRow.turn_id == turn_id).order_by(StepRow.position))
            # A timed-out approval's decision (by `system`) is made in the turn, which knows no tenant: the turn's.
            return [decision | {"tenant": decision.get("tenant") or tenant} for decision in decisions_of(list(steps))]

        return await self.database.read(read)


def _aware(moment: datetime) -> datetime:
    """SQLite gives back naive datetimes; every time the store keeps is UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def keyset_of(item: InboxItem) -> InboxCursor:
    return InboxCursor(started_at=item.started_at, turn_id=item.turn_id)
