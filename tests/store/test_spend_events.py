"""A raised spend limit that lets a held turn go on records the session's `agent.session.in_progress` webhook
event in the limit's own transaction: the event commits with its cause, or neither does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path

import pytest

from agent_sessions.announce import session_event
from knowledge.engines import vector_index
from store.database import open_database
from store.repository import Store
from store.upgrade import upgrade_store
from tests.support.databases import store_url


@pytest.fixture(params=["sqlite", "postgresql"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    with store_url(request.param, tmp_path) as url:
        await upgrade_store(url)
        database = open_database(url)
        try:
            yield Store(database, vector_index(url))
        finally:
            await database.dispose()


async def test_lifting_the_limit_of_a_held_turn_records_its_in_progress_event_with_the_change(store: Store) -> None:
    await store.webhooks.create_endpoint(
        "t", "hook", "https://hooks.example/in", ["agent.session.in_progress"], "sealed", "hint", 10
    )
    resumed = ("t", partial(session_event, "agent.session.in_progress", "sess_a", occasion="budget1"))
    await store.spend.set_limit("sess_a", 0)
    assert (await store.spend.check("sess_a", "turn_a")).waiting_turn_id == "turn_a"

    spend, recorded = await store.spend.set_limit("sess_a", 0, resumed)  # still reached: the turn stays held
    assert not recorded and await store.webhooks.unstarted(10, "turn_a") == []

    spend, recorded = await store.spend.set_limit("sess_a", 100, resumed)
    assert recorded and spend.waiting_turn_id == "turn_a" and not spend.reached
    deliveries = await store.webhooks.unstarted(10, "turn_a")
    assert len(deliveries) == 1

    _, again = await store.spend.set_limit("sess_a", 200, resumed)  # the same cause: recorded once
    assert not again and len(await store.webhooks.unstarted(10, "turn_a")) == 1
