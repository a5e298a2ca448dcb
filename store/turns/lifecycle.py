"""Turns: begin (claiming the session), settings, pending calls, reopen, status, credentials, abandon."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import TypeAdapter
from sqlalchemy import Connection, Row, delete, func, insert, select, update

from domain.agents import AgentToolGroup, ToolConfig
from domain.content import InputMessage
from domain.events import ErrorChunk, KeyedEvent, StreamError
from domain.turn_settings import ContextMessage, TurnSettings
from domain.turns import Turn, TurnStatus
from store.hand_over import HandOver
from store.turns.events import EventStore
from store.turns.records import BegunTurn, LimitReached, TurnConflict, TurnTools, UnstartedTurn
from store.turns.rows import INPUTS, TURNS, delete_turns, load_turns, turn_of_row
from store.turns.tables import (
    AgentRow,
    PendingCallRow,
    SessionRow,
    StepRow,
    TurnCredentialsRow,
    TurnRow,
    TurnSettingsRow,
)

_toolgroups = TypeAdapter(list[AgentToolGroup])

_context = TypeAdapter(list[ContextMessage])


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


def _turn_tools(row: Row[Any]) -> TurnTools:
    return TurnTools(
        toolgroups=_toolgroups.validate_python(row.toolgroups) if row.toolgroups is not None else None,
        tool_config=ToolConfig.model_validate(row.tool_config) if row.tool_config else None,
    )


class TurnLifecycle(EventStore):
    _settings_written: HandOver[str, tuple[str, dict[str, Any]]]
    """Settings bodies as written, until their first read here: a settings row never changes once written
    (add_turn_settings keeps the first), so a kept body is what a read would find (store/hand_over.py)."""

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
            "input_messages": INPUTS.dump_python(input_messages, mode="json"),
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
        also: Callable[[Connection], object] | None = None,
    ) -> None:
        """Record a new running turn of no agent or session (a Responses turn) with its first settings;
        `also`: more statements of the same transaction (its response's row: one commit, not two)."""
        row = {
            "turn_id": turn_id,
            "tenant_id": tenant,
            "status": TurnStatus.RUNNING.value,
            "input_messages": INPUTS.dump_python(list(input_messages), mode="json"),
            "context_messages": _context.dump_python(list(context_messages), mode="json"),
            "started_at": started_at,
        }
        body = settings.model_dump(mode="json")

        def run(tx: Connection) -> None:
            tx.execute(insert(TurnRow).values(**row))
            tx.execute(insert(TurnSettingsRow).values(settings_id=settings_id, turn_id=turn_id, body=body))
            if also is not None:
                also(tx)

        await self.database.write(run)
        self._settings_written.keep(settings_id, (turn_id, body))
        self._turns_begun.keep(turn_id, BegunTurn(row["input_messages"], row["context_messages"], started_at))

    async def add_turn_settings(self, turn_id: str, settings_id: str, settings: TurnSettings) -> None:
        """Store a segment's settings before the turn is resumed with them; writing the same id again
        (a retried request) keeps the first."""
        body = settings.model_dump(mode="json")

        def run(tx: Connection) -> None:
            if tx.scalar(select(TurnSettingsRow.turn_id).where(TurnSettingsRow.settings_id == settings_id)) is None:
                tx.execute(insert(TurnSettingsRow).values(settings_id=settings_id, turn_id=turn_id, body=body))

        await self.database.write(run)

    async def turn_settings(self, settings_id: str) -> TurnSettings | None:
        handed = self._settings_written.take(settings_id)
        body = handed[1] if handed is not None else None
        if body is None:
            query = select(TurnSettingsRow.body).where(TurnSettingsRow.settings_id == settings_id)
            body = await self.database.read(lambda tx: tx.scalar(query))
        return TurnSettings.model_validate(body) if body is not None else None

    async def pending_calls(
        self, tenant: str, call_ids: Sequence[str], turn_ids: Sequence[str] | None = None
    ) -> dict[str, str]:
        """Which of these client call ids (or approval request ids) a paused detached turn of the tenant
        waits for: call id → turn id; only among `turn_ids` when given (call ids of different turns may
        coincide: whoever answers names its own turns)."""
        if not call_ids:
            return {}
        query = select(PendingCallRow.call_id, PendingCallRow.turn_id).where(
            PendingCallRow.tenant_id == tenant, PendingCallRow.call_id.in_(list(call_ids))
        )
        if turn_ids is not None:
            query = query.where(PendingCallRow.turn_id.in_(list(turn_ids)))
        rows = await self.database.read(lambda tx: tx.execute(query).all())
        return {call_id: turn_id for call_id, turn_id in rows}

    async def delete_detached_turn(self, tenant: str, turn_id: str) -> TurnStatus | None:
        """Delete a detached turn of the tenant with its steps, events, settings, pending calls and
        credentials; its status before, None if there was no such turn. A running or paused one's
        workflow must be stopped (TurnGateway.terminate)."""
        which = (TurnRow.turn_id == turn_id) & (TurnRow.tenant_id == tenant) & TurnRow.session_id.is_(None)
        self._turns_begun.drop(turn_id)
        self._settings_written.drop_if(lambda kept: kept[0] == turn_id)

        def run(tx: Connection) -> TurnStatus | None:
            status = tx.scalar(select(TurnRow.status).where(which))
            if status is None:
                return None
            delete_turns(tx, which)
            return TurnStatus(status)

        return await self.database.write(run)

    async def detached_context(
        self, turn_id: str, first_model_call: bool = False
    ) -> tuple[Turn, list[ContextMessage]] | None:
        """A detached turn as one model call sees it: the turn so far and its prior context.

        `first_model_call`: the reader is the turn's first model call, before any step of it was written;
        if this process began the turn, it is handed what was written. Every other reader goes to the
        store and drops what was kept: the turn's own steps may have been written by another process
        (a separate worker), whose writes cannot drop this process's copy.
        """
        if not first_model_call:
            self._turns_begun.drop(turn_id)
        elif (begun := self._turns_begun.take(turn_id)) is not None:
            turn = Turn(
                turn_id=turn_id,
                session_id="",
                input_messages=INPUTS.validate_python(begun.input_messages),
                started_at=begun.started_at,
                status=TurnStatus.RUNNING,
            )
            return turn, _context.validate_python(begun.context_messages)

        def run(tx: Connection) -> tuple[Turn, list[ContextMessage]] | None:
            context = tx.execute(select(TurnRow.context_messages).where(TurnRow.turn_id == turn_id)).first()
            if context is None:
                return None
            turn = load_turns(tx, None, turn_ids=[turn_id])[0]
            return turn, _context.validate_python(context.context_messages or [])

        return await self.database.read(run)

    async def set_input_messages(self, turn_id: str, input_messages: list[InputMessage]) -> None:
        self._turns_begun.drop(turn_id)
        stored = INPUTS.dump_python(input_messages, mode="json")
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

    async def get_turn(self, session_id: str | None, turn_id: str) -> Turn | None:
        """The turn; `session_id` None for a detached turn (or any turn, by id alone)."""
        turns = await self.database.read(lambda tx: load_turns(tx, session_id, turn_ids=[turn_id]))
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
            select(TURNS, tenant)
            .outerjoin(AgentRow, AgentRow.agent_id == TurnRow.agent_id)
            .where(TurnRow.status == TurnStatus.RUNNING.value, TurnRow.started_at < started_before, no_steps)
            .order_by(TurnRow.started_at)
            .limit(limit)
        )
        rows = await self.database.read(lambda tx: tx.execute(query).all())
        return [UnstartedTurn(row.agent_id, row.owner, turn_of_row(row, []), _turn_tools(row)) for row in rows]

    async def count_turns(self, status: TurnStatus) -> int:
        query = select(func.count()).select_from(TurnRow).where(TurnRow.status == status.value)
        return await self.database.read(lambda tx: tx.scalar(query)) or 0

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


class _NotCompleted(Exception):
    pass
