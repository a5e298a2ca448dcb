"""`make run` (serve.py) of this code on the data directory of an earlier release: the release before the
store had migrations (33a2132), the release before the Agents API (fb3f566) and the last release
(f3b78a4), each left with a completed turn and a turn paused on a client tool — and, where the release
served them, a response paused on a function call and an Agents API session waiting for the caller's
tool result — their workflows waiting in the Temporal dev server's database.

The stack comes up at the first try (the store is migrated, the namespace given the search attributes
added since), the old rows read back, and each paused turn resumes in its own workflow and completes. The
data directories were written by those releases' own code: tests/support/make_release_data.py says how.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import tarfile
from contextlib import closing, suppress
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import Client, WorkflowExecutionStatus

from store.upgrade import head_revision
from tests.operations.test_serve import Service
from tests.support.make_release_data import AGENTS_BETA, WEATHER_FUNCTION
from tests.support.processes import EVENT_SECONDS, wait_until

pytestmark = pytest.mark.processes

RELEASES = Path(__file__).resolve().parent / "releases"


def resumed_answer(tool_name: str) -> str:
    """What the offline model says once the tool's result is in (providers/offline.py)."""
    return f"Tool {tool_name} returned: sunny."


def unpack(release: str, data_dir: Path) -> dict[str, Any]:
    """The release's data directory in `data_dir`; its manifest (what it holds)."""
    with tarfile.open(RELEASES / f"{release}.tar.xz") as archive:
        archive.extractall(data_dir, filter="data")
    return json.loads((data_dir / "manifest.json").read_text())


def waiting_workflows(data_dir: Path) -> list[str]:
    """The ids of the turn workflows the release left running, read from the dev server's database."""
    with closing(sqlite3.connect(data_dir / "temporal.db")) as temporal:
        rows = temporal.execute(
            "SELECT workflow_id FROM executions_visibility WHERE status = 1 AND workflow_type_name = 'AgentTurn'"
        ).fetchall()
    return sorted(workflow_id for (workflow_id,) in rows)


async def outcomes(temporal_port: int, workflow_ids: list[str]) -> dict[str, WorkflowExecutionStatus | None]:
    """How each workflow ended, once it has (its own execution, described: not a new run or a new turn)."""
    client = await Client.connect(f"127.0.0.1:{temporal_port}")

    async def ended(workflow_id: str) -> WorkflowExecutionStatus | None:
        handle = client.get_workflow_handle(workflow_id)
        with suppress(TimeoutError):  # still running: described as such
            await asyncio.wait_for(handle.result(follow_runs=True), EVENT_SECONDS)
        return (await handle.describe()).status

    return dict(zip(workflow_ids, await asyncio.gather(*map(ended, workflow_ids)), strict=True))


def resume_response(http: httpx.Client, paused: dict[str, Any]) -> tuple[httpx.Response, httpx.Response]:
    """The paused response as this code reads it, and the response that answers its function call."""
    before = http.get(f"/v1/responses/{paused['response_id']}")
    output = {"type": "function_call_output", "call_id": paused["call_id"], "output": "sunny"}
    answered = {
        "model": "offline/echo",
        "previous_response_id": paused["response_id"],
        "input": [output],
        "tools": [WEATHER_FUNCTION],
    }
    return before, http.post("/v1/responses", json=answered)


def resume_session(base_url: str, paused: dict[str, Any]) -> dict[str, Any]:
    """The answer to the caller's tool result; then, once the session's turn has ended, the session, its turns
    and its items."""
    url = f"/v1/agents/sessions/{paused['session_id']}"
    result = {"type": "agent.session.input.tool_result", "turn_id": paused["turn_id"], "call_id": paused["call_id"]}
    with httpx.Client(base_url=base_url, headers=AGENTS_BETA, timeout=60) as http:
        posted = http.post(f"{url}/events", json={"events": [result | {"success": True, "output": "sunny"}]})

        def ended() -> dict[str, Any] | None:
            session = http.get(url).json()
            return None if session["status"] in ("requires_action", "in_progress") else session

        session = ended() if posted.status_code != 202 else wait_until(ended, "the session's turn end", EVENT_SECONDS)
        turns, items = http.get(f"{url}/turns").json(), http.get(f"{url}/items").json()
    return {"posted": posted, "session": session, "turns": turns["data"], "items": items["data"]}


@pytest.mark.parametrize(
    ("release", "added_attributes"),
    # Each release's namespace lacks the search attributes added since it (workflows/search_attributes.py).
    [
        ("33a2132", "TenantId, ResponseId, ConversationId, AutomationId"),
        ("fb3f566", "AutomationId"),
        ("f3b78a4", None),
    ],
    ids=[
        "before store migrations (33a2132)",
        "before the Agents API (fb3f566)",
        "the last release (f3b78a4)",
    ],
)
def test_an_earlier_releases_data_directory_comes_up_and_its_paused_turns_complete(
    tmp_path: Path, release: str, added_attributes: str | None
) -> None:
    manifest = unpack(release, tmp_path)
    agent_id, session_id = manifest["agent_id"], manifest["session_id"]
    completed, paused = manifest["completed_turn"], manifest["paused_turn"]
    waiting = waiting_workflows(tmp_path)
    service = Service(tmp_path)
    service.start()
    try:
        with httpx.Client(base_url=service.url, timeout=60) as http:
            ready = http.get("/readyz")
            agent = http.get(f"/v1/agents/{agent_id}")
            session = http.get(f"/v1/agents/{agent_id}/session/{session_id}")
            turns = f"/v1/agents/{agent_id}/session/{session_id}/turn"
            answer = {"call_id": paused["call_id"], "tool_name": paused["tool_name"], "content": "sunny"}
            resumed = http.post(f"{turns}/{paused['turn_id']}/resume", json={"tool_responses": [answer]})
            after = http.get(f"/v1/agents/{agent_id}/session/{session_id}").json()
            if "paused_response" in manifest:
                response_before, response_after = resume_response(http, manifest["paused_response"])
        if "paused_agents_session" in manifest:
            beta = resume_session(service.url, manifest["paused_agents_session"])
        ended = asyncio.run(outcomes(service.temporal_port, waiting))
        log = service.log.read_text(errors="replace")
    finally:
        assert service.interrupt() == 0

    # Up at the first try: no child exited, nothing was restarted.
    assert "exited with code" not in log and "restarting" not in log, service.tail()
    assert log.count("API started (pid") == 1, service.tail()
    if added_attributes is None:  # the namespace already had every search attribute this code uses
        assert "added the search attributes" not in log, service.tail()
    else:
        assert f"added the search attributes {added_attributes} to the Temporal namespace" in log
    with closing(sqlite3.connect(tmp_path / "store.db")) as store:
        assert store.execute("SELECT version_num FROM alembic_version").fetchall() == [(head_revision(),)]
    assert ready.status_code == 200 and ready.json()["status"] == "ready", ready.text

    # The old rows read back.
    assert agent.status_code == 200, agent.text
    assert agent.json()["agent_config"]["model"] == "offline/echo"
    assert [tool["name"] for tool in agent.json()["agent_config"]["client_tools"]] == ["get_weather"]
    assert session.status_code == 200, session.text
    before = session.json()["turns"]
    assert [turn["turn_id"] for turn in before] == [completed["turn_id"], paused["turn_id"]]
    assert before[0]["status"] == "completed" and before[0]["output_message"]["content"] == completed["output"]
    assert before[1]["status"] == "awaiting_input"

    # The turn paused under the earlier release resumes in its workflow and completes.
    assert resumed.status_code == 200, resumed.text
    turn = resumed.json()
    assert turn["status"] == "completed", turn
    assert turn["output_message"]["content"] == resumed_answer("get_weather")
    assert [step["step_type"] for step in turn["steps"]] == ["inference", "tool_execution", "inference"]
    assert [t["status"] for t in after["turns"]] == ["completed", "completed"]

    if "paused_response" in manifest:  # the Responses dialect: the next response answers the function call
        assert response_before.status_code == 200, response_before.text
        assert [(item["type"], item["call_id"]) for item in response_before.json()["output"]] == [
            ("function_call", manifest["paused_response"]["call_id"])
        ]
        assert response_after.status_code == 200, response_after.text
        answered = response_after.json()
        assert answered["status"] == "completed", answered
        assert [part["text"] for item in answered["output"] for part in item["content"]] == [
            resumed_answer(manifest["paused_response"]["name"])
        ]

    if "paused_agents_session" in manifest:  # the Agents API: the caller's tool result resumes the session's turn
        paused_session = manifest["paused_agents_session"]
        assert beta["posted"].status_code == 202, beta["posted"].text
        assert beta["session"]["status"] == "idle", beta["session"]
        assert [(t["id"], t["status"]) for t in beta["turns"]] == [(paused_session["turn_id"], "completed")]
        kinds = [item["type"] for item in beta["items"]]
        assert kinds == ["message", "function_call", "function_call_output", "message"], beta["items"]
        assert beta["items"][-1]["content"][0]["text"] == resumed_answer(paused_session["name"])

    # Every workflow left waiting was resumed itself, not replaced by a new one, and completed.
    assert ended == dict.fromkeys(waiting, WorkflowExecutionStatus.COMPLETED)


@pytest.mark.parametrize(
    ("release", "paused"),
    [
        ("33a2132", {"paused_turn"}),
        ("fb3f566", {"paused_turn", "paused_response"}),
        ("f3b78a4", {"paused_turn", "paused_response", "paused_agents_session"}),
    ],
)
def test_each_fixture_is_small_and_holds_a_waiting_turn_of_each_dialect_its_release_served(
    tmp_path: Path, release: str, paused: set[str]
) -> None:
    assert (RELEASES / f"{release}.tar.xz").stat().st_size < 3_000_000
    manifest = unpack(release, tmp_path)
    waiting = waiting_workflows(tmp_path)
    assert {key for key in manifest if key.startswith("paused_")} == paused
    assert len(waiting) == len(paused)  # each its own workflow
    assert f"turn-{manifest['paused_turn']['turn_id']}" in waiting
    if "paused_agents_session" in manifest:
        assert f"turn-{manifest['paused_agents_session']['turn_id']}" in waiting
