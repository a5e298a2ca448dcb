"""A store of an older revision, holding agents, sessions, a completed turn and a turn paused on a client
tool, is upgraded by the next process that starts, and the paused turn resumes and completes."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from alembic import command
from sqlalchemy import Connection, text

from store.upgrade import BASELINE, head_revision, migrations_config
from tests.store.test_migrations import drift, on, revisions
from tests.support.databases import store_url
from tests.support.rest import create_agent, create_session, final_turn
from tests.support.scripted_model import text as answer
from tests.support.scripted_model import tool_call
from tests.support.stack import Stack


@pytest.fixture(params=["sqlite", "postgresql"])
def older_stack(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Stack]:
    with store_url(request.param, tmp_path) as url:
        running = Stack(tmp_path / "stack", store_url=url)
        try:
            yield running
        finally:
            running.close()


def make_older(connection: Connection, *, keep_version: bool) -> None:
    """Take the store back to the baseline revision, as the code of that revision left it."""
    config = migrations_config()
    config.attributes["connection"] = connection
    command.downgrade(config, BASELINE)
    if not keep_version:
        connection.execute(text("DROP TABLE alembic_version"))


def test_an_older_store_is_upgraded_at_start_and_its_paused_turn_resumes(older_stack: Stack) -> None:
    stack, url = older_stack, older_stack.settings.store_url
    # Recorded by the runtime: an agent, a session, a completed turn, then a turn paused on a client tool.
    stack.model.script(answer("First answer."), tool_call("get_boiling_point", {"liquid_name": "polyjuice"}))
    with httpx.Client(base_url=stack.base_url, timeout=60) as http:
        agent_id = create_agent(http)
        session_id = create_session(http, agent_id)
        turns = f"/v1/agents/{agent_id}/session/{session_id}/turn"
        completed = http.post(turns, json={"messages": [{"role": "user", "content": "one"}]}).json()
        paused = final_turn(http.post(turns, json={"messages": [{"role": "user", "content": "two"}], "stream": True}))
    assert (completed["status"], paused["status"]) == ("completed", "awaiting_input")

    # The processes stop; the store is as the older code left it: on SQLite, as made by create_all
    # before migrations existed (no alembic_version); on PostgreSQL, at the baseline revision.
    stack.stop_worker()
    keep_version = url.startswith("postgresql")
    asyncio.run(on(url, lambda connection: make_older(connection, keep_version=keep_version)))
    assert asyncio.run(on(url, revisions)) == ((BASELINE,) if keep_version else ())

    # The new version starts: its API process upgrades the store, then serves it; its worker starts.
    stack.model.script(answer("Resumed after the upgrade."))
    with stack.other_api(stack.settings) as upgraded_api, httpx.Client(base_url=upgraded_api, timeout=60) as http:
        assert asyncio.run(on(url, revisions)) == (head_revision(),)
        assert asyncio.run(on(url, drift)) == []
        stack.reconnect_store()
        stack.start_worker()

        call_id = paused["output_message"]["tool_calls"][0]["call_id"]
        responses = [{"call_id": call_id, "tool_name": "get_boiling_point", "content": "-100"}]
        resumed = http.post(f"{turns}/{paused['turn_id']}/resume", json={"tool_responses": responses})
        session = http.get(f"/v1/agents/{agent_id}/session/{session_id}").json()
        agents = http.get("/v1/agents").json()["data"]

    assert resumed.status_code == 200, resumed.text
    assert resumed.json()["status"] == "completed"
    assert resumed.json()["output_message"]["content"].strip() == "Resumed after the upgrade."
    assert [s["step_type"] for s in resumed.json()["steps"]] == ["inference", "tool_execution", "inference"]
    assert [t["turn_id"] for t in session["turns"]] == [completed["turn_id"], paused["turn_id"]]
    assert session["turns"][0]["output_message"]["content"].strip() == "First answer."
    assert [a["agent_id"] for a in agents] == [agent_id]
