"""A model call's history window: a session's earlier turns, sized and cached, within the window's budget."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from sqlalchemy import Connection, Row, Text, bindparam, cast, func, select

from domain.agents import AgentConfig
from domain.turns import Turn, TurnStatus
from store.turns.rows import StoreBase, load_turns
from store.turns.tables import AgentRow, StepRow, TurnRow

_HISTORY_BATCH = 32
"""Earlier turns sized per query when a model call's history window is assembled."""
_HISTORY_CACHE_TURNS = 10_000

# Statements built once (bound parameters): each model call runs them.
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


class HistoryStore(StoreBase):
    _history: HistoryCache

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
            loaded = {turn.turn_id: turn for turn in load_turns(tx, session_id, turn_ids=[*missing, turn_id])}
            current = loaded.pop(turn_id, None)
            if current is None:
                return None
            sizes = {turn.turn_id: turn.size for turn in kept}
            for loaded_id, loaded_turn in loaded.items():
                self._history.put(loaded_id, sizes[loaded_id], loaded_turn)
            history = [cached[turn.turn_id] or loaded[turn.turn_id] for turn in reversed(kept)]
            return current, history, AgentConfig.model_validate(config) if config is not None else None

        return await self.database.read(run)


class HistoryCache:
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
