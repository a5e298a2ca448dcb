"""The agent.session.* webhooks, received by a real HTTP receiver and verified and parsed by the `openai`
SDK's `webhooks.unwrap`: created, in_progress (at a turn's start and again when it resumes), action_required,
idle and failed, each once per occasion."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from openai import OpenAI

from tests.agents_beta.test_spend_control import paused_on_budget
from tests.support.scripted_model import ScriptedModel, failure, text, tool_call
from tests.support.spend_control import limit_body, spend_of
from tests.support.stack import SCRIPTED_MODEL
from tests.support.webhook_receiver import Receiver

SESSION_EVENTS: Any = [
    "agent.session.created",
    "agent.session.in_progress",
    "agent.session.action_required",
    "agent.session.idle",
    "agent.session.failed",
]
WEATHER: Any = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver().start()
    yield running
    running.stop()


@pytest.fixture
def endpoint(client: OpenAI, receiver: Receiver) -> Iterator[Any]:
    made = client.webhooks.create(name="sessions", url=receiver.url, event_types=SESSION_EVENTS)
    yield made
    with contextlib.suppress(openai.NotFoundError):
        client.webhooks.delete(made.id)


def test_a_session_sends_its_lifecycle_webhooks(
    client: OpenAI, model: ScriptedModel, receiver: Receiver, endpoint: Any
) -> None:
    assert set(SESSION_EVENTS) <= set(client.webhooks.event_types.list().data)
    model.script(tool_call("get_weather"), text("Sunny."))
    session = client.beta.agents.sessions.create(
        environment={"type": "none"}, agent={"model": SCRIPTED_MODEL, "tools": [WEATHER]}, input="Weather?"
    )
    first = [delivery.event(endpoint.signing_secret) for delivery in receiver.wait_for(3)]
    assert sorted(event.type for event in first) == sorted(
        ["agent.session.created", "agent.session.in_progress", "agent.session.action_required"]
    )
    assert all(event.data.id == session.id for event in first)
    action = next(event for event in first if event.type == "agent.session.action_required")
    assert action.data.required_action.type == "function_call"

    (pending,) = client.beta.agents.sessions.retrieve(session.id).required_actions
    client.beta.agents.sessions.events.create(
        session.id,
        events=[
            {
                "type": "agent.session.input.tool_result",
                "turn_id": pending.turn_id,
                "call_id": pending.call_id,
                "success": True,
                "output": "sunny",
            }
        ],
    )
    resumed = [delivery.event(endpoint.signing_secret) for delivery in receiver.wait_for(5)[3:]]
    assert sorted(event.type for event in resumed) == ["agent.session.idle", "agent.session.in_progress"]
    idle = next(event for event in resumed if event.type == "agent.session.idle")
    assert idle.data.id == session.id and idle.data.environment_type == "none"

    model.script(failure(400))
    client.beta.agents.sessions.events.create(
        session.id,
        events=[
            {
                "type": "agent.session.input.message",
                "input": [{"role": "user", "content": [{"type": "input_text", "text": "again"}]}],
            }
        ],
    )
    later = [delivery.event(endpoint.signing_secret) for delivery in receiver.wait_for(7)[5:]]
    assert sorted(event.type for event in later) == ["agent.session.failed", "agent.session.in_progress"]
    assert client.beta.agents.sessions.retrieve(session.id).status == "failed"


def test_a_turn_held_by_its_spend_limit_is_in_progress_again_when_the_limit_is_lifted(
    client: OpenAI, model: ScriptedModel, receiver: Receiver, endpoint: Any
) -> None:
    held, _ = paused_on_budget(client, model, limit_cents=2)  # started, waited for a result, resumed, held
    before = [delivery.event(endpoint.signing_secret).type for delivery in receiver.wait_for(4)]
    assert sorted(before) == sorted(
        [
            "agent.session.created",
            "agent.session.in_progress",
            "agent.session.action_required",
            "agent.session.in_progress",
        ]
    )
    spent = spend_of(client.beta.agents.sessions.retrieve(held.id))
    assert spent is not None
    client.beta.agents.sessions.update(held.id, extra_body=limit_body(spent.consumed))  # too little: still held
    time.sleep(1.5)
    assert len(receiver.deliveries) == 4

    client.beta.agents.sessions.update(held.id, extra_body=limit_body(None))
    after = [delivery.event(endpoint.signing_secret) for delivery in receiver.wait_for(6)[4:]]
    assert sorted(event.type for event in after) == ["agent.session.idle", "agent.session.in_progress"]
    assert all(event.data.id == held.id for event in after)
