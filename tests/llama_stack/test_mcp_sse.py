"""An MCP server that speaks the older HTTP+SSE transport, registered as a llama-stack toolgroup and used by
llama-stack-client 0.2.12: its tools are listed, invoked and called by an agent's turn, whether its endpoint
says `/sse` or the server answers a streamable HTTP request with something else."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest
from llama_stack_client import Agent, LlamaStackClient

from tests.support import mcp_server
from tests.support.llama_agent import streamed, user_messages
from tests.support.scripted_model import ScriptedModel, ThreadedServer, text, tool_call
from tests.support.stack import SCRIPTED_MODEL


@pytest.fixture(scope="module")
def sse_server() -> Iterator[ThreadedServer]:
    server = mcp_server.start_sse()
    yield server
    server.stop()


@pytest.mark.parametrize("path", ["/sse", "/events"])
def test_an_sse_toolgroup_is_listed_invoked_and_called_by_a_turn(
    llama: LlamaStackClient, http: httpx.Client, model: ScriptedModel, sse_server: ThreadedServer, path: str
) -> None:
    toolgroup_id = f"mcp::sse-{uuid.uuid4().hex[:8]}"
    llama.toolgroups.register(
        toolgroup_id=toolgroup_id,
        provider_id="model-context-protocol",
        mcp_endpoint={"uri": f"{sse_server.allowed_url}{path}"},
    )
    try:
        names = {tool.identifier for tool in llama.tools.list(toolgroup_id=toolgroup_id)}
        assert names == {"add_numbers", "wait_then_echo", "always_fails", "big_output", "open_vault"}
        invoked = llama.tool_runtime.invoke_tool(tool_name="add_numbers", kwargs={"a": 20, "b": 22})
        assert invoked.content == "42" and not invoked.error_code

        model.script(tool_call("add_numbers", {"a": 2, "b": 3}), text("Five."))
        agent = Agent(llama, model=SCRIPTED_MODEL, instructions="Use tools.", tools=[toolgroup_id])
        session_id = agent.create_session("sse")
        chunks = list(streamed(agent.create_turn(messages=user_messages("2+3?"), session_id=session_id)))
        turn = chunks[-1].event.payload.turn
        assert [step.step_type for step in turn.steps] == ["inference", "tool_execution", "inference"]
        assert turn.steps[1].tool_responses[0].content == "5"
        assert [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"] == ["5"]
    finally:
        http.delete(f"/v1/toolgroups/{toolgroup_id}")


def test_an_sse_endpoint_on_a_loopback_address_is_refused_by_the_outbound_policy(
    llama: LlamaStackClient, http: httpx.Client, sse_server: ThreadedServer
) -> None:
    toolgroup_id = f"mcp::sse-{uuid.uuid4().hex[:8]}"
    body = {
        "toolgroup_id": toolgroup_id,
        "provider_id": "model-context-protocol",
        "mcp_endpoint": {"uri": f"{sse_server.url}/sse"},
    }
    registered = http.post("/v1/toolgroups", json=body)
    try:
        assert registered.status_code == 400 and "loopback" in registered.json()["detail"]
    finally:
        http.delete(f"/v1/toolgroups/{toolgroup_id}")
