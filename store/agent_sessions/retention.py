"""What the `sessions` and `turns` time-to-lives delete of Agents API (beta) sessions, as they do of llama-stack
sessions (store/retention.py registers both dialects under each kind, so one DA_RETENTION entry covers both).

- `sessions`: a session idle since the cutoff (no turn started since, its latest turn ended before it) goes with
  its turns, their rows, its input keys and its spend ledger. A session whose turn runs, waits for the caller or
  is held by its spend limit is never pruned: its turn ends first (a paused turn by its own expiry).
- `turns`: an ended turn of a session, by when it ended, except the session's latest, whose context and steps
  the next turn starts from; the session stays.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, and_, delete, func, or_, select

from store.agent_sessions.tables import BetaInputKeyRow, BetaSessionRow, BetaSessionTurnRow, BetaToolResultRow
from store.tenancy.tables import SessionBudgetRow, SpendEntryRow
from store.turns.records import FINAL_STATUSES
from store.turns.rows import delete_turns
from store.turns.tables import TurnRow

_ENDED = func.coalesce(TurnRow.completed_at, TurnRow.started_at)


def delete_agent_sessions(tx: Connection, sessions: list[str], with_turns: bool) -> int:
    """Delete these sessions' rows; `with_turns`: their turns' rows too (an erasure deletes those as the
    tenant's detached turns)."""
    if not sessions:
        return 0
    turns = list(tx.scalars(select(BetaSessionTurnRow.turn_id).where(BetaSessionTurnRow.session_id.in_(sessions))))
    if with_turns and turns:
        delete_turns(tx, TurnRow.turn_id.in_(turns))
    tx.execute(delete(BetaToolResultRow).where(BetaToolResultRow.turn_id.in_(turns)))
    tx.execute(delete(BetaSessionTurnRow).where(BetaSessionTurnRow.session_id.in_(sessions)))
    tx.execute(delete(BetaInputKeyRow).where(BetaInputKeyRow.session_id.in_(sessions)))
    tx.execute(delete(SessionBudgetRow).where(SessionBudgetRow.session_id.in_(sessions)))
    tx.execute(delete(SpendEntryRow).where(SpendEntryRow.session_id.in_(sessions)))
    tx.execute(delete(BetaSessionRow).where(BetaSessionRow.session_id.in_(sessions)))
    return len(sessions)


def prune_agent_sessions(tx: Connection, cutoff: datetime, limit: int) -> int:
    latest_ended = or_(TurnRow.turn_id.is_(None), and_(TurnRow.status.in_(FINAL_STATUSES), cutoff > _ENDED))
    query = (
        select(BetaSessionRow.session_id)
        .outerjoin(TurnRow, TurnRow.turn_id == BetaSessionRow.current_turn_id)
        .where(BetaSessionRow.last_active_at < cutoff, latest_ended)
        .order_by(BetaSessionRow.last_active_at)
        .limit(limit)
    )
    return delete_agent_sessions(tx, list(tx.scalars(query)), with_turns=True)


def prune_agent_session_turns(tx: Connection, cutoff: datetime, limit: int) -> int:
    not_latest = or_(
        BetaSessionRow.current_turn_id.is_(None), BetaSessionRow.current_turn_id != BetaSessionTurnRow.turn_id
    )
    query = (
        select(BetaSessionTurnRow.turn_id)
        .join(TurnRow, TurnRow.turn_id == BetaSessionTurnRow.turn_id)
        .join(BetaSessionRow, BetaSessionRow.session_id == BetaSessionTurnRow.session_id)
        .where(TurnRow.status.in_(FINAL_STATUSES), cutoff > _ENDED, not_latest)
        .order_by(TurnRow.started_at)
        .limit(limit)
    )
    turns = list(tx.scalars(query))
    if turns:
        delete_turns(tx, TurnRow.turn_id.in_(turns))
        tx.execute(delete(BetaToolResultRow).where(BetaToolResultRow.turn_id.in_(turns)))
        tx.execute(delete(BetaSessionTurnRow).where(BetaSessionTurnRow.turn_id.in_(turns)))
    return len(turns)


def oldest_agent_session(tx: Connection) -> datetime | None:
    return tx.scalar(select(func.min(BetaSessionRow.last_active_at)))


def oldest_agent_session_turn(tx: Connection) -> datetime | None:
    query = select(func.min(TurnRow.started_at)).join(BetaSessionTurnRow, BetaSessionTurnRow.turn_id == TurnRow.turn_id)
    return tx.scalar(query)
