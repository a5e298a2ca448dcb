"""What the Agents API beta puts on the wire, validated strictly against the `openai` SDK 3.57's beta types
(tests/support/sdk_types.py) over real HTTP from the real stack: sessions (created, retrieved, listed, updated),
their items and turns, and every event of their streams, through a caller-run function tool that succeeds and
one whose handler raised. A missing required field or a wrong type fails; a field the types do not declare must
be one of our documented extensions (docs/agents-spend-and-automations.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from openai.types.beta.agent_session import AgentSession
from openai.types.beta.agent_session_event import AgentSessionEvent
from openai.types.beta.agent_session_item import AgentSessionItem
from openai.types.beta.agents.sessions.turn import Turn

from tests.support.processes import EVENT_SECONDS, wait_until
from tests.support.scripted_model import ScriptedModel, text, tool_call
from tests.support.sdk_types import check_against
from tests.support.stack import SCRIPTED_MODEL, Stack

SESSION_EXTENSIONS = {"spend_control"}
"""`spend_control`: a session's spending limit and what it consumed (3.57 dropped it from its types)."""
EVENT_EXTENSIONS = {f"session.{field}" for field in SESSION_EXTENSIONS}
OUR_EVENT_TYPES = {"agent.session.budget_reached"}
"""Event types of ours: the stream of a session that ends (or waits) at its spend limit ends with it; the SDK's
stream helpers still treat it as the end of a session's stream."""

WEATHER: dict[str, Any] = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
HEADERS = {"OpenAI-Beta": "agents=v1"}


@pytest.fixture
def api(stack: Stack) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"{stack.base_url}/v1", timeout=60, headers=HEADERS) as made:
        yield made


def events_of(
    api: httpx.Client, path: str, body: dict[str, Any] | None = None, until: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """The `data` of every server-sent event of a session stream, to its end (`[DONE]`, a session state that
    waits for the caller, or the first event of a type in `until`)."""
    events: list[dict[str, Any]] = []
    method = "POST" if body is not None else "GET"
    with api.stream(method, path, json=body) as answer:
        assert answer.status_code == 200, answer.read()
        for line in answer.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            events.append(json.loads(line.removeprefix("data: ")))
            ends = until or ("agent.session.requires_action", "agent.session.idle", *OUR_EVENT_TYPES)
            if events[-1]["type"] in ends:
                break
    return events


def conforms(sdk_type: Any, raw: dict[str, Any], allowed: set[str]) -> None:
    check_against(sdk_type, raw).assert_conforms(allowed)


def test_sessions_items_turns_and_every_event_are_what_the_sdk_types_say(
    api: httpx.Client, model: ScriptedModel
) -> None:
    agent = api.post("/agents", json={"model": SCRIPTED_MODEL, "tools": [WEATHER]}).json()
    model.script(tool_call("get_weather", {"city": "Oslo"}), tool_call("get_weather", {"city": "Rome"}), text("Done."))
    first = events_of(
        api,
        "/agents/sessions",
        {"agent_id": agent["id"], "environment": {"type": "none"}, "input": "Weather?", "stream": True},
    )
    session_id = first[0]["session"]["id"]
    [action] = first[-1]["session"]["required_actions"]
    result = {"type": "agent.session.input.tool_result", "turn_id": action["turn_id"], "call_id": action["call_id"]}
    answered = api.post(f"/agents/sessions/{session_id}/events", json={"events": [result | {"output": "-5 C"}]})
    assert answered.status_code == 202, answered.text
    second = wait_until(
        lambda: (s := api.get(f"/agents/sessions/{session_id}").json())["required_actions"] and s,
        "the second call waits",
        EVENT_SECONDS,
    )
    [action] = second["required_actions"]
    failed = result | {"call_id": action["call_id"], "success": False, "error": "Tool handler failed."}
    assert api.post(f"/agents/sessions/{session_id}/events", json={"events": [failed]}).status_code == 202
    # From the first stream's last event: without a cursor the stream of a session that is already idle again (the
    # turn may finish before this request) would start at its next turn, which never comes.
    after = first[-1]["event_id"]
    everything = events_of(api, f"/agents/sessions/{session_id}/events?after={after}", until=("agent.session.idle",))
    assert everything[-1]["type"] == "agent.session.idle", everything[-1]

    for event in first + everything:
        conforms(AgentSessionEvent, event, EVENT_EXTENSIONS)
    session = api.get(f"/agents/sessions/{session_id}").json()
    conforms(AgentSession, session, SESSION_EXTENSIONS)
    updated = api.post(f"/agents/sessions/{session_id}", json={"metadata": {"k": "v"}})
    conforms(AgentSession, updated.json(), SESSION_EXTENSIONS)
    for listed in api.get("/agents/sessions", params={"agent_id": agent["id"]}).json()["data"]:
        conforms(AgentSession, listed, SESSION_EXTENSIONS)
    items = api.get(f"/agents/sessions/{session_id}/items", params={"limit": 100}).json()["data"]
    assert [item["status"] for item in items if item["type"] == "function_call_output"] == ["completed", "failed"]
    for item in items:
        conforms(AgentSessionItem, item, set())
    for turn in api.get(f"/agents/sessions/{session_id}/turns").json()["data"]:
        conforms(Turn, turn, set())
