"""Our durable record: one subpackage per aggregate, each with its tables beside its queries.

- `turns/`: agents, sessions, turns and what hangs off a turn (steps, events, settings, pending calls), toolgroups;
  every dialect's turn is a row here.
- `responses/`: responses, conversations and their items, compactions (the Responses dialect).
- `knowledge/`: files, vector stores, their files and chunks, the vector index's interface.
- `webhooks/`: endpoints, the outbox of events, deliveries and their attempts.
- `agent_sessions/`: the Agents API's saved agents, sessions and automations.
- `containers/`: sandbox containers, their files and the record of each call run in one.
- `tenancy/`: what is counted per tenant or key: session spend, request budgets.

`repository.Store` is the one object the rest of the runtime holds: one member per store of these aggregates,
built once at a composition root. Temporal forgets closed workflows after the namespace retention; this store
does not. SQLite by default, PostgreSQL by URL — the same SQLAlchemy 2 code. Rows never leave this package
(a contract in pyproject.toml): callers get records and domain objects.

May import configuration and domain only.
"""

# Every aggregate's tables join the one metadata that migrations compare, whichever of them a process imports.
from store.agent_sessions import automation_tables as automation_tables
from store.agent_sessions import tables as agent_session_tables
from store.containers import tables as container_tables
from store.knowledge import tables as knowledge_tables
from store.responses import tables as response_tables
from store.tenancy import tables as tenancy_tables
from store.turns import tables as turn_tables
from store.webhooks import tables as webhook_tables

__all__ = [
    "agent_session_tables",
    "automation_tables",
    "container_tables",
    "knowledge_tables",
    "response_tables",
    "tenancy_tables",
    "turn_tables",
    "webhook_tables",
]
