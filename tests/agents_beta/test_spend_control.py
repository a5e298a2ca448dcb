"""spend_control with the unmodified `openai` SDK: a priced model (tests/support/stack.py PRICED_MODEL, a cent a
token) reports usage, the session's spend reaches its limit, and its running turn waits at its next model call
(its stream says `agent.session.budget_reached`) with no call made; raising or removing the limit resumes that same
turn, spend kept. A session's status stays one the SDK 3.57 types know: `spend_control` tells the limit reached."""

from __future__ import annotations

import time
from typing import Any

from openai import OpenAI

from tests.support.processes import EVENT_SECONDS
from tests.support.scripted_model import ScriptedModel, text, tool_call
from tests.support.spend_control import limit_body, spend_of
from tests.support.stack import PRICED_MODEL, SCRIPTED_MODEL

NONE: Any = {"type": "none"}
WEATHER: Any = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def wait_status(client: OpenAI, session_id: str, wanted: str, seconds: float = EVENT_SECONDS) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        session = client.beta.agents.sessions.retrieve(session_id)
        if session.status == wanted or time.monotonic() > deadline:
            return session
        time.sleep(0.05)


def status_of(client: OpenAI, session_id: str) -> str:
    return client.beta.agents.sessions.retrieve(session_id).status


def at_limit(client: OpenAI, session_id: str) -> bool:
    """The session's spend is at or over its limit, as its `spend_control` shows."""
    spent = spend_of(client.beta.agents.sessions.retrieve(session_id))
    return spent is not None and spent.limit is not None and (spent.consumed or 0) >= spent.limit


def stream_kinds(client: OpenAI, session_id: str, last: str) -> list[str]:
    """The event types of the session's stream (its current turn's, from its start) up to the first `last`."""
    kinds: list[str] = []
    with client.beta.agents.sessions.events.stream(session_id) as stream:
        for event in stream:
            kind: str = event.type  # `agent.session.budget_reached` is ours: the SDK's union no longer has it
            kinds.append(kind)
            if kind == last:
                break
    return kinds


def answer_pending_call(client: OpenAI, session: Any, output: str) -> None:
    action = session.required_actions[0]
    client.beta.agents.sessions.events.create(
        session.id,
        events=[
            {
                "type": "agent.session.input.tool_result",
                "turn_id": action.turn_id,
                "call_id": action.call_id,
                "success": True,
                "output": output,
            }
        ],
    )


def paused_on_budget(client: OpenAI, model: ScriptedModel, limit_cents: int) -> tuple[Any, int]:
    """A session whose first model call (a function call) spends past `limit_cents`, then given the call's result:
    its turn now waits at its second model call. Returns the session and what it had consumed."""
    model.script(tool_call("get_weather", {"city": "Paris"}), text("It is sunny in Paris."))
    created = client.beta.agents.sessions.create(
        environment=NONE,
        agent={"model": PRICED_MODEL, "instructions": "Answer briefly.", "tools": [WEATHER]},
        input="What is the weather in Paris today?",
        extra_body=limit_body(limit_cents),
    )
    shown = spend_of(created)
    assert shown is not None and shown.limit == limit_cents
    waiting = wait_status(client, created.id, "requires_action")
    assert waiting.status == "requires_action", waiting
    spent = spend_of(waiting)
    assert spent is not None
    consumed = spent.consumed
    assert consumed is not None and consumed >= limit_cents  # a cent a word: the first call crossed the limit
    answer_pending_call(client, waiting, "sunny, 21 C")
    assert stream_kinds(client, created.id, "agent.session.budget_reached")[-1] == "agent.session.budget_reached"
    held = client.beta.agents.sessions.retrieve(created.id)
    assert held.status == "in_progress" and held.required_actions == [] and at_limit(client, created.id), held
    time.sleep(1.5)  # were the turn to go on regardless, its model call would come now
    assert len(model.requests) == 1, "a model call was made past the spending limit"
    assert status_of(client, created.id) == "in_progress"
    return held, consumed


def test_a_session_at_its_limit_waits_and_the_same_turn_finishes_once_the_limit_is_raised(
    client: OpenAI, model: ScriptedModel
) -> None:
    held, consumed = paused_on_budget(client, model, limit_cents=1)
    [turn] = client.beta.agents.sessions.turns.list(held.id).data
    kinds: list[str] = []
    with client.beta.agents.sessions.events.stream(held.id) as stream:  # the held turn's events from its start
        for event in stream:
            kind: str = event.type  # `agent.session.budget_reached` is ours: the SDK's union no longer has it
            kinds.append(kind)
            if kind == "agent.session.budget_reached":
                sent: Any = event.to_dict()  # untyped by the SDK: read as sent
                assert sent["session"]["status"] == "in_progress"  # held: its turn is still the active one
                assert "agent.session.turn.completed" not in kinds
                raised = client.beta.agents.sessions.update(held.id, extra_body=limit_body(1_000_000))
            if kind == "agent.session.idle":
                break
    reached = kinds.index("agent.session.budget_reached")
    assert kinds.index("agent.session.requires_action") < reached
    assert kinds.index("agent.session.in_progress", reached) < kinds.index("agent.session.turn.completed")

    shown = spend_of(raised)
    assert shown is not None and shown.limit == 1_000_000
    assert shown.consumed is not None and shown.consumed >= consumed  # never reset

    done = wait_status(client, held.id, "idle")
    assert done.status == "idle", done
    assert len(model.requests) == 2
    turns = client.beta.agents.sessions.turns.list(held.id).data
    assert [(t.id, t.status) for t in turns] == [(turn.id, "completed")]  # the same turn, finished
    items = client.beta.agents.sessions.items.list(held.id, order="asc").data
    assert items[-1].type == "message" and "sunny" in items[-1].content[0].text
    shown = spend_of(done)
    assert shown is not None and (shown.consumed or 0) > consumed


def test_removing_the_limit_resumes_the_turn_and_a_limit_raised_too_little_holds_it_again(
    client: OpenAI, model: ScriptedModel
) -> None:
    held, consumed = paused_on_budget(client, model, limit_cents=2)

    still = client.beta.agents.sessions.update(held.id, extra_body=limit_body(consumed))
    shown = spend_of(still)
    assert shown is not None and shown.limit == consumed
    time.sleep(1.5)
    assert status_of(client, held.id) == "in_progress" and at_limit(client, held.id)
    assert len(model.requests) == 1

    lifted = client.beta.agents.sessions.update(held.id, extra_body=limit_body(None))
    shown = spend_of(lifted)
    assert shown is not None and shown.limit is None
    assert wait_status(client, held.id, "idle").status == "idle"
    assert len(model.requests) == 2
    assert [t.status for t in client.beta.agents.sessions.turns.list(held.id).data] == ["completed"]


def test_a_stream_whose_session_ends_over_its_limit_ends_budget_reached_and_a_free_model_never_counts(
    client: OpenAI, model: ScriptedModel
) -> None:
    model.script(text("Hello."))
    priced = client.beta.agents.sessions.create(
        environment=NONE, agent={"model": PRICED_MODEL}, input="Say hello to me", extra_body=limit_body(1)
    )
    kinds = stream_kinds(client, priced.id, "agent.session.budget_reached")
    assert kinds[-2:] == ["agent.session.turn.completed", "agent.session.budget_reached"], kinds
    assert "agent.session.idle" not in kinds
    shown = wait_status(client, priced.id, "idle")
    assert shown.status == "idle" and at_limit(client, priced.id), shown

    model.script(text("Hello."))
    free = client.beta.agents.sessions.create(
        environment=NONE, agent={"model": SCRIPTED_MODEL}, input="Say hello to me", extra_body=limit_body(1)
    )
    shown = wait_status(client, free.id, "idle")
    spent = spend_of(shown)
    assert shown.status == "idle" and spent is not None and spent.consumed == 0
