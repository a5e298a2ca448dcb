"""Agents API (beta) rows as records: saved agents, sessions, the order of a session's turns, the caller's
tool results a paused turn has so far, and accepted input keys (store/agent_sessions/tables.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Connection, Row, delete, insert, select, update

from store.agent_sessions.retention import delete_agent_sessions
from store.agent_sessions.tables import (
    BetaAgentRow,
    BetaInputKeyRow,
    BetaSessionRow,
    BetaSessionTurnRow,
    BetaToolResultRow,
)
from store.database import Database
from store.tenancy.quotas import within_quota

Order = Literal["asc", "desc"]
EventOutbox = Callable[[Connection, str, str, dict[str, Any], str, str], bool]
"""`record_event` of the webhooks aggregate (tx, tenant, event type, data, cause, turn id): true when it added
deliveries."""
SCAN_BATCH = 200
"""Rows read at a time while a metadata filter skips sessions that do not match."""


@dataclass(frozen=True)
class SessionEvent:
    """A webhook event a session write causes, recorded in that write's transaction (the outbox): if the write
    commits, so does the event, and a retried write records it once (`cause`)."""

    event_type: str
    data: dict[str, Any]
    cause: str
    cause_id: str
    """The session's or turn's id, under which its deliveries are found to be started."""


@dataclass(frozen=True)
class BetaAgentRecord:
    agent_id: str
    tenant_id: str
    body: dict[str, Any]
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class BetaSessionRecord:
    session_id: str
    tenant_id: str
    agent_id: str | None
    body: dict[str, Any]
    """The agent snapshot (`agent`), `environment`, `metadata`, `spend_control`, `vault_ids` and echoed options."""
    current_turn_id: str | None
    turn_count: int
    created_at: datetime
    last_active_at: datetime


@dataclass(frozen=True)
class SessionTurnRecord:
    turn_id: str
    session_id: str
    tenant_id: str
    ordinal: int
    created_at: datetime


def _agent(row: Row[Any]) -> BetaAgentRecord:
    return BetaAgentRecord(row.agent_id, row.tenant_id, dict(row.body), row.created_at, row.updated_at)


def _session(row: Row[Any]) -> BetaSessionRecord:
    return BetaSessionRecord(
        row.session_id,
        row.tenant_id,
        row.agent_id,
        dict(row.body),
        row.current_turn_id,
        row.turn_count,
        row.created_at,
        row.last_active_at,
    )


def _turn(row: Row[Any]) -> SessionTurnRecord:
    return SessionTurnRecord(row.turn_id, row.session_id, row.tenant_id, row.ordinal, row.created_at)


def tenant_page_query(
    tx: Connection, table: Any, key: Any, tenant: str, after: str | None, order: Order, where: list[Any]
) -> Any:
    """The query for rows after the cursor row `after` (LookupError if it is not the tenant's), in order."""
    query = select(table.__table__).where(table.tenant_id == tenant, *where)
    if after is not None:
        cursor = tx.execute(select(table.created_at, key).where(table.tenant_id == tenant, key == after)).first()
        if cursor is None:
            raise LookupError(after)
        if order == "asc":
            query = query.where((table.created_at > cursor[0]) | ((table.created_at == cursor[0]) & (key > after)))
        else:
            query = query.where((table.created_at < cursor[0]) | ((table.created_at == cursor[0]) & (key < after)))
    if order == "asc":
        return query.order_by(table.created_at.asc(), key.asc())
    return query.order_by(table.created_at.desc(), key.desc())


class AgentSessionStore:
    def __init__(self, database: Database, record_event: EventOutbox) -> None:
        self.database = database
        self._record_event = record_event

    def _announce(self, tx: Connection, tenant: str, event: SessionEvent | None) -> bool:
        if event is None:
            return False
        return self._record_event(tx, tenant, event.event_type, event.data, event.cause, event.cause_id)

    # -- agents

    async def add_agent(self, record: BetaAgentRecord, most: int | None = None) -> None:
        """Raises QuotaReached when the tenant has `most` agents already."""
        values = {
            "agent_id": record.agent_id,
            "tenant_id": record.tenant_id,
            "body": record.body,
            "created_at": record.created_at,
            "updated_at": record.updated_at,
        }

        def run(tx: Connection) -> None:
            within_quota(tx, BetaAgentRow.tenant_id, record.tenant_id, most, "DA_MAX_AGENTS_PER_TENANT", "agents")
            tx.execute(insert(BetaAgentRow).values(**values))

        await self.database.write(run)

    async def agent(self, tenant: str, agent_id: str) -> BetaAgentRecord | None:
        query = select(BetaAgentRow.__table__).where(
            BetaAgentRow.tenant_id == tenant, BetaAgentRow.agent_id == agent_id
        )
        row = await self.database.read(lambda tx: tx.execute(query).first())
        return _agent(row) if row is not None else None

    async def update_agent(
        self, tenant: str, agent_id: str, change: Callable[[dict[str, Any]], dict[str, Any]], now: datetime
    ) -> BetaAgentRecord | None:
        """Apply `change` to the agent's body in one transaction; None if the tenant has no such agent."""

        def run(tx: Connection) -> BetaAgentRecord | None:
            which = (BetaAgentRow.tenant_id == tenant) & (BetaAgentRow.agent_id == agent_id)
            row = tx.execute(select(BetaAgentRow.__table__).where(which)).first()
            if row is None:
                return None
            tx.execute(update(BetaAgentRow).where(which).values(body=change(dict(row.body)), updated_at=now))
            return _agent(tx.execute(select(BetaAgentRow.__table__).where(which)).one())

        return await self.database.write(run)

    async def delete_agent(self, tenant: str, agent_id: str) -> bool:
        which = (BetaAgentRow.tenant_id == tenant) & (BetaAgentRow.agent_id == agent_id)
        return await self.database.write(lambda tx: tx.execute(delete(BetaAgentRow).where(which)).rowcount > 0)

    async def agents(
        self, tenant: str, after: str | None, limit: int, order: Order
    ) -> tuple[list[BetaAgentRecord], bool]:
        def run(tx: Connection) -> tuple[list[BetaAgentRecord], bool]:
            query = tenant_page_query(tx, BetaAgentRow, BetaAgentRow.agent_id, tenant, after, order, [])
            rows = tx.execute(query.limit(limit + 1)).all()
            return [_agent(row) for row in rows[:limit]], len(rows) > limit

        return await self.database.read(run)

    # -- sessions

    async def add_session(
        self, record: BetaSessionRecord, event: SessionEvent | None = None, most: int | None = None
    ) -> bool:
        """Add the session, recording `event` with it; true when the event has deliveries to start. Raises
        QuotaReached when the tenant has `most` sessions already."""
        values = {
            "session_id": record.session_id,
            "tenant_id": record.tenant_id,
            "agent_id": record.agent_id,
            "body": record.body,
            "current_turn_id": None,
            "turn_count": 0,
            "created_at": record.created_at,
            "last_active_at": record.last_active_at,
        }

        def run(tx: Connection) -> bool:
            tenant_column = BetaSessionRow.tenant_id
            within_quota(tx, tenant_column, record.tenant_id, most, "DA_MAX_SESSIONS_PER_TENANT", "sessions")
            tx.execute(insert(BetaSessionRow).values(**values))
            return self._announce(tx, record.tenant_id, event)

        return await self.database.write(run)

    async def session(self, tenant: str, session_id: str) -> BetaSessionRecord | None:
        query = select(BetaSessionRow.__table__).where(
            BetaSessionRow.tenant_id == tenant, BetaSessionRow.session_id == session_id
        )
        row = await self.database.read(lambda tx: tx.execute(query).first())
        return _session(row) if row is not None else None

    async def update_session(
        self, tenant: str, session_id: str, change: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> BetaSessionRecord | None:
        def run(tx: Connection) -> BetaSessionRecord | None:
            which = (BetaSessionRow.tenant_id == tenant) & (BetaSessionRow.session_id == session_id)
            row = tx.execute(select(BetaSessionRow.__table__).where(which)).first()
            if row is None:
                return None
            tx.execute(update(BetaSessionRow).where(which).values(body=change(dict(row.body))))
            return _session(tx.execute(select(BetaSessionRow.__table__).where(which)).one())

        return await self.database.write(run)

    async def sessions(
        self,
        tenant: str,
        after: str | None,
        limit: int,
        order: Order,
        agent_id: str | None = None,
        metadata: dict[str, str] | None = None,
    ) -> tuple[list[BetaSessionRecord], bool]:
        """A page of the tenant's sessions; `metadata`: only those whose metadata has each of these pairs."""
        wanted = metadata or {}

        def run(tx: Connection) -> tuple[list[BetaSessionRecord], bool]:
            where = [BetaSessionRow.agent_id == agent_id] if agent_id is not None else []
            query = tenant_page_query(tx, BetaSessionRow, BetaSessionRow.session_id, tenant, after, order, where)
            found: list[BetaSessionRecord] = []
            offset = 0
            while len(found) <= limit:
                rows = tx.execute(query.offset(offset).limit(SCAN_BATCH)).all()
                offset += len(rows)
                for row in rows:
                    meta = (row.body or {}).get("metadata") or {}
                    if all(meta.get(key) == value for key, value in wanted.items()):
                        found.append(_session(row))
                if len(rows) < SCAN_BATCH:
                    break
            return found[:limit], len(found) > limit

        return await self.database.read(run)

    async def delete_session(self, tenant: str, session_id: str) -> bool:
        """Delete the session with its turns (their rows, events and steps), tool results, input keys and spend
        ledger, in one transaction; false if the tenant has no such session. Its running or paused turns'
        workflows must be stopped first (workflows/session_deletion.py)."""

        def run(tx: Connection) -> bool:
            which = (BetaSessionRow.tenant_id == tenant) & (BetaSessionRow.session_id == session_id)
            if tx.scalar(select(BetaSessionRow.session_id).where(which)) is None:
                return False
            return delete_agent_sessions(tx, [session_id], with_turns=True) == 1

        return await self.database.write(run)

    # -- turns

    async def claim_turn(
        self,
        tenant: str,
        session_id: str,
        turn_id: str,
        expected_current: str | None,
        now: datetime,
        event: SessionEvent | None = None,
    ) -> tuple[int, bool] | None:
        """Make `turn_id` the session's current turn if its current one is still `expected_current`, recording
        `event` with it; the new turn's ordinal and whether the event has deliveries to start, or None when
        another turn got there first (the session is busy)."""

        def run(tx: Connection) -> tuple[int, bool] | None:
            which = (BetaSessionRow.tenant_id == tenant) & (BetaSessionRow.session_id == session_id)
            current = (
                BetaSessionRow.current_turn_id.is_(None)
                if expected_current is None
                else BetaSessionRow.current_turn_id == expected_current
            )
            row = tx.execute(select(BetaSessionRow.turn_count).where(which & current)).first()
            if row is None:
                return None
            ordinal: int = row.turn_count
            changed = tx.execute(
                update(BetaSessionRow)
                .where(which & current & (BetaSessionRow.turn_count == ordinal))
                .values(current_turn_id=turn_id, turn_count=ordinal + 1, last_active_at=now)
            ).rowcount
            if changed != 1:
                return None
            tx.execute(
                insert(BetaSessionTurnRow).values(
                    turn_id=turn_id, session_id=session_id, tenant_id=tenant, ordinal=ordinal, created_at=now
                )
            )
            return ordinal, self._announce(tx, tenant, event)

        return await self.database.write(run)

    async def session_turns(self, session_id: str, from_ordinal: int = 0) -> list[SessionTurnRecord]:
        query = (
            select(BetaSessionTurnRow.__table__)
            .where(BetaSessionTurnRow.session_id == session_id, BetaSessionTurnRow.ordinal >= from_ordinal)
            .order_by(BetaSessionTurnRow.ordinal)
        )
        return [_turn(row) for row in await self.database.read(lambda tx: tx.execute(query).all())]

    async def session_turn(self, turn_id: str) -> SessionTurnRecord | None:
        query = select(BetaSessionTurnRow.__table__).where(BetaSessionTurnRow.turn_id == turn_id)
        row = await self.database.read(lambda tx: tx.execute(query).first())
        return _turn(row) if row is not None else None

    # -- the caller's tool results

    async def add_tool_result(
        self, turn_id: str, call_id: str, content: Any, is_error: bool
    ) -> dict[str, tuple[Any, bool]]:
        """Keep one call's result (a repeat keeps the first); every result the turn has so far, by call id."""

        def run(tx: Connection) -> dict[str, tuple[Any, bool]]:
            rows = tx.execute(select(BetaToolResultRow.__table__).where(BetaToolResultRow.turn_id == turn_id)).all()
            if all(row.call_id != call_id for row in rows):
                values = {"turn_id": turn_id, "call_id": call_id, "content": content, "is_error": is_error}
                tx.execute(insert(BetaToolResultRow).values(**values))
            rows = tx.execute(select(BetaToolResultRow.__table__).where(BetaToolResultRow.turn_id == turn_id)).all()
            return {row.call_id: (row.content, row.is_error) for row in rows}

        return await self.database.write(run)

    async def tool_results(self, turn_id: str) -> dict[str, tuple[Any, bool]]:
        query = select(BetaToolResultRow.__table__).where(BetaToolResultRow.turn_id == turn_id)
        rows = await self.database.read(lambda tx: tx.execute(query).all())
        return {row.call_id: (row.content, row.is_error) for row in rows}

    async def forget_tool_results(self, turn_id: str) -> None:
        await self.database.write(
            lambda tx: tx.execute(delete(BetaToolResultRow).where(BetaToolResultRow.turn_id == turn_id))
        )

    # -- input keys

    async def input_key_seen(self, tenant: str, session_id: str, key: str) -> bool:
        query = select(BetaInputKeyRow.note).where(
            BetaInputKeyRow.tenant_id == tenant,
            BetaInputKeyRow.session_id == session_id,
            BetaInputKeyRow.idempotency_key == key,
        )
        return await self.database.read(lambda tx: tx.execute(query).first()) is not None

    async def remember_input_key(self, tenant: str, session_id: str, key: str, now: datetime) -> None:
        values = {"tenant_id": tenant, "session_id": session_id, "idempotency_key": key, "created_at": now}

        def run(tx: Connection) -> None:
            which = (
                (BetaInputKeyRow.tenant_id == tenant)
                & (BetaInputKeyRow.session_id == session_id)
                & (BetaInputKeyRow.idempotency_key == key)
            )
            if tx.execute(select(BetaInputKeyRow.note).where(which)).first() is None:
                tx.execute(insert(BetaInputKeyRow).values(**values))

        await self.database.write(run)
