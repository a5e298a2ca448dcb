"""The usage aggregate the console's usage page charts, on SQLite and PostgreSQL: a tenant's spend-ledger entries
summed per UTC day and model, its own sessions only, within the asked range and never more than MAX_DAYS."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Connection, insert

from store.agent_sessions.tables import BetaSessionRow
from store.agent_sessions.usage import MAX_DAYS, DailyUsage, UsageStore
from store.database import Database, open_database
from store.tenancy.tables import SpendEntryRow
from store.upgrade import upgrade_store
from tests.support.databases import store_url

DAY = datetime(2026, 3, 10, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgresql"])
async def database(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Database]:
    with store_url(request.param, tmp_path) as url:
        await upgrade_store(url)
        opened = open_database(url)
        try:
            yield opened
        finally:
            await opened.dispose()


async def _ledger(database: Database, entries: list[tuple[str, str, datetime, str, int, int, int]]) -> None:
    """Sessions of their tenants, and one ledger entry per (tenant, session, time, model, in, out, cost)."""

    def write(tx: Connection) -> None:
        for tenant, session in sorted({(entry[0], entry[1]) for entry in entries}):
            tx.execute(
                insert(BetaSessionRow).values(
                    session_id=session, tenant_id=tenant, body={}, created_at=DAY, last_active_at=DAY
                )
            )
        for number, (_, session, at, model, tokens_in, tokens_out, cost) in enumerate(entries):
            tx.execute(
                insert(SpendEntryRow).values(
                    step_id=f"step-{number}",
                    session_id=session,
                    turn_id="turn",
                    model=model,
                    input_tokens=tokens_in,
                    output_tokens=tokens_out,
                    cost_microcents=cost,
                    created_at=at,
                )
            )

    await database.write(write)


async def test_a_tenants_calls_are_summed_per_day_and_model_and_no_other_tenants_are(database: Database) -> None:
    late = DAY + timedelta(hours=23, minutes=59)
    await _ledger(
        database,
        [
            ("acme", "s1", DAY + timedelta(hours=1), "small", 10, 5, 1_500_000),
            ("acme", "s2", late, "small", 20, 5, 2_500_000),
            ("acme", "s1", late, "large", 100, 50, 15_000_000),
            ("acme", "s1", DAY + timedelta(days=1, minutes=1), "small", 1, 1, 200_000),
            ("acme", "s1", DAY - timedelta(days=40), "small", 7, 7, 1_000_000),  # before the range
            ("acme", "s1", DAY - timedelta(days=MAX_DAYS + 10), "small", 3, 3, 300_000),  # beyond MAX_DAYS
            ("other", "s3", DAY + timedelta(hours=2), "small", 999, 999, 99_000_000),
        ],
    )
    usage = UsageStore(database)
    found = await usage.daily("acme", DAY - timedelta(days=30), DAY + timedelta(days=2))
    assert found == [
        DailyUsage(date(2026, 3, 10), "large", 1, 100, 50, 15_000_000),
        DailyUsage(date(2026, 3, 10), "small", 2, 30, 10, 4_000_000),
        DailyUsage(date(2026, 3, 11), "small", 1, 1, 1, 200_000),
    ]
    assert found[1].cost_cents == 4.0
    assert await usage.daily("nobody", DAY - timedelta(days=30), DAY + timedelta(days=2)) == []
    assert len(await usage.daily("acme", DAY - timedelta(days=50), DAY + timedelta(days=2))) == 4
    bounded = await usage.daily("acme", DAY - timedelta(days=MAX_DAYS * 3), DAY + timedelta(days=2))
    assert [row.day for row in bounded] == [date(2026, 1, 29), date(2026, 3, 10), date(2026, 3, 10), date(2026, 3, 11)]
