"""The official llama-stack-client 0.2.12 and its Agent helper, unmodified, against our API."""

from __future__ import annotations

from typing import Any

from llama_stack_client import Agent, LlamaStackClient
from llama_stack_client.lib.agents.client_tool import client_tool
from llama_stack_client.lib.agents.event_logger import EventLogger

from tests.support.clients import boiling_point
from tests.support.llama_agent import streamed, user_messages
from tests.support.scripted_model import ScriptedModel, text, tool_call
from tests.support.stack import SCRIPTED_MODEL

calls = boiling_point.calls
get_boiling_point = client_tool(boiling_point.get_boiling_point)


def _agent(llama: LlamaStackClient, **kwargs: Any) -> Agent:
    kwargs.setdefault("tools", [get_boiling_point])
    return Agent(llama, model=SCRIPTED_MODEL, instructions="You are a helpful assistant", **kwargs)


def test_plain_streamed_turn_prints_the_models_words(llama: LlamaStackClient, model: ScriptedModel) -> None:
    model.script(text("Here is a sentence with hello in it."))
    agent = _agent(llama, tools=[])
    session_id = agent.create_session("plain")

    chunks = list(
        streamed(agent.create_turn(messages=user_messages("Give me a sentence with hello"), session_id=session_id))
    )
    printed = "".join(str(log) for log in EventLogger().log(iter(chunks)))

    assert "hello in it." in printed
    kinds = [c.event.payload.event_type for c in chunks]
    assert kinds[0] == "step_start" and kinds[-1] == "turn_complete"
    assert "step_progress" in kinds
    turn = chunks[-1].event.payload.turn
    assert turn.output_message.content == "Here is a sentence with hello in it. "
    assert [s.step_type for s in turn.steps] == ["inference"]


def test_client_tool_turn_streamed_pauses_and_the_helper_resumes_it(
    llama: LlamaStackClient, model: ScriptedModel
) -> None:
    model.script(
        tool_call("get_boiling_point", {"liquid_name": "polyjuice", "celcius": True}), text("It boils at -100.")
    )
    calls.clear()
    agent = _agent(llama)
    session_id = agent.create_session("tool-stream")

    chunks = list(
        streamed(agent.create_turn(messages=user_messages("Boiling point of polyjuice?"), session_id=session_id))
    )
    printed = "".join(str(log) for log in EventLogger().log(iter(chunks)))

    assert calls == [{"liquid_name": "polyjuice", "celcius": True}]
    assert "get_boiling_point" in printed and "-100" in printed
    kinds = [c.event.payload.event_type for c in chunks]
    assert kinds.count("turn_awaiting_input") == 1 and kinds[-1] == "turn_complete"
    turn = chunks[-1].event.payload.turn
    assert [s.step_type for s in turn.steps] == ["inference", "tool_execution", "inference"]
    assert turn.steps[1].tool_responses[0].content == "-100"
    assert turn.output_message.content == "It boils at -100. "
    # The model saw the tool's answer right after its own call.
    resumed = model.requests[1]["messages"]
    assert resumed[-2]["tool_calls"][0]["function"]["name"] == "get_boiling_point"
    assert resumed[-1] == {"role": "tool", "tool_call_id": "call_1_0", "content": "-100"}


def test_client_tool_turn_non_streamed_returns_the_finished_turn(llama: LlamaStackClient, model: ScriptedModel) -> None:
    model.script(tool_call("get_boiling_point", {"liquid_name": "water"}), text("Water: -1."))
    agent = _agent(llama)
    session_id = agent.create_session("tool-nonstream")

    turn = agent.create_turn(messages=user_messages("Boiling point of water?"), session_id=session_id, stream=False)

    assert [s.step_type for s in turn.steps] == ["inference", "tool_execution", "inference"]
    assert turn.output_message.content == "Water: -1. "
    assert turn.input_messages[0].content == "Boiling point of water?"
    for previous, step in zip(turn.steps, turn.steps[1:], strict=False):
        assert previous.completed_at < step.started_at < step.completed_at


def test_raw_non_streaming_turn_create_answers_with_the_turn(llama: LlamaStackClient, model: ScriptedModel) -> None:
    model.script(text("Plain answer."))
    agent_id = llama.agents.create(agent_config={"model": SCRIPTED_MODEL, "instructions": "Be brief."}).agent_id
    session_id = llama.agents.session.create(agent_id, session_name="raw").session_id

    turn = llama.agents.turn.create(session_id, agent_id=agent_id, messages=user_messages("Hi"), stream=False)

    assert turn.output_message.content == "Plain answer. "
    assert turn.output_message.stop_reason == "end_of_turn"


def test_second_turn_sends_the_first_turns_messages_in_order(llama: LlamaStackClient, model: ScriptedModel) -> None:
    model.script(
        tool_call("get_boiling_point", {"liquid_name": "polyjuice"}),
        text("Polyjuice boils at -100."),
        text("You asked about polyjuice."),
    )
    agent = _agent(llama)
    session_id = agent.create_session("two-turns")

    agent.create_turn(messages=user_messages("Boiling point of polyjuice?"), session_id=session_id, stream=False)
    agent.create_turn(messages=user_messages("What did I ask?"), session_id=session_id, stream=False)

    second_turn_request = model.requests[2]["messages"]
    assert [m["role"] for m in second_turn_request] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert second_turn_request[0]["content"] == "You are a helpful assistant"
    assert second_turn_request[1]["content"] == "Boiling point of polyjuice?"
    assert second_turn_request[4]["content"] == "Polyjuice boils at -100. "
    assert second_turn_request[5]["content"] == "What did I ask?"
    tools = model.requests[2]["tools"]
    assert tools[0]["function"]["parameters"] == {
        "type": "object",
        "properties": {
            "liquid_name": {"type": "string", "description": "The name of the liquid"},
            "celcius": {
                "type": "boolean",
                "description": "Whether to return the boiling point in Celcius",
                "default": True,
            },
        },
        "required": ["liquid_name"],
    }


def test_retrieve_turn_step_and_session(llama: LlamaStackClient, model: ScriptedModel) -> None:
    model.script(tool_call("get_boiling_point", {"liquid_name": "polyjuice"}), text("Done."), text("Second."))
    agent = _agent(llama)
    session_id = agent.create_session("retrieve")
    first = agent.create_turn(messages=user_messages("one"), session_id=session_id, stream=False)
    second = agent.create_turn(messages=user_messages("two"), session_id=session_id, stream=False)

    turn = llama.agents.turn.retrieve(first.turn_id, agent_id=agent.agent_id, session_id=session_id)
    assert turn.turn_id == first.turn_id
    assert [s.step_id for s in turn.steps] == [s.step_id for s in first.steps]
    assert turn.output_message.content == "Done. "

    tool_step = first.steps[1]
    step = llama.agents.steps.retrieve(
        tool_step.step_id, agent_id=agent.agent_id, session_id=session_id, turn_id=first.turn_id
    ).step
    assert step.step_type == "tool_execution"
    assert step.tool_calls[0].tool_name == "get_boiling_point"

    session = llama.agents.session.retrieve(session_id, agent_id=agent.agent_id)
    assert session.session_name == "retrieve"
    assert [t.turn_id for t in session.turns] == [first.turn_id, second.turn_id]
    only_second = llama.agents.session.retrieve(session_id, agent_id=agent.agent_id, turn_ids=[second.turn_id])
    assert [t.turn_id for t in only_second.turns] == [second.turn_id]
