"""A Responses `mcp` tool whose server speaks the older HTTP+SSE transport, with the unmodified `openai` SDK:
its tools are listed and called, and an approval pauses and resumes the turn as over streamable HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from openai import AsyncOpenAI

from tests.support import mcp_server
from tests.support.scripted_model import ScriptedModel, ThreadedServer, text, tool_call
from tests.support.stack import SCRIPTED_MODEL, Stack


@pytest.fixture(scope="module")
def sse_server() -> Iterator[ThreadedServer]:
    server = mcp_server.start_sse()
    yield server
    server.stop()


@pytest.fixture
async def client(stack: Stack) -> AsyncIterator[AsyncOpenAI]:
    async with AsyncOpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0, timeout=60) as made:
        yield made


def sse_tool(server: ThreadedServer, path: str, approval: str) -> Any:
    return {
        "type": "mcp",
        "server_label": "calc",
        "server_url": f"{server.allowed_url}{path}",
        "allowed_tools": ["add_numbers"],
        "require_approval": approval,
    }


@pytest.mark.parametrize("path", ["/sse", "/events"])
async def test_an_sse_server_is_listed_and_called(
    client: AsyncOpenAI, model: ScriptedModel, sse_server: ThreadedServer, path: str
) -> None:
    model.script(tool_call("add_numbers", {"a": 2, "b": 3}), text("2 + 3 = 5"))
    response = await client.responses.create(
        model=SCRIPTED_MODEL, input="add 2 and 3", tools=[sse_tool(sse_server, path, "never")]
    )
    assert [item.type for item in response.output] == ["mcp_list_tools", "mcp_call", "message"]
    listing, call = response.output[0], response.output[1]
    assert listing.type == "mcp_list_tools" and listing.error is None
    assert [tool.name for tool in listing.tools] == ["add_numbers"]
    assert call.type == "mcp_call" and call.output == "5" and call.error is None


async def test_an_approved_call_to_an_sse_server_runs(
    client: AsyncOpenAI, model: ScriptedModel, sse_server: ThreadedServer
) -> None:
    model.script(tool_call("add_numbers", {"a": 4, "b": 5}), text("done"))
    tools = [sse_tool(sse_server, "/sse", "always")]
    first = await client.responses.create(model=SCRIPTED_MODEL, input="add 4 and 5", tools=tools)
    assert [item.type for item in first.output] == ["mcp_list_tools", "mcp_approval_request"]
    decision: Any = {"type": "mcp_approval_response", "approval_request_id": first.output[1].id, "approve": True}
    second = await client.responses.create(
        model=SCRIPTED_MODEL, previous_response_id=first.id, tools=tools, input=[decision]
    )
    calls = [item for item in second.output if item.type == "mcp_call"]
    assert [(call.output, call.approval_request_id) for call in calls] == [("9", first.output[1].id)]
    assert second.output_text.strip() == "done"
