"""A tenant's model usage by day and model, read from the spend ledger (store/tenancy/spend.py): the one place
every priced model call is entered with its model, tokens, cost and time. Its entries name a session, not a
tenant, so the tenant is the Agents API session's; the ledger covers those sessions' calls (their inferences,
compaction summaries and `llama_guard` shield calls), which is what the console's usage page charts.

The query is bounded: at most MAX_DAYS days, grouped in the database, so a tenant with millions of calls reads
at most one row per day and model.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Date, func, select
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from store.agent_sessions.tables import BetaSessionRow
from store.database import Database
from store.tenancy.spend import MICROCENTS_PER_CENT
from store.tenancy.tables import SpendEntryRow

MAX_DAYS = 366


@dataclass(frozen=True)
class DailyUsage:
    day: date
    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    cost_microcents: int

    @property
    def cost_cents(self) -> float:
        return self.cost_microcents / MICROCENTS_PER_CENT


class UtcDay(FunctionElement[date]):
    """The UTC day of a stored time: PostgreSQL's date() reads a timestamptz in the session's time zone."""

    type = Date()
    inherit_cache = True


@compiles(UtcDay)
def _utc_day(element: UtcDay, compiler: Any, **kw: Any) -> str:
    return f"date({compiler.process(element.clauses, **kw)})"  # SQLite keeps UTC text


@compiles(UtcDay, "postgresql")
def _utc_day_postgres(element: UtcDay, compiler: Any, **kw: Any) -> str:
    return f"date(timezone('UTC', {compiler.process(element.clauses, **kw)}))"


def _day(value: object) -> date:
    """SQLite answers a date as text, PostgreSQL as a date."""
    return value if isinstance(value, date) else date.fromisoformat(str(value)[:10])


class UsageStore:
    def __init__(self, database: Database) -> None:
        self.database = database

    async def daily(self, tenant: str, since: datetime, until: datetime) -> list[DailyUsage]:
        """The tenant's calls from `since` (inclusive) to `until` (exclusive), summed per UTC day and model,
        oldest day first; at most MAX_DAYS days are read, whatever the range asks."""
        since = max(since, until - timedelta(days=MAX_DAYS))
        day = UtcDay(SpendEntryRow.created_at)
        query = (
            select(
                day,
                SpendEntryRow.model,
                func.count(),
                func.sum(SpendEntryRow.input_tokens),
                func.sum(SpendEntryRow.output_tokens),
                func.sum(SpendEntryRow.cost_microcents),
            )
            .join(BetaSessionRow, BetaSessionRow.session_id == SpendEntryRow.session_id)
            .where(
                BetaSessionRow.tenant_id == tenant,
                SpendEntryRow.created_at >= since,
                SpendEntryRow.created_at < until,
            )
            .group_by(day, SpendEntryRow.model)
            .order_by(day, SpendEntryRow.model)
        )

        def read(tx: Connection) -> list[DailyUsage]:
            return [
                DailyUsage(_day(row[0]), row[1], int(row[2]), int(row[3] or 0), int(row[4] or 0), int(row[5] or 0))
                for row in tx.execute(query)
            ]

        return await self.database.read(read)
