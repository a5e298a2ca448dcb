"""Sessions of the Agents API (beta) with the unmodified `openai` SDK: a session turn is a durable turn
workflow; streamed and not, second turns, caller-run function tools through `tool_handlers`, a call that
waits with no connection open, cancel, and the refusals a caller can act on."""

from __future__ import annotations

import time
from typing import Any

import httpx
import openai
import pytest
from openai import OpenAI
from openai.lib.beta.agents import function_tool

from tests.support.processes import EVENT_SECONDS, wait_until
from tests.support.scripted_model import ScriptedModel, text, tool_call
from tests.support.spend_control import limit_body, spend_of
from tests.support.stack import SCRIPTED_MODEL, Stack

NONE: Any = {"type": "none"}
WEATHER: Any = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def as_text(content: str | list[dict[str, Any]]) -> str:
    if isinstance(content, str):
        return content.strip()
    return "".join(part.get("text", "") for part in content).strip()


def wait_status(client: OpenAI, session_id: str, wanted: str, seconds: float = EVENT_SECONDS) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        session = client.beta.agents.sessions.retrieve(session_id)
        if session.status == wanted or time.monotonic() > deadline:
            return session
        time.sleep(0.05)


def test_a_session_answers_streamed_and_not_and_takes_a_second_turn(client: OpenAI, model: ScriptedModel) -> None:
    model.script(text("Hello there."))
    created = client.beta.agents.sessions.create(
        environment=NONE, agent={"model": SCRIPTED_MODEL, "instructions": "Be brief."}, input="Hi!"
    )
    assert created.object == "agent.session" and created.environment.type == "none"
    session = wait_status(client, created.id, "idle")
    assert session.status == "idle" and session.required_actions == []
    items = client.beta.agents.sessions.items.list(created.id).data
    assert [(item.type, getattr(item, "role", None)) for item in items] == [
        ("message", "user"),
        ("message", "assistant"),
    ]
    assert items[1].content[0].text.strip() == "Hello there."
    assert model.requests[-1]["messages"][0] == {"role": "system", "content": "Be brief."}

    model.script(text("Second answer."))
    with client.beta.agents.sessions.stream(created.id, input="And again?") as stream:
        result = stream.get_final_result()
    assert result.output_text.strip() == "Second answer."
    seen = [as_text(m["content"]) for m in model.requests[-1]["messages"] if m["role"] in ("user", "assistant")]
    assert seen == ["Hi!", "Hello there.", "And again?"]  # the first turn is the second's context
    turns = client.beta.agents.sessions.turns.list(created.id).data
    assert [turn.status for turn in turns] == ["completed", "completed"]


def test_create_streamed_gives_its_events_in_order_and_a_final_result(client: OpenAI, model: ScriptedModel) -> None:
    model.script(text("Streamed reply here."))
    stream = client.beta.agents.sessions.create(
        environment=NONE, agent={"model": SCRIPTED_MODEL}, input="Stream it", stream=True
    )
    events = list(stream)
    kinds = [event.type for event in events]
    assert kinds[:4] == [
        "agent.session.created",
        "agent.session.turn.created",
        "agent.session.in_progress",
        "agent.session.turn.in_progress",
    ]
    assert kinds[-3:] == ["agent.session.turn.item.done", "agent.session.turn.completed", "agent.session.idle"]
    deltas = [event.delta for event in events if event.type == "agent.session.turn.output_text.delta"]
    assert len(deltas) > 1 and "".join(deltas).strip() == "Streamed reply here."
    assert len({event.event_id for event in events}) == len(events)

    model.script(text("Final."))
    again = client.beta.agents.sessions.create(
        environment=NONE, agent={"model": SCRIPTED_MODEL}, input="x", stream=True
    )
    assert again.get_final_result().output_text.strip() == "Final."


def test_tool_handlers_run_function_tools_and_a_raising_handler_reports_failure(
    client: OpenAI, model: ScriptedModel
) -> None:
    calls: list[dict[str, Any]] = []

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        calls.append({"city": city})
        return f"sunny in {city}"

    def broken(arguments: dict[str, Any]) -> str:
        raise RuntimeError("secret detail")

    broken_tool: Any = {**WEATHER, "name": "broken"}
    agent = client.beta.agents.create(model=SCRIPTED_MODEL, tools=[get_weather.definition, broken_tool])
    model.script(text("ready"))
    session = client.beta.agents.sessions.create(environment=NONE, agent_id=agent.id, input="warm up")
    wait_status(client, session.id, "idle")

    model.script(tool_call("get_weather", {"city": "Paris"}), tool_call("broken", {"city": "x"}), text("Done."))
    with client.beta.agents.sessions.stream(
        session.id, input="Weather?", tool_handlers={"get_weather": get_weather, "broken": broken}
    ) as stream:
        result = stream.get_final_result()
    assert result.output_text.strip() == "Done." and calls == [{"city": "Paris"}]
    tool_messages = [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"]
    assert tool_messages == ["sunny in Paris", "Tool handler failed."]
    outputs = [
        i
        for i in client.beta.agents.sessions.items.list(session.id, limit=100).data
        if i.type == "function_call_output"
    ]
    assert [(o.output, o.error, o.status) for o in outputs] == [
        ("sunny in Paris", None, "completed"),
        (None, "Tool handler failed.", "failed"),
    ]


def test_a_pending_call_waits_with_no_connection_and_resumes_by_an_input_event(
    client: OpenAI, model: ScriptedModel
) -> None:
    model.script(tool_call("get_weather", {"city": "Oslo"}), text("Cold in Oslo."))
    stream = client.beta.agents.sessions.create(
        environment=NONE, agent={"model": SCRIPTED_MODEL, "tools": [WEATHER]}, input="Oslo?", stream=True
    )
    for event in stream:
        if event.type == "agent.session.requires_action":
            break
    stream.close()
    session = wait_status(client, event.session.id, "requires_action")
    (action,) = session.required_actions
    assert action.type == "function_call" and action.name == "get_weather"
    time.sleep(1.0)  # nobody listening: the turn waits in its workflow

    with pytest.raises(openai.BadRequestError) as refused:
        client.beta.agents.sessions.events.create(
            session.id,
            events=[
                {
                    "type": "agent.session.input.tool_result",
                    "turn_id": action.turn_id,
                    "call_id": "nope",
                    "success": True,
                    "output": "x",
                }
            ],
        )
    assert refused.value.body == {  # exactly what the SDK's pending-call race rule reads
        "message": "Unknown pending tool call: nope",
        "type": "invalid_request_error",
        "param": "events",
        "code": "invalid_request_error",
    }
    client.beta.agents.sessions.events.create(
        session.id,
        events=[
            {
                "type": "agent.session.input.tool_result",
                "turn_id": action.turn_id,
                "call_id": action.call_id,
                "success": True,
                "output": "-5 C",
            }
        ],
    )
    assert wait_status(client, session.id, "idle").status == "idle"
    assert [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"] == ["-5 C"]
    turn = client.beta.agents.sessions.turns.list(session.id).data[0]
    assert turn.status == "completed"


def test_cancel_stops_the_active_turn_and_the_input_steering_it(client: OpenAI, model: ScriptedModel) -> None:
    model.script(text("slow " * 200, token_delay_seconds=0.05))
    session = client.beta.agents.sessions.create(environment=NONE, agent={"model": SCRIPTED_MODEL}, input="Talk")
    wait_status(client, session.id, "in_progress")
    wait_until(lambda: model.requests or None, "the model call under way")
    client.beta.agents.sessions.events.create(  # accepted: it steers the running turn
        session.id,
        events=[
            {
                "type": "agent.session.input.message",
                "input": [{"role": "user", "content": [{"type": "input_text", "text": "more"}]}],
            }
        ],
    )
    client.beta.agents.sessions.events.create(session.id, events=[{"type": "agent.session.input.cancel"}])
    assert wait_status(client, session.id, "idle").status == "idle"
    assert client.beta.agents.sessions.turns.list(session.id).data[0].status == "cancelled"
    assert len(model.requests) == 1  # the cancel came first: the steering input reached no model call


def test_refusals_say_what_to_change(client: OpenAI, stack: Stack) -> None:
    sessions: Any = client.beta.agents.sessions  # the SDK's types do not allow what these requests get wrong
    with pytest.raises(openai.BadRequestError, match="environment is required"):
        sessions.create(environment=openai.omit, agent={"model": SCRIPTED_MODEL}, input="x")
    for kind in ("openai_hosted", "self_hosted"):
        with pytest.raises(openai.BadRequestError, match=f"'{kind}' is not supported"):
            sessions.create(
                environment={"type": kind, "workspace_directory": "/w"}, agent={"model": SCRIPTED_MODEL}, input="x"
            )
    with pytest.raises(openai.NotFoundError, match="agent_missing"):
        sessions.create(environment=NONE, agent_id="agent_missing", input="x")
    with pytest.raises(openai.NotFoundError):
        sessions.retrieve("sess_missing")
    with pytest.raises(openai.NotFoundError):
        sessions.events.create("sess_missing", events=[{"type": "agent.session.input.cancel"}])
    with pytest.raises(openai.BadRequestError, match="not configured"):
        sessions.create(environment=NONE, agent={"model": "no-such-model"}, input="x")
    with pytest.raises(openai.NotFoundError, match="hosted environments"):
        client.beta.agents.environments.list()


def test_an_operator_finds_a_sessions_turns_in_temporal(client: OpenAI, model: ScriptedModel, stack: Stack) -> None:
    model.script(text("one"), text("two"))
    agent = client.beta.agents.create(model=SCRIPTED_MODEL)
    session = client.beta.agents.sessions.create(environment=NONE, agent_id=agent.id, input="first")
    wait_status(client, session.id, "idle")
    with client.beta.agents.sessions.stream(session.id, input="second") as stream:
        stream.until_done()
    turns = {f"turn-{turn.id}" for turn in client.beta.agents.sessions.turns.list(session.id)}

    def found(query: str) -> set[str]:
        async def ids() -> set[str]:
            return {execution.id async for execution in stack.client.list_workflows(query)}

        def enough() -> set[str] | None:  # visibility catches up within moments, longer under load
            listed = stack.background.run(ids())
            return listed if len(listed) >= len(turns) else None

        return wait_until(enough, f"{len(turns)} workflows found by {query}", EVENT_SECONDS)

    assert found(f'SessionId = "{session.id}"') == turns
    assert found(f'AgentId = "{agent.id}"') == turns


def test_sessions_keep_metadata_and_spend_control_and_list_by_agent_and_metadata(
    client: OpenAI, model: ScriptedModel
) -> None:
    model.script(text("a"), text("b"), text("c"))
    sessions = client.beta.agents.sessions
    agent = client.beta.agents.create(model=SCRIPTED_MODEL, instructions="Saved.")
    tagged = sessions.create(
        environment=NONE, agent_id=agent.id, input="x", metadata={"team": "red"}, extra_body=limit_body(500)
    )
    shown = spend_of(tagged)
    assert shown is not None and shown.limit == 500
    overridden = sessions.create(
        environment=NONE, agent_id=agent.id, agent={"model": SCRIPTED_MODEL, "instructions": "Inline."}, input="y"
    )
    assert overridden.agent.id == agent.id and overridden.agent.instructions == "Inline."  # inline overrides
    other = sessions.create(environment=NONE, agent={"model": SCRIPTED_MODEL}, input="z", metadata={"team": "blue"})
    assert [s.id for s in sessions.list(agent_id=agent.id)] == [overridden.id, tagged.id]
    red = sessions.list(metadata={"team": "red"}).data
    assert [s.id for s in red] == [tagged.id] and other.id not in [s.id for s in red]

    updated = sessions.update(tagged.id, metadata={"team": "green"}, extra_body=limit_body(None))
    shown = spend_of(updated)
    assert updated.metadata == {"team": "green"} and shown is not None
    assert shown.limit is None  # removed; nothing spent is reset
    assert sessions.delete(other.id).deleted is True
    with pytest.raises(openai.NotFoundError):
        sessions.retrieve(other.id)


def test_a_stream_resumed_after_any_event_gives_exactly_the_rest(
    client: OpenAI, model: ScriptedModel, stack: Stack
) -> None:
    model.script(text("one two three four five"))
    events = list(
        client.beta.agents.sessions.create(environment=NONE, agent={"model": SCRIPTED_MODEL}, input="x", stream=True)
    )
    session_id = events[0].session.id
    whole = [event.event_id for event in events]
    path = f"{stack.base_url}/v1/agents/sessions/{session_id}/events"
    for cut in (0, 3, len(whole) // 2, len(whole) - 2):
        with httpx.stream(
            "GET", path, headers={"OpenAI-Beta": "agents=v1", "Last-Event-ID": whole[cut]}, timeout=30
        ) as answer:
            rest: list[str] = []
            for line in answer.iter_lines():
                if line.startswith("id: "):
                    rest.append(line.removeprefix("id: "))
                if len(rest) == len(whole) - cut - 1:
                    break
        assert rest == whole[cut + 1 :], cut


def test_a_turn_waiting_for_a_result_can_be_cancelled(client: OpenAI, model: ScriptedModel) -> None:
    model.script(tool_call("get_weather", {"city": "Rome"}), text("Next."))
    session = client.beta.agents.sessions.create(
        environment=NONE, agent={"model": SCRIPTED_MODEL, "tools": [WEATHER]}, input="Rome?"
    )
    assert len(wait_status(client, session.id, "requires_action").required_actions) == 1
    client.beta.agents.sessions.events.create(session.id, events=[{"type": "agent.session.input.cancel"}])
    idle = wait_status(client, session.id, "idle")
    assert idle.status == "idle" and idle.required_actions == []
    assert client.beta.agents.sessions.turns.list(session.id).data[0].status == "cancelled"
    with client.beta.agents.sessions.stream(session.id, input="go on") as stream:  # the session takes input again
        assert stream.get_final_result().output_text.strip() == "Next."
