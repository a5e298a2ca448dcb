"""Function tools and MCP tools over `/v1/responses` with the unmodified `openai` SDK: a function call is a
durable pause that the next response resumes — the same workflow — whichever way it names its context;
MCP servers named in a request are listed and called, their approvals pause and resume the turn, and their
headers never reach the workflow's history or the store's rows."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI
from openai.types.responses import ResponseFunctionToolCall
from openai.types.responses.response_input_item_param import FunctionCallOutput

from tests.support import mcp_server
from tests.support.processes import EVENT_SECONDS, wait_until
from tests.support.scripted_model import ScriptedModel, ThreadedServer, text, tool_call
from tests.support.stack import SCRIPTED_MODEL, Stack

WEATHER: Any = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
HEADER_SECRET = "header-secret-41c9"
VAULT_TOKEN = mcp_server.SECRET.removeprefix("Bearer ")


@pytest.fixture
async def client(stack: Stack) -> AsyncIterator[AsyncOpenAI]:
    async with AsyncOpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0, timeout=60) as made:
        yield made


def _workflows_of(stack: Stack, response_id: str) -> list[str]:
    """The ids of the workflows Temporal finds by the response's id (search attribute ResponseId)."""

    async def listed() -> list[str]:
        return [wf.id async for wf in stack.client.list_workflows(f'ResponseId = "{response_id}"')]

    # Visibility is eventually consistent, the more so for an id the workflow added itself (a continuation's).
    return wait_until(lambda: stack.background.run(listed()), f"workflows of {response_id}", EVENT_SECONDS)


async def workflows_of(stack: Stack, response_id: str) -> list[str]:
    return await asyncio.to_thread(_workflows_of, stack, response_id)


async def paused_call(client: AsyncOpenAI, model: ScriptedModel, answer: str) -> Any:
    model.script(tool_call("get_weather", {"city": "Paris"}), text(answer))
    first = await client.responses.create(
        model=SCRIPTED_MODEL, input="What is the weather in Paris?", tools=[WEATHER], instructions="Be brief."
    )
    assert first.status == "completed" and [item.type for item in first.output] == ["function_call"]
    call = first.output[0]
    assert isinstance(call, ResponseFunctionToolCall)
    assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "Paris"}
    return first


def tool_results_seen(model: ScriptedModel) -> list[str]:
    return [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"]


async def assert_same_workflow(stack: Stack, first: Any, second: Any) -> None:
    one, two = await workflows_of(stack, first.id), await workflows_of(stack, second.id)
    assert one == two and len(one) == 1, (one, two)


async def test_previous_response_id_resumes_the_waiting_workflow(
    client: AsyncOpenAI, model: ScriptedModel, stack: Stack
) -> None:
    first = await paused_call(client, model, "Sunny in Paris.")
    output: FunctionCallOutput = {"type": "function_call_output", "call_id": first.output[0].call_id, "output": "sunny"}
    second = await client.responses.create(
        model=SCRIPTED_MODEL, previous_response_id=first.id, input=[output], tools=[WEATHER]
    )
    assert second.status == "completed" and second.output_text.strip() == "Sunny in Paris."
    assert tool_results_seen(model) == ["sunny"] and len(model.requests) == 2
    await assert_same_workflow(stack, first, second)
    assert (await client.responses.retrieve(first.id)).output[0].type == "function_call"  # still itself

    # A fork: the same response continued again. Its turn no longer waits: a new turn with the chain as context.
    model.script(text("Still sunny."))
    fork = await client.responses.create(
        model=SCRIPTED_MODEL, previous_response_id=first.id, input=[output], tools=[WEATHER]
    )
    assert fork.output_text.strip() == "Still sunny." and tool_results_seen(model) == ["sunny"]
    assert await workflows_of(stack, fork.id) != await workflows_of(stack, first.id)


async def test_stateless_replay_resumes_the_waiting_workflow(
    client: AsyncOpenAI, model: ScriptedModel, stack: Stack
) -> None:
    first = await paused_call(client, model, "Rain.")
    call = first.output[0]
    replay = [
        {"role": "user", "content": "What is the weather in Paris?"},
        {
            "type": "function_call",
            "id": call.id,
            "call_id": call.call_id,
            "name": call.name,
            "arguments": call.arguments,
        },
        {"type": "function_call_output", "call_id": call.call_id, "output": "rain"},
    ]
    async with client.responses.stream(model=SCRIPTED_MODEL, input=replay, tools=[WEATHER]) as stream:  # type: ignore[arg-type]
        second = await stream.get_final_response()
    assert second.output_text.strip() == "Rain." and tool_results_seen(model) == ["rain"]
    await assert_same_workflow(stack, first, second)

    # History this server never produced is plain context for a new turn.
    model.script(text("Replayed."))
    foreign = [*replay[:1], {**replay[1], "call_id": "call_foreign"}, {**replay[2], "call_id": "call_foreign"}]
    third = await client.responses.create(model=SCRIPTED_MODEL, input=foreign, tools=[WEATHER])  # type: ignore[arg-type]
    assert third.output_text.strip() == "Replayed." and tool_results_seen(model) == ["rain"]


async def test_wrong_outputs_are_refused_and_the_turn_still_waits(client: AsyncOpenAI, model: ScriptedModel) -> None:
    first = await paused_call(client, model, "Fine.")
    call_id = first.output[0].call_id
    cases = [
        ([{"type": "function_call_output", "call_id": "call_unknown", "output": "x"}], "call_unknown"),
        ([{"role": "user", "content": "never mind"}], f"No tool output found for function call {call_id}."),
    ]
    for given, says in cases:
        with pytest.raises(openai.BadRequestError) as refused:
            await client.responses.create(model=SCRIPTED_MODEL, previous_response_id=first.id, input=given)  # type: ignore[arg-type]
        assert says in refused.value.message and refused.value.param == "input"
    with pytest.raises(openai.BadRequestError) as unknown:
        await client.responses.create(model=SCRIPTED_MODEL, previous_response_id="resp_" + "1" * 48, input="x")
    assert unknown.value.code == "previous_response_not_found"
    output: FunctionCallOutput = {"type": "function_call_output", "call_id": call_id, "output": "fine"}
    second = await client.responses.create(model=SCRIPTED_MODEL, previous_response_id=first.id, input=[output])
    assert second.output_text.strip() == "Fine." and len(model.requests) == 2


async def test_a_running_previous_response_is_refused(client: AsyncOpenAI, model: ScriptedModel) -> None:
    model.script(text("slow", delay_seconds=30))
    running = await client.responses.create(model=SCRIPTED_MODEL, input="x", background=True)
    with pytest.raises(openai.BadRequestError, match="still"):
        await client.responses.create(model=SCRIPTED_MODEL, input="y", previous_response_id=running.id)
    await client.responses.cancel(running.id)


def mcp_tool(server: ThreadedServer, approval: Any, allowed: str = "add_numbers") -> dict[str, Any]:
    return {
        "type": "mcp",
        "server_label": "calc",
        "server_url": f"{server.allowed_url}/mcp",
        "headers": {"X-Api-Key": HEADER_SECRET},
        "authorization": VAULT_TOKEN,
        "allowed_tools": [allowed],
        "require_approval": approval,
    }


async def history_json(stack: Stack, response_id: str) -> str:
    """The history of the response's workflow once closed: its response is complete once stored, before that."""
    [workflow_id] = await workflows_of(stack, response_id)
    return (await asyncio.to_thread(stack.closed_history, workflow_id)).to_json()


async def test_mcp_tools_are_listed_and_called(
    client: AsyncOpenAI, model: ScriptedModel, stack: Stack, mcp: ThreadedServer
) -> None:
    model.script(tool_call("add_numbers", {"a": 2, "b": 3}), text("2 + 3 = 5"))
    response = await client.responses.create(model=SCRIPTED_MODEL, input="add 2 and 3", tools=[mcp_tool(mcp, "never")])  # type: ignore[list-item]
    kinds = [item.type for item in response.output]
    assert kinds == ["mcp_list_tools", "mcp_call", "message"], kinds
    listing, call = response.output[0], response.output[1]
    assert [tool.name for tool in listing.tools] == ["add_numbers"]
    assert call.output == "5" and call.server_label == "calc"
    assert response.output_text.strip() == "2 + 3 = 5"
    assert HEADER_SECRET not in response.model_dump_json()
    assert HEADER_SECRET not in await history_json(stack, response.id)
    assert HEADER_SECRET not in stack.store_text() and VAULT_TOKEN not in stack.store_text()


async def test_a_streamed_mcp_call_is_shown_while_it_runs(
    client: AsyncOpenAI, model: ScriptedModel, mcp: ThreadedServer
) -> None:
    model.script(tool_call("wait_then_echo", {"seconds": 1.5, "text": "hi"}), text("echoed"))
    tools = [mcp_tool(mcp, "never", "wait_then_echo")]
    stream = await client.responses.create(model=SCRIPTED_MODEL, input="echo hi", tools=tools, stream=True)  # type: ignore[arg-type]
    seen: dict[str, float] = {}
    response_id, shown = "", None
    async for event in stream:
        seen.setdefault(event.type, time.monotonic())
        if event.type == "response.created":
            response_id = event.response.id
        if event.type == "response.mcp_call_arguments.done":  # the call runs now: what does a GET show?
            shown = await client.responses.retrieve(response_id)
    assert shown is not None
    assert seen["response.mcp_call.completed"] - seen["response.mcp_call.in_progress"] > 1.0
    calls = [item for item in shown.output if item.type == "mcp_call"]
    assert [(call.status, call.output) for call in calls] == [("in_progress", None)]


async def test_mcp_credentials_reach_the_server(client: AsyncOpenAI, model: ScriptedModel, mcp: ThreadedServer) -> None:
    model.script(tool_call("open_vault"), text("opened"))
    response = await client.responses.create(
        model=SCRIPTED_MODEL,
        input="open the vault",
        tools=[mcp_tool(mcp, "never", "open_vault")],  # type: ignore[list-item]
    )
    call = next(item for item in response.output if item.type == "mcp_call")
    assert call.output == "the vault is open" and call.error is None
    assert VAULT_TOKEN not in response.model_dump_json()


@pytest.mark.parametrize("approve", [True, False])
async def test_mcp_approvals_pause_and_resume_the_same_workflow(
    client: AsyncOpenAI, model: ScriptedModel, stack: Stack, mcp: ThreadedServer, approve: bool
) -> None:
    model.script(tool_call("add_numbers", {"a": 4, "b": 5}), text("done"))
    tools = [mcp_tool(mcp, "always")]
    first = await client.responses.create(model=SCRIPTED_MODEL, input="add 4 and 5", tools=tools)  # type: ignore[arg-type]
    assert [item.type for item in first.output] == ["mcp_list_tools", "mcp_approval_request"]
    request = first.output[1]
    decision = {"type": "mcp_approval_response", "approval_request_id": request.id, "approve": approve}
    with pytest.raises(openai.BadRequestError):
        await client.responses.create(
            model=SCRIPTED_MODEL,
            previous_response_id=first.id,
            tools=tools,  # type: ignore[arg-type]
            input=[{**decision, "approval_request_id": "mcpr_unknown"}],  # type: ignore[list-item]
        )
    second = await client.responses.create(
        model=SCRIPTED_MODEL,
        previous_response_id=first.id,
        tools=tools,  # type: ignore[arg-type]
        input=[decision],  # type: ignore[list-item]
    )
    assert second.output_text.strip() == "done"
    calls = [item for item in second.output if item.type == "mcp_call"]
    if approve:
        assert len(calls) == 1 and calls[0].output == "9" and calls[0].approval_request_id == request.id
    else:
        assert not [call for call in calls if call.output == "9"]
    await assert_same_workflow(stack, first, second)
    assert HEADER_SECRET not in await history_json(stack, second.id)


async def test_an_mcp_server_the_outbound_policy_refuses_is_a_400(client: AsyncOpenAI) -> None:
    tool = {
        "type": "mcp",
        "server_label": "meta",
        "server_url": "http://169.254.169.254/mcp",
        "require_approval": "never",
    }
    with pytest.raises(openai.BadRequestError) as refused:
        await client.responses.create(model=SCRIPTED_MODEL, input="x", tools=[tool])  # type: ignore[list-item]
    assert refused.value.param == "tools"


async def test_a_conversation_continuation_resumes_and_its_items_are_appended_once(
    client: AsyncOpenAI, model: ScriptedModel, stack: Stack
) -> None:
    conversation = await client.conversations.create(metadata={"name": "s1"})
    model.script(tool_call("get_weather", {"city": "Paris"}), text("Cloudy."))
    stream = await client.responses.create(
        model=SCRIPTED_MODEL,
        input=[{"role": "user", "content": "Weather?"}],
        conversation=conversation.id,
        tools=[WEATHER],
        stream=True,
    )
    first = [event async for event in stream][-1].response
    call = first.output[0]
    assert first.conversation.id == conversation.id and call.type == "function_call"
    output: FunctionCallOutput = {"type": "function_call_output", "call_id": call.call_id, "output": '"cloudy"'}
    second = await client.responses.create(
        model=SCRIPTED_MODEL,
        conversation=conversation.id,
        input=[output],
        tools=[WEATHER],
    )
    assert second.output_text.strip() == "Cloudy." and tool_results_seen(model) == ['"cloudy"']
    await assert_same_workflow(stack, first, second)
    for _ in range(2):  # read twice: settled exactly once
        listed = await client.conversations.items.list(conversation.id, order="asc")
        assert [item.type for item in listed.data] == ["message", "function_call", "function_call_output", "message"]
        assert listed.data[1].id == call.id and listed.data[-1].id == second.output[-1].id

    model.script(text("You asked about Paris."))
    third = await client.responses.create(model=SCRIPTED_MODEL, conversation=conversation.id, input="What did I ask?")
    assert third.output_text.strip() == "You asked about Paris."
    seen = [message.get("content") for message in model.requests[-1]["messages"]]
    assert "Weather?" in seen and '"cloudy"' in seen and seen[-1] == "What did I ask?"


async def test_an_expired_pause_is_continued_by_a_new_turn(stack: Stack, model: ScriptedModel) -> None:
    settings = stack.settings.model_copy(update={"awaiting_input_timeout": timedelta(seconds=1)})
    with stack.other_api(settings) as url:
        async with AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=60) as client:
            first = await paused_call(client, model, "Late but sunny.")
            await asyncio.sleep(3)  # the turn expires waiting
            output: FunctionCallOutput = {
                "type": "function_call_output",
                "call_id": first.output[0].call_id,
                "output": "sunny",
            }
            second = await client.responses.create(
                model=SCRIPTED_MODEL, previous_response_id=first.id, input=[output], tools=[WEATHER]
            )
    assert second.output_text.strip() == "Late but sunny." and tool_results_seen(model) == ["sunny"]
    assert await workflows_of(stack, second.id) != await workflows_of(stack, first.id)
    assert model.requests[-1]["messages"][-2]["tool_calls"][0]["function"]["name"] == "get_weather"


def prompt_words(model: ScriptedModel, index: int) -> int:
    """The input tokens the scripted model reports for its `index`-th request: words stand for tokens."""
    return sum(len(str(message.get("content") or "").split()) for message in model.requests[index]["messages"])


async def test_usage_sums_the_inferences_of_each_response(
    client: AsyncOpenAI, model: ScriptedModel, mcp: ThreadedServer
) -> None:
    model.script(tool_call("add_numbers", {"a": 2, "b": 3}), text("2 + 3 = 5"))
    async with client.responses.stream(
        model=SCRIPTED_MODEL,
        input="add 2 and 3",
        tools=[mcp_tool(mcp, "never")],  # type: ignore[list-item]
    ) as stream:
        events = [event async for event in stream]
    terminal = events[-1]
    assert terminal.type == "response.completed"
    assert all(getattr(event, "response", None) is None or event.response.usage is None for event in events[:-1])
    usage = terminal.response.usage
    assert usage is not None
    # One response, two model calls (the MCP call, then the answer): their tokens summed.
    assert usage.input_tokens == prompt_words(model, 0) + prompt_words(model, 1)
    assert usage.output_tokens == 1 + 5  # one tool call; "2 + 3 = 5"
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    assert usage.input_tokens_details.cached_tokens == 0 and usage.output_tokens_details.reasoning_tokens == 0
    assert (await client.responses.retrieve(terminal.response.id)).usage == usage

    # A function-call pause and its continuation: each response counts its own segment's model call.
    first = await paused_call(client, model, "Sunny and warm.")
    output: FunctionCallOutput = {"type": "function_call_output", "call_id": first.output[0].call_id, "output": "sunny"}
    second = await client.responses.create(
        model=SCRIPTED_MODEL, previous_response_id=first.id, input=[output], tools=[WEATHER]
    )
    assert first.usage is not None and second.usage is not None
    assert (first.usage.input_tokens, first.usage.output_tokens) == (prompt_words(model, 0), 1)
    assert (second.usage.input_tokens, second.usage.output_tokens) == (prompt_words(model, 1), 3)
    assert (await client.responses.retrieve(second.id)).usage == second.usage
