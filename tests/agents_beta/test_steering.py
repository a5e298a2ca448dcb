"""Steering a session's active turn, through the unmodified openai SDK: an `agent.session.input.message` posted
while the turn runs is taken by that turn once, at its next safe boundary, and shows in the session's events and
items; one posted while the turn waits for a function result is refused with `active_turn_not_steerable`."""

from __future__ import annotations

import threading
from typing import Any

import openai
import pytest
from openai import OpenAI
from openai.types.beta import AgentSessionEvent, AgentSessionItem
from openai.types.shared import ErrorObject

from tests.support.processes import EVENT_SECONDS, wait_until
from tests.support.scripted_model import ScriptedModel, text, tool_call
from tests.support.sdk_types import check_against
from tests.support.stack import SCRIPTED_MODEL

NONE: Any = {"type": "none"}
WEATHER: Any = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}
STEER = "Mention the rain."
WIND = "And the wind."


def message(words: str) -> Any:
    return {
        "type": "agent.session.input.message",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": words}]}],
    }


def as_text(content: str | list[dict[str, Any]]) -> str:
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


def requests_with(model: ScriptedModel, words: str) -> list[dict[str, Any]]:
    return [
        request for request in model.requests if any(words in as_text(m["content"] or "") for m in request["messages"])
    ]


def test_a_message_posted_mid_turn_steers_it_once_and_shows_in_its_events(client: OpenAI, model: ScriptedModel) -> None:
    held = threading.Event()
    model.script(text("It is cold.", held_until=held), text("And it rains."))
    stream = client.beta.agents.sessions.create(
        environment=NONE, agent={"model": SCRIPTED_MODEL}, input="Weather?", stream=True
    )
    events: list[Any] = []
    try:
        for event in stream:
            events.append(event)
            if event.type == "agent.session.turn.in_progress":
                break
        session_id = events[0].session.id
        wait_until(lambda: len(model.requests) == 1, "the model call under way", EVENT_SECONDS)
        client.beta.agents.sessions.events.create(session_id, events=[message(STEER)], idempotency_key="steer-1")
        client.beta.agents.sessions.events.create(session_id, events=[message(STEER)], idempotency_key="steer-1")
        client.beta.agents.sessions.events.create(session_id, events=[message(WIND)], idempotency_key="steer-2")
        held.set()
        for event in stream:
            events.append(event)
            if event.type == "agent.session.idle":
                break
    finally:
        held.set()
        stream.close()

    assert len(model.requests) == 2  # the held call was answered and kept, then one more for the steer
    # The repeated post (same Idempotency-Key) added nothing; the second message went in with the first, in order.
    (steered,) = requests_with(model, STEER)
    seen = [(m["role"], as_text(m["content"]).strip()) for m in steered["messages"] if m["role"] != "system"]
    assert seen == [("user", "Weather?"), ("assistant", "It is cold."), ("user", STEER), ("user", WIND)]

    added = [e.item for e in events if e.type == "agent.session.turn.item.added" and e.item.type == "message"]
    user = [item for item in added if item.role == "user"]
    assert [(item.content[0].type, item.content[0].text) for item in user] == [
        ("input_text", STEER),
        ("input_text", WIND),
    ]
    for event in events:  # strictly as the SDK 3.57 types say, the steering message's item.added among them
        if event.type.startswith("agent.session.turn."):
            check_against(AgentSessionEvent, event.to_dict()).assert_conforms(set())
    turn_id = next(e.turn_id for e in events if e.type == "agent.session.turn.created")
    assert user[0].status == "completed" and user[0].turn_id == turn_id
    kinds = [e.type for e in events]
    assert kinds.count("agent.session.turn.created") == 1 and kinds.count("agent.session.turn.completed") == 1
    assert "agent.session.requires_action" not in kinds  # a steer waits for nothing from the caller

    items = client.beta.agents.sessions.items.list(session_id, order="asc").data
    for item in items:
        check_against(AgentSessionItem, item.to_dict()).assert_conforms(set())
    shown = [(item.type, getattr(item, "role", None), item.content[0].text.strip()) for item in items]
    assert shown == [
        ("message", "user", "Weather?"),
        ("message", "assistant", "It is cold."),
        ("message", "user", STEER),
        ("message", "user", WIND),
        ("message", "assistant", "And it rains."),
    ]
    (turn,) = client.beta.agents.sessions.turns.list(session_id).data
    assert turn.status == "completed"

    # The session's next turn reads the steered input as part of its context, once.
    model.script(text("Fine."))
    with client.beta.agents.sessions.stream(session_id, input="Thanks") as follow_up:
        assert follow_up.get_final_result().output_text.strip() == "Fine."
    assert [as_text(m["content"]) for m in model.requests[-1]["messages"]].count(STEER) == 1


def test_a_message_to_a_turn_waiting_for_a_tool_result_is_not_steerable(client: OpenAI, model: ScriptedModel) -> None:
    model.script(tool_call("get_weather"), text("Cold."))
    session = client.beta.agents.sessions.create(
        environment=NONE, agent={"model": SCRIPTED_MODEL, "tools": [WEATHER]}, input="Weather?"
    )
    wait_until(
        lambda: client.beta.agents.sessions.retrieve(session.id).status == "requires_action",
        "the pending call",
        EVENT_SECONDS,
    )
    with pytest.raises(openai.ConflictError) as refused:
        client.beta.agents.sessions.events.create(session.id, events=[message(STEER)])
    body: Any = refused.value.body
    check_against(ErrorObject, body).assert_conforms(set())
    assert body["code"] == "active_turn_not_steerable"
    assert "waits for function call results" in body["message"]

    (action,) = client.beta.agents.sessions.retrieve(session.id).required_actions
    result: Any = {
        "type": "agent.session.input.tool_result",
        "turn_id": action.turn_id,
        "call_id": action.call_id,
        "success": True,
        "output": "-5 C",
    }
    client.beta.agents.sessions.events.create(session.id, events=[result])
    wait_until(
        lambda: client.beta.agents.sessions.retrieve(session.id).status == "idle", "the turn's end", EVENT_SECONDS
    )
    assert requests_with(model, STEER) == []  # refused means not kept
    items = client.beta.agents.sessions.items.list(session.id, order="asc").data
    assert [getattr(item, "role", item.type) for item in items] == [
        "user",
        "function_call",
        "function_call_output",
        "assistant",
    ]


def test_a_message_taken_before_the_turn_paused_for_a_call_follows_the_calls_result(
    client: OpenAI, model: ScriptedModel
) -> None:
    """Accepted while the model call ran, which then asked for a function call: the message waits with the turn and
    goes in after the call's result, once."""
    held = threading.Event()
    model.script(tool_call("get_weather", held_until=held), text("Cold, and rain later."))
    session = client.beta.agents.sessions.create(
        environment=NONE, agent={"model": SCRIPTED_MODEL, "tools": [WEATHER]}, input="Weather?"
    )
    try:
        wait_until(lambda: len(model.requests) == 1, "the model call under way", EVENT_SECONDS)
        client.beta.agents.sessions.events.create(session.id, events=[message(STEER)])
    finally:
        held.set()
    wait_until(
        lambda: client.beta.agents.sessions.retrieve(session.id).status == "requires_action",
        "the pending call",
        EVENT_SECONDS,
    )
    (action,) = client.beta.agents.sessions.retrieve(session.id).required_actions
    result: Any = {
        "type": "agent.session.input.tool_result",
        "turn_id": action.turn_id,
        "call_id": action.call_id,
        "success": True,
        "output": "-5 C",
    }
    client.beta.agents.sessions.events.create(session.id, events=[result])
    wait_until(
        lambda: client.beta.agents.sessions.retrieve(session.id).status == "idle", "the turn's end", EVENT_SECONDS
    )
    assert len(model.requests) == 2
    (steered,) = requests_with(model, STEER)
    assert [(m["role"], as_text(m["content"] or "")) for m in steered["messages"][-2:]] == [
        ("tool", "-5 C"),
        ("user", STEER),
    ]
    items = client.beta.agents.sessions.items.list(session.id, order="asc").data
    assert [getattr(item, "role", item.type) for item in items] == [
        "user",
        "function_call",
        "function_call_output",
        "user",
        "assistant",
    ]
    assert items[3].content[0].text == STEER
