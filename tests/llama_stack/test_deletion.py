"""Deleting a session or an agent stops its turns' workflows and leaves nothing behind, in the store or Temporal."""

from __future__ import annotations

import time
from contextlib import ExitStack

import httpx
from sqlalchemy import Connection, func, select
from temporalio.client import WorkflowExecutionStatus

from store.turns.tables import EventRow, StepRow, TurnRow
from tests.support.rest import create_agent, create_session, final_turn
from tests.support.scripted_model import ScriptedModel, text, tool_call
from tests.support.stack import Stack
from workflows.contracts import turn_workflow_id

SLOW_SECONDS = 3


def _ask(content: str) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": content}], "stream": True}


def _paused_and_running(
    stack: Stack, http: httpx.Client, model: ScriptedModel, streams: ExitStack
) -> tuple[str, list[tuple[str, str]]]:
    """An agent with two sessions: (session id, turn id) of a turn awaiting input, then of one mid model call."""
    model.script(tool_call("get_boiling_point", {"liquid_name": "x"}), text("too late", delay_seconds=SLOW_SECONDS))
    agent_id = create_agent(http)
    paused_session, running_session = create_session(http, agent_id), create_session(http, agent_id)
    paused = final_turn(http.post(f"/v1/agents/{agent_id}/session/{paused_session}/turn", json=_ask("pause")))
    assert paused["status"] == "awaiting_input"
    streams.enter_context(http.stream("POST", f"/v1/agents/{agent_id}/session/{running_session}/turn", json=_ask("go")))
    while len(model.requests) < 2:  # the slow model call has begun
        time.sleep(0.05)
    [running] = stack.background.run(stack.store.turns.unfinished_turn_ids(agent_id, running_session))
    return agent_id, [(paused_session, paused["turn_id"]), (running_session, running)]


def _status(stack: Stack, turn_id: str) -> WorkflowExecutionStatus | None:
    return stack.background.run(stack.client.get_workflow_handle(turn_workflow_id(turn_id)).describe()).status


def _termination_reason(stack: Stack, turn_id: str) -> str:
    history = stack.background.run(stack.client.get_workflow_handle(turn_workflow_id(turn_id)).fetch_history())
    return history.events[-1].workflow_execution_terminated_event_attributes.reason


def _stored_rows(stack: Stack, turn_ids: list[str]) -> dict[str, int | None]:
    def count(connection: Connection) -> dict[str, int | None]:
        return {
            table.__tablename__: connection.scalar(
                select(func.count()).select_from(table).where(table.turn_id.in_(turn_ids))
            )
            for table in (TurnRow, StepRow, EventRow)
        }

    return stack.background.run(stack.store.database.read(count))


def _assert_gone_after_the_slow_call(stack: Stack, turn_ids: list[str]) -> None:
    nothing = {"turns": 0, "steps": 0, "turn_events": 0}
    assert _stored_rows(stack, turn_ids) == nothing
    # The interrupted model call would have answered by now; nothing it could write comes back.
    time.sleep(SLOW_SECONDS + 1)
    assert _stored_rows(stack, turn_ids) == nothing
    assert all(_status(stack, turn_id) == WorkflowExecutionStatus.TERMINATED for turn_id in turn_ids)


def test_deleting_a_session_stops_its_paused_or_running_turn_and_only_its_own(
    stack: Stack, http: httpx.Client, model: ScriptedModel
) -> None:
    with ExitStack() as streams:
        agent_id, [(paused_session, paused), (running_session, running)] = _paused_and_running(
            stack, http, model, streams
        )

        assert http.delete(f"/v1/agents/{agent_id}/session/{paused_session}").status_code == 200
        assert _status(stack, paused) == WorkflowExecutionStatus.TERMINATED
        assert _termination_reason(stack, paused) == f"Session {paused_session} was deleted."
        assert _status(stack, running) == WorkflowExecutionStatus.RUNNING

        assert http.delete(f"/v1/agents/{agent_id}/session/{running_session}").status_code == 200
        assert _status(stack, running) == WorkflowExecutionStatus.TERMINATED

    for session_id in (paused_session, running_session):
        gone = http.get(f"/v1/agents/{agent_id}/session/{session_id}")
        assert gone.status_code == 404 and gone.json()["detail"] == f"Session {session_id} not found"
        assert http.delete(f"/v1/agents/{agent_id}/session/{session_id}").status_code == 404
    _assert_gone_after_the_slow_call(stack, [paused, running])


def test_deleting_an_agent_stops_the_turns_of_all_its_sessions(
    stack: Stack, http: httpx.Client, model: ScriptedModel
) -> None:
    with ExitStack() as streams:
        agent_id, turns = _paused_and_running(stack, http, model, streams)

        assert http.delete(f"/v1/agents/{agent_id}").status_code == 200

    turn_ids = [turn_id for _, turn_id in turns]
    assert all(_termination_reason(stack, turn_id) == f"Agent {agent_id} was deleted." for turn_id in turn_ids)
    assert http.get(f"/v1/agents/{agent_id}").status_code == 404
    assert all(http.get(f"/v1/agents/{agent_id}/session/{s}").status_code == 404 for s, _ in turns)
    assert http.delete(f"/v1/agents/{agent_id}").status_code == 404
    _assert_gone_after_the_slow_call(stack, turn_ids)
