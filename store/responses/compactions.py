"""The `compactions` table (revision 0014) and the compaction event a turn's compaction step writes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update

from domain.model_calls import ModelCall
from store.database import Database
from store.responses.tables import CompactionRow
from store.turns.model_usage import count_tenant_call
from store.turns.tables import EventRow, TurnRow

TURN_COMPACTION_KEY = "compaction"
"""The key of a turn's compaction event (one per turn: it compacts before its first model call)."""


@dataclass(frozen=True)
class CompactionRecord:
    compaction_id: str
    tenant_id: str
    model: str
    source: list[dict[str, Any]]
    summary: str | None
    input_tokens: int | None
    output_tokens: int | None
    created_at: datetime
    completed_at: datetime | None


class CompactionStore:
    def __init__(self, database: Database) -> None:
        self.database = database

    async def add(
        self, compaction_id: str, tenant: str, model: str, source: list[dict[str, Any]], created_at: datetime
    ) -> None:
        row = {
            "compaction_id": compaction_id,
            "tenant_id": tenant,
            "model": model,
            "source": source,
            "created_at": created_at,
        }
        await self.database.write(lambda tx: tx.execute(insert(CompactionRow).values(**row)))

    async def get(self, compaction_id: str) -> CompactionRecord | None:
        query = select(CompactionRow.__table__).where(CompactionRow.compaction_id == compaction_id)
        row = await self.database.read(lambda tx: tx.execute(query).first())
        if row is None:
            return None
        return CompactionRecord(**{column: getattr(row, column) for column in CompactionRecord.__dataclass_fields__})

    async def write_summary(self, compaction_id: str, summary: str, call: ModelCall, completed_at: datetime) -> None:
        """Keep the summary and drop the messages it replaces, and count the summariser's `call` into the tenant's
        daily usage; a second write (a retried activity whose first attempt wrote and then died) keeps the first,
        and counts nothing."""
        written = (
            update(CompactionRow)
            .where(CompactionRow.compaction_id == compaction_id, CompactionRow.summary.is_(None))
            .values(
                summary=summary,
                source=[],
                input_tokens=call.input_tokens,
                output_tokens=call.output_tokens,
                completed_at=completed_at,
            )
            .returning(CompactionRow.tenant_id)
        )

        def run(tx: Connection) -> None:
            tenant = tx.scalar(written)
            if tenant is not None:
                count_tenant_call(tx, tenant, call, completed_at.astimezone(UTC).date())

        await self.database.write(run)

    async def delete(self, tenant: str, compaction_id: str) -> bool:
        """Delete the tenant's compaction (its summary, or the messages it had yet to summarise); false if none."""
        which = (CompactionRow.compaction_id == compaction_id) & (CompactionRow.tenant_id == tenant)
        return await self.database.write(lambda tx: tx.execute(delete(CompactionRow).where(which)).rowcount > 0)

    async def turn_compaction(self, turn_id: str) -> dict[str, Any] | None:
        """The runtime body of the turn's compaction event (its summary, sealed item), if it compacted."""
        query = select(EventRow.body).where(EventRow.turn_id == turn_id, EventRow.key == TURN_COMPACTION_KEY)
        body = await self.database.read(lambda tx: tx.scalar(query))
        return body["runtime"] if body is not None else None

    async def session_compaction(self, session_id: str, at: datetime) -> SessionCompaction | None:
        """The session's latest compaction at or before `at` (a turn's start): it stands for the turns before
        the turn that made it."""
        query = (
            select(TurnRow.turn_id, TurnRow.started_at, EventRow.body)
            .join(EventRow, EventRow.turn_id == TurnRow.turn_id)
            .where(TurnRow.session_id == session_id, TurnRow.started_at <= at, EventRow.key == TURN_COMPACTION_KEY)
            .order_by(TurnRow.started_at.desc())
            .limit(1)
        )
        row = await self.database.read(lambda tx: tx.execute(query).first())
        if row is None:
            return None
        return SessionCompaction(row.turn_id, row.started_at, row.body["runtime"]["summary"])


@dataclass(frozen=True)
class SessionCompaction:
    turn_id: str
    started_at: datetime
    """The turn that compacted: the summary stands for the session's turns before it."""
    summary: str
