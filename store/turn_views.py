"""What the console's turn pages read, across aggregates: one turn with its steps, its events (all but the
streamed deltas) and the dialect it belongs to; the tenant's llama-stack sessions and conversations, newest
first, each with its latest turn; and the status of a set of turns.

Like store/inbox.py, one read spans turns, responses and agent sessions because every dialect's turn is a
`turns` row. Tenancy is the API's: a turn is the tenant's when its own tenant (a detached turn) or its agent's
(a llama-stack turn) is; anything else reads as absent.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Connection, func, select, tuple_

from domain.turns import Turn, TurnStatus
from store.agent_sessions.tables import BetaSessionRow, BetaSessionTurnRow
from store.database import Database
from store.responses.tables import ConversationRow, ResponseRow
from store.turns.records import Page, StoredEvent
from store.turns.rows import load_turns
from store.turns.tables import AgentRow, EventRow, SessionRow, TurnRow

Dialect = Literal["llama_stack", "responses", "agents"]

_tenant = func.coalesce(TurnRow.tenant_id, AgentRow.tenant_id)
DELTA_KEY = "%:delta:%"
"""Keys of streamed text and tool-call deltas (activities/inference.py): many, and summed up by their step."""


@dataclass(frozen=True)
class TurnView:
    """A turn as its page shows it: the turn, its non-delta events in order, and where it belongs."""

    turn: Turn
    dialect: Dialect
    events: list[StoredEvent]
    last_event_id: int
    model: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    response_ids: list[str] = field(default_factory=list)
    conversation_id: str | None = None


@dataclass(frozen=True)
class SessionLine:
    """A llama-stack session, or a conversation, with its latest turn (None before its first)."""

    id: str
    name: str | None
    created_at: datetime
    latest_turn_id: str | None
    latest_status: TurnStatus | None
    agent_id: str | None = None


def _after(tx: Connection, time: Any, key: Any, after: str | None, where: list[Any]) -> list[Any]:
    """The keyset condition of the rows after the cursor row `after`, newest first (LookupError if it is not
    among the tenant's)."""
    if after is None:
        return []
    cursor = tx.execute(select(time, key).where(key == after, *where)).first()
    if cursor is None:
        raise LookupError(after)
    return [tuple_(time, key) < (cursor[0], cursor[1])]


def _statuses(tx: Connection, turn_ids: list[str]) -> dict[str, TurnStatus]:
    rows = tx.execute(select(TurnRow.turn_id, TurnRow.status).where(TurnRow.turn_id.in_(turn_ids)))
    return {row.turn_id: TurnStatus(row.status) for row in rows}


class TurnViews:
    def __init__(self, database: Database) -> None:
        self.database = database

    async def turn(self, tenant: str, turn_id: str) -> TurnView | None:
        """The tenant's turn with its steps and events; None when it has no such turn."""

        def read(tx: Connection) -> TurnView | None:
            owned = (
                select(TurnRow.turn_id, TurnRow.agent_id, TurnRow.session_id)
                .outerjoin(AgentRow, AgentRow.agent_id == TurnRow.agent_id)
                .where(TurnRow.turn_id == turn_id, _tenant == tenant)
            )
            row = tx.execute(owned).first()
            if row is None:
                return None
            turns = load_turns(tx, None, [turn_id])
            if not turns:
                return None
            events = tx.execute(
                select(EventRow.event_id, EventRow.body)
                .where(EventRow.turn_id == turn_id, EventRow.key.not_like(DELTA_KEY))
                .order_by(EventRow.event_id)
            ).all()
            last = tx.scalar(select(func.max(EventRow.event_id)).where(EventRow.turn_id == turn_id)) or 0
            view = TurnView(
                turn=turns[0],
                dialect="llama_stack",
                events=[StoredEvent(event.event_id, event.body) for event in events],
                last_event_id=int(last),
                agent_id=row.agent_id,
                session_id=row.session_id,
            )
            return _with_dialect(tx, view)

        return await self.database.read(read)

    async def llama_sessions(self, tenant: str, after: str | None, limit: int) -> Page[SessionLine]:
        """The tenant's llama-stack sessions, newest first; `after`: the last session id of the page before."""

        def read(tx: Connection) -> Page[SessionLine]:
            mine = [AgentRow.tenant_id == tenant]
            query = select(SessionRow.session_id, SessionRow.name, SessionRow.started_at, SessionRow.agent_id).join(
                AgentRow, AgentRow.agent_id == SessionRow.agent_id
            )
            keyset = _after(tx, SessionRow.started_at, SessionRow.session_id, after, mine)
            ordered = query.where(*mine, *keyset).order_by(SessionRow.started_at.desc(), SessionRow.session_id.desc())
            rows = tx.execute(ordered.limit(limit + 1)).all()
            shown = rows[:limit]
            ids = [row.session_id for row in shown]
            latest: dict[str, str] = {}
            for turn in tx.execute(
                select(TurnRow.session_id, TurnRow.turn_id)
                .where(TurnRow.session_id.in_(ids))
                .order_by(TurnRow.started_at, TurnRow.turn_id)
            ):
                latest[turn.session_id] = turn.turn_id
            statuses = _statuses(tx, list(latest.values()))
            lines = [
                SessionLine(
                    row.session_id,
                    row.name,
                    row.started_at,
                    latest.get(row.session_id),
                    statuses.get(latest.get(row.session_id, "")),
                    row.agent_id,
                )
                for row in shown
            ]
            return Page(lines, len(rows) > limit)

        return await self.database.read(read)

    async def conversations(self, tenant: str, after: str | None, limit: int) -> Page[SessionLine]:
        """The tenant's conversations, newest first, each with the turn of its latest response."""

        def read(tx: Connection) -> Page[SessionLine]:
            mine = [ConversationRow.tenant_id == tenant]
            keyset = _after(tx, ConversationRow.created_at, ConversationRow.conversation_id, after, mine)
            rows = tx.execute(
                select(ConversationRow.conversation_id, ConversationRow.created_at)
                .where(*mine, *keyset)
                .order_by(ConversationRow.created_at.desc(), ConversationRow.conversation_id.desc())
                .limit(limit + 1)
            ).all()
            shown = rows[:limit]
            latest: dict[str, str] = {}
            for response in tx.execute(
                select(ResponseRow.conversation_id, ResponseRow.turn_id)
                .where(ResponseRow.conversation_id.in_([row.conversation_id for row in shown]))
                .order_by(ResponseRow.created_at, ResponseRow.response_id)
            ):
                latest[response.conversation_id] = response.turn_id
            statuses = _statuses(tx, list(latest.values()))
            lines = [
                SessionLine(
                    row.conversation_id,
                    None,
                    row.created_at,
                    latest.get(row.conversation_id),
                    statuses.get(latest.get(row.conversation_id, "")),
                )
                for row in shown
            ]
            return Page(lines, len(rows) > limit)

        return await self.database.read(read)

    async def latest_session_turns(self, session_ids: list[str]) -> dict[str, str]:
        """The latest turn of each of these Agents API sessions that has one."""

        def read(tx: Connection) -> dict[str, str]:
            rows = tx.execute(
                select(BetaSessionTurnRow.session_id, BetaSessionTurnRow.turn_id)
                .where(BetaSessionTurnRow.session_id.in_(session_ids))
                .order_by(BetaSessionTurnRow.session_id, BetaSessionTurnRow.ordinal)
            )
            return {row.session_id: row.turn_id for row in rows}  # the last of each session stays

        return await self.database.read(read)

    async def statuses(self, turn_ids: list[str]) -> dict[str, TurnStatus]:
        """The status of each of these turns that exists (for pages whose records the API's queries read)."""
        return await self.database.read(lambda tx: _statuses(tx, turn_ids))


def _with_dialect(tx: Connection, view: TurnView) -> TurnView:
    """The view with its dialect's links: its responses (Responses), its session (Agents API), or its agent's
    model (llama-stack)."""
    turn_id = view.turn.turn_id
    responses = tx.execute(
        select(ResponseRow.response_id, ResponseRow.model, ResponseRow.conversation_id)
        .where(ResponseRow.turn_id == turn_id)
        .order_by(ResponseRow.segment_index)
    ).all()
    if responses:
        return replace(
            view,
            dialect="responses",
            model=responses[-1].model,
            response_ids=[row.response_id for row in responses],
            conversation_id=responses[-1].conversation_id,
        )
    beta = tx.execute(
        select(BetaSessionRow.session_id, BetaSessionRow.agent_id, BetaSessionRow.body)
        .join(BetaSessionTurnRow, BetaSessionTurnRow.session_id == BetaSessionRow.session_id)
        .where(BetaSessionTurnRow.turn_id == turn_id)
    ).first()
    if beta is not None:
        agent = (beta.body or {}).get("agent")
        model = agent.get("model") if isinstance(agent, dict) else None
        return replace(view, dialect="agents", model=model, session_id=beta.session_id, agent_id=beta.agent_id)
    if view.agent_id is not None:
        config = tx.scalar(select(AgentRow.config).where(AgentRow.agent_id == view.agent_id)) or {}
        return replace(view, model=config.get("model"))
    return view
