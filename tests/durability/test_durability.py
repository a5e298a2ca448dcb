"""A turn outlives its worker and outlives Temporal's memory of it."""

from __future__ import annotations

import httpx
import pytest
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from serve import temporal_binary
from tests.support.rest import create_agent, create_session, final_turn, sse_events
from tests.support.scripted_model import ScriptedModel, text, tool_call
from tests.support.stack import DEV_SERVER_STARTUP_TIMEOUT, Stack
from workflows import search_attributes
from workflows.contracts import turn_workflow_id


def test_paused_turn_survives_a_worker_restart(stack: Stack, http: httpx.Client, model: ScriptedModel) -> None:
    model.script(tool_call("get_boiling_point", {"liquid_name": "polyjuice"}), text("Resumed fine."))
    agent_id = create_agent(http)
    session_id = create_session(http, agent_id)
    turns = f"/v1/agents/{agent_id}/session/{session_id}/turn"
    paused = final_turn(http.post(turns, json={"messages": [{"role": "user", "content": "go"}], "stream": True}))
    assert paused["status"] == "awaiting_input"

    stack.stop_worker()
    try:
        # With no worker, the turn is still readable and still waiting.
        waiting = http.get(f"{turns}/{paused['turn_id']}").json()
        assert waiting["status"] == "awaiting_input"
        assert waiting["output_message"]["tool_calls"][0]["tool_name"] == "get_boiling_point"
    finally:
        stack.start_worker()

    call_id = paused["output_message"]["tool_calls"][0]["call_id"]
    responses = [{"call_id": call_id, "tool_name": "get_boiling_point", "content": "-100"}]
    resumed = http.post(f"{turns}/{paused['turn_id']}/resume", json={"tool_responses": responses, "stream": False})

    assert resumed.status_code == 200, resumed.text
    turn = resumed.json()
    assert turn["status"] == "completed"
    assert turn["output_message"]["content"] == "Resumed fine. "
    assert [s["step_type"] for s in turn["steps"]] == ["inference", "tool_execution", "inference"]


def test_finished_turn_is_served_after_temporal_forgets_it(
    stack: Stack, http: httpx.Client, model: ScriptedModel
) -> None:
    model.script(text("Remember me."))
    agent_id = create_agent(http)
    session_id = create_session(http, agent_id)
    turns = f"/v1/agents/{agent_id}/session/{session_id}/turn"
    turn = http.post(turns, json={"messages": [{"role": "user", "content": "hi"}]}).json()

    # A fresh, empty Temporal server — as if the dev server's database had been deleted — and a
    # second API process on it, sharing only the store.
    amnesiac = stack.background.run(
        WorkflowEnvironment.start_local(
            dev_server_existing_path=temporal_binary(),
            search_attributes=search_attributes.ALL,
            dev_server_startup_timeout=DEV_SERVER_STARTUP_TIMEOUT,
        )
    )
    settings = stack.settings.model_copy(update={"temporal_address": amnesiac.client.service_client.config.target_host})
    try:
        with pytest.raises(RPCError) as unknown:
            stack.background.run(amnesiac.client.get_workflow_handle(turn_workflow_id(turn["turn_id"])).describe())
        assert unknown.value.status == RPCStatusCode.NOT_FOUND
        with stack.other_api(settings) as url, httpx.Client(base_url=url, timeout=30) as other:
            fetched = other.get(f"{turns}/{turn['turn_id']}")
            assert fetched.status_code == 200
            assert fetched.json()["output_message"]["content"] == "Remember me. "
            session = other.get(f"/v1/agents/{agent_id}/session/{session_id}").json()
            assert [t["turn_id"] for t in session["turns"]] == [turn["turn_id"]]
            # Its event stream replays from the store too.
            replay = other.get(f"{turns}/{turn['turn_id']}/events")
            assert replay.status_code == 200
            assert sse_events(replay)[-1][1]["event"]["payload"]["event_type"] == "turn_complete"
    finally:
        stack.background.run(amnesiac.shutdown())
