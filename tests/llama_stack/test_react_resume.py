"""ReAct-style clients parse tool calls from the model's text and resume a *completed* turn."""

from __future__ import annotations

import json

import httpx
from llama_stack_client import LlamaStackClient
from llama_stack_client.lib.agents.react.agent import ReActAgent

from tests.llama_stack.test_llama_stack_client import calls, get_boiling_point
from tests.support.llama_agent import user_messages
from tests.support.rest import create_agent, create_session, final_turn
from tests.support.scripted_model import ScriptedModel, text, tool_call
from tests.support.stack import SCRIPTED_MODEL, Stack


def _react(thought: str, action: dict | None = None, answer: str | None = None) -> str:
    return json.dumps({"thought": thought, "action": action, "answer": answer})


def test_the_official_react_agent_resumes_a_completed_turn(stack: Stack, model: ScriptedModel) -> None:
    action = {"tool_name": "get_boiling_point", "tool_params": [{"name": "liquid_name", "value": "polyjuice"}]}
    model.script(text(_react("I should look it up", action)), text(_react("Now I know", answer="-100 C")))
    calls.clear()
    llama = LlamaStackClient(base_url=stack.base_url, max_retries=0, timeout=30)
    agent = ReActAgent(client=llama, model=SCRIPTED_MODEL, tools=[get_boiling_point])
    session_id = agent.create_session("react")

    turn = agent.create_turn(messages=user_messages("Polyjuice?"), session_id=session_id, stream=False)

    assert calls == [{"liquid_name": "polyjuice", "celcius": True}]
    assert [s.step_type for s in turn.steps] == ["inference", "tool_execution", "inference"]
    assert turn.steps[1].tool_calls == [] and turn.steps[1].tool_responses[0].content == "-100"
    answer = turn.output_message.content
    assert isinstance(answer, str) and json.loads(answer)["answer"] == "-100 C"
    # The model read the parsed call's result as the user's message (no tool_call_id to answer).
    assert model.requests[1]["messages"][-1] == {"role": "user", "content": "Result of get_boiling_point: -100"}


def test_a_repeated_react_resume_or_one_in_a_busy_session_is_409(stack: Stack, model: ScriptedModel) -> None:
    result = {"tool_responses": [{"call_id": "react-1", "tool_name": "t", "content": "x"}], "stream": True}
    with httpx.Client(base_url=stack.base_url, timeout=30) as http:
        model.script(text("plain"), text("continued"))
        turns = f"/v1/agents/{(agent_id := create_agent(http))}/session/{create_session(http, agent_id)}/turn"
        first = http.post(turns, json={"messages": [{"role": "user", "content": "hi"}]}).json()

        resumed = final_turn(http.post(f"{turns}/{first['turn_id']}/resume", json=result))
        repeated = http.post(f"{turns}/{first['turn_id']}/resume", json=result)

        assert resumed["status"] == "completed" and resumed["output_message"]["content"] == "continued "
        assert repeated.status_code == 409

        model.script(tool_call("get_boiling_point", {"liquid_name": "x"}))
        final_turn(http.post(turns, json={"messages": [{"role": "user", "content": "two"}], "stream": True}))
        other = {"tool_responses": [{"call_id": "react-2", "tool_name": "t", "content": "y"}]}
        blocked = http.post(f"{turns}/{first['turn_id']}/resume", json=other)
        assert blocked.status_code == 409 and "awaiting_input" in blocked.json()["detail"]


def test_a_reopened_turn_keeps_the_toolgroups_and_tool_config_it_was_created_with(
    http: httpx.Client, model: ScriptedModel
) -> None:
    model.script(text("I will compute it"), text("done"))
    agent_id = create_agent(http)  # the agent's own: the client tool, tool_choice auto, no toolgroups
    turns = f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"
    per_turn = {"toolgroups": ["builtin::calculator"], "tool_config": {"tool_choice": "required"}}
    first = http.post(turns, json={"messages": [{"role": "user", "content": "6*7?"}], **per_turn}).json()
    result = {"tool_responses": [{"call_id": "react-1", "tool_name": "calculator", "content": "42"}], "stream": True}

    resumed = final_turn(http.post(f"{turns}/{first['turn_id']}/resume", json=result))

    assert resumed["status"] == "completed"
    created, reopened = model.requests
    assert created["tool_choice"] == reopened["tool_choice"] == "required"
    offered = {tool["function"]["name"] for tool in reopened["tools"]}
    assert offered == {tool["function"]["name"] for tool in created["tools"]}
    assert "calculate" in offered
