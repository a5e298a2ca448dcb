"""llama-stack's `builtin::websearch` with llama-stack-client 0.2.12 unmodified, on the search engine of the tests
(tests/support/search_server.py): refused by name where no engine is configured; where one is, listed, called by a
turn's model (scripted and offline), invoked directly on each engine, and a failing engine answers the model a
tool error while the turn goes on."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from llama_stack_client import Agent, LlamaStackClient

from tests.support import search_server
from tests.support.llama_agent import streamed, user_messages
from tests.support.scripted_model import ScriptedModel, ThreadedServer, text, tool_call
from tests.support.stack import SCRIPTED_MODEL, Stack


@pytest.fixture(scope="module")
def engine() -> Iterator[ThreadedServer]:
    server = search_server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def searching(stack: Stack, engine: ThreadedServer) -> Iterator[LlamaStackClient]:
    with search_server.searching_api(stack, engine) as url:
        yield LlamaStackClient(base_url=url, max_retries=0, timeout=60)


def test_without_an_engine_the_toolgroup_is_refused_naming_the_setting(http: httpx.Client) -> None:
    response = http.post(
        "/v1/agents",
        json={"agent_config": {"model": SCRIPTED_MODEL, "instructions": "", "toolgroups": ["builtin::websearch"]}},
    )
    assert response.status_code == 400 and "DA_WEB_SEARCH_ENGINE" in response.json()["detail"]
    assert "builtin::websearch" not in {g["identifier"] for g in http.get("/v1/toolgroups").json()["data"]}


def test_a_turn_searches_the_web_and_the_model_reads_the_results(
    searching: LlamaStackClient, model: ScriptedModel
) -> None:
    assert "builtin::websearch" in {group.identifier for group in searching.toolgroups.list()}
    [tool] = searching.tools.list(toolgroup_id="builtin::websearch")
    assert tool.identifier == "web_search" and [p.name for p in tool.parameters] == ["query"]

    model.script(tool_call("web_search", {"query": "polyjuice boils"}), text("It boils at -100."))
    agent = Agent(searching, model=SCRIPTED_MODEL, instructions="Search.", tools=["builtin::websearch"])
    session_id = agent.create_session("web")
    chunks = list(
        streamed(agent.create_turn(messages=user_messages("When does polyjuice boil?"), session_id=session_id))
    )

    turn = chunks[-1].event.payload.turn
    assert [step.step_type for step in turn.steps] == ["inference", "tool_execution", "inference"]
    answer = json.loads(str(turn.steps[1].tool_responses[0].content))
    assert answer["query"] == "polyjuice boils"
    assert [hit["url"] for hit in answer["top_k"]][:1] == ["https://potions.example.org/polyjuice"]
    assert "minus one hundred" in answer["top_k"][0]["content"]
    offered = model.requests[0]["tools"][0]["function"]
    assert offered["name"] == "web_search" and offered["parameters"]["required"] == ["query"]
    seen = [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"]
    assert seen == [turn.steps[1].tool_responses[0].content]


def test_a_failing_engine_answers_the_model_a_tool_error(searching: LlamaStackClient, model: ScriptedModel) -> None:
    model.script(tool_call("web_search", {"query": "fail now"}), text("The search failed."))
    agent = Agent(searching, model=SCRIPTED_MODEL, instructions="Search.", tools=["builtin::websearch"])
    session_id = agent.create_session("web")
    chunks = list(streamed(agent.create_turn(messages=user_messages("search"), session_id=session_id)))

    turn = chunks[-1].event.payload.turn
    assert chunks[-1].event.payload.event_type == "turn_complete"
    error = turn.steps[1].tool_responses[0].content
    assert "web search failed" in error and "HTTP 500" in error
    assert turn.output_message.content.strip() == "The search failed."


def test_the_offline_model_calls_web_search(searching: LlamaStackClient) -> None:
    agent = Agent(searching, model="offline/echo", instructions="", tools=["builtin::websearch"])
    session_id = agent.create_session("offline")
    said = 'call tool web_search {"query": "lacewing"}'
    chunks = list(streamed(agent.create_turn(messages=user_messages(said), session_id=session_id)))
    turn = chunks[-1].event.payload.turn
    assert "news.example.net/polyjuice-shortage" in turn.steps[1].tool_responses[0].content
    assert "news.example.net/polyjuice-shortage" in turn.output_message.content


@pytest.mark.parametrize("engine_name", ["searxng", "brave", "tavily"])
def test_each_engine_answers_an_invocation(stack: Stack, engine: ThreadedServer, engine_name: str) -> None:
    with search_server.searching_api(stack, engine, engine_name) as url:
        llama = LlamaStackClient(base_url=url, max_retries=0, timeout=60)
        result = llama.tool_runtime.invoke_tool(tool_name="web_search", kwargs={"query": "boiling water"})
    assert not result.error_code
    urls = [hit["url"] for hit in json.loads(str(result.content))["top_k"]]
    assert urls == ["https://chemistry.example.com/boiling"]
    assert (engine_name, "boiling water") in search_server.QUERIES
    assert search_server.BRAVE_TOKEN not in stack.store_text() and search_server.TAVILY_KEY not in stack.store_text()


def test_results_are_capped_in_count_snippet_and_reply_size(searching: LlamaStackClient) -> None:
    many = searching.tool_runtime.invoke_tool(tool_name="web_search", kwargs={"query": "many pages"})
    hits = json.loads(str(many.content))["top_k"]
    assert len(hits) == 5 < search_server.MANY  # DA_WEB_SEARCH_MAX_RESULTS's default
    assert {len(hit["content"]) for hit in hits} == {1000}

    huge = searching.tool_runtime.invoke_tool(tool_name="web_search", kwargs={"query": "huge page"})
    assert huge.error_code and "larger than 1,048,576 bytes" in str(huge.content)
