"""Agents API sessions survive what turns survive: the worker, the API and the Temporal dev server each
SIGKILLed (and started again) during a session turn and during a caller-run tool pause. Every turn completes
exactly once, and a client that follows the session's events — reconnecting with `Last-Event-ID` when the
API dies — gets each event once, with no gap."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest
from openai import OpenAI
from temporalio.client import WorkflowExecutionStatus

from hosting.fault_points import AFTER_SESSION_TURNS_STOPPED
from tests.support.processes import EVENT_SECONDS, ProcessStack, wait_until
from tests.support.scripted_model import text, tool_call
from tests.support.stack import SCRIPTED_MODEL
from workflows.contracts import turn_workflow_id

pytestmark = pytest.mark.processes

WORDS = " ".join(f"w{i}" for i in range(40))
"""Streamed a word per 0.1 s: four seconds in which to kill something mid-turn, even on a loaded machine."""
WEATHER: Any = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}
BETA = {"OpenAI-Beta": "agents=v1"}
KINDS = ["worker", "api", "temporal"]


def restart(processes: ProcessStack, which: str) -> None:
    processes.kill(getattr(processes, which))
    if which == "temporal":
        time.sleep(1)
    getattr(processes, f"start_{which}")()


def sdk(processes: ProcessStack) -> OpenAI:
    """Retries on: a request may meet the API (or Temporal behind it) while it restarts."""
    return OpenAI(base_url=f"{processes.url}/v1", api_key="unused", max_retries=8, timeout=60)


def follow(
    processes: ProcessStack, session_id: str, until: Callable[[list[dict[str, Any]]], bool]
) -> list[dict[str, Any]]:
    """The session's events from its first turn's start until `until` says so, reconnecting after
    `Last-Event-ID` whenever the connection drops (the API was killed) or cannot be made yet (it is starting)."""
    events: list[dict[str, Any]] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        after = events[-1]["event_id"] if events else f"{session_id}:created"  # the first turn from its start
        headers = BETA | {"Last-Event-ID": after}
        try:
            with httpx.stream(
                "GET", f"{processes.url}/v1/agents/sessions/{session_id}/events", headers=headers, timeout=60
            ) as answer:
                answer.raise_for_status()
                for line in answer.iter_lines():
                    if line.startswith("data: "):
                        events.append(json.loads(line.removeprefix("data: ")))
                        if until(events):
                            return events
        except (httpx.TransportError, httpx.HTTPStatusError):
            time.sleep(0.2)
    raise AssertionError(f"the session's events did not end: {[e['type'] for e in events]}")


def idle_after_turn(events: list[dict[str, Any]]) -> bool:
    kinds = [event["type"] for event in events]
    return "agent.session.turn.completed" in kinds and kinds[-1] == "agent.session.idle"


def assert_once_without_gaps(events: list[dict[str, Any]], answer: str) -> None:
    ids = [event["event_id"] for event in events]
    turn_ids = {event_id.rpartition(":")[0] for event_id in ids}
    assert len(turn_ids) == 1, turn_ids
    assert [int(event_id.rpartition(":")[2]) for event_id in ids] == list(range(len(ids)))  # no gap, no repeat
    kinds = [event["type"] for event in events]
    assert kinds.count("agent.session.turn.completed") == 1 and kinds.count("agent.session.turn.created") == 1
    done = [e["item"] for e in events if e["type"] == "agent.session.turn.item.done" and e["item"]["type"] == "message"]
    assert len(done) == 1 and done[0]["content"][0]["text"].strip() == answer
    deltas = "".join(e["delta"] for e in events if e["type"] == "agent.session.turn.output_text.delta")
    assert deltas == done[0]["content"][0]["text"]


def in_background(action: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=action, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("which", KINDS)
def test_killed_during_a_session_turn_the_turn_completes_once(processes: ProcessStack, which: str) -> None:
    processes.model.script(text(WORDS, token_delay_seconds=0.1), text(WORDS))
    client = sdk(processes)
    session = client.beta.agents.sessions.create(
        environment={"type": "none"}, agent={"model": SCRIPTED_MODEL}, input="Count"
    )

    def kill_mid_turn() -> None:
        processes.wait_for_model_requests(1)  # (scripting cleared the recorded requests)
        time.sleep(1.0)  # a few words streamed
        restart(processes, which)

    killer = in_background(kill_mid_turn)
    events = follow(processes, session.id, idle_after_turn)
    killer.join(timeout=120)
    assert_once_without_gaps(events, WORDS)
    turns = client.beta.agents.sessions.turns.list(session.id).data
    assert [turn.status for turn in turns] == ["completed"]
    assert client.beta.agents.sessions.retrieve(session.id).status == "idle"


@pytest.mark.parametrize("which", KINDS)
def test_killed_during_a_caller_run_tool_pause_the_turn_resumes_once(processes: ProcessStack, which: str) -> None:
    processes.model.script(tool_call("get_weather"), text("Sunny today."))
    client = sdk(processes)
    session = client.beta.agents.sessions.create(
        environment={"type": "none"}, agent={"model": SCRIPTED_MODEL, "tools": [WEATHER]}, input="Weather?"
    )

    def requiring_action() -> Any:
        current = client.beta.agents.sessions.retrieve(session.id)
        return current if current.status == "requires_action" else None

    current = wait_until(requiring_action, "the caller-run tool's pause", EVENT_SECONDS)
    (action,) = current.required_actions
    restart(processes, which)

    result: Any = {
        "type": "agent.session.input.tool_result",
        "turn_id": action.turn_id,
        "call_id": action.call_id,
        "success": True,
        "output": "sunny",
    }
    client.beta.agents.sessions.events.create(session.id, events=[result], idempotency_key=f"result-{which}")
    client.beta.agents.sessions.events.create(session.id, events=[result], idempotency_key=f"result-{which}")  # a retry
    events = follow(processes, session.id, idle_after_turn)
    kinds = [event["type"] for event in events]
    assert kinds.count("agent.session.turn.completed") == 1 and kinds.count("agent.session.requires_action") == 1
    items = client.beta.agents.sessions.items.list(session.id, limit=100).data
    assert [item.output for item in items if item.type == "function_call_output"] == ["sunny"]
    tool_messages = [m["content"] for m in processes.model.requests[-1]["messages"] if m["role"] == "tool"]
    assert tool_messages == ["sunny"]
    assert [turn.status for turn in client.beta.agents.sessions.turns.list(session.id).data] == ["completed"]


def test_a_session_deletion_cut_short_by_a_dead_worker_finishes_on_the_next(processes: ProcessStack) -> None:
    processes.model.script(tool_call("get_weather"))
    client = sdk(processes)
    session = client.beta.agents.sessions.create(
        environment={"type": "none"}, agent={"model": SCRIPTED_MODEL, "tools": [WEATHER]}, input="Weather?"
    )
    waiting = wait_until(
        lambda: client.beta.agents.sessions.retrieve(session.id).status == "requires_action", "the pause", EVENT_SECONDS
    )
    assert waiting
    (turn,) = client.beta.agents.sessions.turns.list(session.id).data
    processes.kill(processes.worker)
    processes.start_worker(DA_TEST_FAULT=AFTER_SESSION_TURNS_STOPPED)  # dies between stopping and deleting
    answers: list[httpx.Response] = []
    deleting = in_background(
        lambda: answers.append(
            httpx.delete(f"{processes.url}/v1/agents/sessions/{session.id}", headers=BETA, timeout=120)
        )
    )
    assert processes.worker is not None and processes.worker.wait(timeout=EVENT_SECONDS) != 0
    assert client.beta.agents.sessions.retrieve(session.id).id == session.id  # the rows are still there
    processes.start_worker()
    deleting.join(timeout=120)
    assert [answer.status_code for answer in answers] == [200], [answer.text for answer in answers]
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.sessions.retrieve(session.id)
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.sessions.turns.list(session.id)

    async def turn_status() -> WorkflowExecutionStatus | None:
        handle = (await processes.temporal_client()).get_workflow_handle(turn_workflow_id(turn.id))
        return (await handle.describe()).status

    assert asyncio.run(turn_status()) == WorkflowExecutionStatus.TERMINATED
