"""The whole runtime on PostgreSQL: the same code as on SQLite, only the store URL differs."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from llama_stack_client import Agent, LlamaStackClient

from store.database import open_database
from store.tenancy.rate_buckets import StoreRateBuckets
from tests.llama_stack.test_llama_stack_client import get_boiling_point
from tests.support.databases import postgres_database
from tests.support.llama_agent import user_messages
from tests.support.scripted_model import text, tool_call
from tests.support.stack import SCRIPTED_MODEL, Stack


@pytest.fixture(scope="module")
def postgres_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with postgres_database() as url:
        running = Stack(Path(tmp_path_factory.mktemp("pg-stack")), store_url=url)
        try:
            yield running
        finally:
            running.close()


def test_client_tool_turn_and_session_on_postgresql(postgres_stack: Stack) -> None:
    assert postgres_stack.settings.store_url.startswith("postgresql+asyncpg://")
    postgres_stack.model.script(tool_call("get_boiling_point", {"liquid_name": "polyjuice"}), text("-100 it is."))
    llama = LlamaStackClient(base_url=postgres_stack.base_url, max_retries=0, timeout=30)
    agent = Agent(llama, model=SCRIPTED_MODEL, instructions="Be brief.", tools=[get_boiling_point])
    session_id = agent.create_session("pg")

    turn = agent.create_turn(messages=user_messages("polyjuice?"), session_id=session_id, stream=False)

    assert [s.step_type for s in turn.steps] == ["inference", "tool_execution", "inference"]
    session = llama.agents.session.retrieve(session_id, agent_id=agent.agent_id)
    assert [t.turn_id for t in session.turns] == [turn.turn_id]
    assert session.turns[0].output_message.content == "-100 it is. "


def test_api_processes_of_one_postgresql_store_share_each_keys_rate(postgres_stack: Stack) -> None:
    keys = ("shared-rate-key-1", "shared-rate-key-2")
    limited = dict(api_keys=keys, rate_limit_per_minute=1, rate_limit_burst=3)  # no token comes back mid-test
    settings = postgres_stack.settings.model_copy(update=limited)
    first, second = ({"Authorization": f"Bearer {key}"} for key in keys)
    with postgres_stack.other_api(settings) as one, postgres_stack.other_api(settings) as two:
        statuses = [httpx.get(f"{url}/v1/agents", headers=first, timeout=60).status_code for url in (one, two, one)]
        assert statuses == [200, 200, 200]
        refused = httpx.get(
            f"{two}/v1/agents", headers=first, timeout=60
        )  # the key's burst is spent, in both processes
        assert refused.status_code == 429, refused.text
        assert int(refused.headers["retry-after"]) >= 1 and "at most 1 a minute" in refused.json()["detail"]
        assert httpx.get(f"{one}/v1/agents", headers=second, timeout=60).status_code == 200  # another key's own budget


def test_concurrent_takes_never_overdraw_a_bucket(postgres_stack: Stack) -> None:
    async def takes() -> list[float | None]:
        database = open_database(postgres_stack.settings.store_url)
        try:
            buckets = StoreRateBuckets(database)
            return await asyncio.gather(*(buckets.take("concurrent-key", 0.001, 5) for _ in range(30)))
        finally:
            await database.dispose()

    waits = asyncio.run(takes())
    assert waits.count(None) == 5
    refused = [wait for wait in waits if wait is not None]
    assert all(900 < wait <= 1000 for wait in refused), refused  # a token comes every 1,000 s
