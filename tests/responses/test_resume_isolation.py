"""A continuation resumes its own paused turn and no other: a response and an Agents API session may wait on
the same call id (the scripted model's call ids are deterministic, as some providers' are), and answering the
response's call must neither resume the session's turn nor be taken by it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import httpx
import pytest
from openai import OpenAI

from tests.support.processes import EVENT_SECONDS, wait_until
from tests.support.scripted_model import ScriptedModel, text, tool_call
from tests.support.stack import SCRIPTED_MODEL, Stack

WEATHER: dict[str, Any] = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


@pytest.fixture
def api(stack: Stack) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"{stack.base_url}/v1", timeout=60) as made:
        yield made


@pytest.fixture
def client(stack: Stack) -> Iterator[OpenAI]:
    with OpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0, timeout=60) as made:
        yield made


def paused_session(client: OpenAI, model: ScriptedModel) -> tuple[str, str]:
    """A session whose turn waits for its get_weather call: (session id, call id)."""
    model.script(tool_call("get_weather", {"city": "Oslo"}))
    none: Any = {"type": "none"}
    session = client.beta.agents.sessions.create(
        environment=none, agent={"model": SCRIPTED_MODEL, "tools": [cast(Any, WEATHER)]}, input="Oslo?"
    )
    wait_until(
        lambda: client.beta.agents.sessions.retrieve(session.id).status == "requires_action",
        "the session waits for its call",
        EVENT_SECONDS,
    )
    (action,) = client.beta.agents.sessions.retrieve(session.id).required_actions
    return session.id, str(action.call_id)


def paused_response(api: httpx.Client, model: ScriptedModel) -> tuple[str, str]:
    """A response that stopped for its get_weather call: (response id, call id)."""
    model.script(tool_call("get_weather", {"city": "Rome"}))
    answer = api.post("/responses", json={"model": SCRIPTED_MODEL, "input": "Rome?", "tools": [WEATHER]})
    assert answer.status_code == 200, answer.text
    (call,) = [item for item in answer.json()["output"] if item["type"] == "function_call"]
    return answer.json()["id"], call["call_id"]


def output_text(response: dict[str, Any]) -> str:
    return "".join(
        part.get("text", "") for item in response["output"] if item["type"] == "message" for part in item["content"]
    ).strip()


def test_continuing_a_response_resumes_its_own_turn_not_a_session_waiting_on_the_same_call_id(
    api: httpx.Client, client: OpenAI, model: ScriptedModel
) -> None:
    response_id, response_call = paused_response(api, model)
    session_id, session_call = paused_session(client, model)
    assert response_call == session_call  # the collision this is about

    model.script(text("Warm in Rome."))
    answer = api.post(
        "/responses",
        json={
            "model": SCRIPTED_MODEL,
            "previous_response_id": response_id,
            "input": [{"type": "function_call_output", "call_id": response_call, "output": "25 C"}],
            "tools": [WEATHER],
        },
    )
    assert answer.status_code == 200, answer.text
    assert output_text(answer.json()) == "Warm in Rome."
    assert [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "user"] == ["Rome?"]
    session = client.beta.agents.sessions.retrieve(session_id)
    assert session.status == "requires_action" and session.required_actions[0].call_id == session_call


def test_a_stateless_response_never_resumes_an_agents_session_turn(
    api: httpx.Client, client: OpenAI, model: ScriptedModel
) -> None:
    session_id, call_id = paused_session(client, model)

    model.script(text("A new turn of its own."))
    answer = api.post(
        "/responses",
        json={
            "model": SCRIPTED_MODEL,
            "input": [
                {"role": "user", "content": "Bergen?"},
                {"type": "function_call", "call_id": call_id, "name": "get_weather", "arguments": "{}"},
                {"type": "function_call_output", "call_id": call_id, "output": "rain"},
            ],
            "tools": [WEATHER],
        },
    )
    assert answer.status_code == 200, answer.text
    assert output_text(answer.json()) == "A new turn of its own."
    assert client.beta.agents.sessions.retrieve(session_id).status == "requires_action"
