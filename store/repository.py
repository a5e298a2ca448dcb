"""Every read and write of the store, as typed operations on domain objects."""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any, Generic, TypeVar

from pydantic import TypeAdapter
from sqlalchemy import Connection, Row, Text, bindparam, cast, delete, func, insert, literal, select, union_all, update

from domain.agents import Agent, AgentConfig, AgentToolGroup, ToolConfig
from domain.content import URL, CompletionMessage, InputMessage
from domain.events import ErrorChunk, KeyedEvent, StreamError
from domain.runtime import ContextMessage, TurnSettings
from domain.tools import ToolGroup
from domain.turns import Session, Step, Turn, TurnStatus
from store.conversations import ConversationStore
from store.database import Database
from store.pg_wake import notify_events_written
from store.tables import (
    AgentRow,
    EventRow,
    PendingCallRow,
    SessionRow,
    StepRow,
    ToolGroupRow,
    TurnCredentialsRow,
    TurnRow,
    TurnSettingsRow,
)
from store.webhooks import record_turn_status

_steps = TypeAdapter(Step)
FINAL_STATUSES = [status.value for status in TurnStatus if status.is_final]
_HISTORY_BATCH = 32
_HISTORY_CACHE_TURNS = 10_000
"""Earlier turns sized per query when a model call's history window is assembled."""
_CURSORS_PER_QUERY = 100
"""Windows per UNION ALL statement; SQLite allows at most 500 terms in one compound select."""
_inputs = TypeAdapter(list[InputMessage])
_toolgroups = TypeAdapter(list[AgentToolGroup])
_context = TypeAdapter(list[ContextMessage])


class TurnConflict(Exception):
    """The session already has a turn that is running or awaiting input."""

    def __init__(self, session_id: str, turn_id: str, status: str) -> None:
        super().__init__(
            f"Session {session_id} already has turn {turn_id} ({status}); "
            "resume it (if awaiting input) or wait for it to finish before starting a new turn."
        )
        self.turn_id = turn_id
        self.status = status


class LimitReached(Exception):
    """A configured cap (sessions per agent, turns per session, toolgroups per tenant) is reached."""


@dataclass(frozen=True)
class TurnTools:
    """A turn's own toolgroups and tool configuration; None where the turn uses the agent's."""

    toolgroups: list[AgentToolGroup] | None = None
    tool_config: ToolConfig | None = None


@dataclass(frozen=True)
class UnstartedTurn:
    """A turn recorded as running that may never have had a workflow (see `Store.unstarted_turns`)."""

    agent_id: str | None
    """None for a detached turn, which the sweep cannot start (its plan is not stored): it fails it."""
    tenant: str
    turn: Turn
    tools: TurnTools


@dataclass(frozen=True)
class StoredEvent:
    event_id: int
    body: dict[str, Any]


@dataclass(frozen=True)
class EventsWritten:
    """One commit's new events of a turn, with the turn's last event id before them: a reader that has
    seen exactly up to `after` can take `events` as they are, without reading them back."""

    turn_id: str
    after: int
    events: list[StoredEvent]


T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    has_more: bool


def _page(tx: Connection, query: Any, start_index: int, limit: int) -> Page[Row[Any]]:
    """One page of `query`'s rows: one more row than asked for is read to learn whether more follow."""
    rows = tx.execute(query.offset(start_index).limit(limit + 1)).all()
    return Page(list(rows[:limit]), len(rows) > limit)


class Store:
    """The store's operations. Each runs as one transaction of plain SQLAlchemy Core statements on a
    connection that `Database` provides (see store/database.py for why they are synchronous)."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self.conversations = ConversationStore(database)
        self._event_listeners: list[Callable[[EventsWritten], None]] = []
        self._history = _HistoryCache()

    def on_events_written(self, listener: Callable[[EventsWritten], None]) -> None:
        """Call `listener` with the events of each commit that added some through this Store object:
        readers in the same process have them at once instead of at their next poll."""
        self._event_listeners.append(listener)

    async def ping(self) -> None:
        await self.database.read(lambda tx: tx.execute(select(1)))

    # Agents

    async def create_agent(self, tenant: str, agent: Agent) -> None:
        row = {"agent_id": agent.agent_id, "tenant_id": tenant, "config": agent.agent_config.model_dump(mode="json")}
        await self.database.write(lambda tx: tx.execute(insert(AgentRow).values(**row, created_at=agent.created_at)))

    async def get_agent(self, tenant: str, agent_id: str) -> Agent | None:
        """The tenant's agent; None for an unknown id and for another tenant's agent alike."""
        query = select(_AGENTS).where(AgentRow.agent_id == agent_id, AgentRow.tenant_id == tenant)
        row = await self.database.read(lambda tx: tx.execute(query).first())
        return _agent(row) if row else None

    async def list_agents(self, tenant: str, start_index: int, limit: int) -> Page[Agent]:
        query = select(_AGENTS).where(AgentRow.tenant_id == tenant).order_by(AgentRow.created_at, AgentRow.agent_id)
        page = await self.database.read(lambda tx: _page(tx, query, start_index, limit))
        return Page([_agent(row) for row in page.items], page.has_more)

    async def turn_tenant(self, turn_id: str) -> str | None:
        """The tenant that owns the turn (its own for a detached turn, else its agent's); None if it is gone."""
        query = (
            select(func.coalesce(TurnRow.tenant_id, AgentRow.tenant_id))
            .select_from(TurnRow)
            .outerjoin(AgentRow, TurnRow.agent_id == AgentRow.agent_id)
        )
        return await self.database.read(lambda tx: tx.scalar(query.where(TurnRow.turn_id == turn_id)))

    async def delete_agent(self, tenant: str, agent_id: str) -> list[str] | None:
        """Delete the agent with its sessions and their turns; None if there is no such agent.

        Returns the turns that were running or awaiting input: their workflows must be stopped.
        """

        def run(tx: Connection) -> list[str] | None:
            # No-op writes first: they take the agent's and its sessions' row locks (PostgreSQL) or the
            # write lock (SQLite), so no turn can begin in these sessions until they are gone.
            found = tx.execute(
                update(AgentRow)
                .where(AgentRow.agent_id == agent_id, AgentRow.tenant_id == tenant)
                .values(created_at=AgentRow.created_at)
            )
            if found.rowcount == 0:
                return None
            tx.execute(update(SessionRow).where(SessionRow.agent_id == agent_id).values(name=SessionRow.name))
            unfinished = _unfinished_turn_ids(tx, SessionRow.agent_id == agent_id)
            sessions = select(SessionRow.session_id).where(SessionRow.agent_id == agent_id)
            delete_turns(tx, TurnRow.session_id.in_(sessions))
            tx.execute(delete(SessionRow).where(SessionRow.agent_id == agent_id))
            tx.execute(delete(AgentRow).where(AgentRow.agent_id == agent_id))
            return unfinished

        return await self.database.write(run)

    async def unfinished_turn_ids(self, agent_id: str, session_id: str | None = None) -> list[str]:
        """The turns of an agent (or of one of its sessions) that are running or awaiting input."""
        owned = SessionRow.agent_id == agent_id
        if session_id is not None:
            owned &= SessionRow.session_id == session_id
        return await self.database.read(lambda tx: _unfinished_turn_ids(tx, owned))

    # Toolgroups

    async def register_toolgroup(self, tenant: str, group: ToolGroup, most: int) -> bool:
        """Add a toolgroup of the tenant's; false if it has one with this id. Raises LimitReached when
        the tenant already has `most`."""

        def run(tx: Connection) -> bool:
            owned = ToolGroupRow.tenant_id == tenant
            exists = select(ToolGroupRow.toolgroup_id).where(owned, ToolGroupRow.toolgroup_id == group.identifier)
            if tx.scalar(exists) is not None:
                return False
            if (tx.scalar(select(func.count()).select_from(ToolGroupRow).where(owned)) or 0) >= most:
                raise LimitReached(
                    f"This tenant has {most} toolgroups, the most allowed (DA_MAX_TOOLGROUPS_PER_TENANT); "
                    "unregister one first"
                )
            tx.execute(
                insert(ToolGroupRow).values(
                    tenant_id=tenant,
                    toolgroup_id=group.identifier,
                    provider_id=group.provider_id,
                    mcp_uri=group.mcp_endpoint.uri if group.mcp_endpoint else None,
                    args=group.args,
                    created_at=datetime.now(UTC),
                )
            )
            return True

        return await self.database.write(run)

    async def toolgroups(self, tenant: str) -> list[ToolGroup]:
        query = (
            select(_TOOLGROUPS)
            .where(ToolGroupRow.tenant_id == tenant)
            .order_by(ToolGroupRow.created_at, ToolGroupRow.toolgroup_id)
        )
        rows = await self.database.read(lambda tx: tx.execute(query).all())
        return [_toolgroup(row) for row in rows]

    async def toolgroup(self, tenant: str, toolgroup_id: str) -> ToolGroup | None:
        query = select(_TOOLGROUPS).where(ToolGroupRow.tenant_id == tenant, ToolGroupRow.toolgroup_id == toolgroup_id)
        row = await self.database.read(lambda tx: tx.execute(query).first())
        return _toolgroup(row) if row else None

    async def unregister_toolgroup(self, tenant: str, toolgroup_id: str) -> bool:
        which = (ToolGroupRow.tenant_id == tenant) & (ToolGroupRow.toolgroup_id == toolgroup_id)
        result = await self.database.write(lambda tx: tx.execute(delete(ToolGroupRow).where(which)))
        return result.rowcount > 0

    # Sessions

    async def create_session(
        self, agent_id: str, session_id: str, name: str, started_at: datetime, most: int | None = None
    ) -> None:
        """Add a session to the agent, or raise LimitReached when it already has `most`."""
        row = {"session_id": session_id, "agent_id": agent_id, "name": name, "started_at": started_at}

        def run(tx: Connection) -> None:
            # Locks the agent's row first (a no-op write): concurrent creations count one after another.
            tx.execute(update(AgentRow).where(AgentRow.agent_id == agent_id).values(created_at=AgentRow.created_at))
            existing = select(func.count()).select_from(SessionRow).where(SessionRow.agent_id == agent_id)
            if most is not None and (tx.scalar(existing) or 0) >= most:
                raise LimitReached(
                    f"Agent {agent_id} has {most} sessions, the most allowed (DA_MAX_SESSIONS_PER_AGENT); "
                    "delete sessions it no longer needs"
                )
            tx.execute(insert(SessionRow).values(**row))

        await self.database.write(run)

    async def get_session(
        self, agent_id: str, session_id: str, turn_ids: Sequence[str] | None = None
    ) -> Session | None:
        def run(tx: Connection) -> Session | None:
            row = tx.execute(select(_SESSIONS).where(SessionRow.session_id == session_id)).first()
            if row is None or row.agent_id != agent_id:
                return None
            turns = _load_turns(tx, session_id, turn_ids=turn_ids)
            return Session(session_id=row.session_id, session_name=row.name, turns=turns, started_at=row.started_at)

        return await self.database.read(run)

    async def latest_turn(self, session_id: str) -> Turn | None:
        """The session's most recently started turn."""

        def run(tx: Connection) -> Turn | None:
            latest = select(TurnRow.turn_id).where(TurnRow.session_id == session_id)
            turn_id = tx.scalar(latest.order_by(TurnRow.started_at.desc()).limit(1))
            return _load_turns(tx, session_id, turn_ids=[turn_id])[0] if turn_id else None

        return await self.database.read(run)

    async def session_exists(self, agent_id: str, session_id: str) -> bool:
        owner = await self.database.read(
            lambda tx: tx.scalar(select(SessionRow.agent_id).where(SessionRow.session_id == session_id))
        )
        return owner == agent_id

    async def list_sessions(self, agent_id: str, start_index: int, limit: int) -> Page[Session]:
        query = (
            select(_SESSIONS)
            .where(SessionRow.agent_id == agent_id)
            .order_by(SessionRow.started_at, SessionRow.session_id)
        )
        page = await self.database.read(lambda tx: _page(tx, query, start_index, limit))
        sessions = [Session(session_id=r.session_id, session_name=r.name, started_at=r.started_at) for r in page.items]
        return Page(sessions, page.has_more)

    async def delete_session(self, agent_id: str, session_id: str) -> list[str] | None:
        """Delete the session and its turns; None if the agent has no such session.

        Returns the turns that were running or awaiting input: their workflows must be stopped.
        """
        owned = (SessionRow.session_id == session_id) & (SessionRow.agent_id == agent_id)

        def run(tx: Connection) -> list[str] | None:
            # A no-op write first takes the session's row lock (PostgreSQL) or the write lock (SQLite),
            # so no turn can begin in it until it is gone.
            found = tx.execute(update(SessionRow).where(owned).values(name=SessionRow.name))
            if found.rowcount == 0:
                return None
            unfinished = _unfinished_turn_ids(tx, owned)
            delete_turns(tx, TurnRow.session_id == session_id)
            tx.execute(delete(SessionRow).where(owned))
            return unfinished

        return await self.database.write(run)

    # Turns

    async def begin_turn(
        self,
        agent_id: str,
        session_id: str,
        turn_id: str,
        input_messages: list[Any],
        started_at: datetime,
        tools: TurnTools = TurnTools(),
        most: int | None = None,
    ) -> None:
        """Record a new running turn and make it the session's active turn, or raise TurnConflict;
        LookupError when the agent has no such session; LimitReached when it already has `most` turns."""
        row = {
            "turn_id": turn_id,
            "session_id": session_id,
            "agent_id": agent_id,
            "status": TurnStatus.RUNNING.value,
            "input_messages": _inputs.dump_python(input_messages, mode="json"),
            "started_at": started_at,
            "toolgroups": _toolgroups.dump_python(tools.toolgroups, mode="json")
            if tools.toolgroups is not None
            else None,
            "tool_config": tools.tool_config.model_dump(mode="json") if tools.tool_config else None,
        }

        def run(tx: Connection) -> None:
            _claim_session(tx, session_id, turn_id, agent_id)
            existing = select(func.count()).select_from(TurnRow).where(TurnRow.session_id == session_id)
            if most is not None and (tx.scalar(existing) or 0) >= most:
                raise LimitReached(
                    f"Session {session_id} has {most} turns, the most allowed (DA_MAX_TURNS_PER_SESSION); "
                    "continue in a new session"
                )
            tx.execute(insert(TurnRow).values(**row))

        await self.database.write(run)

    async def begin_detached_turn(
        self,
        tenant: str,
        turn_id: str,
        input_messages: Sequence[InputMessage],
        context_messages: Sequence[ContextMessage],
        settings_id: str,
        settings: TurnSettings,
        started_at: datetime,
    ) -> None:
        """Record a new running turn of no agent or session (a Responses turn) with its first settings."""
        row = {
            "turn_id": turn_id,
            "tenant_id": tenant,
            "status": TurnStatus.RUNNING.value,
            "input_messages": _inputs.dump_python(list(input_messages), mode="json"),
            "context_messages": _context.dump_python(list(context_messages), mode="json"),
            "started_at": started_at,
        }
        body = settings.model_dump(mode="json")

        def run(tx: Connection) -> None:
            tx.execute(insert(TurnRow).values(**row))
            tx.execute(insert(TurnSettingsRow).values(settings_id=settings_id, turn_id=turn_id, body=body))

        await self.database.write(run)

    async def add_turn_settings(self, turn_id: str, settings_id: str, settings: TurnSettings) -> None:
        """Store a segment's settings before the turn is resumed with them; writing the same id again
        (a retried request) keeps the first."""
        body = settings.model_dump(mode="json")

        def run(tx: Connection) -> None:
            if tx.scalar(select(TurnSettingsRow.turn_id).where(TurnSettingsRow.settings_id == settings_id)) is None:
                tx.execute(insert(TurnSettingsRow).values(settings_id=settings_id, turn_id=turn_id, body=body))

        await self.database.write(run)

    async def turn_settings(self, settings_id: str) -> TurnSettings | None:
        query = select(TurnSettingsRow.body).where(TurnSettingsRow.settings_id == settings_id)
        body = await self.database.read(lambda tx: tx.scalar(query))
        return TurnSettings.model_validate(body) if body is not None else None

    async def pending_calls(self, tenant: str, call_ids: Sequence[str]) -> dict[str, str]:
        """Which of these client call ids (or approval request ids) a paused detached turn of the tenant
        waits for: call id → turn id."""
        if not call_ids:
            return {}
        query = select(PendingCallRow.call_id, PendingCallRow.turn_id).where(
            PendingCallRow.tenant_id == tenant, PendingCallRow.call_id.in_(list(call_ids))
        )
        rows = await self.database.read(lambda tx: tx.execute(query).all())
        return {call_id: turn_id for call_id, turn_id in rows}

    async def delete_detached_turn(self, tenant: str, turn_id: str) -> TurnStatus | None:
        """Delete a detached turn of the tenant with its steps, events, settings, pending calls and
        credentials; its status before, None if there was no such turn. A running or paused one's
        workflow must be stopped (TurnGateway.terminate)."""
        which = (TurnRow.turn_id == turn_id) & (TurnRow.tenant_id == tenant) & TurnRow.session_id.is_(None)

        def run(tx: Connection) -> TurnStatus | None:
            status = tx.scalar(select(TurnRow.status).where(which))
            if status is None:
                return None
            delete_turns(tx, which)
            return TurnStatus(status)

        return await self.database.write(run)

    async def detached_context(self, turn_id: str) -> tuple[Turn, list[ContextMessage]] | None:
        """A detached turn as one model call sees it: the turn so far and its prior context."""

        def run(tx: Connection) -> tuple[Turn, list[ContextMessage]] | None:
            context = tx.execute(select(TurnRow.context_messages).where(TurnRow.turn_id == turn_id)).first()
            if context is None:
                return None
            turn = _load_turns(tx, None, turn_ids=[turn_id])[0]
            return turn, _context.validate_python(context.context_messages or [])

        return await self.database.read(run)

    async def set_input_messages(self, turn_id: str, input_messages: list[InputMessage]) -> None:
        stored = _inputs.dump_python(input_messages, mode="json")
        await self.database.write(
            lambda tx: tx.execute(update(TurnRow).where(TurnRow.turn_id == turn_id).values(input_messages=stored))
        )

    async def reopen_turn(self, session_id: str, turn_id: str) -> TurnTools | None:
        """Make a completed turn the session's running turn again, returning the tools it was started
        with; None if it is not completed.

        Raises TurnConflict when another turn of the session is running or awaiting input.
        """

        def run(tx: Connection) -> TurnTools:
            _claim_session(tx, session_id, turn_id)
            reopened = tx.execute(
                update(TurnRow)
                .where(TurnRow.turn_id == turn_id, TurnRow.status == TurnStatus.COMPLETED.value)
                .values(status=TurnStatus.RUNNING.value, output_message=None, completed_at=None)
                .returning(TurnRow.toolgroups, TurnRow.tool_config)
            ).first()
            if reopened is None:
                raise _NotCompleted  # rolls back the claim
            return _turn_tools(reopened)

        try:
            return await self.database.write(run)
        except _NotCompleted:
            return None

    async def last_event_id(self, turn_id: str) -> int:
        query = select(func.max(EventRow.event_id)).where(EventRow.turn_id == turn_id)
        return await self.database.read(lambda tx: tx.scalar(query)) or 0

    async def get_turn(self, session_id: str | None, turn_id: str) -> Turn | None:
        """The turn; `session_id` None for a detached turn (or any turn, by id alone)."""
        turns = await self.database.read(lambda tx: _load_turns(tx, session_id, turn_ids=[turn_id]))
        return turns[0] if turns else None

    async def turn_status(self, turn_id: str) -> TurnStatus | None:
        status = await self.database.read(
            lambda tx: tx.scalar(select(TurnRow.status).where(TurnRow.turn_id == turn_id))
        )
        return TurnStatus(status) if status else None

    async def unstarted_turns(self, started_before: datetime, limit: int) -> list[UnstartedTurn]:
        """Running turns older than `started_before` with no step stored yet, oldest first.

        A crash between recording a turn and starting its workflow leaves such a row; every turn
        whose workflow ran has at least one step once its first model call is done, so the set is
        small: turns that were never started, and turns still in their first model call.
        """
        no_steps = ~select(StepRow.turn_id).where(StepRow.turn_id == TurnRow.turn_id).exists()
        tenant = func.coalesce(TurnRow.tenant_id, AgentRow.tenant_id).label("owner")
        query = (
            select(_TURNS, tenant)
            .outerjoin(AgentRow, AgentRow.agent_id == TurnRow.agent_id)
            .where(TurnRow.status == TurnStatus.RUNNING.value, TurnRow.started_at < started_before, no_steps)
            .order_by(TurnRow.started_at)
            .limit(limit)
        )
        rows = await self.database.read(lambda tx: tx.execute(query).all())
        return [UnstartedTurn(row.agent_id, row.owner, _turn(row, []), _turn_tools(row)) for row in rows]

    async def count_turns(self, status: TurnStatus) -> int:
        query = select(func.count()).select_from(TurnRow).where(TurnRow.status == status.value)
        return await self.database.read(lambda tx: tx.scalar(query)) or 0

    async def conversation_window(
        self, session_id: str, turn_id: str, max_history_bytes: int
    ) -> tuple[Turn, list[Turn], AgentConfig | None] | None:
        """What one model call in the turn sees, in one transaction: the turn; the session's completed
        turns that started before it, newest first back to `max_history_bytes` of stored JSON, then
        put oldest first; and the turn's agent config. None if the turn is gone.

        Earlier turns are read in batches from the newest, and only their sizes until they are
        kept, so a model call costs the same in a session of ten turns or ten thousand.
        """

        def run(tx: Connection) -> tuple[Turn, list[Turn], AgentConfig | None] | None:
            row = tx.execute(_TURN_START_AND_AGENT, {"turn_id": turn_id, "session_id": session_id}).first()
            if row is None:
                return None
            config = row.config
            kept: list[Row[Any]] = []
            budget = max_history_bytes
            offset, full = 0, False
            while not full:
                window = {"session_id": session_id, "before": row.started_at, "offset": offset}
                batch = tx.execute(_EARLIER_TURN_SIZES, window).all()
                offset += len(batch)
                full = len(batch) < _HISTORY_BATCH
                for turn in batch:
                    size = turn.size or 0
                    if size > budget:
                        full = True
                        break
                    budget -= size
                    kept.append(turn)
            # One read for this turn and the kept turns this process has not decoded before.
            cached = {turn.turn_id: self._history.get(turn.turn_id, turn.size) for turn in kept}
            missing = [turn_id for turn_id, found in cached.items() if found is None]
            loaded = {turn.turn_id: turn for turn in _load_turns(tx, session_id, turn_ids=[*missing, turn_id])}
            current = loaded.pop(turn_id, None)
            if current is None:
                return None
            sizes = {turn.turn_id: turn.size for turn in kept}
            for loaded_id, turn in loaded.items():
                self._history.put(loaded_id, sizes[loaded_id], turn)
            history = [cached[turn.turn_id] or loaded[turn.turn_id] for turn in reversed(kept)]
            return current, history, AgentConfig.model_validate(config) if config is not None else None

        return await self.database.read(run)

    async def save_turn_progress(
        self,
        turn_id: str,
        events: Sequence[KeyedEvent] = (),
        new_steps: Sequence[tuple[int, Step]] = (),
        status: TurnStatus | None = None,
        output_message: CompletionMessage | None = None,
        completed_at: datetime | None = None,
        error: str | None = None,
        closing_event: Callable[[Turn], KeyedEvent] | None = None,
        awaiting: Sequence[str] = (),
    ) -> Turn | None:
        """Append steps and events and move the turn's status and output, atomically and idempotently.

        `closing_event` builds one more event from the turn as just saved (a pause or the end, which
        carry the whole turn). A final status also frees the session for its next turn. `awaiting`:
        with the awaiting_input status, the call and approval ids a detached turn now waits for
        (Store.pending_calls); any other status clears them.

        A turn that has ended keeps its end: a write with a status then writes nothing and returns
        the turn as stored (an answer written by its inference just before a cancel stands). None
        when the write was made.
        """
        values: dict[str, Any] = {"status": status.value if status is not None else TurnRow.status}
        if status is not None:
            # A status comes with the output it has: a paused turn's tool calls, a final answer, or none.
            values["output_message"] = output_message.model_dump(mode="json") if output_message else None
        if completed_at is not None:
            values["completed_at"] = completed_at
        if error is not None:
            values["error"] = error
        step_rows = [
            {
                "turn_id": turn_id,
                "position": position,
                "step_id": step.step_id,
                "body": _steps.dump_python(step, mode="json"),
            }
            for position, step in new_steps
        ]

        if len(values) == 1 and status is None:  # events and steps alone: the row is touched for its lock only
            lock, lock_params = _TURN_LOCK, {"locked_turn": turn_id}
        else:
            which = [TurnRow.turn_id == turn_id]
            if status is not None:
                which.append(TurnRow.status.not_in(FINAL_STATUSES))
            lock, lock_params = update(TurnRow).where(*which).values(**values).returning(TurnRow.tenant_id), {}

        def run(tx: Connection) -> tuple[Turn | None, EventsWritten | None]:
            # Updating the turn row first takes its row lock (PostgreSQL) or the write lock (SQLite):
            # concurrent writers of one turn are serialised, so event ids follow commit order.
            locked = tx.execute(lock, lock_params).first()
            if locked is None:
                ended = _load_turns(tx, None, turn_ids=[turn_id])
                if not ended:
                    raise LookupError(f"Turn {turn_id} not found in the store (was its session deleted?)")
                return ended[0], None
            if status is not None and locked.tenant_id is not None:
                _set_pending_calls(
                    tx, turn_id, locked.tenant_id, awaiting if status == TurnStatus.AWAITING_INPUT else ()
                )
            if step_rows:
                positions = [row["position"] for row in step_rows]
                tx.execute(delete(StepRow).where(StepRow.turn_id == turn_id, StepRow.position.in_(positions)))
                tx.execute(insert(StepRow), step_rows)
            to_add = list(events)
            if closing_event is not None:
                to_add.append(closing_event(_load_turns(tx, None, turn_ids=[turn_id])[0]))
            written = None
            if to_add:
                keys = [e.key for e in to_add]
                seen = set(tx.scalars(_KEYS_WRITTEN, {"turn_id": turn_id, "keys": keys}))
                rows = []
                for keyed in to_add:
                    if keyed.key not in seen:
                        seen.add(keyed.key)
                        rows.append({"turn_id": turn_id, "key": keyed.key, "body": keyed.body})
                if rows:
                    # The turn's lock is held: no other writer's event of this turn falls between `after` and
                    # these. One statement, ids returned in list order: they keep the events' order.
                    after = tx.scalar(_LAST_EVENT_ID, {"turn_id": turn_id}) or 0
                    ids = tx.scalars(_INSERT_EVENTS, rows).all()
                    stored = [StoredEvent(event_id, row["body"]) for event_id, row in zip(ids, rows, strict=True)]
                    written = EventsWritten(turn_id, after, stored)
                    notify_events_written(tx)
            if status is not None:  # the webhook events an end or a pause means, in this same transaction
                record_turn_status(tx, turn_id, status, to_add[-1].key if to_add else status.value)
            if status is not None and status.is_final:
                tx.execute(update(SessionRow).where(SessionRow.active_turn_id == turn_id).values(active_turn_id=None))
                tx.execute(delete(TurnCredentialsRow).where(TurnCredentialsRow.turn_id == turn_id))
            return None, written

        ended, written = await self.database.write(run)
        if written is not None:
            for listener in self._event_listeners:
                listener(written)
        return ended

    async def keep_turn_credentials(self, turn_id: str, ciphertext: str) -> bool:
        """Hold a turn's encrypted MCP headers, replacing earlier ones, while it runs or is paused;
        False (nothing kept) when the turn has ended, which would have deleted them."""

        def run(tx: Connection) -> bool:
            live = [TurnStatus.RUNNING.value, TurnStatus.AWAITING_INPUT.value]
            # Taking the turn's row lock first: a concurrent final status write cannot slip in between.
            locked = tx.execute(
                update(TurnRow)
                .where(TurnRow.turn_id == turn_id, TurnRow.status.in_(live))
                .values(status=TurnRow.status)
            )
            if locked.rowcount == 0:
                return False
            tx.execute(delete(TurnCredentialsRow).where(TurnCredentialsRow.turn_id == turn_id))
            tx.execute(insert(TurnCredentialsRow).values(turn_id=turn_id, ciphertext=ciphertext))
            return True

        return await self.database.write(run)

    async def turn_credentials(self, turn_id: str) -> str | None:
        return await self.database.read(
            lambda tx: tx.scalar(select(TurnCredentialsRow.ciphertext).where(TurnCredentialsRow.turn_id == turn_id))
        )

    async def abandon_turn(self, turn_id: str, reason: str) -> None:
        """Fail a turn whose workflow will never finish it, freeing its session."""
        error = ErrorChunk(error=StreamError(message=f"Turn {turn_id} failed. {reason}"))
        await self.save_turn_progress(
            turn_id,
            events=[KeyedEvent(key="turn:error", body=error.model_dump(mode="json"))],
            status=TurnStatus.FAILED,
            completed_at=datetime.now(UTC),
            error=reason,
        )

    async def events_after(
        self, cursors: Sequence[tuple[str, int]], limit: int = 500
    ) -> dict[tuple[str, int], list[StoredEvent]]:
        """For each (turn, cursor): up to `limit` of the turn's events after the cursor, in id order.

        Each cursor gets its own window on the (turn_id, event_id) index, so a turn with a long
        backlog, or a cursor that does not move, never holds back another's events.
        """
        cursors = list(dict.fromkeys(cursors))

        def run(tx: Connection) -> dict[tuple[str, int], list[StoredEvent]]:
            found: dict[tuple[str, int], list[StoredEvent]] = {cursor: [] for cursor in cursors}
            for start in range(0, len(cursors), _CURSORS_PER_QUERY):
                chunk = cursors[start : start + _CURSORS_PER_QUERY]
                params = {"limit": limit}
                for index, (turn_id, after) in enumerate(chunk):
                    params |= {f"turn{index}": turn_id, f"after{index}": after}
                for index, event_id, body in tx.execute(_event_windows(len(chunk)), params):
                    found[chunk[index]].append(StoredEvent(event_id, body))
            for events in found.values():
                events.sort(key=lambda event: event.event_id)
            return found

        return await self.database.read(run) if cursors else {}

    async def events_with_key_prefix(self, turn_id: str, prefix: str) -> list[StoredEvent]:
        query = (
            select(EventRow.event_id, EventRow.body)
            .where(EventRow.turn_id == turn_id, EventRow.key.startswith(prefix, autoescape=True))
            .order_by(EventRow.event_id)
        )
        rows = await self.database.read(lambda tx: tx.execute(query).all())
        return [StoredEvent(event_id, body) for event_id, body in rows]

    async def event_id(self, turn_id: str, key: str) -> int | None:
        query = select(EventRow.event_id).where(EventRow.turn_id == turn_id, EventRow.key == key)
        return await self.database.read(lambda tx: tx.scalar(query))


# Statements built once: building one (its clauses, its cache key) costs more than SQLite running it,
# and these run for every batch of a streamed reply's events.
_TURN_LOCK = (
    update(TurnRow)
    .where(TurnRow.turn_id == bindparam("locked_turn"))
    .values(status=TurnRow.status)
    .returning(TurnRow.tenant_id)
)
_KEYS_WRITTEN = select(EventRow.key).where(
    EventRow.turn_id == bindparam("turn_id"), EventRow.key.in_(bindparam("keys", expanding=True))
)
_LAST_EVENT_ID = select(func.max(EventRow.event_id)).where(EventRow.turn_id == bindparam("turn_id"))
_INSERT_EVENTS = insert(EventRow).returning(EventRow.event_id, sort_by_parameter_order=True)

# A model call's history window, statements built once (bound parameters): each call runs them.
_TURN_START_AND_AGENT = (
    select(TurnRow.started_at, AgentRow.config)
    .outerjoin(AgentRow, AgentRow.agent_id == TurnRow.agent_id)
    .where(TurnRow.turn_id == bindparam("turn_id"), TurnRow.session_id == bindparam("session_id"))
)
_STEPS_SIZE = (
    select(func.coalesce(func.sum(func.length(cast(StepRow.body, Text))), 0))
    .where(StepRow.turn_id == TurnRow.turn_id)
    .scalar_subquery()
)
_EARLIER_TURN_SIZES = (
    select(TurnRow.turn_id, (func.length(cast(TurnRow.input_messages, Text)) + _STEPS_SIZE).label("size"))
    .where(
        TurnRow.session_id == bindparam("session_id"),
        TurnRow.status == TurnStatus.COMPLETED.value,
        TurnRow.started_at < bindparam("before"),
    )
    .order_by(TurnRow.started_at.desc(), TurnRow.turn_id.desc())
    .limit(_HISTORY_BATCH)
    .offset(bindparam("offset"))
)


@cache
def _event_windows(count: int) -> Any:
    """One statement for `count` cursors' windows, built once per count: polls run it hundreds of
    times a second, and building it anew cost more than running it."""
    windows = []
    for index in range(count):
        window = (
            select(literal(index).label("cursor"), EventRow.event_id, EventRow.body)
            .where(EventRow.turn_id == bindparam(f"turn{index}"), EventRow.event_id > bindparam(f"after{index}"))
            .order_by(EventRow.event_id)
            .limit(bindparam("limit"))
        )
        windows.append(window if count == 1 else select(window.subquery()))
    return windows[0] if count == 1 else union_all(*windows)


def _unfinished_turn_ids(tx: Connection, sessions_where: Any) -> list[str]:
    # A session's active turn, and any turn whose status is not final (the two agree unless a write was lost).
    in_sessions = select(SessionRow.session_id).where(sessions_where)
    active = select(SessionRow.active_turn_id).where(sessions_where, SessionRow.active_turn_id.is_not(None))
    unfinished = select(TurnRow.turn_id).where(
        TurnRow.session_id.in_(in_sessions),
        TurnRow.status.in_([TurnStatus.RUNNING.value, TurnStatus.AWAITING_INPUT.value]),
    )
    return sorted(set(tx.scalars(active)) | set(tx.scalars(unfinished)))


def _set_pending_calls(tx: Connection, turn_id: str, tenant: str, call_ids: Sequence[str]) -> None:
    tx.execute(delete(PendingCallRow).where(PendingCallRow.turn_id == turn_id))
    rows = [{"turn_id": turn_id, "call_id": call_id, "tenant_id": tenant} for call_id in dict.fromkeys(call_ids)]
    if rows:
        tx.execute(insert(PendingCallRow), rows)


def delete_turns(tx: Connection, which: Any) -> None:
    """Delete the turns `which` selects with their events and steps (the rest of a turn's rows cascade)."""
    turns = select(TurnRow.turn_id).where(which)
    tx.execute(delete(EventRow).where(EventRow.turn_id.in_(turns)))
    tx.execute(delete(StepRow).where(StepRow.turn_id.in_(turns)))
    tx.execute(delete(TurnRow).where(which))


def _claim_session(tx: Connection, session_id: str, turn_id: str, agent_id: str | None = None) -> None:
    """Make `turn_id` the session's active turn, or raise TurnConflict naming the one that is;
    LookupError when there is no such session (of `agent_id`, when given)."""
    of_session = [SessionRow.session_id == session_id]
    if agent_id is not None:
        of_session.append(SessionRow.agent_id == agent_id)
    claimed = tx.execute(
        update(SessionRow).where(*of_session, SessionRow.active_turn_id.is_(None)).values(active_turn_id=turn_id)
    )
    if claimed.rowcount == 0:
        blocking = tx.execute(
            select(TurnRow.turn_id, TurnRow.status)
            .join(SessionRow, SessionRow.active_turn_id == TurnRow.turn_id)
            .where(*of_session)
        ).first()
        if blocking is None:
            raise LookupError(f"Session {session_id} not found")
        raise TurnConflict(session_id, blocking.turn_id, blocking.status)


def _load_turns(
    tx: Connection, session_id: str | None, turn_ids: Sequence[str] | None = None, extra: tuple[Any, ...] = ()
) -> list[Turn]:
    query = select(_TURNS).where(*extra)
    if session_id is not None:
        query = query.where(TurnRow.session_id == session_id)
    if turn_ids:
        query = query.where(TurnRow.turn_id.in_(list(turn_ids)))
    rows = tx.execute(query.order_by(TurnRow.started_at, TurnRow.turn_id)).all()
    if not rows:
        return []
    step_rows = tx.execute(
        select(StepRow.turn_id, StepRow.body)
        .where(StepRow.turn_id.in_([r.turn_id for r in rows]))
        .order_by(StepRow.turn_id, StepRow.position)
    )
    steps: dict[str, list[Step]] = defaultdict(list)
    for step_turn_id, body in step_rows:
        steps[step_turn_id].append(_steps.validate_python(body))
    return [_turn(row, steps[row.turn_id]) for row in rows]


class _HistoryCache:
    """Completed turns a process has decoded for model calls, by id and stored size.

    A long session's every model call needs all of its earlier turns, and decoding them (rows,
    JSON, pydantic) grew to 30 ms of CPU per call at 300 turns. A completed turn changes only by
    growing (a reopened turn gains steps, and is not completed while it runs), so its id with its
    stored size names one content; a deleted turn is no longer listed, so it is not asked for.
    The reader threads share the cache, hence the lock; the oldest entries go first.
    """

    def __init__(self, most: int = _HISTORY_CACHE_TURNS) -> None:
        self._turns: OrderedDict[str, tuple[int, Turn]] = OrderedDict()
        self._most = most
        self._lock = threading.Lock()

    def get(self, turn_id: str, size: int | None) -> Turn | None:
        with self._lock:
            found = self._turns.get(turn_id)
            if found is None or found[0] != size:
                return None
            self._turns.move_to_end(turn_id)
            return found[1]

    def put(self, turn_id: str, size: int | None, turn: Turn) -> None:
        if size is None:
            return
        with self._lock:
            self._turns[turn_id] = (size, turn)
            self._turns.move_to_end(turn_id)
            while len(self._turns) > self._most:
                self._turns.popitem(last=False)


class _NotCompleted(Exception):
    pass


_AGENTS = AgentRow.__table__
_SESSIONS = SessionRow.__table__
_TURNS = TurnRow.__table__
_TOOLGROUPS = ToolGroupRow.__table__


def _toolgroup(row: Row[Any]) -> ToolGroup:
    endpoint = URL(uri=row.mcp_uri) if row.mcp_uri else None
    return ToolGroup(identifier=row.toolgroup_id, provider_id=row.provider_id, mcp_endpoint=endpoint, args=row.args)


def _agent(row: Row[Any]) -> Agent:
    return Agent(agent_id=row.agent_id, agent_config=AgentConfig.model_validate(row.config), created_at=row.created_at)


def _turn_tools(row: Row[Any]) -> TurnTools:
    return TurnTools(
        toolgroups=_toolgroups.validate_python(row.toolgroups) if row.toolgroups is not None else None,
        tool_config=ToolConfig.model_validate(row.tool_config) if row.tool_config else None,
    )


def _turn(row: Row[Any], steps: list[Step]) -> Turn:
    return Turn(
        turn_id=row.turn_id,
        session_id=row.session_id or "",  # a detached turn has no session
        input_messages=_inputs.validate_python(row.input_messages),
        steps=steps,
        output_message=CompletionMessage.model_validate(row.output_message) if row.output_message else None,
        started_at=row.started_at,
        completed_at=row.completed_at,
        status=TurnStatus(row.status),
        error=row.error,
    )
