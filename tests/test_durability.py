"""A turn outlives its worker and outlives Temporal's memory of it."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest
from temporalio.service import RPCError, RPCStatusCode

from tests.rest import create_agent, create_session, final_turn
from tests.scripted_model import ScriptedModel, text, tool_call
from tests.stack import Stack
from workflows.contracts import turn_workflow_id


@pytest.fixture
def http(stack: Stack) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=stack.base_url, timeout=30) as client:
        yield client


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


def _gone_from_temporal(stack: Stack, workflow_id: str) -> bool:
    """Temporal deletes asynchronously; wait (bounded) until describe says not found."""
    for _ in range(100):
        try:
            stack.background.run(stack.client.get_workflow_handle(workflow_id).describe())
        except RPCError as error:
            return error.status == RPCStatusCode.NOT_FOUND
        time.sleep(0.1)
    return False


def test_finished_turn_is_served_after_temporal_forgets_it(
    stack: Stack, http: httpx.Client, model: ScriptedModel
) -> None:
    model.script(text("Remember me."))
    agent_id = create_agent(http)
    session_id = create_session(http, agent_id)
    turns = f"/v1/agents/{agent_id}/session/{session_id}/turn"
    turn = http.post(turns, json={"messages": [{"role": "user", "content": "hi"}]}).json()

    stack.background.run(
        stack.client.workflow_service.delete_workflow_execution(
            DeleteWorkflowExecutionRequest(
                namespace=stack.client.namespace,
                workflow_execution=WorkflowExecution(workflow_id=turn_workflow_id(turn["turn_id"])),
            )
        )
    )
    assert _gone_from_temporal(stack, turn_workflow_id(turn["turn_id"]))

    fetched = http.get(f"{turns}/{turn['turn_id']}")
    assert fetched.status_code == 200
    assert fetched.json()["output_message"]["content"] == "Remember me. "
    session = http.get(f"/v1/agents/{agent_id}/session/{session_id}").json()
    assert [t["turn_id"] for t in session["turns"]] == [turn["turn_id"]]
    # Its event stream replays from the store too.
    replay = http.get(f"{turns}/{turn['turn_id']}/events")
    assert replay.status_code == 200
    assert '"event_type":"turn_complete"' in replay.text
