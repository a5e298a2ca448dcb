"""Every read and write of the store, as typed operations on domain objects: one class per aggregate, composed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import select

from store.agent_sessions.sessions import AgentSessionStore
from store.database import Database
from store.hand_over import HandOver
from store.responses.conversations import ConversationStore
from store.responses.responses import ResponseStore
from store.turns.agents import AgentStore
from store.turns.history import HistoryCache, HistoryStore
from store.turns.records import BegunTurn, EventsWritten
from store.turns.sessions import SessionStore
from store.turns.toolgroups import ToolGroupStore
from store.turns.turns import TurnStore


class Store(AgentStore, ToolGroupStore, SessionStore, TurnStore, HistoryStore):
    """The store's operations. Each runs as one transaction of plain SQLAlchemy Core statements on a
    connection that `Database` provides (see store/database.py for why they are synchronous)."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self.conversations = ConversationStore(database)
        self.responses = ResponseStore(database)
        self.agent_sessions = AgentSessionStore(database)
        self._event_listeners: list[Callable[[EventsWritten], None]] = []
        self._history = HistoryCache()
        self._settings_written: HandOver[str, tuple[str, dict[str, Any]]] = HandOver()
        self._turns_begun: HandOver[str, BegunTurn] = HandOver()

    def on_events_written(self, listener: Callable[[EventsWritten], None]) -> None:
        """Call `listener` with the events of each commit that added some through this Store object:
        readers in the same process have them at once instead of at their next poll."""
        self._event_listeners.append(listener)

    async def ping(self) -> None:
        await self.database.read(lambda tx: tx.execute(select(1)))
