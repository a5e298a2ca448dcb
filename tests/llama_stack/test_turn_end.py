"""A turn whose answer needs nothing more ends in its model call: the inference activity writes the turn's
end (step, status, output, turn_complete) with its last deltas, and the workflow only records it."""

from __future__ import annotations

from typing import Any

import httpx
from temporalio.api.enums.v1 import EventType

from domain.turns import Turn
from tests.support.rest import create_agent, create_session, sse_events
from tests.support.scripted_model import ScriptedModel, text, tool_call
from tests.support.stack import Stack
from workflows.contracts import turn_workflow_id
from workflows.turn import TurnWorkflow


def _turns(http: httpx.Client, **config: Any) -> str:
    agent_id = create_agent(http, **config)
    return f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"


def _ask(http: httpx.Client, turns: str) -> tuple[dict[str, Any], list[str]]:
    """A streamed turn: the turn its final event carries, and the kinds of the events streamed (a run of
    deltas as one)."""
    response = http.post(turns, json={"messages": [{"role": "user", "content": "hi"}], "stream": True})
    payloads = [body["event"]["payload"] for _, body in sse_events(response)]
    kinds = [p["event_type"] + (f":{p['delta']['type']}" if "delta" in p else "") for p in payloads]
    return payloads[-1]["turn"], [kind for i, kind in enumerate(kinds) if i == 0 or kind != kinds[i - 1]]


def _store_writes_by_the_workflow(stack: Stack, turn_id: str) -> list[str]:
    """The summaries of the workflow's own store writes (local activities) in its history."""
    handle = stack.client.get_workflow_handle(turn_workflow_id(turn_id))
    stack.background.run(handle.result())  # the client has the end before the run records its last task
    history = stack.background.run(handle.fetch_history())
    markers = [
        event
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
        and event.marker_recorded_event_attributes.marker_name == "core_local_activity"
    ]
    return [stack.background.run(stack.client.data_converter.decode([m.user_metadata.summary]))[0] for m in markers]


def _live(stack: Stack, turn_id: str) -> Turn:
    handle = stack.client.get_workflow_handle_for(TurnWorkflow.run, turn_workflow_id(turn_id))
    stack.background.run(handle.result())
    return stack.background.run(handle.query(TurnWorkflow.turn))


def test_a_plain_answer_is_written_as_the_turns_end_by_its_model_call(
    stack: Stack, http: httpx.Client, model: ScriptedModel
) -> None:
    model.script(text("all done here"))
    turns = _turns(http)

    streamed, kinds = _ask(http, turns)

    turn_id = streamed["turn_id"]
    assert kinds == ["step_start", "step_progress:text", "step_complete", "turn_complete"]
    assert _store_writes_by_the_workflow(stack, turn_id) == []
    stored = http.get(f"{turns}/{turn_id}").json()
    assert stored == streamed
    assert stored["status"] == "completed" and stored["output_message"]["content"] == "all done here "
    live = _live(stack, turn_id).model_dump(mode="json", exclude={"input_messages"})
    assert live == {key: value for key, value in stored.items() if key != "input_messages"}
    step = stored["steps"][0]
    assert stored["started_at"] < step["started_at"] < step["completed_at"] < stored["completed_at"]


def test_an_answer_at_the_limit_of_model_calls_ends_the_turn_from_its_model_call(
    stack: Stack, http: httpx.Client, model: ScriptedModel
) -> None:
    model.script(tool_call("get_boiling_point", {"liquid_name": "tea"}))
    turns = _turns(http, max_infer_iters=1)

    turn, kinds = _ask(http, turns)

    assert kinds[-2:] == ["step_complete", "turn_complete"]
    assert turn["status"] == "completed"
    assert turn["output_message"]["stop_reason"] == "end_of_turn"  # the call stays unexecuted
    assert turn["output_message"]["tool_calls"] == turn["steps"][0]["model_response"]["tool_calls"]
    assert _store_writes_by_the_workflow(stack, turn["turn_id"]) == []


def test_with_output_shields_the_workflow_checks_the_answer_then_writes_the_end(
    stack: Stack, http: httpx.Client, model: ScriptedModel
) -> None:
    model.script(text("all done here"))
    turns = _turns(http, output_shields=["keyword-guard"])

    turn, kinds = _ask(http, turns)

    assert turn["status"] == "completed"
    assert [s["step_type"] for s in turn["steps"]] == ["inference", "shield_call"]
    assert kinds[-2:] == ["step_complete", "turn_complete"]
    assert _store_writes_by_the_workflow(stack, turn["turn_id"]) == ["store · completed"]
