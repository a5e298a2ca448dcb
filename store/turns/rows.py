"""What several aggregates' operations share: the base of their classes, turns read from their rows, deleting turns."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from pydantic import TypeAdapter
from sqlalchemy import Connection, Row, delete, select

from domain.content import CompletionMessage, InputMessage
from domain.turns import Step, Turn, TurnStatus
from store.database import Database
from store.turns.records import Page
from store.turns.tables import EventRow, SessionRow, StepRow, TurnRow


class StoreBase:
    """The base of the turns aggregate's parts: the database they run on (turn_store.py composes them)."""

    database: Database


STEPS = TypeAdapter(Step)

INPUTS = TypeAdapter(list[InputMessage])


def read_page(tx: Connection, query: Any, start_index: int, limit: int) -> Page[Row[Any]]:
    """One page of `query`'s rows: one more row than asked for is read to learn whether more follow."""
    rows = tx.execute(query.offset(start_index).limit(limit + 1)).all()
    return Page(list(rows[:limit]), len(rows) > limit)


def unfinished_turns_of(tx: Connection, sessions_where: Any) -> list[str]:
    # A session's active turn, and any turn whose status is not final (the two agree unless a write was lost).
    in_sessions = select(SessionRow.session_id).where(sessions_where)
    active = select(SessionRow.active_turn_id).where(sessions_where, SessionRow.active_turn_id.is_not(None))
    unfinished = select(TurnRow.turn_id).where(
        TurnRow.session_id.in_(in_sessions),
        TurnRow.status.in_([TurnStatus.RUNNING.value, TurnStatus.AWAITING_INPUT.value]),
    )
    return sorted({turn_id for turn_id in tx.scalars(active) if turn_id is not None} | set(tx.scalars(unfinished)))


def delete_turns(tx: Connection, which: Any) -> None:
    """Delete the turns `which` selects with their events and steps (the rest of a turn's rows cascade)."""
    turns = select(TurnRow.turn_id).where(which)
    tx.execute(delete(EventRow).where(EventRow.turn_id.in_(turns)))
    tx.execute(delete(StepRow).where(StepRow.turn_id.in_(turns)))
    tx.execute(delete(TurnRow).where(which))


def load_turns(
    tx: Connection, session_id: str | None, turn_ids: Sequence[str] | None = None, extra: tuple[Any, ...] = ()
) -> list[Turn]:
    query = select(TURNS).where(*extra)
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
        steps[step_turn_id].append(STEPS.validate_python(body))
    return [turn_of_row(row, steps[row.turn_id]) for row in rows]


TURNS = TurnRow.__table__


def turn_of_row(row: Row[Any], steps: list[Step]) -> Turn:
    return Turn(
        turn_id=row.turn_id,
        session_id=row.session_id or "",  # a detached turn has no session
        input_messages=INPUTS.validate_python(row.input_messages),
        steps=steps,
        output_message=CompletionMessage.model_validate(row.output_message) if row.output_message else None,
        started_at=row.started_at,
        completed_at=row.completed_at,
        status=TurnStatus(row.status),
        error=row.error,
    )
