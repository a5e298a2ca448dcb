"""Deleting a session is one durable operation: a Temporal workflow stops its waiting turn and deletes its rows,
so a process that dies half-way leaves neither rows nor a turn that nothing would ever stop."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from openai import OpenAI
from temporalio.client import WorkflowExecutionStatus

from tests.support.processes import EVENT_SECONDS, wait_until
from tests.support.scripted_model import ScriptedModel, tool_call
from tests.support.stack import SCRIPTED_MODEL, Stack
from workflows.contracts import turn_workflow_id
from workflows.session_deletion import session_deletion_workflow_id

WEATHER: Any = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}


def test_deleting_a_session_stops_its_waiting_turn_and_deletes_it_in_one_durable_workflow(
    client: OpenAI, model: ScriptedModel, stack: Stack
) -> None:
    model.script(tool_call("get_weather"))
    sessions = client.beta.agents.sessions
    session = sessions.create(
        environment={"type": "none"}, agent={"model": SCRIPTED_MODEL, "tools": [WEATHER]}, input="Weather?"
    )
    wait_until(lambda: sessions.retrieve(session.id).status == "requires_action", "the pause", EVENT_SECONDS)
    (turn,) = sessions.turns.list(session.id).data

    assert sessions.delete(session.id).deleted is True

    async def status(workflow_id: str) -> WorkflowExecutionStatus | None:
        return (await stack.client.get_workflow_handle(workflow_id).describe()).status

    deletion = stack.background.run(status(session_deletion_workflow_id(session.id)))
    assert deletion == WorkflowExecutionStatus.COMPLETED
    assert stack.background.run(status(turn_workflow_id(turn.id))) == WorkflowExecutionStatus.TERMINATED
    assert stack.background.run(stack.store.turns.turn_status(turn.id)) is None
    with pytest.raises(openai.NotFoundError):
        sessions.retrieve(session.id)
    with pytest.raises(openai.NotFoundError):
        sessions.delete(session.id)
