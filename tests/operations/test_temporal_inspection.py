"""What an operator sees in the Temporal UI: searchable turns, summaries, and why a turn waits."""

from __future__ import annotations

import uuid

import httpx
import pytest
from google.protobuf.duration_pb2 import Duration
from temporalio.api.enums.v1 import EventType
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest
from temporalio.client import Client

from hosting.search_attribute_schema import MissingSearchAttributes, require_search_attributes
from tests.support.processes import EVENT_SECONDS, wait_until
from tests.support.rest import create_agent, create_session, final_turn
from tests.support.scripted_model import ScriptedModel, text, tool_call
from tests.support.stack import Stack
from workflows.contracts import turn_workflow_id


def _list_ids(stack: Stack, query: str, expected: int) -> set[str]:
    """Visibility is eventually consistent: poll (bounded) until `expected` workflows match."""

    async def ids() -> set[str]:
        return {w.id async for w in stack.client.list_workflows(query)}

    def enough() -> set[str] | None:
        found = stack.background.run(ids())
        return found if len(found) >= expected else None

    return wait_until(enough, f"{expected} workflows found by {query}", EVENT_SECONDS)


def test_operator_finds_a_sessions_turns_and_reads_why_one_waits(
    stack: Stack, http: httpx.Client, model: ScriptedModel
) -> None:
    model.script(text("first answer"), tool_call("get_boiling_point", {"liquid_name": "tea"}))
    agent_id = create_agent(http)
    session_id = create_session(http, agent_id)
    turns = f"/v1/agents/{agent_id}/session/{session_id}/turn"
    done = http.post(turns, json={"messages": [{"role": "user", "content": "Say something"}]}).json()
    long_question = "What is the boiling point of tea? " * 10
    paused = final_turn(
        http.post(turns, json={"messages": [{"role": "user", "content": long_question}], "stream": True})
    )

    session_turns = _list_ids(stack, f'SessionId="{session_id}"', 2)
    assert session_turns == {turn_workflow_id(done["turn_id"]), turn_workflow_id(paused["turn_id"])}
    waiting = _list_ids(stack, f'SessionId="{session_id}" AND TurnStatus="awaiting_input"', 1)
    assert waiting == {turn_workflow_id(paused["turn_id"])}
    assert _list_ids(stack, f'AgentId="{agent_id}" AND TurnStatus="completed"', 1) == {
        turn_workflow_id(done["turn_id"])
    }

    handle = stack.client.get_workflow_handle(turn_workflow_id(paused["turn_id"]))
    description = stack.background.run(handle.describe())
    assert description.workflow_type == "AgentTurn"
    summary = stack.background.run(description.static_summary())
    assert summary is not None and summary.startswith("What is the boiling point of tea?") and summary.endswith("…")
    assert len(summary) <= 120
    details = stack.background.run(description.static_details())
    assert details is not None and "**Model:** `scripted`" in details and session_id in details

    metadata = stack.background.run(handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata))
    call_id = paused["output_message"]["tool_calls"][0]["call_id"]
    assert "**Status:** awaiting_input" in metadata.current_details
    assert f"`get_boiling_point` (call_id `{call_id}`)" in metadata.current_details

    history = stack.background.run(handle.fetch_history())
    summaries = [
        (e.event_type, stack.background.run(stack.client.data_converter.decode([e.user_metadata.summary]))[0])
        for e in history.events
        if e.user_metadata.HasField("summary") and e.event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED
    ]
    assert summaries == [
        (EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, "inference · scripted"),
        (EventType.EVENT_TYPE_MARKER_RECORDED, "store · awaiting_input"),  # a local activity
    ]


def test_startup_check_names_missing_search_attributes_and_the_fix(stack: Stack) -> None:
    namespace = f"bare-{uuid.uuid4().hex[:8]}"
    stack.background.run(
        stack.client.workflow_service.register_namespace(
            RegisterNamespaceRequest(namespace=namespace, workflow_execution_retention_period=Duration(seconds=86400))
        )
    )

    async def check() -> None:
        bare = await Client.connect(stack.client.service_client.config.target_host, namespace=namespace)
        await require_search_attributes(bare)

    with pytest.raises(MissingSearchAttributes) as missing:
        stack.background.run(check())
    message = str(missing.value)
    assert "AgentId" in message and "SessionId" in message and "TurnStatus" in message
    assert f"temporal operator search-attribute create --namespace {namespace} --name AgentId --type Keyword" in message
