"""A tenant's model usage by day and model, read from the daily aggregate (store/tenancy/tables.py
ModelUsageRow): every model call of every dialect (llama-stack turns, Responses, Agents API sessions, and their
turns' compaction summaries) is counted there as its usage event is written (store/turns/model_usage.py).

The query is bounded: at most MAX_DAYS days of one row per day and model, so a tenant with millions of calls
reads at most MAX_DAYS times its number of models.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from sqlalchemy import Connection, select

from store.database import Database
from store.tenancy.spend import MICROCENTS_PER_CENT
from store.tenancy.tables import ModelUsageRow

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


def _day(value: object) -> date:
    """SQLite answers a date as text, PostgreSQL as a date."""
    return value if isinstance(value, date) else date.fromisoformat(str(value)[:10])


class UsageStore:
    def __init__(self, database: Database) -> None:
        self.database = database

    async def daily(self, tenant: str, first: date, last: date) -> list[DailyUsage]:
        """The tenant's calls of the UTC days `first` to `last` (both included), per day and model, oldest day
        first; at most the last MAX_DAYS days of the range are read, whatever it asks."""
        first = max(first, last - timedelta(days=MAX_DAYS - 1))
        usage = ModelUsageRow
        query = (
            select(usage.day, usage.model, usage.calls, usage.input_tokens, usage.output_tokens, usage.cost_microcents)
            .where(usage.tenant_id == tenant, usage.day >= first, usage.day <= last)
            .order_by(usage.day, usage.model)
        )

        def read(tx: Connection) -> list[DailyUsage]:
            return [
                DailyUsage(_day(day), model, int(calls), int(tokens_in), int(tokens_out), int(cost))
                for day, model, calls, tokens_in, tokens_out, cost in tx.execute(query)
            ]

        return await self.database.read(read)
