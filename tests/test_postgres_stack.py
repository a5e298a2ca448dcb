"""The whole runtime on PostgreSQL: the same code as on SQLite, only the store URL differs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from llama_stack_client import Agent, LlamaStackClient

from tests.databases import postgres_database
from tests.scripted_model import text, tool_call
from tests.stack import SCRIPTED_MODEL, Stack
from tests.test_llama_stack_client import get_boiling_point


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

    turn = agent.create_turn(messages=[{"role": "user", "content": "polyjuice?"}], session_id=session_id, stream=False)

    assert [s.step_type for s in turn.steps] == ["inference", "tool_execution", "inference"]
    session = llama.agents.session.retrieve(session_id, agent_id=agent.agent_id)
    assert [t.turn_id for t in session.turns] == [turn.turn_id]
    assert session.turns[0].output_message.content == "-100 it is. "
