"""Recorded AgentTurn histories replay on the current workflow code.

A turn can wait days for a client tool, so a deployed worker replays histories that older code
wrote. A change to `workflows/turn.py` that would make those turns fail on the next worker fails
here first; guard it with `workflow.patched(...)` (or a field of the start, as `inference_writes_end`)
and record a new history beside the old ones. Each replays in the runner the worker uses and in
Temporal's sandbox (tests/support/sandbox.py), which also fails on a nondeterministic call:

    history = await client.get_workflow_handle(workflow_id).fetch_history()
    Path("tests/durability/histories/<what it covers>.json").write_text(history.to_json())
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory

from tests.support.replay import RUNNERS, replay_failure
from workflows.turn import TurnWorkflow

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("path", HISTORIES, ids=[path.stem for path in HISTORIES])
def test_a_recorded_turn_replays_without_nondeterminism(path: Path, runner: str) -> None:
    failure = replay_failure(TurnWorkflow, path, runner)
    assert failure is None, f"{path.name}: {failure}"


def test_the_recordings_cover_a_pause_and_resume() -> None:
    assert len(HISTORIES) >= 2
    events = " ".join(path.read_text() for path in HISTORIES)
    assert "EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED" in events  # a client tool's results arrived
    assert "EVENT_TYPE_MARKER_RECORDED" in events  # a store write as a local activity
    assert "compact_turn_context" in events  # a turn's compaction step (behind its workflow.patched marker)


def _patches(path: Path) -> set[bytes]:
    """The ids of the `workflow.patched` markers of a recorded history, as their JSON payload carries them."""
    events = WorkflowHistory.from_json(path.stem, path.read_text()).events
    markers = [
        event.marker_recorded_event_attributes for event in events if event.HasField("marker_recorded_event_attributes")
    ]
    payloads = [
        payload
        for marker in markers
        for payload in marker.details["patch-data"].payloads
        if "patch-data" in marker.details
    ]
    return {json.loads(payload.data)["id"].encode() for payload in payloads}


def test_the_recordings_cover_a_steer_cutting_a_reply() -> None:
    """A WebSocket response steered while its reply streamed: the update, and the patches of steering and of the cut."""
    steered = [path for path in HISTORIES if {b"steer-v1", b"steer-cut-v1"} <= _patches(path)]
    assert any("EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED" in path.read_text() for path in steered)


def test_the_recordings_cover_a_turn_still_paused() -> None:
    """A turn that paused under an earlier release and waits: the next worker replays it before resuming it."""
    ends = [WorkflowHistory.from_json(p.stem, p.read_text()).events[-1].event_type for p in HISTORIES]
    assert EventType.EVENT_TYPE_MARKER_RECORDED in ends  # its last event: the pause written to the store


def test_the_recordings_cover_a_detached_turn_resumed_as_a_segment() -> None:
    """A Responses turn: request-named MCP server, a pause with an approval, a resume with a new plan."""
    detached = [path.read_text() for path in HISTORIES if "list_mcp_server" in path.read_text()]
    assert any("EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED" in history for history in detached)


def test_the_recordings_cover_both_start_shapes() -> None:
    """Turns started before references (inline agent config and messages) and after (an outline)."""
    starts = [WorkflowHistory.from_json(p.stem, p.read_text()).events[0] for p in HISTORIES]
    inputs = [e.workflow_execution_started_event_attributes.input.payloads[0].data for e in starts]
    assert any(b'"agent_config":{' in data for data in inputs)
    assert any(b'"agent":{' in data and b'"agent_config":null' in data for data in inputs)


def test_the_recordings_cover_a_turn_ended_by_its_inference() -> None:
    """A plain answer written as the turn's end by its inference activity: no store write of the workflow's."""

    def ended_by_its_inference(path: Path) -> bool:
        events = WorkflowHistory.from_json(path.stem, path.read_text()).events
        start = events[0].workflow_execution_started_event_attributes.input.payloads[0].data
        markers = [event for event in events if event.HasField("marker_recorded_event_attributes")]
        return b'"inference_writes_end":true' in start and not markers

    assert any(ended_by_its_inference(path) for path in HISTORIES)


def test_the_recordings_cover_a_turn_held_by_its_sessions_spend_limit() -> None:
    """An Agents API session turn that waited at a model call for its session's spending limit to be raised, behind
    its workflow.patched marker, and went on when the limit changed."""

    def held(path: Path) -> bool:
        events = WorkflowHistory.from_json(path.stem, path.read_text()).events
        start = events[0].workflow_execution_started_event_attributes.input.payloads[0].data
        signals = [e.workflow_execution_signaled_event_attributes.signal_name for e in events]
        return b'"spend_session_id":"' in start and "spend_limit_changed" in signals

    assert any(held(path) for path in HISTORIES)


def test_the_recordings_cover_a_session_turn_steered_by_a_message() -> None:
    """An Agents API session turn whose `steer` update (without a segment) was accepted while its model call ran,
    then applied behind the `steer-v1` marker: no pause, one more model call."""

    def steered(path: Path) -> bool:
        events = WorkflowHistory.from_json(path.stem, path.read_text()).events
        start = events[0].workflow_execution_started_event_attributes.input.payloads[0].data
        updates = [
            e.workflow_execution_update_accepted_event_attributes.accepted_request.input
            for e in events
            if e.HasField("workflow_execution_update_accepted_event_attributes")
        ]
        patches = [
            payload.data
            for event in events
            if event.HasField("marker_recorded_event_attributes")
            for payload in event.marker_recorded_event_attributes.details["patch-data"].payloads
        ]
        return (
            b'"spend_session_id":"' in start
            and any(u.name == "steer" and b'"segment_id":null' in u.args.payloads[0].data for u in updates)
            and any(b'"steer-v1"' in patch for patch in patches)
        )

    assert any(steered(path) for path in HISTORIES)


def test_the_recordings_cover_a_foreground_response_with_local_model_calls() -> None:
    """A foreground response's model calls as local activities (a marker each), paused and resumed as a segment."""

    def local_inference(path: Path) -> bool:
        history = path.read_text()
        events = WorkflowHistory.from_json(path.stem, history).events
        start = events[0].workflow_execution_started_event_attributes.input.payloads[0].data
        summaries = [e.user_metadata.summary.data for e in events if e.HasField("marker_recorded_event_attributes")]
        calls = [summary for summary in summaries if summary.startswith(b'"inference')]
        return b'"local_inference":true' in start and len(calls) == 2 and "UPDATE_COMPLETED" in history

    assert any(local_inference(path) for path in HISTORIES)


def test_the_recordings_cover_a_session_turn_counting_its_compaction_and_shield_calls() -> None:
    """A session turn that checked its spend before its shield and compaction steps too (behind the
    `session-spend-every-call` marker), whose activities entered those calls in the session's ledger."""

    def counted(path: Path) -> bool:
        events = WorkflowHistory.from_json(path.stem, path.read_text()).events
        start = events[0].workflow_execution_started_event_attributes.input.payloads[0].data
        patches = [
            payload.data
            for event in events
            if event.HasField("marker_recorded_event_attributes")
            for payload in event.marker_recorded_event_attributes.details["patch-data"].payloads
        ]
        scheduled = [e.activity_task_scheduled_event_attributes.activity_type.name for e in events]
        return (
            b'"spend_session_id":"' in start
            and any(b'"session-spend-every-call"' in patch for patch in patches)
            and {"run_shields", "compact_turn_context"} <= set(scheduled)
        )

    assert any(counted(path) for path in HISTORIES)


def test_the_recordings_cover_code_calls_before_and_after_host_routing() -> None:
    """A code call sent to the shared task queue (an earlier release), and one sent to its container's host."""
    code_turns = [path.read_text() for path in HISTORIES if '"run_code_call"' in path.read_text()]
    assert any('"code_host"' not in history for history in code_turns)
    assert any('"code_host"' in history for history in code_turns)
