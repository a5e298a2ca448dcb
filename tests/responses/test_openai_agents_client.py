"""The openai-agents SDK, unmodified, against our Responses API.

`Runner` drives an agent whose model is our server (`OpenAIResponsesModel` over `AsyncOpenAI(base_url=…/v1)`)
and whose `@function_tool` runs here, in the caller: the function call pauses the durable turn and the
runner's next request continues it. The runner does that in each of its three ways (spec §6.1, §9a):
replaying the whole history (the default), chaining with `previous_response_id`, or naming a
`conversation`. Each test records the requests the SDK sent, so it proves which way it exercised.
The rest of §9a follows: a later run replaying `to_input_list()`, parallel calls, a hosted MCP server's
approvals, model settings with a structured `output_type`, and a failed model call.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from agents import (
    Agent,
    HostedMCPTool,
    ModelBehaviorError,
    ModelSettings,
    OpenAIResponsesModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from agents.items import MCPApprovalRequestItem, ToolCallItem
from agents.result import RunResultBase
from agents.stream_events import RawResponsesStreamEvent, RunItemStreamEvent
from agents.tool import MCPToolApprovalFunctionResult, MCPToolApprovalRequest
from openai import AsyncOpenAI
from openai.types.conversations import Message
from openai.types.responses.tool_param import Mcp
from pydantic import BaseModel

from tests.support.scripted_model import Reply, ScriptedModel, ThreadedServer, failure, text, tool_call
from tests.support.stack import SCRIPTED_MODEL, Stack

pytestmark = pytest.mark.responses_clients

ANSWER = "It is sunny in Paris."
QUESTION = "What is the weather in Paris?"

calls: list[str] = []


@function_tool
def get_weather(city: str) -> str:
    """Get the weather for a city.

    Args:
        city: The city's name.
    """
    calls.append(city)
    return f"sunny in {city}"


class Sent:
    """The JSON bodies the SDK POSTed to /v1/responses, in order."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    async def record(self, request: httpx.Request) -> None:
        if request.method == "POST" and request.url.path.endswith("/responses"):
            self.bodies.append(json.loads(request.content))


@pytest.fixture(autouse=True)
def _no_tracing() -> None:
    set_tracing_disabled(True)  # otherwise the SDK uploads traces to OpenAI
    calls.clear()


@pytest.fixture
async def sent() -> Sent:
    return Sent()


@pytest.fixture
async def openai_client(stack: Stack, sent: Sent) -> AsyncIterator[AsyncOpenAI]:
    http_client = httpx.AsyncClient(event_hooks={"request": [sent.record]}, timeout=60)
    # The SDK takes an httpx client as well as an httpx2 one; its annotation names only httpx2's.
    client = AsyncOpenAI(base_url=f"{stack.base_url}/v1", api_key="not-checked", max_retries=0, http_client=http_client)  # type: ignore[arg-type]
    yield client
    await client.close()


def _agent(openai_client: AsyncOpenAI) -> Agent:
    model = OpenAIResponsesModel(model=SCRIPTED_MODEL, openai_client=openai_client)
    return Agent(name="weather", instructions="You are helpful.", tools=[get_weather], model=model)


async def _run(
    agent: Agent, streamed: bool, question: str | list[Any] = QUESTION, **options: Any
) -> tuple[RunResultBase, list]:
    """Run the agent once, streamed or not; return the result and (streamed) every event the runner yielded."""
    if not streamed:
        return await Runner.run(agent, question, **options), []
    result = Runner.run_streamed(agent, question, **options)
    events = [event async for event in result.stream_events()]
    return result, events


def _assert_tool_round_trip(result: RunResultBase, model: ScriptedModel) -> None:
    """The tool ran once with the model's arguments; the answer is the model's; the model read the
    tool's result after its own call, with the question once (no replayed item doubled)."""
    assert calls == ["Paris"]
    assert str(result.final_output).strip() == ANSWER
    assert len(result.raw_responses) == 2
    resumed = model.requests[-1]["messages"]
    assert [m["content"] for m in resumed if m["role"] == "user"].count(QUESTION) == 1
    assert [m["role"] for m in resumed[-2:]] == ["assistant", "tool"]
    assert resumed[-2]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert json.loads(resumed[-2]["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}
    assert resumed[-1]["content"] == "sunny in Paris"
    assert sum(m["role"] == "tool" for m in resumed) == 1


def _assert_streamed(events: list) -> None:
    raw = [event.data.type for event in events if isinstance(event, RawResponsesStreamEvent)]
    assert raw.count("response.created") == 2 and raw.count("response.completed") == 2, raw
    assert "response.output_text.delta" in raw
    items = [event.name for event in events if isinstance(event, RunItemStreamEvent)]
    assert items == ["tool_called", "tool_output", "message_output_created"], items


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
async def test_stateless_runner_replays_the_history_and_the_tool_round_trip_completes(
    openai_client: AsyncOpenAI, sent: Sent, model: ScriptedModel, streamed: bool
) -> None:
    model.script(tool_call("get_weather", {"city": "Paris"}), text(ANSWER))

    result, events = await _run(_agent(openai_client), streamed)

    _assert_tool_round_trip(result, model)
    if streamed:
        _assert_streamed(events)
    # The SDK's default: no server state named; the second request replays the question and the call.
    assert all("previous_response_id" not in body and "conversation" not in body for body in sent.bodies)
    assert [item.get("type", "message") for item in sent.bodies[1]["input"]] == [
        "message",
        "function_call",
        "function_call_output",
    ]


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
async def test_runner_chains_the_tool_output_with_auto_previous_response_id(
    openai_client: AsyncOpenAI, sent: Sent, model: ScriptedModel, streamed: bool
) -> None:
    model.script(tool_call("get_weather", {"city": "Paris"}), text(ANSWER))

    result, events = await _run(_agent(openai_client), streamed, auto_previous_response_id=True)

    _assert_tool_round_trip(result, model)
    if streamed:
        _assert_streamed(events)
    assert sent.bodies[1]["previous_response_id"] == result.raw_responses[0].response_id
    assert [item["type"] for item in sent.bodies[1]["input"]] == ["function_call_output"]


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
async def test_a_second_run_continues_an_earlier_response_by_previous_response_id(
    openai_client: AsyncOpenAI, sent: Sent, model: ScriptedModel, streamed: bool
) -> None:
    model.script(text("Hello, ask me about the weather."), tool_call("get_weather", {"city": "Paris"}), text(ANSWER))
    agent = _agent(openai_client)
    first, _ = await _run(agent, streamed=False, question="Hi")

    result, events = await _run(agent, streamed, previous_response_id=first.last_response_id)

    _assert_tool_round_trip(result, model)
    if streamed:
        _assert_streamed(events)
    assert sent.bodies[1]["previous_response_id"] == first.last_response_id
    assert sent.bodies[2]["previous_response_id"] == result.raw_responses[0].response_id
    assert [item["type"] for item in sent.bodies[2]["input"]] == ["function_call_output"]
    # The chain is the context: the model still read the first exchange.
    contents = [m.get("content") for m in model.requests[-1]["messages"]]
    assert "Hi" in contents and any("Hello, ask me about the weather." in str(c) for c in contents)


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
async def test_runner_continues_in_a_conversation_and_the_conversation_keeps_every_item(
    openai_client: AsyncOpenAI, sent: Sent, model: ScriptedModel, streamed: bool
) -> None:
    model.script(tool_call("get_weather", {"city": "Paris"}), text(ANSWER))
    conversation = await openai_client.conversations.create(items=[])

    result, events = await _run(_agent(openai_client), streamed, conversation_id=conversation.id)

    _assert_tool_round_trip(result, model)
    if streamed:
        _assert_streamed(events)
    assert [body["conversation"] for body in sent.bodies] == [conversation.id, conversation.id]
    assert [item["type"] for item in sent.bodies[1]["input"]] == ["function_call_output"]
    items = [item async for item in openai_client.conversations.items.list(conversation.id, order="asc")]
    assert [item.type for item in items] == ["message", "function_call", "function_call_output", "message"]
    assert items[1].call_id == items[2].call_id
    answer = items[3]
    assert isinstance(answer, Message)
    assert answer.content[0].text.strip() == ANSWER


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
async def test_a_later_run_replays_to_input_list_and_the_model_reads_each_item_once(
    openai_client: AsyncOpenAI, sent: Sent, model: ScriptedModel, streamed: bool
) -> None:
    model.script(tool_call("get_weather", {"city": "Paris"}), text(ANSWER), text("You are welcome."))
    agent = _agent(openai_client)
    first, _ = await _run(agent, streamed)

    second, _ = await _run(agent, streamed, question=[*first.to_input_list(), {"role": "user", "content": "Thanks!"}])

    assert str(second.final_output).strip() == "You are welcome."
    # The replay carries the earlier answer as an assistant message with its id, status and logprobs.
    replayed = sent.bodies[-1]["input"]
    assert [item.get("type", "message") for item in replayed] == [
        "message",
        "function_call",
        "function_call_output",
        "message",
        "message",
    ]
    assert replayed[3]["role"] == "assistant" and replayed[3]["id"].startswith("msg_")
    messages = model.requests[-1]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert messages[4]["content"].strip() == ANSWER and messages[5]["content"] == "Thanks!"
    assert calls == ["Paris"]


@pytest.mark.parametrize(
    "continuation", ["stateless", "auto_previous_response_id", "conversation_id"], ids=["replay", "chain", "conv"]
)
async def test_parallel_calls_are_all_run_and_answered_in_one_continuation(
    openai_client: AsyncOpenAI, sent: Sent, model: ScriptedModel, continuation: str
) -> None:
    model.script(
        Reply(tool_calls=[("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})]), text(ANSWER)
    )
    options: dict[str, Any] = {}
    if continuation == "auto_previous_response_id":
        options["auto_previous_response_id"] = True
    elif continuation == "conversation_id":
        options["conversation_id"] = (await openai_client.conversations.create(items=[])).id

    result, _ = await _run(_agent(openai_client), streamed=False, **options)

    assert sorted(calls) == ["Paris", "Rome"] and str(result.final_output).strip() == ANSWER
    assert len(sent.bodies) == 2
    assert [item.get("type") for item in sent.bodies[1]["input"]].count("function_call_output") == 2
    messages = model.requests[-1]["messages"]
    assert [m["role"] for m in messages[-3:]] == ["assistant", "tool", "tool"]
    assert len(messages[-3]["tool_calls"]) == 2
    assert sorted(m["content"] for m in messages[-2:]) == ["sunny in Paris", "sunny in Rome"]


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
@pytest.mark.parametrize("approve", [True, False], ids=["approved", "denied"])
async def test_a_hosted_mcp_tool_asks_for_approval_and_the_runner_answers_it(
    openai_client: AsyncOpenAI, sent: Sent, model: ScriptedModel, mcp: ThreadedServer, streamed: bool, approve: bool
) -> None:
    model.script(tool_call("add_numbers", {"a": 4, "b": 5}), text("done"))
    asked: list[str] = []

    def decide(request: MCPToolApprovalRequest) -> MCPToolApprovalFunctionResult:
        asked.append(request.data.name)
        return {"approve": approve}

    server: Mcp = {
        "type": "mcp",
        "server_label": "calc",
        "server_url": f"{mcp.allowed_url}/mcp",
        "allowed_tools": ["add_numbers"],
        "require_approval": "always",
    }
    agent = Agent(
        name="calc",
        instructions="Use the calculator.",
        tools=[HostedMCPTool(tool_config=server, on_approval_request=decide)],
        model=OpenAIResponsesModel(model=SCRIPTED_MODEL, openai_client=openai_client),
    )

    result, _ = await _run(agent, streamed, question="add 4 and 5")

    assert asked == ["add_numbers"] and str(result.final_output).strip() == "done"
    assert [item.get("type") for item in sent.bodies[1]["input"]][-1] == "mcp_approval_response"
    requests = [item.raw_item for item in result.new_items if isinstance(item, MCPApprovalRequestItem)]
    mcp_calls = [
        item.raw_item
        for item in result.new_items
        if isinstance(item, ToolCallItem) and item.raw_item.type == "mcp_call"
    ]
    assert len(requests) == 1
    if approve:
        assert [(call.output, call.approval_request_id) for call in mcp_calls] == [("9", requests[0].id)]
    else:
        assert not [call for call in mcp_calls if call.output == "9"]


class Forecast(BaseModel):
    city: str
    sky: str


async def test_model_settings_and_a_structured_output_type_reach_the_model(
    openai_client: AsyncOpenAI, model: ScriptedModel
) -> None:
    model.script(tool_call("get_weather", {"city": "Paris"}), text('{"city": "Paris", "sky": "sunny"}'))
    settings = ModelSettings(
        temperature=0.2,
        top_p=0.9,
        max_tokens=200,
        tool_choice="required",
        parallel_tool_calls=False,
        metadata={"k": "v"},
    )
    agent = Agent(
        name="weather",
        instructions="You are helpful.",
        tools=[get_weather],
        model=OpenAIResponsesModel(model=SCRIPTED_MODEL, openai_client=openai_client),
        model_settings=settings,
        output_type=Forecast,
    )

    result = await Runner.run(agent, QUESTION)

    assert result.final_output == Forecast(city="Paris", sky="sunny") and calls == ["Paris"]
    first, resumed = model.requests
    assert (first["temperature"], first["top_p"], first["max_tokens"]) == (0.2, 0.9, 200)
    assert first["parallel_tool_calls"] is False and first["tool_choice"] == "required"
    assert first["response_format"]["json_schema"]["schema"]["required"] == ["city", "sky"]
    # The runner resets tool_choice after a tool ran (reset_tool_choice), so the resumed segment may answer.
    assert resumed["tool_choice"] == "auto" and resumed["response_format"] == first["response_format"]


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
async def test_a_failed_model_call_raises_with_the_servers_message(
    openai_client: AsyncOpenAI, model: ScriptedModel, streamed: bool
) -> None:
    model.script(failure(400))

    with pytest.raises(ModelBehaviorError, match=r"response\.failed.*scripted failure 400"):
        await _run(_agent(openai_client), streamed)
