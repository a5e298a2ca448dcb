"""The tenants' daily model usage the console's usage page charts, on SQLite and PostgreSQL: every model call is
counted, per tenant, UTC day and model, in the transaction that writes its usage event, so a retried write counts
once; the page's query reads the tenant's own rows of the asked days, never more than MAX_DAYS."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Connection, insert

from domain.agents import Agent, AgentConfig
from domain.content import UserMessage
from domain.events import KeyedEvent
from domain.model_calls import ModelCall
from domain.turn_settings import TurnSettings
from store.repository import Store
from store.tenancy.tables import ModelUsageRow
from store.tenancy.usage import MAX_DAYS, DailyUsage, UsageStore
from tests.support.databases import opened_store
from workflows.contracts import runtime_event

DAY = date(2026, 3, 10)
T0 = datetime(2026, 3, 10, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgresql"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    async with opened_store(request.param, tmp_path) as store:
        yield store


def _usage(step_id: str, model: str, tokens_in: int, tokens_out: int, cost: int) -> KeyedEvent:
    return runtime_event(
        f"{step_id}:usage", "usage", step_id=step_id, **ModelCall(model, tokens_in, tokens_out, cost).event_fields()
    )


async def _today(store: Store, tenant: str) -> list[tuple[str, int, int, int, int]]:
    """The tenant's usage of today (UTC; yesterday too, should the test cross midnight), without the day."""
    today = datetime.now(UTC).date()
    rows = await UsageStore(store.database).daily(tenant, today - timedelta(days=1), today)
    return sorted((row.model, row.calls, row.input_tokens, row.output_tokens, row.cost_microcents) for row in rows)


async def test_every_dialects_calls_are_counted_once_per_write_and_per_tenant(store: Store) -> None:
    # A Responses turn of acme (a detached turn, its tenant its own) and a llama-stack turn of an agent of beta.
    await store.turns.begin_detached_turn(
        "acme", "t-resp", [UserMessage(content="q")], [], "s", TurnSettings(model="m"), T0
    )
    agent = Agent(agent_id="a1", agent_config=AgentConfig(model="small", instructions="i"), created_at=T0)
    await store.turns.create_agent("beta", agent)
    await store.turns.create_session("a1", "s1", "name", T0)
    await store.turns.begin_turn("a1", "s1", "t-llama", [UserMessage(content="q")], T0)

    await store.turns.save_turn_progress("t-resp", events=[_usage("step-1", "small", 10, 5, 1_500_000)])
    # The activity retried: its attempt writes the step's usage event again (the model answered anew, with other
    # figures): the event is kept once, and so is the call.
    await store.turns.save_turn_progress("t-resp", events=[_usage("step-1", "small", 99, 99, 9_900_000)])
    await store.turns.save_turn_progress(
        "t-resp",
        events=[_usage("step-2", "small", 20, 5, 2_500_000), _usage("step-3", "large", 100, 50, 15_000_000)],
    )
    # A usage event of an earlier release names no model: not counted; other events are not calls.
    earlier = runtime_event("step-4:usage", "usage", step_id="step-4", input_tokens=7, output_tokens=7)
    await store.turns.save_turn_progress("t-resp", events=[earlier, runtime_event("step-4:x", "segment_started")])
    await store.turns.save_turn_progress("t-llama", events=[_usage("step-9", "small", 3, 4, 0)])

    # A standalone compaction's summary (POST /v1/responses/compact), its activity retried after it wrote.
    await store.compactions.add("cmp-1", "acme", "large", [{"role": "user", "content": "q"}], T0)
    for attempt in range(2):
        summary = ModelCall("large", 40 + attempt, 8, 600_000)
        await store.compactions.write_summary("cmp-1", "summary", summary, datetime.now(UTC))

    assert await _today(store, "acme") == [("large", 2, 140, 58, 15_600_000), ("small", 2, 30, 10, 4_000_000)]
    assert await _today(store, "beta") == [("small", 1, 3, 4, 0)]
    assert await _today(store, "nobody") == []


async def _rows(store: Store, rows: list[tuple[str, date, str, int, int, int, int]]) -> None:
    def write(tx: Connection) -> None:
        for tenant, day, model, calls, tokens_in, tokens_out, cost in rows:
            tx.execute(
                insert(ModelUsageRow).values(
                    tenant_id=tenant,
                    day=day,
                    model=model,
                    calls=calls,
                    input_tokens=tokens_in,
                    output_tokens=tokens_out,
                    cost_microcents=cost,
                )
            )

    await store.database.write(write)


async def test_the_page_reads_the_tenants_own_days_in_range_and_never_more_than_max_days(store: Store) -> None:
    await _rows(
        store,
        [
            ("acme", DAY, "small", 2, 30, 10, 4_000_000),
            ("acme", DAY, "large", 1, 100, 50, 15_000_000),
            ("acme", DAY + timedelta(days=1), "small", 1, 1, 1, 200_000),
            ("acme", DAY + timedelta(days=3), "small", 1, 1, 1, 1),  # after the range
            ("acme", DAY - timedelta(days=40), "small", 1, 7, 7, 1_000_000),  # before the range
            ("acme", DAY - timedelta(days=MAX_DAYS + 10), "small", 1, 3, 3, 300_000),  # beyond MAX_DAYS
            ("other", DAY, "small", 9, 999, 999, 99_000_000),
        ],
    )
    usage = UsageStore(store.database)
    found = await usage.daily("acme", DAY - timedelta(days=30), DAY + timedelta(days=2))
    assert found == [
        DailyUsage(DAY, "large", 1, 100, 50, 15_000_000),
        DailyUsage(DAY, "small", 2, 30, 10, 4_000_000),
        DailyUsage(DAY + timedelta(days=1), "small", 1, 1, 1, 200_000),
    ]
    assert found[1].cost_cents == 4.0
    assert await usage.daily("nobody", DAY - timedelta(days=30), DAY + timedelta(days=2)) == []
    assert len(await usage.daily("acme", DAY - timedelta(days=50), DAY + timedelta(days=2))) == 4
    bounded = await usage.daily("acme", DAY - timedelta(days=MAX_DAYS * 3), DAY + timedelta(days=2))
    assert [row.day for row in bounded] == [DAY - timedelta(days=40), DAY, DAY, DAY + timedelta(days=1)]
