"""Big work: hundreds of tool steps in one turn, a thousand turns in a session, megabyte tool output."""

from __future__ import annotations

import json

import httpx
from temporalio.api.enums.v1 import EventType

from tests.support import mcp_server
from tests.support.rest import create_agent, create_session, final_turn
from tests.support.scripted_model import ScriptedModel, text, tool_call
from tests.support.stack import Stack
from tool_runtime.output_limit import MAX_TOOL_OUTPUT_CHARS
from workflows.contracts import turn_workflow_id


def _largest_payload(stack: Stack, workflow_id: str) -> int:
    """The largest single payload in the history of the workflow's last run, once closed, in bytes."""
    history = stack.closed_history(workflow_id)
    return max(len(event.SerializeToString()) for event in history.events)


def test_a_turn_of_many_tool_steps_continues_as_new_and_completes(stack: Stack, model: ScriptedModel) -> None:
    model.script(*[tool_call("calculate", {"expression": f"{i} + 1"}) for i in range(60)], text("All done."))
    settings = stack.settings.model_copy(update={"continue_as_new_after_events": 150})
    with stack.other_api(settings) as url, httpx.Client(base_url=url, timeout=300) as http:
        agent_id = create_agent(http, toolgroups=["builtin::calculator"], client_tools=[], max_infer_iters=80)
        turns = f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"
        turn = http.post(turns, json={"messages": [{"role": "user", "content": "count"}]}).json()

    assert turn["status"] == "completed"
    kinds = [s["step_type"] for s in turn["steps"]]
    assert kinds == ["inference", "tool_execution"] * 60 + ["inference"]
    assert [s["tool_responses"][0]["content"] for s in turn["steps"][1::2]][:3] == ["1", "2", "3"]
    assert turn["steps"][-2]["tool_responses"][0]["content"] == "60"
    assert len({s["step_id"] for s in turn["steps"]}) == 121
    history = stack.closed_history(turn_workflow_id(turn["turn_id"]))
    description = stack.background.run(stack.client.get_workflow_handle(turn_workflow_id(turn["turn_id"])).describe())
    assert description.run_id != description.raw_description.workflow_execution_info.first_run_id
    assert len(history.events) < 250
    assert history.events[0].workflow_execution_started_event_attributes.continued_execution_run_id
    # The model saw the whole turn at the end, across runs.
    assert len(model.requests[-1]["messages"]) == 2 + 120


def test_a_session_with_1000_turns_loads_history_without_a_giant_payload(
    stack: Stack, http: httpx.Client, model: ScriptedModel
) -> None:
    agent_id = create_agent(http, client_tools=[])
    session_id = create_session(http, agent_id)
    stack.seed_completed_turns(agent_id, session_id, count=1000, answer_chars=200)
    model.script(text("I remember all of it."))
    turns = f"/v1/agents/{agent_id}/session/{session_id}/turn"

    turn = http.post(turns, json={"messages": [{"role": "user", "content": "recap"}]}).json()

    assert turn["output_message"]["content"] == "I remember all of it. "
    sent = model.requests[0]["messages"]
    assert len(sent) == 1 + 2000 + 1
    assert sent[1]["content"] == "question 0" and sent[-2]["content"].startswith("answer 999")
    assert _largest_payload(stack, turn_workflow_id(turn["turn_id"])) < 20_000
    assert len(http.get(f"/v1/agents/{agent_id}/session/{session_id}").json()["turns"]) == 1001


def test_megabytes_of_tool_output_are_cut_with_a_marker(stack: Stack, http: httpx.Client, model: ScriptedModel) -> None:
    with mcp_server.registered_toolgroup(http) as toolgroup:
        model.script(
            tool_call("big_output", {"characters": 2_500_000}),
            tool_call("get_boiling_point", {"liquid_name": "x"}),
            text("Both were long."),
        )
        agent_id = create_agent(http, toolgroups=[toolgroup])
        turns = f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"
        paused = final_turn(http.post(turns, json={"messages": [{"role": "user", "content": "go"}], "stream": True}))
        call = paused["output_message"]["tool_calls"][0]
        huge = {"call_id": call["call_id"], "tool_name": call["tool_name"], "content": "z" * 900_000}
        turn = http.post(f"{turns}/{paused['turn_id']}/resume", json={"tool_responses": [huge]}).json()

    assert turn["status"] == "completed", turn
    server_output = turn["steps"][1]["tool_responses"][0]["content"]
    client_output = turn["steps"][3]["tool_responses"][0]["content"]
    assert (
        server_output.startswith("x" * 1000) and "[truncated by durable-agents: 2,237,856 of 2,500,000" in server_output
    )
    assert client_output.startswith("z" * 1000) and "of 900,000 characters omitted]" in client_output
    assert len(server_output) < MAX_TOOL_OUTPUT_CHARS + 200
    history = stack.closed_history(turn_workflow_id(turn["turn_id"]))
    assert not any(e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED for e in history.events)
    assert json.dumps(turn)  # the whole turn is still a readable document
