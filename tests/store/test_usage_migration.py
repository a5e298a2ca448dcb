"""Revision 0022 on a store an earlier release left: the daily usage table is made, empty (earlier calls are not
counted in it), and a call counted after the upgrade is read back by the usage page's query."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest
from sqlalchemy import Connection, inspect, text

from store.database import open_database
from store.tenancy.usage import DailyUsage, UsageStore
from store.upgrade import upgrade_store
from tests.store.test_migrations import on
from tests.support.databases import store_url


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with store_url(request.param, tmp_path) as made:
        yield made


def test_upgrading_an_earlier_store_makes_the_empty_daily_usage_table(url: str) -> None:
    asyncio.run(upgrade_store(url, "0020"))
    assert "model_usage_daily" not in asyncio.run(on(url, lambda connection: inspect(connection).get_table_names()))

    asyncio.run(upgrade_store(url))

    def count(connection: Connection) -> int:
        return int(connection.execute(text("SELECT count(*) FROM model_usage_daily")).scalar_one())

    assert asyncio.run(on(url, count)) == 0

    def add(connection: Connection) -> None:
        connection.execute(
            text(
                "INSERT INTO model_usage_daily (tenant_id, day, model, calls, input_tokens, output_tokens, "
                "cost_microcents) VALUES ('acme', :day, 'small', 1, 10, 5, 7)"
            ),
            {"day": date(2026, 11, 27)},
        )

    asyncio.run(on(url, add))

    async def read() -> list[DailyUsage]:
        database = open_database(url)
        try:
            return await UsageStore(database).daily("acme", date(2026, 11, 1), date(2026, 11, 30))
        finally:
            await database.dispose()

    assert asyncio.run(read()) == [DailyUsage(date(2026, 11, 27), "small", 1, 10, 5, 7)]
