"""Session spend: the limit, the ledger of model calls' costs, and the check made before each model call."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from pydantic import BaseModel
from sqlalchemy import Connection, delete, func, insert, select, update

from store.database import Database
from store.tenancy.tables import SessionBudgetRow, SpendEntryRow

MICROCENTS_PER_CENT = 1_000_000

EventOutbox = Callable[[Connection, str, str, dict[str, Any], str, str], bool]
"""`record_event` of the webhooks aggregate (tx, tenant, event type, data, cause, turn id): true when it added
deliveries."""


class Event(Protocol):
    """A webhook event to record (the agent-sessions aggregate's `SessionEvent`)."""

    @property
    def event_type(self) -> str: ...
    @property
    def data(self) -> dict[str, Any]: ...
    @property
    def cause(self) -> str: ...


class SessionSpend(BaseModel):
    """A session's limit and what it has consumed (whole cents, rounded down, as the Agents API reports it)."""

    limit_cents: int | None = None
    consumed_cents: int = 0
    waiting_turn_id: str | None = None
    """A turn held at its next model call until the limit is raised."""

    @property
    def reached(self) -> bool:
        return self.limit_cents is not None and self.consumed_cents >= self.limit_cents


def _consumed(tx: Connection, session_id: str) -> int:
    total = tx.scalar(
        select(func.coalesce(func.sum(SpendEntryRow.cost_microcents), 0)).where(SpendEntryRow.session_id == session_id)
    )
    return int(total or 0) // MICROCENTS_PER_CENT


class SpendStore:
    def __init__(self, database: Database, record_event: EventOutbox) -> None:
        self.database = database
        self._record_event = record_event

    async def record(
        self, session_id: str, turn_id: str, step_id: str, model: str, input_tokens: int, output_tokens: int, cost: int
    ) -> None:
        """Record a model call's cost (micro-cents) under `step_id`, the call's key: an inference step's id, or
        for a turn's compaction summary and shield calls a key of their own. A retried call replaces its entry:
        the call's usage event, which its turn's readers sum, is the retry's too."""

        def write(tx: Connection) -> None:
            tx.execute(delete(SpendEntryRow).where(SpendEntryRow.step_id == step_id))
            tx.execute(
                insert(SpendEntryRow).values(
                    step_id=step_id,
                    session_id=session_id,
                    turn_id=turn_id,
                    model=model,
                    input_tokens=input_tokens,
                    output_tokens=output_tokens,
                    cost_microcents=cost,
                    created_at=datetime.now(UTC),
                )
            )

        await self.database.write(write)

    async def state(self, session_id: str) -> SessionSpend:
        def read(tx: Connection) -> SessionSpend:
            row = tx.execute(
                select(SessionBudgetRow.limit_cents, SessionBudgetRow.waiting_turn_id).where(
                    SessionBudgetRow.session_id == session_id
                )
            ).first()
            limit, waiting = (row[0], row[1]) if row else (None, None)
            return SessionSpend(limit_cents=limit, consumed_cents=_consumed(tx, session_id), waiting_turn_id=waiting)

        return await self.database.read(read)

    async def check(self, session_id: str, turn_id: str) -> SessionSpend:
        """Before a model call of `turn_id`: the session's spend, with the turn named as waiting when the limit is
        reached (and its name cleared when not). The row is locked by the first statement, so a concurrent
        `set_limit` either comes first (and this sees its limit) or second (and sees the waiting turn).
        A session that never had a limit is answered by a read: no write per model call."""
        limited = select(SessionBudgetRow.session_id).where(SessionBudgetRow.session_id == session_id)
        if await self.database.read(lambda tx: tx.execute(limited).first()) is None:
            return SessionSpend()

        def check(tx: Connection) -> SessionSpend:
            limit = tx.execute(
                update(SessionBudgetRow)
                .where(SessionBudgetRow.session_id == session_id)
                .values(waiting_turn_id=turn_id)
                .returning(SessionBudgetRow.limit_cents)
            ).first()
            if limit is None:
                return SessionSpend(consumed_cents=_consumed(tx, session_id))
            consumed = _consumed(tx, session_id)
            spend = SessionSpend(limit_cents=limit[0], consumed_cents=consumed, waiting_turn_id=turn_id)
            if not spend.reached:
                tx.execute(
                    update(SessionBudgetRow)
                    .where(SessionBudgetRow.session_id == session_id)
                    .values(waiting_turn_id=None)
                )
                spend = spend.model_copy(update={"waiting_turn_id": None})
            return spend

        return await self.database.write(check)

    async def set_limit(
        self,
        session_id: str,
        limit_cents: int | None,
        resumed: tuple[str, Callable[[str], Event]] | None = None,
    ) -> tuple[SessionSpend, bool]:
        """Set or remove (None) the session's limit; what it consumed stays. Returns the spend with the turn
        waiting for the limit, which the caller wakes, and whether deliveries of the webhook event were recorded:
        `resumed` (the session's tenant, and the event of its waiting turn's id) is recorded in this transaction
        when the change lets a waiting turn go on, so that the event commits with its cause or not at all."""

        def write(tx: Connection) -> tuple[SessionSpend, bool]:
            now = datetime.now(UTC)
            changed = tx.execute(
                update(SessionBudgetRow)
                .where(SessionBudgetRow.session_id == session_id)
                .values(limit_cents=limit_cents, updated_at=now)
                .returning(SessionBudgetRow.waiting_turn_id)
            ).first()
            if changed is None:
                row = {"session_id": session_id, "limit_cents": limit_cents, "updated_at": now}
                tx.execute(insert(SessionBudgetRow).values(**row))
            waiting = changed[0] if changed else None
            consumed = _consumed(tx, session_id)
            spend = SessionSpend(limit_cents=limit_cents, consumed_cents=consumed, waiting_turn_id=waiting)
            if resumed is None or waiting is None or spend.reached:
                return spend, False
            tenant, event_of = resumed
            event = event_of(waiting)
            return spend, self._record_event(tx, tenant, event.event_type, event.data, event.cause, waiting)

        return await self.database.write(write)

    async def forget(self, session_id: str) -> None:
        """Delete a session's limit and ledger, with the session."""

        def write(tx: Connection) -> None:
            tx.execute(delete(SessionBudgetRow).where(SessionBudgetRow.session_id == session_id))
            tx.execute(delete(SpendEntryRow).where(SpendEntryRow.session_id == session_id))

        await self.database.write(write)
