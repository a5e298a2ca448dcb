"""Server-side tools: MCP toolgroups and the built-in calculator, alone and mixed with client tools."""

from __future__ import annotations

import time

import httpx
from llama_stack_client import Agent, LlamaStackClient
from llama_stack_client.types.agents.agent_turn_response_stream_chunk import AgentTurnResponseStreamChunk

from tests.llama_stack.test_llama_stack_client import get_boiling_point
from tests.support import mcp_server
from tests.support.llama_agent import streamed, user_messages
from tests.support.rest import create_agent, create_session, final_turn
from tests.support.scripted_model import Reply, ScriptedModel, ThreadedServer, text, tool_call
from tests.support.stack import SCRIPTED_MODEL, Stack


def _ask(content: str, stream: bool = False) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": content}], "stream": stream}


def test_agent_with_mcp_and_client_tool_in_one_streamed_turn(
    stack: Stack, model: ScriptedModel, toolgroup: str
) -> None:
    model.script(
        Reply(tool_calls=[("add_numbers", {"a": 2, "b": 3}), ("get_boiling_point", {"liquid_name": "polyjuice"})]),
        text("Two plus three is five and polyjuice boils at minus one hundred", token_delay_seconds=0.1),
    )
    llama = LlamaStackClient(base_url=stack.base_url, max_retries=0, timeout=30)
    agent = Agent(llama, model=SCRIPTED_MODEL, instructions="Use tools.", tools=[toolgroup, get_boiling_point])
    session_id = agent.create_session("mixed")

    arrivals: list[tuple[float, AgentTurnResponseStreamChunk]] = []
    for chunk in streamed(agent.create_turn(messages=user_messages("2+3, and polyjuice?"), session_id=session_id)):
        arrivals.append((time.monotonic(), chunk))

    payloads = [chunk.event.payload for _, chunk in arrivals]
    kinds = [(p.event_type, getattr(p, "step_type", None)) for p in payloads]
    server_step = kinds.index(("step_start", "tool_execution"))
    assert kinds[server_step + 1] == ("step_progress", "tool_execution")
    assert kinds[server_step + 2] == ("step_complete", "tool_execution")
    assert payloads[server_step + 2].step_details.tool_responses[0].content == "5"
    pause = next(p for p in payloads if p.event_type == "turn_awaiting_input")
    assert [c.tool_name for c in pause.turn.output_message.tool_calls] == ["get_boiling_point"]
    turn = payloads[-1].turn
    assert payloads[-1].event_type == "turn_complete"
    assert [s.step_type for s in turn.steps] == ["inference", "tool_execution", "tool_execution", "inference"]
    assert turn.steps[2].tool_responses[0].content == "-100"
    # The final answer streamed: its first text delta arrived well before its step completed.
    last_inference = turn.steps[-1].step_id
    deltas = [
        t
        for t, c in arrivals
        if c.event.payload.event_type == "step_progress" and c.event.payload.step_id == last_inference
    ]
    completed = next(
        t
        for t, c in arrivals
        if c.event.payload.event_type == "step_complete" and c.event.payload.step_id == last_inference
    )
    assert len(deltas) >= 5
    assert completed - deltas[0] > 0.5
    # And the model saw both tools' answers.
    final_request = model.requests[-1]["messages"]
    assert [m["content"] for m in final_request if m["role"] == "tool"] == ["5", "-100"]


def test_builtin_calculator_answers_the_model(http: httpx.Client, model: ScriptedModel) -> None:
    model.script(tool_call("calculate", {"expression": "(2 + 3) * 4 / 8"}), text("It is 2.5."))
    agent_id = create_agent(http, toolgroups=["builtin::calculator"], client_tools=[])
    turns = f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"

    turn = http.post(turns, json=_ask("compute")).json()

    assert [s["step_type"] for s in turn["steps"]] == ["inference", "tool_execution", "inference"]
    assert turn["steps"][1]["tool_responses"][0]["content"] == "2.5"
    offered = model.requests[0]["tools"][0]["function"]
    assert offered["name"] == "calculate" and offered["parameters"]["required"] == ["expression"]


def test_a_tool_error_goes_back_to_the_model(http: httpx.Client, model: ScriptedModel, toolgroup: str) -> None:
    model.script(
        Reply(tool_calls=[("always_fails", {}), ("calculate", {"expression": "1/0"})]), text("Both failed, sorry.")
    )
    agent_id = create_agent(http, toolgroups=[toolgroup, "builtin::calculator"], client_tools=[])
    turns = f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"

    turn = http.post(turns, json=_ask("try")).json()

    assert turn["status"] == "completed"
    responses = [s["tool_responses"][0] for s in turn["steps"] if s["step_type"] == "tool_execution"]
    assert "always_fails" in responses[0]["content"] or "Error" in responses[0]["content"]
    assert responses[1]["content"] == "Error: division by zero"
    assert turn["output_message"]["content"] == "Both failed, sorry. "


def test_the_calls_of_one_model_response_run_concurrently(
    http: httpx.Client, model: ScriptedModel, toolgroup: str
) -> None:
    calls = [("wait_then_echo", {"seconds": 1.5, "text": f"t{i}"}) for i in range(3)]
    model.script(Reply(tool_calls=calls), text("done"))
    agent_id = create_agent(http, toolgroups=[toolgroup], client_tools=[])
    turns = f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"

    mcp_server.WAITING["most"] = 0
    turn = http.post(turns, json=_ask("wait")).json()

    assert [s["tool_responses"][0]["content"] for s in turn["steps"][1:4]] == ["t0", "t1", "t2"]
    # Counted at the MCP server rather than timed, so a loaded machine cannot make it fail or pass.
    assert mcp_server.WAITING["most"] == 3, "the three calls did not run at the same time"


def test_toolgroup_registration_listing_and_invocation(http: httpx.Client, toolgroup: str) -> None:
    again = {
        "toolgroup_id": toolgroup,
        "provider_id": "model-context-protocol",
        "mcp_endpoint": {"uri": "http://x/mcp"},
    }
    assert http.post("/v1/toolgroups", json=again).status_code == 409
    not_mcp = {"toolgroup_id": "x::y", "provider_id": "rag"}
    assert http.post("/v1/toolgroups", json=not_mcp).status_code == 400

    groups = {g["identifier"] for g in http.get("/v1/toolgroups").json()["data"]}
    assert {"builtin::calculator", toolgroup} <= groups
    assert http.get(f"/v1/toolgroups/{toolgroup}").json()["mcp_endpoint"]["uri"].endswith("/mcp")

    tools = {t["identifier"]: t for t in http.get("/v1/tools", params={"toolgroup_id": toolgroup}).json()["data"]}
    assert set(tools) == {"add_numbers", "wait_then_echo", "always_fails", "big_output", "open_vault"}
    assert [(p["name"], p["parameter_type"], p["required"]) for p in tools["add_numbers"]["parameters"]] == [
        ("a", "integer", True),
        ("b", "integer", True),
    ]
    invoked = http.post("/v1/tool-runtime/invoke", json={"tool_name": "add_numbers", "kwargs": {"a": 20, "b": 22}})
    assert invoked.json()["content"] == "42" and invoked.json()["error_code"] == 0

    assert http.get("/v1/tools", params={"toolgroup_id": "mcp::nope"}).status_code == 404
    response = http.post(
        "/v1/agents", json={"agent_config": {"model": "offline/echo", "instructions": "", "toolgroups": ["mcp::nope"]}}
    )
    assert response.status_code == 400 and "mcp::nope" in response.json()["detail"]


def test_per_turn_toolgroups_replace_the_agents(http: httpx.Client, model: ScriptedModel, toolgroup: str) -> None:
    model.script(text("ok"))
    agent_id = create_agent(http, toolgroups=["builtin::calculator"], client_tools=[])
    turns = f"/v1/agents/{agent_id}/session/{create_session(http, agent_id)}/turn"

    final_turn(http.post(turns, json=_ask("hi", stream=True) | {"toolgroups": [f"{toolgroup}/add_numbers"]}))

    assert [t["function"]["name"] for t in model.requests[0]["tools"]] == ["add_numbers"]
    unknown = http.post(turns, json=_ask("hi") | {"toolgroups": ["mcp::nope"]})
    assert unknown.status_code == 400


def test_invoking_a_tool_two_toolgroups_offer_is_refused_naming_both(http: httpx.Client, mcp: ThreadedServer) -> None:
    with mcp_server.registered_toolgroup(http, mcp) as first, mcp_server.registered_toolgroup(http, mcp) as second:
        invoked = http.post("/v1/tool-runtime/invoke", json={"tool_name": "add_numbers", "kwargs": {"a": 1, "b": 2}})
        assert invoked.status_code == 400
        assert first in invoked.json()["detail"] and second in invoked.json()["detail"]
