"""The openai-agents SDK, unmodified, against our Responses API (issue #14's acceptance).

`Runner` drives an agent whose model is our server (`OpenAIResponsesModel` over `AsyncOpenAI(base_url=…/v1)`)
and whose `@function_tool` runs here, in the caller: the function call pauses the durable turn and the
runner's next request continues it. The runner does that in each of its three ways (spec §6.1, §9a):
replaying the whole history (the default), chaining with `previous_response_id`, or naming a
`conversation`. Each test records the requests the SDK sent, so it proves which way it exercised.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled
from agents.result import RunResultBase
from agents.stream_events import RawResponsesStreamEvent, RunItemStreamEvent
from openai import AsyncOpenAI

from tests.scripted_model import ScriptedModel, text, tool_call
from tests.stack import SCRIPTED_MODEL, Stack

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
    client = AsyncOpenAI(base_url=f"{stack.base_url}/v1", api_key="not-checked", max_retries=0, http_client=http_client)
    yield client
    await client.close()


def _agent(openai_client: AsyncOpenAI) -> Agent:
    model = OpenAIResponsesModel(model=SCRIPTED_MODEL, openai_client=openai_client)
    return Agent(name="weather", instructions="You are helpful.", tools=[get_weather], model=model)


async def _run(agent: Agent, streamed: bool, question: str = QUESTION, **options: Any) -> tuple[RunResultBase, list]:
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
    assert items[3].content[0].text.strip() == ANSWER
