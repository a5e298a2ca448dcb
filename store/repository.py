"""The one object through which the runtime reads and writes the store: one member per aggregate's store.

Built once per process at a composition root (api/app.py's lifespan, worker.py) and handed to whatever needs
it, so every part of a process shares one set of caches and hand-overs, and nothing builds a store by hand.
"""

from __future__ import annotations

from sqlalchemy import select

from store.agent_sessions.automations import AutomationStore
from store.agent_sessions.sessions import AgentSessionStore
from store.containers.containers import ContainerStore
from store.database import Database
from store.inbox import InboxStore
from store.knowledge.files import FileStore
from store.knowledge.vector_index import VectorIndex
from store.knowledge.vector_stores import VectorStores
from store.responses.compactions import CompactionStore
from store.responses.conversations import ConversationStore
from store.responses.responses import ResponseStore
from store.tenancy.spend import SpendStore
from store.turn_views import TurnViews
from store.turns.turn_store import TurnStore
from store.webhooks.webhook_store import WebhookStore, record_event, record_turn_status


class Store:
    """`index`: the vector and keyword index of the knowledge chunks, an engine chosen for the store's database at
    composition (knowledge/engines.py)."""

    def __init__(self, database: Database, index: VectorIndex) -> None:
        self.database = database
        self.turns = TurnStore(database, record_status=record_turn_status)
        self.responses = ResponseStore(database)
        self.conversations = ConversationStore(database)
        self.compactions = CompactionStore(database)
        self.agent_sessions = AgentSessionStore(database, record_event=record_event)
        self.automations = AutomationStore(database)
        self.spend = SpendStore(database, record_event=record_event)
        self.files = FileStore(database)
        self.vector_stores = VectorStores(database, index)
        self.webhooks = WebhookStore(database)
        self.containers = ContainerStore(database)
        self.inbox = InboxStore(database)
        self.turn_views = TurnViews(database)

    async def ping(self) -> None:
        await self.database.read(lambda tx: tx.execute(select(1)))
