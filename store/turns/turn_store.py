"""The turns aggregate's operations as one object: agents, toolgroups, sessions, turns with their events and
steps, and the history window of a model call (one class per part, composed here)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from store.database import Database
from store.hand_over import HandOver, json_size
from store.turns.agents import AgentStore
from store.turns.events import StatusOutbox
from store.turns.history import HistoryCache, HistoryStore
from store.turns.lifecycle import TurnLifecycle
from store.turns.records import BegunTurn, EventsWritten
from store.turns.sessions import SessionStore
from store.turns.toolgroups import ToolGroupStore


class TurnStore(AgentStore, ToolGroupStore, SessionStore, TurnLifecycle, HistoryStore):
    """Each operation runs as one transaction of plain SQLAlchemy Core statements on a connection that
    `Database` provides (see store/database.py for why they are synchronous).

    `record_status`: the webhook events a turn's end or pause means, written in that same transaction (the
    webhooks aggregate's outbox, which `Store` hands in so that this aggregate does not import that one)."""

    def __init__(self, database: Database, record_status: StatusOutbox) -> None:
        self.database = database
        self._record_status = record_status
        self._event_listeners: list[Callable[[EventsWritten], None]] = []
        self._history = HistoryCache()
        self._settings_written: HandOver[str, tuple[str, dict[str, Any]]] = HandOver(lambda kept: json_size(kept[1]))
        self._turns_begun: HandOver[str, BegunTurn] = HandOver(
            lambda begun: json_size(begun.input_messages) + json_size(begun.context_messages)
        )

    def on_events_written(self, listener: Callable[[EventsWritten], None]) -> None:
        """Call `listener` with the events of each commit that added some through this object: readers in the
        same process have them at once instead of at their next poll."""
        self._event_listeners.append(listener)
