"""A turn's progress and events: written once each in commit order, read back by cursor, key or id."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from functools import cache
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, insert, literal, select, union_all, update

from domain.content import CompletionMessage
from domain.events import KeyedEvent
from domain.model_calls import model_call_in
from domain.turns import Step, Turn, TurnStatus
from store import pg_wake
from store.hand_over import HandOver
from store.turns.model_usage import count_turn_calls
from store.turns.records import FINAL_STATUSES, BegunTurn, EventsWritten, StoredEvent
from store.turns.rows import STEPS, StoreBase, load_turns
from store.turns.tables import EventRow, PendingCallRow, SessionRow, StepRow, TurnCredentialsRow, TurnRow

StatusOutbox = Callable[[Connection, str, TurnStatus, str], bool]
"""Inside the transaction that gives a turn a status: record the webhook events it means (`turn_id`, the status,
the key of the event that causes it); true when there are deliveries to start. The webhooks aggregate provides
it (store/repository.py), so this aggregate does not import that one."""

_CURSORS_PER_QUERY = 100
"""Windows per UNION ALL statement; SQLite allows at most 500 terms in one compound select."""

# Statements built once: building one (its clauses, its cache key) costs more than SQLite running it,
# and these run for every batch of a streamed reply's events.
_TURN_LOCK = (
    update(TurnRow)
    .where(TurnRow.turn_id == bindparam("locked_turn"))
    .values(status=TurnRow.status)
    .returning(TurnRow.tenant_id)
)

_DROP_PENDING_CALLS = delete(PendingCallRow).where(PendingCallRow.turn_id == bindparam("turn_id"))
_INSERT_PENDING_CALLS = insert(PendingCallRow)
_DROP_STEPS = delete(StepRow).where(
    StepRow.turn_id == bindparam("turn_id"), StepRow.position.in_(bindparam("positions", expanding=True))
)
_INSERT_STEPS = insert(StepRow)
_FREE_SESSION = update(SessionRow).where(SessionRow.active_turn_id == bindparam("turn_id")).values(active_turn_id=None)
_DROP_CREDENTIALS = delete(TurnCredentialsRow).where(TurnCredentialsRow.turn_id == bindparam("turn_id"))


@cache
def _turn_update(columns: tuple[str, ...], keeps_an_end: bool) -> Any:
    """The turn row's update setting `columns` (from parameters `new_<column>`), built once per set;
    `keeps_an_end`: a turn that has ended is left as it is (a status change)."""
    which = [TurnRow.turn_id == bindparam("locked_turn")]
    if keeps_an_end:
        which.append(TurnRow.status.not_in(FINAL_STATUSES))
    values: dict[str, Any] = {column: bindparam(f"new_{column}") for column in columns}
    return update(TurnRow).where(*which).values(**values).returning(TurnRow.tenant_id)


_KEYS_WRITTEN = select(EventRow.key).where(
    EventRow.turn_id == bindparam("turn_id"), EventRow.key.in_(bindparam("keys", expanding=True))
)

_LAST_EVENT_ID = select(func.max(EventRow.event_id)).where(EventRow.turn_id == bindparam("turn_id"))

_INSERT_EVENTS = insert(EventRow).returning(EventRow.event_id, sort_by_parameter_order=True)


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


def _set_pending_calls(tx: Connection, turn_id: str, tenant: str, call_ids: Sequence[str]) -> None:
    tx.execute(_DROP_PENDING_CALLS, {"turn_id": turn_id})
    rows = [{"turn_id": turn_id, "call_id": call_id, "tenant_id": tenant} for call_id in dict.fromkeys(call_ids)]
    if rows:
        tx.execute(_INSERT_PENDING_CALLS, rows)


class EventStore(StoreBase):
    _event_listeners: list[Callable[[EventsWritten], None]]
    _record_status: StatusOutbox
    _turns_begun: HandOver[str, BegunTurn]
    """New turns as written, until their first read here or a change to them (store/hand_over.py)."""

    async def last_event_id(self, turn_id: str) -> int:
        query = select(func.max(EventRow.event_id)).where(EventRow.turn_id == turn_id)
        return await self.database.read(lambda tx: tx.scalar(query)) or 0

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
        on_deliveries: Callable[[], None] | None = None,
    ) -> Turn | None:
        """Append steps and events and move the turn's status and output, atomically and idempotently.

        `closing_event` builds one more event from the turn as just saved (a pause or the end, which
        carry the whole turn). A final status also frees the session for its next turn. `awaiting`:
        with the awaiting_input status, the call and approval ids a detached turn now waits for
        (`pending_calls`); any other status clears them. `on_deliveries` is called after the commit when
        the status has webhook deliveries to start (the webhooks aggregate's outbox, `_record_status`).

        A turn that has ended keeps its end: a write with a status then writes nothing and returns
        the turn as stored (an answer written by its inference just before a cancel stands). None
        when the write was made.
        """
        self._turns_begun.drop(turn_id)  # the turn changes: its next read goes to the store
        values: dict[str, Any] = {}
        if status is not None:
            # A status comes with the output it has: a paused turn's tool calls, a final answer, or none.
            values["status"] = status.value
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
                "body": STEPS.dump_python(step, mode="json"),
            }
            for position, step in new_steps
        ]

        lock = _turn_update(tuple(values), status is not None) if values else _TURN_LOCK
        lock_params = {"locked_turn": turn_id, **{f"new_{column}": value for column, value in values.items()}}

        def run(tx: Connection) -> tuple[Turn | None, EventsWritten | None, bool]:
            # Updating the turn row first takes its row lock (PostgreSQL) or the write lock (SQLite):
            # concurrent writers of one turn are serialised, so event ids follow commit order.
            locked = tx.execute(lock, lock_params).first()
            if locked is None:
                ended = load_turns(tx, None, turn_ids=[turn_id])
                if not ended:
                    raise LookupError(f"Turn {turn_id} not found in the store (was its session deleted?)")
                return ended[0], None, False
            if status is not None and locked.tenant_id is not None:
                _set_pending_calls(
                    tx, turn_id, locked.tenant_id, awaiting if status == TurnStatus.AWAITING_INPUT else ()
                )
            if step_rows:
                positions = [row["position"] for row in step_rows]
                tx.execute(_DROP_STEPS, {"turn_id": turn_id, "positions": positions})
                tx.execute(_INSERT_STEPS, step_rows)
            to_add = list(events)
            if closing_event is not None:
                to_add.append(closing_event(load_turns(tx, None, turn_ids=[turn_id])[0]))
            written = None
            if to_add:
                keys = [e.key for e in to_add]
                seen = set(tx.scalars(_KEYS_WRITTEN, {"turn_id": turn_id, "keys": keys}))
                rows: list[dict[str, Any]] = []
                for keyed in to_add:
                    if keyed.key not in seen:
                        seen.add(keyed.key)
                        rows.append({"turn_id": turn_id, "key": keyed.key, "body": keyed.body})
                if rows:
                    # A usage event is written once however often its call's activity is retried: its call is
                    # counted with it, in this transaction, so exactly once.
                    calls = [call for row in rows if (call := model_call_in(row["body"])) is not None]
                    if calls:
                        count_turn_calls(tx, turn_id, calls, datetime.now(UTC).date())
                    # The turn's lock is held: no other writer's event of this turn falls between `after` and
                    # these. One statement, ids returned in list order: they keep the events' order.
                    after = tx.scalar(_LAST_EVENT_ID, {"turn_id": turn_id}) or 0
                    ids = tx.scalars(_INSERT_EVENTS, rows).all()
                    stored = [StoredEvent(event_id, row["body"]) for event_id, row in zip(ids, rows, strict=True)]
                    written = EventsWritten(turn_id, after, stored)
                    pg_wake.notify_events_written(tx)
            deliveries = False
            if status is not None:  # the webhook events an end or a pause means, in this same transaction
                deliveries = self._record_status(tx, turn_id, status, to_add[-1].key if to_add else status.value)
            if status is not None and status.is_final:
                tx.execute(_FREE_SESSION, {"turn_id": turn_id})
                tx.execute(_DROP_CREDENTIALS, {"turn_id": turn_id})
            return None, written, deliveries

        ended, written, deliveries = await self.database.write(run)
        if written is not None:
            for listener in self._event_listeners:
                listener(written)
        if deliveries and on_deliveries is not None:
            on_deliveries()
        return ended

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
                params: dict[str, Any] = {"limit": limit}
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
