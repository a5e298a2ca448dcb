"""openai-agents' `FileSearchTool`, unmodified, through `OpenAIResponsesModel` against our Responses API with the
offline model: the runner sends the `file_search` tool, the search runs in the durable turn, and the run's items
show the call (with its results when asked) and an answer that cites the file."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import openai
import pytest
from agents import Agent, FileSearchTool, OpenAIResponsesModel, Runner, set_tracing_disabled
from agents.items import MessageOutputItem, ToolCallItem
from agents.stream_events import RawResponsesStreamEvent
from openai import AsyncOpenAI
from openai.types.responses import ResponseFileSearchToolCall

from configuration.settings import OFFLINE_MODEL_ID
from tests.support.knowledge_files import wait_for_file
from tests.support.stack import Stack

pytestmark = pytest.mark.responses_clients

QUESTION = "What do the documents say about the harbour fees?"


@pytest.fixture(autouse=True)
def _no_tracing() -> None:
    set_tracing_disabled(True)  # otherwise the SDK uploads traces to OpenAI


@pytest.fixture
def library(stack: Stack) -> Iterator[tuple[str, str]]:
    oai = openai.OpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0)
    fees = oai.files.create(file=("fees.md", b"# Harbour fees\nMooring costs 12 euros a night."), purpose="assistants")
    store = oai.vector_stores.create(name="port", file_ids=[fees.id])
    assert wait_for_file(oai, store.id, fees.id).status == "completed"
    yield store.id, fees.id
    oai.vector_stores.delete(store.id)


@pytest.fixture
async def client(stack: Stack) -> AsyncIterator[AsyncOpenAI]:
    http_client = httpx.AsyncClient(timeout=60)
    # The SDK takes an httpx client as well as an httpx2 one; its annotation names only httpx2's.
    client = AsyncOpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0, http_client=http_client)  # type: ignore[arg-type]
    yield client
    await client.close()


def _agent(client: AsyncOpenAI, store_id: str) -> Agent:
    tool = FileSearchTool(vector_store_ids=[store_id], max_num_results=3, include_search_results=True)
    model = OpenAIResponsesModel(model=OFFLINE_MODEL_ID, openai_client=client)
    return Agent(name="port clerk", instructions="Answer from the files.", tools=[tool], model=model)


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
async def test_the_runner_searches_with_file_search_tool_and_the_answer_cites_the_file(
    client: AsyncOpenAI, library: tuple[str, str], streamed: bool
) -> None:
    store_id, file_id = library
    agent = _agent(client, store_id)
    if streamed:
        result = Runner.run_streamed(agent, QUESTION)
        events = [event async for event in result.stream_events()]
        raw = [event.data.type for event in events if isinstance(event, RawResponsesStreamEvent)]
        assert "response.file_search_call.searching" in raw
    else:
        result = await Runner.run(agent, QUESTION)  # type: ignore[assignment]
    calls = [item.raw_item for item in result.new_items if isinstance(item, ToolCallItem)]
    assert len(calls) == 1 and calls[0].type == "file_search_call"
    [call] = calls
    assert isinstance(call, ResponseFileSearchToolCall) and call.results is not None
    assert call.queries == ["the harbour fees"] and call.status == "completed"
    assert call.results[0].file_id == file_id and call.results[0].filename == "fees.md"
    assert "12 euros" in str(result.final_output)
    message = next(item.raw_item for item in result.new_items if isinstance(item, MessageOutputItem))
    assert message.content[0].annotations[0].file_id == file_id
    assert len(result.raw_responses) == 1  # the search ran inside the response, not in the runner

    # A later run replays the items, the file_search call among them, and carries on.
    again = await Runner.run(agent, [*result.to_input_list(), {"role": "user", "content": "Thanks"}])
    assert str(again.final_output) == "You said: Thanks"
