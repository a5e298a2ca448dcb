"""Whatever a caller sends or a model or tool returns, a turn's workflow payloads stay under
Temporal's 2 MB limit: a turn either completes, fails visibly, or is refused at the door (413).
Before, an oversized payload made the workflow task fail forever: the turn never closed."""

from __future__ import annotations

import json
import time
import uuid
from datetime import UTC, datetime

import httpx
from temporalio.client import WorkflowExecutionStatus

from domain.content import UserMessage
from tests.support import mcp_server
from tests.support.processes import EVENT_SECONDS, wait_until
from tests.support.rest import create_agent, create_session, final_turn
from tests.support.scripted_model import Reply, ScriptedModel, text
from tests.support.stack import Stack
from workflows.contracts import turn_workflow_id

ECHO = "offline/echo"


def _workflow_closes(stack: Stack, turn_id: str) -> WorkflowExecutionStatus:
    handle = stack.client.get_workflow_handle(turn_workflow_id(turn_id))

    def closed() -> WorkflowExecutionStatus | None:
        status = stack.background.run(handle.describe()).status
        return status if status != WorkflowExecutionStatus.RUNNING else None

    return wait_until(closed, f"turn {turn_id}'s workflow closing", EVENT_SECONDS)


def _largest_payload(stack: Stack, turn_id: str) -> int:
    """The largest event of the turn's last run, once it has closed (its last events carry the final results)."""
    history = stack.closed_history(turn_workflow_id(turn_id))
    return max(len(event.SerializeToString()) for event in history.events)


def _next_turn_works(http: httpx.Client, turns: str) -> None:
    after = http.post(turns, json={"messages": [{"role": "user", "content": "still there?"}]}, timeout=60)
    assert after.status_code == 200, after.text
    assert after.json()["status"] == "completed"


def _message_of(size: int) -> dict[str, str]:
    return {"role": "user", "content": "m" * size}


def test_an_800_kb_message_completes_and_its_workflow_closes(stack: Stack, http: httpx.Client) -> None:
    agent_id = create_agent(http, model=ECHO, client_tools=[])
    turns = f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"

    response = http.post(turns, json={"messages": [_message_of(800_000)]}, timeout=60)

    assert response.status_code == 200, response.text[:500]
    turn = response.json()
    assert turn["status"] == "completed"
    assert turn["output_message"]["content"] == "You said: " + "m" * 800_000
    assert _workflow_closes(stack, turn["turn_id"]) == WorkflowExecutionStatus.COMPLETED
    assert _largest_payload(stack, turn["turn_id"]) < 1_000_000  # the model's reply, once; not the message too
    _next_turn_works(http, turns)


def test_a_1_9_mb_message_is_refused_at_the_door_or_completes(stack: Stack, http: httpx.Client) -> None:
    agent_id = create_agent(http, model=ECHO, client_tools=[])
    turns = f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"

    response = http.post(turns, json={"messages": [_message_of(1_900_000)]}, timeout=60)

    if response.status_code == 413:
        assert "limit" in response.json()["detail"]
    else:
        assert response.status_code == 200, response.text[:500]
        turn = response.json()
        assert turn["status"] == "completed"
        assert _workflow_closes(stack, turn["turn_id"]) == WorkflowExecutionStatus.COMPLETED
    _next_turn_works(http, turns)


def test_a_session_with_more_than_2_mb_of_history_takes_a_new_turn(
    stack: Stack, http: httpx.Client, model: ScriptedModel
) -> None:
    agent_id = create_agent(http, client_tools=[])
    session_id = create_session(http, agent_id)
    stack.seed_completed_turns(agent_id, session_id, count=30, answer_chars=100_000)  # 3 MB of history
    model.script(text("Noted."))
    turns = f"/v1/agents/{agent_id}/session/{session_id}/turn"

    response = http.post(turns, json={"messages": [{"role": "user", "content": "and now?"}]}, timeout=60)

    assert response.status_code == 200, response.text[:500]
    assert response.json()["output_message"]["content"] == "Noted. "
    sent = model.requests[0]["messages"]
    assert len(json.dumps(sent)) < 1_200_000, "the model got more than its history window"
    contents = [m.get("content") for m in sent]
    assert contents[0] == "Be brief." and contents[-1] == "and now?"
    assert "question 29" in contents  # the newest earlier turns are kept…
    assert "question 0" not in contents  # …the oldest are left out
    assert _workflow_closes(stack, response.json()["turn_id"]) == WorkflowExecutionStatus.COMPLETED


def test_a_model_reply_too_large_to_carry_fails_the_turn_visibly(
    stack: Stack, http: httpx.Client, model: ScriptedModel
) -> None:
    model.script(text(" ".join(["y" * 100_000] * 25)))  # 2.5 MB
    agent_id = create_agent(http, client_tools=[])
    turns = f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"

    response = http.post(turns, json={"messages": [{"role": "user", "content": "talk"}]}, timeout=60)

    assert response.status_code == 502, response.text[:500]
    assert "larger than" in response.json()["detail"]
    turn_id = http.get(f"/v1/agents/{agent_id}/session/{turns.split('/')[-2]}").json()["turns"][0]["turn_id"]
    assert _workflow_closes(stack, turn_id) == WorkflowExecutionStatus.COMPLETED
    _next_turn_works(http, turns)


def test_many_large_tool_results_at_once_are_carried(stack: Stack, http: httpx.Client, model: ScriptedModel) -> None:
    with mcp_server.registered_toolgroup(http) as toolgroup:
        # Nine results of 256 KiB each (after the cut): 2.3 MB decided by one model response.
        model.script(Reply(tool_calls=[("big_output", {"characters": 300_000})] * 9), text("Read them all."))
        agent_id = create_agent(http, toolgroups=[toolgroup], client_tools=[])
        turns = f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"

        response = http.post(turns, json={"messages": [{"role": "user", "content": "read"}]}, timeout=90)

    assert response.status_code == 200, response.text[:500]
    turn = response.json()
    assert turn["status"] == "completed"
    assert [s["step_type"] for s in turn["steps"]] == ["inference"] + ["tool_execution"] * 9 + ["inference"]
    assert _workflow_closes(stack, turn["turn_id"]) == WorkflowExecutionStatus.COMPLETED
    assert _largest_payload(stack, turn["turn_id"]) < 1_500_000


def test_a_turn_input_over_the_message_limit_is_413_naming_it(stack: Stack, model: ScriptedModel) -> None:
    model.script(Reply(tool_calls=[("get_boiling_point", {"liquid_name": "water"})]))
    small = stack.settings.model_copy(update={"max_message_bytes": 5000})
    with stack.other_api(small) as url, httpx.Client(base_url=url, timeout=60) as http:
        agent_id = create_agent(http)
        turns = f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"

        refused = http.post(turns, json={"messages": [_message_of(6000)]})
        assert refused.status_code == 413
        assert "DA_MAX_MESSAGE_BYTES" in refused.json()["detail"]

        paused = final_turn(http.post(turns, json={"messages": [_message_of(100)], "stream": True}))
        call = paused["output_message"]["tool_calls"][0]
        answer = {"call_id": call["call_id"], "tool_name": call["tool_name"], "content": "r" * 6000}
        resumed = http.post(f"{turns}/{paused['turn_id']}/resume", json={"tool_responses": [answer]})
        assert resumed.status_code == 413
        assert "tool results" in resumed.json()["detail"]
        answer["content"] = "100 C"
        assert http.post(f"{turns}/{paused['turn_id']}/resume", json={"tool_responses": [answer]}).status_code == 200


def test_large_steps_are_not_carried_into_a_continued_run(stack: Stack, model: ScriptedModel) -> None:
    """A turn that continues as new reloads its steps: 2.3 MB of them must not become one payload."""
    soon = stack.settings.model_copy(update={"continue_as_new_after_events": 30})
    with stack.other_api(soon) as url, httpx.Client(base_url=url, timeout=90) as http:
        with mcp_server.registered_toolgroup(http) as toolgroup:
            model.script(Reply(tool_calls=[("big_output", {"characters": 300_000})] * 9), text("Read them all."))
            agent_id = create_agent(http, toolgroups=[toolgroup], client_tools=[])
            session_id = create_session(http, agent_id)
            turns = f"/v1/agents/{agent_id}/session/{session_id}/turn"

            response = http.post(turns, json={"messages": [{"role": "user", "content": "read"}]})

        assert response.status_code == 200, response.text[:500]
        turn = response.json()
        assert turn["status"] == "completed" and turn["output_message"]["content"] == "Read them all. "
        handle = stack.client.get_workflow_handle(turn_workflow_id(turn["turn_id"]))
        description = stack.background.run(handle.describe())
        assert description.run_id != description.raw_description.workflow_execution_info.first_run_id
        assert _largest_payload(stack, turn["turn_id"]) < 1_500_000
        # Read back whole, from the store: nothing was lost by leaving contents out of the new run.
        stored = http.get(f"{turns}/{turn['turn_id']}").json()
        assert [len(s["tool_responses"][0]["content"]) > 262_144 for s in stored["steps"][1:10]] == [True] * 9


def test_a_turn_whose_workflow_task_keeps_failing_is_failed_and_frees_its_session(
    stack: Stack, http: httpx.Client
) -> None:
    """Whatever makes a workflow task fail (here: an input the worker cannot read), Temporal retries it
    forever. The turn must not stay running with its session refusing every new turn."""
    agent_id = create_agent(http, model=ECHO, client_tools=[])
    session_id = create_session(http, agent_id)
    stuck = str(uuid.uuid4())

    async def start_stuck_turn() -> None:
        await stack.store.turns.begin_turn(agent_id, session_id, stuck, [UserMessage(content="hi")], datetime.now(UTC))
        await stack.client.start_workflow(
            "AgentTurn", {"not": "a TurnStart"}, id=turn_workflow_id(stuck), task_queue=stack.settings.task_queue
        )

    stack.background.run(start_stuck_turn())
    turns = f"/v1/agents/{agent_id}/session/{session_id}/turn"
    deadline = time.monotonic() + EVENT_SECONDS
    while True:
        response = http.post(turns, json={"messages": [{"role": "user", "content": "next"}]})
        if response.status_code != 409 or time.monotonic() > deadline:
            break
        assert stuck in response.json()["detail"]
        time.sleep(2)

    assert response.status_code == 200, response.text
    assert response.json()["output_message"]["content"] == "You said: next"
    failed = http.get(f"{turns}/{stuck}").json()
    assert failed["status"] == "failed"
    assert "workflow task kept failing" in failed["error"]
    assert _workflow_closes(stack, stuck) == WorkflowExecutionStatus.TERMINATED
