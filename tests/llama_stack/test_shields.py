"""Shields: shield_call steps at the input and output touchpoints; a violation ends the turn."""

from __future__ import annotations

import httpx
from llama_stack_client import Agent, LlamaStackClient
from llama_stack_client.lib.agents.event_logger import EventLogger

from tests.support.llama_agent import streamed, user_messages
from tests.support.rest import create_agent, create_session, final_turn, sse_events
from tests.support.scripted_model import ScriptedModel, text, tool_call
from tests.support.stack import SCRIPTED_MODEL, Stack

REFUSAL = "I can't answer that. Can I help with something else?"


def test_shields_are_listed_and_unknown_ones_refused(http: httpx.Client) -> None:
    shields = {s["identifier"]: s for s in http.get("/v1/shields").json()["data"]}
    assert shields["keyword-guard"]["provider_id"] == "regex"
    assert shields["llama-guard"]["type"] == "shield"
    config = {"model": "offline/echo", "instructions": "", "input_shields": ["nope"]}
    refused = http.post("/v1/agents", json={"agent_config": config})
    assert refused.status_code == 400
    assert "nope" in refused.json()["detail"] and "keyword-guard" in refused.json()["detail"]


def test_an_input_violation_ends_the_turn_before_the_model_is_called(stack: Stack, model: ScriptedModel) -> None:
    model.script(text("Sure, a sentence with hello."))
    llama = LlamaStackClient(base_url=stack.base_url, max_retries=0, timeout=30)
    shields = ["keyword-guard"]
    agent = Agent(
        llama, model=SCRIPTED_MODEL, instructions="Be helpful.", input_shields=shields, output_shields=shields
    )
    session_id = agent.create_session("shields")

    fine = "".join(
        str(log)
        for log in EventLogger().log(
            streamed(agent.create_turn(messages=user_messages("Give me a sentence with hello"), session_id=session_id))
        )
    )
    refused = list(
        streamed(agent.create_turn(messages=user_messages("Tell me how to make a bomb"), session_id=session_id))
    )

    assert "shield_call> No Violation" in fine
    printed = "".join(str(log) for log in EventLogger().log(iter(refused)))
    assert "I can't" in printed
    payloads = [c.event.payload for c in refused]
    assert payloads[0].event_type == "step_start" and payloads[0].metadata == {"touchpoint": "user-input"}
    assert payloads[1].step_details.violation.violation_level == "error"
    turn = payloads[-1].turn
    assert turn.output_message.content == REFUSAL
    assert [s.step_type for s in turn.steps] == ["shield_call"]
    assert len(model.requests) == 1  # only the first turn reached the model


def test_shield_steps_around_a_client_tool_turn(http: httpx.Client, model: ScriptedModel) -> None:
    model.script(tool_call("get_boiling_point", {"liquid_name": "polyjuice"}), text("-100"))
    agent_id = create_agent(http, input_shields=["keyword-guard"], output_shields=["keyword-guard"])
    turns = f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"
    ask = {"messages": [{"role": "user", "content": "polyjuice?"}], "stream": True}
    paused = final_turn(http.post(turns, json=ask))
    call = paused["output_message"]["tool_calls"][0]
    answer = {"call_id": call["call_id"], "tool_name": call["tool_name"], "content": "-100"}

    turn = http.post(f"{turns}/{paused['turn_id']}/resume", json={"tool_responses": [answer]}).json()

    kinds = [s["step_type"] for s in turn["steps"]]
    assert kinds == [
        "shield_call",
        "inference",
        "shield_call",
        "tool_execution",
        "shield_call",
        "inference",
        "shield_call",
    ]
    assert all(s["violation"] is None for s in turn["steps"] if s["step_type"] == "shield_call")


def test_a_tool_result_can_violate_an_input_shield(http: httpx.Client, model: ScriptedModel) -> None:
    model.script(tool_call("get_boiling_point", {"liquid_name": "x"}))
    agent_id = create_agent(http, input_shields=["keyword-guard"])
    turns = f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"
    paused = final_turn(http.post(turns, json={"messages": [{"role": "user", "content": "go"}], "stream": True}))
    call = paused["output_message"]["tool_calls"][0]
    answer = {"call_id": call["call_id"], "tool_name": call["tool_name"], "content": "build a bomb"}

    events = sse_events(
        http.post(f"{turns}/{paused['turn_id']}/resume", json={"tool_responses": [answer], "stream": True})
    )

    turn = events[-1][1]["event"]["payload"]["turn"]
    assert turn["output_message"]["content"] == REFUSAL
    assert [s["step_type"] for s in turn["steps"]] == ["shield_call", "inference", "tool_execution", "shield_call"]


def test_a_llama_guard_output_violation_replaces_the_answer(http: httpx.Client, model: ScriptedModel) -> None:
    model.script(text("Here is something dreadful."), guard=(text("unsafe\nS1"),))
    agent_id = create_agent(http, output_shields=["llama-guard"])
    turns = f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"

    turn = http.post(turns, json={"messages": [{"role": "user", "content": "say it"}]}).json()

    assert turn["output_message"]["content"] == REFUSAL
    shield_step = turn["steps"][-1]
    assert shield_step["step_type"] == "shield_call"
    assert shield_step["violation"]["metadata"] == {"violation_type": "S1"}
    prompt = model.guard_requests[0]["messages"][0]["content"]
    assert "User: say it" in prompt and "Agent: Here is something dreadful." in prompt
    assert "ONLY THE LAST Agent message" in prompt
