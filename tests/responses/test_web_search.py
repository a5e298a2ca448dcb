"""The Responses `web_search` tool with the unmodified `openai` SDK, on the search engine of the tests
(tests/support/search_server.py): a 400 naming the setting where no engine is configured; where one is, the
`web_search_call` item with its query and sources, `url_citation` annotations on the URLs the answer names,
the streamed `response.web_search_call.*` events, the request's domain filter, and a failing engine answering
the model a tool error while the response completes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import openai
import pytest
from agents import Agent, OpenAIResponsesModel, Runner, WebSearchTool, set_tracing_disabled
from agents.items import ToolCallItem
from openai import AsyncOpenAI
from openai.types.responses import ResponseFunctionWebSearch, ResponseOutputMessage

from tests.support import search_server
from tests.support.scripted_model import ScriptedModel, text, tool_call
from tests.support.stack import SCRIPTED_MODEL, Stack

POTIONS = "https://potions.example.org/polyjuice"
NEWS = "https://news.example.net/polyjuice-shortage"


@pytest.fixture(scope="module")
def searching_url(stack: Stack) -> Iterator[str]:
    engine = search_server.start()
    with search_server.searching_api(stack, engine) as url:
        yield url
    engine.stop()


@pytest.fixture
async def client(searching_url: str) -> AsyncIterator[AsyncOpenAI]:
    async with AsyncOpenAI(base_url=f"{searching_url}/v1", api_key="unused", max_retries=0, timeout=60) as made:
        yield made


def tool_answers(model: ScriptedModel) -> list[str]:
    return [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"]


async def test_without_an_engine_the_tool_is_a_400_naming_the_setting(stack: Stack) -> None:
    async with AsyncOpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0) as plain:
        with pytest.raises(openai.BadRequestError) as refused:
            await plain.responses.create(model=SCRIPTED_MODEL, input="news?", tools=[{"type": "web_search"}])
    assert "DA_WEB_SEARCH_ENGINE" in refused.value.message


@pytest.mark.parametrize("kind", ["web_search", "web_search_2025_08_26"])
async def test_a_search_is_shown_and_the_answer_cites_its_pages(
    client: AsyncOpenAI, model: ScriptedModel, kind: Any
) -> None:
    answer = f"Polyjuice boils at minus one hundred degrees ({POTIONS}); brewing is delayed ({NEWS})."
    model.script(tool_call("web_search", {"query": "polyjuice"}), text(answer))
    response = await client.responses.create(model=SCRIPTED_MODEL, input="Polyjuice?", tools=[{"type": kind}])

    assert [item.type for item in response.output] == ["web_search_call", "message"]
    call, message = response.output
    assert isinstance(call, ResponseFunctionWebSearch) and isinstance(message, ResponseOutputMessage)
    assert call.status == "completed" and call.action.type == "search" and call.action.query == "polyjuice"
    assert [source.url for source in call.action.sources or []] == [POTIONS, NEWS]
    assert response.output_text.strip() == answer
    part = message.content[0]
    assert part.type == "output_text"
    cited = [(a.type, a.url, answer[a.start_index : a.end_index], a.title) for a in part.annotations]
    assert cited == [
        ("url_citation", POTIONS, POTIONS, "Polyjuice potion - Wizarding facts"),
        ("url_citation", NEWS, NEWS, "Polyjuice in the news"),
    ]
    offered = model.requests[0]["tools"][0]["function"]
    assert offered["name"] == "web_search" and offered["parameters"]["required"] == ["query"]
    [seen] = tool_answers(model)
    assert [hit["url"] for hit in json.loads(seen)["top_k"]] == [POTIONS, NEWS]
    assert (await client.responses.retrieve(response.id)).output == response.output


async def test_a_streamed_search_shows_its_events_and_citations(client: AsyncOpenAI, model: ScriptedModel) -> None:
    model.script(tool_call("web_search", {"query": "lacewing"}), text(f"See {NEWS} for the shortage."))
    stream = await client.responses.create(
        model=SCRIPTED_MODEL, input="lacewing?", tools=[{"type": "web_search"}], stream=True
    )
    events = [event async for event in stream]

    kinds = [event.type for event in events]
    searching = [k for k in kinds if k.startswith("response.web_search_call.")]
    assert searching == [
        "response.web_search_call.in_progress",
        "response.web_search_call.searching",
        "response.web_search_call.completed",
    ]
    added = next(e for e in events if e.type == "response.output_item.added" and e.item.type == "web_search_call")
    assert added.item.status == "in_progress"
    [annotation] = [e.annotation for e in events if e.type == "response.output_text.annotation.added"]
    assert annotation.type == "url_citation" and annotation.url == NEWS
    final = events[-1]
    assert final.type == "response.completed"
    assert final.response.output == (await client.responses.retrieve(final.response.id)).output


async def test_allowed_domains_limit_the_results(client: AsyncOpenAI, model: ScriptedModel) -> None:
    model.script(tool_call("web_search", {"query": "polyjuice"}), text("ok"))
    tool: Any = {"type": "web_search", "filters": {"allowed_domains": ["example.net"]}}
    response = await client.responses.create(model=SCRIPTED_MODEL, input="news", tools=[tool])
    call = response.output[0]
    assert isinstance(call, ResponseFunctionWebSearch)
    assert [source.url for source in call.action.sources or []] == [NEWS]
    assert [hit["url"] for hit in json.loads(tool_answers(model)[0])["top_k"]] == [NEWS]


async def test_a_failing_engine_answers_the_model_a_tool_error(client: AsyncOpenAI, model: ScriptedModel) -> None:
    model.script(tool_call("web_search", {"query": "fail please"}), text("The search failed, sorry."))
    response = await client.responses.create(model=SCRIPTED_MODEL, input="x", tools=[{"type": "web_search"}])

    assert response.status == "completed" and response.output_text.strip() == "The search failed, sorry."
    call = response.output[0]
    assert isinstance(call, ResponseFunctionWebSearch) and call.status == "failed"
    [seen] = tool_answers(model)
    assert "web search failed" in seen and "HTTP 500" in seen


@pytest.mark.parametrize(
    ("tool", "named"),
    [
        ({"type": "web_search", "user_location": {"type": "approximate", "city": "Oslo"}}, "user_location"),
        ({"type": "web_search", "external_web_access": False}, "external_web_access"),
        ({"type": "web_search", "search_content_types": ["text", "image"]}, "search_content_types"),
    ],
)
async def test_what_the_search_cannot_honour_is_refused_by_name(client: AsyncOpenAI, tool: Any, named: str) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        await client.responses.create(model=SCRIPTED_MODEL, input="x", tools=[tool])
    assert named in refused.value.message


async def test_openai_agents_web_search_tool_runs_and_its_call_is_an_item(
    client: AsyncOpenAI, model: ScriptedModel
) -> None:
    set_tracing_disabled(True)  # otherwise the SDK uploads traces to OpenAI
    model.script(tool_call("web_search", {"query": "polyjuice"}), text(f"It boils at -100 ({POTIONS})."))
    tool = WebSearchTool(search_context_size="low")
    agent = Agent(name="searcher", tools=[tool], model=OpenAIResponsesModel(model=SCRIPTED_MODEL, openai_client=client))
    result = await Runner.run(agent, "Polyjuice?")

    assert POTIONS in str(result.final_output)
    [call] = [item.raw_item for item in result.new_items if isinstance(item, ToolCallItem)]
    assert isinstance(call, ResponseFunctionWebSearch) and call.action.type == "search"
    assert call.action.query == "polyjuice" and call.status == "completed"
    sent = model.requests[0]["tools"][0]["function"]
    assert sent["name"] == "web_search"


async def test_the_tool_is_offered_while_the_response_that_names_it_runs(
    client: AsyncOpenAI, model: ScriptedModel
) -> None:
    weather: Any = {
        "type": "function",
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
    model.script(
        tool_call("get_weather", {"city": "Paris"}), tool_call("web_search", {"query": "lacewing"}), text("ok")
    )
    first = await client.responses.create(model=SCRIPTED_MODEL, input="weather, then news", tools=[weather])
    [call] = first.output
    assert call.type == "function_call"
    output: Any = {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}
    second = await client.responses.create(
        model=SCRIPTED_MODEL, previous_response_id=first.id, input=[output], tools=[weather, {"type": "web_search"}]
    )

    offered = [sorted(tool["function"]["name"] for tool in request.get("tools") or []) for request in model.requests]
    assert offered == [["get_weather"], ["get_weather", "web_search"], ["get_weather", "web_search"]]
    assert [item.type for item in second.output] == ["web_search_call", "message"]
