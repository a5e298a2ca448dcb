"""The Responses dialect survives what the llama-stack dialect survives (tests/durability/test_faults.py): the worker
SIGKILLed while the model streams, the API SIGKILLed mid-stream (the client resumes with `starting_after`),
the Temporal dev server restarted on its database, and a function-call pause through all three. Each
response completes exactly once, as the unmodified `openai` SDK sees it; and an operator finds a
response's workflow in Temporal by its response ids and its conversation."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import openai
import pytest
from openai import AsyncOpenAI
from temporalio.api.enums.v1 import EventType
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import RetryConfig

from api.streams.event_stream import LIVENESS_CHECK_SECONDS
from hosting.fault_points import AFTER_TURN_END
from tests.support import mcp_server
from tests.support.processes import EVENT_SECONDS, ProcessStack
from tests.support.scripted_model import ThreadedServer, text, tool_call
from tests.support.stack import SCRIPTED_MODEL
from turn_client.starter import WORKFLOW_TASK_TIMEOUT

pytestmark = pytest.mark.processes

WORDS = " ".join(f"w{i}" for i in range(40))
"""Streamed a word per 0.1 s: four seconds in which to kill something mid-stream, even on a loaded machine."""
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


@pytest.fixture
async def client(processes: ProcessStack) -> AsyncIterator[AsyncOpenAI]:
    processes.model.script()
    async with AsyncOpenAI(base_url=f"{processes.url}/v1", api_key="unused", max_retries=0, timeout=120) as made:
        yield made


async def restart(processes: ProcessStack, which: str) -> None:
    """SIGKILL the worker, the API or the dev server and start it again (off the event loop: it blocks)."""

    def run() -> None:
        processes.kill(getattr(processes, which))
        if which == "temporal":
            time.sleep(1)
        getattr(processes, f"start_{which}")()

    await asyncio.to_thread(run)


async def events_of(stream: Any) -> list[Any]:
    return [event async for event in stream]


def dumped(events: list[Any]) -> list[dict[str, Any]]:
    return [event.model_dump() for event in events]


def deltas(events: list[Any]) -> list[str]:
    return [event.delta for event in events if event.type == "response.output_text.delta"]


def assert_completed_once(events: list[Any], answer: str) -> Any:
    """One uninterrupted stream ending in one `response.completed` whose single message is `answer`;
    returns the final response."""
    kinds = [event.type for event in events]
    assert [event.sequence_number for event in events] == list(range(len(events)))
    assert kinds.count("response.completed") == 1 and kinds[-1] == "response.completed", kinds
    assert kinds.count("response.output_item.added") == 1 and kinds.count("response.output_item.done") == 1, kinds
    final = events[-1].response
    assert [item.type for item in final.output] == ["message"]
    assert "".join(deltas(events)) == final.output_text and final.output_text.strip() == answer
    return final


async def workflows_found(processes: ProcessStack, query: str) -> list[str]:
    """The ids of the workflows a visibility query finds, once it finds any (visibility lags, the more under load)."""
    temporal = await processes.temporal_client()  # afresh: the dev server may have been restarted
    deadline = time.monotonic() + EVENT_SECONDS
    while not (found := [execution.id async for execution in temporal.list_workflows(query)]):
        assert time.monotonic() < deadline, f"no workflow found by {query} within {EVENT_SECONDS} s"
        await asyncio.sleep(0.2)
    return found


async def model_calls(processes: ProcessStack, response_id: str) -> list[EventType.ValueType]:
    """The kinds of the history events that record the response's model calls, once its workflow has closed:
    a marker for a local activity, the scheduling of a regular one."""
    [workflow_id] = await workflows_found(processes, f'ResponseId = "{response_id}"')
    temporal = await processes.temporal_client()
    handle = temporal.get_workflow_handle(workflow_id)
    await handle.result()
    history = await handle.fetch_history()
    summaries = [
        (event.event_type, (await temporal.data_converter.decode([event.user_metadata.summary]))[0])
        for event in history.events
        if event.user_metadata.HasField("summary")
    ]
    return [kind for kind, summary in summaries if summary == f"inference · {SCRIPTED_MODEL}"]


@pytest.mark.parametrize("background", [False, True], ids=["stream", "background-stream"])
async def test_worker_killed_while_the_model_streams_a_new_worker_finishes_the_response(
    processes: ProcessStack, client: AsyncOpenAI, background: bool
) -> None:
    processes.model.script(text(WORDS, token_delay_seconds=0.1), text(WORDS))
    stream = await client.responses.create(model=SCRIPTED_MODEL, input="talk", stream=True, background=background)
    events: list[Any] = []
    killed = False
    async for event in stream:
        events.append(event)
        if not killed and len(deltas(events)) >= 5:
            killed = True
            await restart(processes, "worker")

    final = assert_completed_once(events, WORDS)
    assert len(processes.model.requests) == 2  # the call cut short, and the new worker's
    assert (await client.responses.retrieve(final.id)).model_dump() == final.model_dump()
    # A foreground response's model call is a local activity, made again by the next worker once the dead
    # one's workflow task timed out; a background response's (which can be cancelled) a regular one.
    scheduled = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    expected = [scheduled] if background else [EventType.EVENT_TYPE_MARKER_RECORDED]
    assert await model_calls(processes, final.id) == expected
    if background:  # a stream is replayable when created with background (spec §5.5)
        replay = await events_of(await client.responses.retrieve(final.id, stream=True))
        assert dumped(replay) == dumped(events)


async def test_worker_killed_during_an_mcp_call_the_call_runs_again_and_shows_once(
    processes: ProcessStack, client: AsyncOpenAI, mcp: ThreadedServer
) -> None:
    processes.model.script(tool_call("wait_then_echo", {"seconds": 3, "text": "echoed"}), text("after the tool"))
    slow = mcp_server.slow_tool(mcp)
    mcp_server.STARTED.clear()
    created = asyncio.ensure_future(client.responses.create(model=SCRIPTED_MODEL, input="use it", tools=[slow]))  # type: ignore[list-item]
    deadline = time.monotonic() + EVENT_SECONDS
    while "wait_then_echo" not in mcp_server.STARTED:
        assert time.monotonic() < deadline, "the MCP call did not start"
        await asyncio.sleep(0.1)
    await restart(processes, "worker")
    response = await created

    assert response.status == "completed"
    assert [item.type for item in response.output] == ["mcp_list_tools", "mcp_call", "message"]
    assert response.output[1].output == "echoed" and response.output_text.strip() == "after the tool"
    assert mcp_server.STARTED == ["wait_then_echo", "wait_then_echo"]  # the call was retried
    assert len(processes.model.requests) == 2


async def test_the_api_running_the_turns_killed_mid_stream_its_restart_finishes_the_response_once(
    processes: ProcessStack, client: AsyncOpenAI
) -> None:
    """`make run`'s shape: the API runs the turns (and started this one eagerly on its own worker). Killed while
    the model streams a foreground response, the API takes the client's stream with it; the restarted API's
    worker takes the turn over once the dead one's workflow task times out, and the response completes once."""
    await asyncio.to_thread(processes.kill, processes.worker)
    await asyncio.to_thread(processes.kill, processes.api)
    await asyncio.to_thread(processes.start_api, DA_WORKER_IN_API="true")
    processes.model.script(text(WORDS, token_delay_seconds=0.1), text(WORDS))
    seen: list[Any] = []
    try:
        stream = await client.responses.create(model=SCRIPTED_MODEL, input="talk", stream=True)
        with pytest.raises((httpx.HTTPError, openai.APIError)):
            async for event in stream:
                seen.append(event)
                if len(deltas(seen)) == 5:
                    await asyncio.to_thread(processes.kill, processes.api)
        await asyncio.to_thread(processes.start_api, DA_WORKER_IN_API="true")
        response_id = seen[0].response.id
        assert await model_calls(processes, response_id) == [EventType.EVENT_TYPE_MARKER_RECORDED]
        final = await client.responses.retrieve(response_id)
    finally:  # the module's other tests run with a separate worker
        await asyncio.to_thread(processes.kill, processes.api)
        await asyncio.to_thread(processes.start_worker)
        await asyncio.to_thread(processes.start_api)

    assert final.status == "completed" and final.output_text.strip() == WORDS
    assert [item.type for item in final.output] == ["message"]
    assert len(processes.model.requests) == 2  # the call cut short, and the restarted API's


async def test_worker_dead_after_its_model_call_wrote_the_response_the_model_is_not_asked_again(
    processes: ProcessStack, client: AsyncOpenAI
) -> None:
    """The worker dies after the local model call wrote the response's end, before its workflow recorded it: the
    next worker's call (its attempt counted from 1 again) finds the end written and returns it."""
    processes.model.script(text("written once"), text("asked again"))
    await asyncio.to_thread(processes.kill, processes.worker)
    await asyncio.to_thread(processes.start_worker, DA_TEST_FAULT=AFTER_TURN_END)
    response = await client.responses.create(model=SCRIPTED_MODEL, input="hi")
    assert response.status == "completed" and response.output_text.strip() == "written once"
    worker = processes.worker
    assert worker is not None and await asyncio.to_thread(worker.wait, 30) != 0
    await asyncio.to_thread(processes.start_worker)

    assert await model_calls(processes, response.id) == [EventType.EVENT_TYPE_MARKER_RECORDED]
    assert len(processes.model.requests) == 1
    assert (await client.responses.retrieve(response.id)).model_dump() == response.model_dump()


async def test_a_foreground_response_its_client_leaves_mid_call_is_cancelled_within_a_workflow_task(
    processes: ProcessStack, client: AsyncOpenAI
) -> None:
    """A cancel reaches a turn whose local model call runs when the SDK extends the workflow task the call
    holds (at 80% of its timeout): seconds, not the call's length."""
    long_answer = " ".join(f"w{i}" for i in range(400))  # 40 s
    processes.model.script(text(long_answer, token_delay_seconds=0.1))
    stream = await client.responses.create(model=SCRIPTED_MODEL, input="talk", stream=True)
    events: list[Any] = []
    async for event in stream:
        events.append(event)
        if deltas(events):
            break
    await stream.close()
    left_at = time.monotonic()
    [workflow_id] = await workflows_found(processes, f'ResponseId = "{events[0].response.id}"')
    outcome = await (await processes.temporal_client()).get_workflow_handle(workflow_id).result()
    waited = time.monotonic() - left_at

    assert outcome["status"] == "cancelled"
    assert waited < WORKFLOW_TASK_TIMEOUT.total_seconds() + 8, waited  # on a loaded machine; the call had 40 s to go
    assert (await client.responses.retrieve(events[0].response.id)).status == "cancelled"


@pytest.mark.parametrize("resumed_segment", [False, True], ids=["first-segment", "resumed-segment"])
async def test_api_killed_mid_stream_the_client_resumes_after_its_last_event(
    processes: ProcessStack, client: AsyncOpenAI, resumed_segment: bool
) -> None:
    """Also for a response that continues a paused turn: its numbering starts at its own segment."""
    answer = text(WORDS, token_delay_seconds=0.1)
    chain: dict[str, Any] = {"input": "talk"}
    processes.model.script(answer)
    if resumed_segment:
        processes.model.script(tool_call("get_weather", {"city": "Rome"}), answer)
        paused = await client.responses.create(model=SCRIPTED_MODEL, input="Weather in Rome?", tools=[WEATHER])  # type: ignore[list-item]
        output = {"type": "function_call_output", "call_id": paused.output[0].call_id, "output": "warm"}
        chain = {"input": [output], "previous_response_id": paused.id, "tools": [WEATHER]}
    stream = await client.responses.create(model=SCRIPTED_MODEL, stream=True, background=True, **chain)
    seen: list[Any] = []
    with pytest.raises((httpx.HTTPError, openai.APIError)):
        async for event in stream:
            seen.append(event)
            if len(deltas(seen)) == 5:
                processes.kill(processes.api)
    await asyncio.to_thread(processes.start_api)
    response_id, last = seen[0].response.id, seen[-1].sequence_number

    resumed = await events_of(await client.responses.retrieve(response_id, stream=True, starting_after=last))
    assert [event.sequence_number for event in resumed] == list(range(last + 1, last + 1 + len(resumed)))
    whole = await events_of(await client.responses.retrieve(response_id, stream=True))
    assert dumped(seen + resumed) == dumped(whole)
    assert_completed_once(whole, WORDS)
    assert len(processes.model.requests) == (2 if resumed_segment else 1)  # untouched by the API's death


async def test_dev_server_restarted_mid_response_it_completes_once(
    processes: ProcessStack, client: AsyncOpenAI
) -> None:
    """The dev server dies while the model streams and stays down until the API's liveness check of the quiet
    stream has given up asking it (Temporal's client retries for a while); the stream goes on across its
    restart and ends once."""
    processes.model.script(text(WORDS, token_delay_seconds=0.1), text(WORDS))
    stream = await client.responses.create(model=SCRIPTED_MODEL, input="talk", stream=True)
    events: list[Any] = []
    down = restarted = False
    async for event in stream:
        events.append(event)
        if not down and len(deltas(events)) >= 5:
            down = True
            await asyncio.to_thread(processes.kill, processes.temporal)
        if down and not restarted and "".join(deltas(events)).split() == WORDS.split():
            restarted = True  # the model is done; its step cannot end while Temporal is away
            await asyncio.sleep(LIVENESS_CHECK_SECONDS + (RetryConfig().max_elapsed_time_millis or 0) / 1000 + 3)
            await asyncio.to_thread(processes.start_temporal)

    assert restarted
    final = assert_completed_once(events, WORDS)
    assert len(processes.model.requests) in (1, 2)  # 2 if the dev server lost the first attempt's completion
    assert (await client.responses.retrieve(final.id)).model_dump() == final.model_dump()


async def test_a_function_call_pause_survives_every_restart_and_resumes_its_own_workflow(
    processes: ProcessStack, client: AsyncOpenAI
) -> None:
    """The pause outlives a worker, an API and a dev server; its continuation, sent while no worker runs,
    resumes the same workflow, whose new worker is killed while the resumed segment streams: it completes once."""
    answer = text(WORDS, token_delay_seconds=0.1)
    processes.model.script(tool_call("get_weather", {"city": "Paris"}), answer, answer)
    first = await client.responses.create(model=SCRIPTED_MODEL, input="Weather in Paris?", tools=[WEATHER])  # type: ignore[list-item]
    assert first.status == "completed" and [item.type for item in first.output] == ["function_call"]
    [waiting] = await workflows_found(processes, f'ResponseId = "{first.id}" AND TurnStatus = "awaiting_input"')

    await asyncio.to_thread(processes.kill, processes.worker)  # the pause outlives its worker,
    for which in ("api", "temporal"):  # its API and its dev server
        await restart(processes, which)
        assert (await client.responses.retrieve(first.id)).model_dump() == first.model_dump(), which

    output = {"type": "function_call_output", "call_id": first.output[0].call_id, "output": "sunny"}
    continuation = asyncio.ensure_future(
        client.responses.create(
            model=SCRIPTED_MODEL,
            previous_response_id=first.id,
            input=[output],  # type: ignore[list-item]
            tools=[WEATHER],  # type: ignore[list-item]
            stream=True,
        )
    )
    await asyncio.sleep(1)  # sent while no worker runs: it goes through once one does
    processes.start_worker()
    events: list[Any] = []
    killed = False
    async for event in await continuation:
        events.append(event)
        if not killed and len(deltas(events)) >= 5:
            killed = True
            await restart(processes, "worker")

    second = assert_completed_once(events, WORDS)
    assert len(processes.model.requests) == 3  # the call, the resumed answer cut short, and its retry
    assert [m["content"] for m in processes.model.requests[-1]["messages"] if m["role"] == "tool"] == ["sunny"]
    assert await workflows_found(processes, f'ResponseId = "{second.id}" AND TurnStatus = "completed"') == [waiting]
    assert await workflows_found(processes, f'ResponseId = "{first.id}"') == [waiting]


async def test_the_temporal_ui_finds_a_responses_workflow_and_tells_what_it_waits_for(
    processes: ProcessStack, client: AsyncOpenAI
) -> None:
    conversation = await client.conversations.create()
    processes.model.script(tool_call("get_weather", {"city": "Oslo"}), text("Cold."))
    question = "What is the weather in Oslo today?"
    first = await client.responses.create(
        model=SCRIPTED_MODEL,
        input=question,
        conversation=conversation.id,
        tools=[WEATHER],  # type: ignore[list-item]
    )
    call = first.output[0]
    # The response is answered once the pause is stored; the workflow records it (and tells it) just after.
    [workflow_id] = await workflows_found(processes, f'ResponseId = "{first.id}" AND TurnStatus = "awaiting_input"')
    handle = (await processes.temporal_client()).get_workflow_handle(workflow_id)
    description = await handle.describe()
    assert description.workflow_type == "AgentTurn" and await description.static_summary() == question
    assert f"**Model:** `{SCRIPTED_MODEL}`" in (await description.static_details() or "")
    metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    assert "**Status:** awaiting_input" in metadata.current_details
    assert f"`get_weather` (call_id `{call.call_id}`)" in metadata.current_details

    output = {"type": "function_call_output", "call_id": call.call_id, "output": json.dumps("cold")}
    second = await client.responses.create(
        model=SCRIPTED_MODEL,
        conversation=conversation.id,
        input=[output],  # type: ignore[list-item]
        tools=[WEATHER],  # type: ignore[list-item]
    )
    assert second.output_text.strip() == "Cold."
    assert await workflows_found(processes, f'ResponseId = "{second.id}" AND TurnStatus = "completed"') == [workflow_id]
    assert await workflows_found(processes, f'ConversationId = "{conversation.id}"') == [workflow_id]
    metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    assert "**Status:** completed" in metadata.current_details and "**Steps so far:** 3" in metadata.current_details
