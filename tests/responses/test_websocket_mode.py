"""WebSocket mode of /v1/responses as the unmodified openai SDK speaks it (`client.beta.responses.connect()` and
`client.responses.connect()`, async and sync): several responses on one socket, continuation (store: false chains
on their own connection only), lanes, errors that leave the socket usable, inject, steer refusals, and the same
auth and tenancy as HTTP."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from openai import AsyncOpenAI, OpenAI
from websockets.exceptions import InvalidStatus

from tests.responses.test_responses_api import until
from tests.support import mcp_server
from tests.support.scripted_model import Reply, ScriptedModel, ThreadedServer, text, tool_call
from tests.support.sdk_types import check_websocket_event
from tests.support.stack import SCRIPTED_MODEL, Stack

TERMINAL = ("response.completed", "response.incomplete", "response.failed")
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


@pytest.fixture
async def client(stack: Stack) -> AsyncIterator[AsyncOpenAI]:
    async with AsyncOpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0, timeout=60) as made:
        yield made


async def until_terminal(connection: Any) -> list[Any]:
    """The events of one response, through its terminal event (or an error event)."""
    events = []
    async for event in connection:
        events.append(event)
        if event.type in TERMINAL or event.type in ("error", "response.inject.failed", "response.steer.failed"):
            return events
    raise AssertionError(f"the socket closed after {[event.type for event in events]}")


def texts(events: list[Any]) -> str:
    return "".join(event.delta for event in events if event.type == "response.output_text.delta")


async def test_several_responses_on_one_socket_stream_numbered_events_and_chain_unstored(
    client: AsyncOpenAI, model: ScriptedModel
) -> None:
    model.script(text("first answer"), text("second answer"))
    async with client.beta.responses.connect() as connection:
        await connection.response.create(model=SCRIPTED_MODEL, input="one", store=False)
        first = await until_terminal(connection)
        assert [event.sequence_number for event in first] == list(range(len(first)))
        assert first[0].type == "response.created" and first[-1].type == "response.completed"
        assert texts(first).strip() == "first answer"
        first_id = first[-1].response.id

        await connection.response.create(model=SCRIPTED_MODEL, input="two", store=False, previous_response_id=first_id)
        second = await until_terminal(connection)
    assert second[-1].type == "response.completed"
    assert second[-1].response.previous_response_id == first_id
    assert texts(second).strip() == "second answer"
    history = [message.get("content") for message in model.requests[1]["messages"]]
    assert "first answer" in str(history) and "one" in str(history)


async def test_an_unstored_response_is_not_found_on_another_connection(
    client: AsyncOpenAI, model: ScriptedModel
) -> None:
    model.script(text("kept here only"))
    async with client.beta.responses.connect() as connection:
        await connection.response.create(model=SCRIPTED_MODEL, input="x", store=False)
        unstored = (await until_terminal(connection))[-1].response.id
    async with client.beta.responses.connect() as again:
        await again.response.create(model=SCRIPTED_MODEL, input="y", previous_response_id=unstored)
        [error] = await until_terminal(again)
    assert error.type == "error"
    assert error.error.code == "previous_response_not_found"
    assert error.status == 400


async def test_a_stored_response_continues_on_a_new_connection(client: AsyncOpenAI, model: ScriptedModel) -> None:
    model.script(text("stored"), text("continued"))
    async with client.beta.responses.connect() as connection:
        await connection.response.create(model=SCRIPTED_MODEL, input="x")
        stored = (await until_terminal(connection))[-1].response.id
    async with client.beta.responses.connect() as again:
        await again.response.create(model=SCRIPTED_MODEL, input="y", previous_response_id=stored)
        events = await until_terminal(again)
    assert events[-1].type == "response.completed"
    assert texts(events).strip() == "continued"


async def test_a_bad_client_event_answers_an_error_and_the_socket_stays_usable(
    client: AsyncOpenAI, model: ScriptedModel
) -> None:
    model.script(text("still here"))
    async with client.beta.responses.connect() as connection:
        await connection.send({"type": "response.teleport"})  # type: ignore[arg-type]
        [unknown] = await until_terminal(connection)
        await connection.response.create(model="no-such-model", input="x")
        [bad_model] = await until_terminal(connection)
        await connection.response.create(model=SCRIPTED_MODEL, input="x", background=True)
        [background] = await until_terminal(connection)
        await connection.response.create(model=SCRIPTED_MODEL, input="x")
        events = await until_terminal(connection)
    assert (unknown.type, unknown.error.code, unknown.error.param) == ("error", "unknown_event_type", "type")
    assert (bad_model.error.code, bad_model.error.param) == ("model_not_found", "model")
    assert background.error.param == "background"
    assert texts(events).strip() == "still here"


async def test_lanes_echo_their_stream_id_and_reject_bad_ones(client: AsyncOpenAI, model: ScriptedModel) -> None:
    model.script(text("on a lane"))
    async with client.beta.responses.connect() as connection:
        await connection.response.create(model=SCRIPTED_MODEL, input="x", stream_id="bad id!")
        [refused] = await until_terminal(connection)
        await connection.response.create(model=SCRIPTED_MODEL, input="x", stream_id="lane-1")
        events = await until_terminal(connection)
    assert refused.error.code == "invalid_stream_id"
    assert {event.stream_id for event in events} == {"lane-1"}
    assert texts(events).strip() == "on a lane"


async def test_a_message_over_the_limit_is_refused_and_the_socket_stays_usable(
    client: AsyncOpenAI, model: ScriptedModel, stack: Stack
) -> None:
    model.script(text("small is fine"))
    too_big = "x" * (stack.settings.max_websocket_message_bytes + 1)
    async with client.beta.responses.connect() as connection:
        await connection.response.create(model=SCRIPTED_MODEL, input=too_big)
        [refused] = await until_terminal(connection)
        await connection.response.create(model=SCRIPTED_MODEL, input="x")
        events = await until_terminal(connection)
    assert refused.error.code == "message_too_large"
    assert texts(events).strip() == "small is fine"


async def test_inject_resumes_the_waiting_response_once(client: AsyncOpenAI, model: ScriptedModel) -> None:
    model.script(tool_call("get_weather", {"city": "Oslo"}), text("Snow in Oslo."))
    output = [{"type": "function_call_output", "call_id": "", "output": "snow"}]
    async with client.beta.responses.connect() as connection:
        await connection.response.create(model=SCRIPTED_MODEL, input="weather?", tools=[WEATHER])  # type: ignore[list-item]
        waiting = await until_terminal(connection)
        paused = waiting[-1].response
        [call] = [item for item in paused.output if item.type == "function_call"]
        output[0]["call_id"] = call.call_id

        await connection.response.inject(response_id=paused.id, input=output)  # type: ignore[arg-type]
        injected = await until_terminal(connection)
        await connection.response.inject(response_id=paused.id, input=output)  # type: ignore[arg-type]
        [again] = await until_terminal(connection)
        await connection.response.inject(response_id="resp_unknown", input=output)  # type: ignore[arg-type]
        [unknown] = await until_terminal(connection)
    assert injected[0].type == "response.inject.created" and injected[0].response_id == paused.id
    assert injected[-1].type == "response.completed"
    assert injected[-1].response.previous_response_id == paused.id
    assert texts(injected).strip() == "Snow in Oslo."
    assert len(model.requests) == 2  # the tool output reached the model once
    assert (again.type, again.error.code) == ("response.inject.failed", "response_already_completed")
    assert again.input[0].call_id == call.call_id
    assert (unknown.type, unknown.error.code) == ("response.inject.failed", "response_not_found")


async def test_inject_refuses_items_it_does_not_take(client: AsyncOpenAI) -> None:
    async with client.beta.responses.connect() as connection:
        await connection.response.inject(
            response_id="resp_x",
            input=[{"type": "message", "role": "user", "content": "hi"}],
        )
        [refused] = await until_terminal(connection)
    assert (refused.type, refused.error.param) == ("error", "input")


async def test_steer_of_a_finished_or_unknown_response_fails_with_its_input(
    client: AsyncOpenAI, model: ScriptedModel
) -> None:
    model.script(text("done"))
    async with client.beta.responses.connect() as connection:
        await connection.response.create(model=SCRIPTED_MODEL, input="x")
        finished = (await until_terminal(connection))[-1].response.id
        await connection.response.steer(previous_response_id=finished, input="also this")
        [ended] = await until_terminal(connection)
        await connection.response.steer(previous_response_id="resp_nothing", input="also this")
        [unknown] = await until_terminal(connection)
    assert (ended.type, ended.error.code) == ("response.steer.failed", "response_already_completed")
    assert ended.steer.input == "also this" and ended.steer.previous_response_id == finished
    assert unknown.error.code == "response_not_found"


def test_the_sync_ga_client_streams_over_the_socket(stack: Stack, model: ScriptedModel) -> None:
    model.script(text("sync works"))
    client = OpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0)
    with client, client.responses.connect() as connection:
        connection.response.create(model=SCRIPTED_MODEL, input="x")
        events = []
        for event in connection:
            events.append(event)
            if event.type in TERMINAL:
                break
    assert events[-1].type == "response.completed"
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta").strip() == "sync works"


OWNER, OTHER = "owner:key-owner-ws", "other:key-other-ws"


async def test_the_upgrade_takes_auth_tenancy_and_the_connection_limit_as_http(
    stack: Stack, model: ScriptedModel
) -> None:
    settings = stack.settings.model_copy(update={"api_keys": (OWNER, OTHER), "max_websockets_per_key": 1})
    with stack.other_api(settings) as url:
        nobody = AsyncOpenAI(base_url=f"{url}/v1", api_key="wrong", max_retries=0)
        with pytest.raises(InvalidStatus) as refused:
            async with nobody.beta.responses.connect() as connection:
                await connection.recv()
        assert refused.value.response.status_code == 401

        model.script(text("owner's"))
        owner = AsyncOpenAI(base_url=f"{url}/v1", api_key="key-owner-ws", max_retries=0)
        other = AsyncOpenAI(base_url=f"{url}/v1", api_key="key-other-ws", max_retries=0)
        async with owner.beta.responses.connect() as connection:
            await connection.response.create(model=SCRIPTED_MODEL, input="x")
            owned = (await until_terminal(connection))[-1].response.id
            with pytest.raises(InvalidStatus) as limited:
                async with owner.beta.responses.connect() as second:
                    await second.recv()
            assert limited.value.response.status_code == 429
        async with other.beta.responses.connect() as connection:
            await connection.response.create(model=SCRIPTED_MODEL, input="y", previous_response_id=owned)
            [error] = await until_terminal(connection)
            await connection.response.steer(previous_response_id=owned, input="mine now")
            [steer] = await until_terminal(connection)
        assert error.error.code == "previous_response_not_found"
        assert steer.error.code == "response_not_found"
        async with httpx.AsyncClient(base_url=url) as http:  # and the same key over HTTP sees the same
            answer = await http.get(f"/v1/responses/{owned}", headers={"Authorization": "Bearer key-other-ws"})
        assert answer.status_code == 404


async def test_every_frame_validates_against_the_sdk_types(client: AsyncOpenAI, model: ScriptedModel) -> None:
    model.script(tool_call("get_weather", {"city": "Oslo"}), text("Snow."))
    frames: list[dict[str, Any]] = []

    async def through(last: tuple[str, ...]) -> dict[str, Any]:
        while True:
            frames.append(json.loads(await connection.recv_bytes()))
            if frames[-1]["type"] in last:
                return frames[-1]

    async with client.beta.responses.connect() as connection:
        await connection.response.create(model=SCRIPTED_MODEL, input="weather?", tools=[WEATHER])  # type: ignore[list-item]
        paused = (await through(TERMINAL))["response"]
        [call] = [item for item in paused["output"] if item["type"] == "function_call"]
        output = [{"type": "function_call_output", "call_id": call["call_id"], "output": "snow"}]
        await connection.response.inject(response_id=paused["id"], input=output)  # type: ignore[arg-type]
        await through(TERMINAL)
        await connection.response.inject(response_id=paused["id"], input=output)  # type: ignore[arg-type]
        await through(("response.inject.failed",))
        await connection.response.steer(previous_response_id=paused["id"], input="more")
        await through(("response.steer.failed",))
        await connection.send({"type": "response.teleport"})  # type: ignore[arg-type]
        await through(("error",))
    kinds = {frame["type"] for frame in frames}
    assert {"response.inject.created", "response.inject.failed", "response.steer.failed", "error"} <= kinds
    for frame in frames:
        assert check_websocket_event(frame).errors == (), frame


async def test_closing_the_socket_stops_its_running_response(
    client: AsyncOpenAI, model: ScriptedModel, stack: Stack
) -> None:
    held = threading.Event()
    model.script(text("never heard", held_until=held))
    async with client.beta.responses.connect() as connection:
        await connection.response.create(model=SCRIPTED_MODEL, input="x")
        created = await connection.recv()
        assert created.type == "response.created"
    try:
        assert (await until(client, created.response.id, "cancelled")).status == "cancelled"
    finally:
        held.set()


async def test_an_upgrade_from_a_foreign_web_page_is_refused(client: AsyncOpenAI) -> None:
    with pytest.raises(InvalidStatus) as refused:
        async with client.beta.responses.connect(extra_headers={"Origin": "http://evil.example"}) as connection:
            await connection.recv()
    assert refused.value.response.status_code == 403


async def recv_until(connection: Any, kind: str) -> list[Any]:
    events = []
    while True:
        events.append(await connection.recv())
        if events[-1].type == kind:
            return events


async def test_a_steer_before_the_first_token_ends_the_response_at_once_and_its_successor_takes_the_input(
    client: AsyncOpenAI, model: ScriptedModel, stack: Stack
) -> None:
    held = threading.Event()  # a model that thinks and thinks: the steer does not wait for it
    model.script(text("It is cold.", held_until=held), text("And it rains."))
    try:
        async with client.beta.responses.connect() as connection:
            await connection.response.create(model=SCRIPTED_MODEL, input="weather?")
            steered = (await recv_until(connection, "response.in_progress"))[-1].response.id
            await connection.response.steer(previous_response_id=steered, input="Mention rain too.")
            first = await until_terminal(connection)  # the accepted steer's event among them, or just after
            after = await recv_until(connection, "response.completed")
    finally:
        held.set()
    [accepted] = [event for event in [*first, *after] if event.type == "response.steer.accepted"]
    successor = [event for event in after if event.type != "response.steer.accepted"]
    assert accepted.steer.previous_response_id == steered and accepted.steer.id
    assert first[-1].type == "response.incomplete" and first[-1].response.id == steered
    assert first[-1].response.incomplete_details.reason == "steered"
    assert texts(first) == ""
    assert successor[0].type == "response.created"
    assert successor[-1].type == "response.completed"
    assert successor[-1].response.previous_response_id == steered
    assert texts(successor).strip() == "And it rains."
    assert len(model.requests) == 2  # the first call was dropped, never asked again
    assert model.requests[1]["messages"][1:] == [{"role": "user", "content": "Mention rain too."}]
    async with httpx.AsyncClient(base_url=stack.base_url) as http:  # what a client finds after a reconnect
        listed = (await http.get("/v1/responses", params={"limit": 5})).json()["data"]
    assert {"id": successor[-1].response.id, "previous_response_id": steered} in [
        {"id": item["id"], "previous_response_id": item["previous_response_id"]} for item in listed
    ]


LONG_REPLY = " ".join(f"word{number}" for number in range(60))


async def test_a_steer_cuts_the_streaming_reply_at_a_token_and_the_successor_goes_on_from_there(
    client: AsyncOpenAI, model: ScriptedModel, stack: Stack
) -> None:
    model.script(text(LONG_REPLY, token_delay_seconds=0.1), text("Rain at noon."))  # the whole reply: 6 s
    async with client.beta.responses.connect() as connection:
        await connection.response.create(model=SCRIPTED_MODEL, input="weather?")
        before = await recv_until(connection, "response.output_text.delta")
        steered = next(event.response.id for event in before if event.type == "response.created")
        started = time.monotonic()
        await connection.response.steer(previous_response_id=steered, input="Mention rain too.")
        rest = await until_terminal(connection)
        ended = time.monotonic() - started
        successor = await until_terminal(connection)
    first = [*before, *rest]
    partial = texts(first)
    assert first[-1].type == "response.incomplete" and first[-1].response.id == steered
    assert first[-1].response.incomplete_details.reason == "steered"
    assert ended < 3.0, ended  # cut at a token, not run to its end
    assert partial and LONG_REPLY.startswith(partial.strip()) and len(partial) < len(LONG_REPLY) // 2
    [message] = first[-1].response.output
    assert message.status == "incomplete" and message.content[0].text == partial
    assert successor[-1].type == "response.completed" and successor[-1].response.previous_response_id == steered
    assert texts(successor).strip() == "Rain at noon."
    assert len(model.requests) == 2  # the cut call was not asked again
    for _ in range(30):  # its stream closed, not read to its end (which streams the reply's 5 s still left)
        if model.hung_up:
            break
        await asyncio.sleep(0.1)
    assert model.hung_up == [1]
    sent = [str(message.get("content")) for message in model.requests[1]["messages"]]
    assert sum(partial.strip() in text for text in sent) == 1
    assert sum("Mention rain too." in text for text in sent) == 1
    async with httpx.AsyncClient(base_url=stack.base_url) as http:  # what a client reads after a reconnect
        stored = (await http.get(f"/v1/responses/{steered}")).json()
    assert stored["status"] == "incomplete" and stored["incomplete_details"] == {"reason": "steered"}
    assert stored["output"][0]["content"][0]["text"] == partial


async def test_a_response_made_over_http_is_not_steerable(client: AsyncOpenAI, model: ScriptedModel) -> None:
    held = threading.Event()
    model.script(text("busy", held_until=held))
    try:
        stream = await client.responses.create(model=SCRIPTED_MODEL, input="x", stream=True)
        created = None
        async for event in stream:
            if event.type == "response.in_progress":
                created = event.response.id
                break
        assert created is not None
        async with client.beta.responses.connect() as connection:
            await connection.response.steer(previous_response_id=created, input="more")
            [refused] = await recv_until(connection, "response.steer.failed")
    finally:
        held.set()
    assert refused.error.code == "steering_not_supported"


async def test_a_steer_taken_while_a_tool_runs_waits_for_the_callers_resumption_and_a_second_is_refused(
    client: AsyncOpenAI, model: ScriptedModel, mcp: ThreadedServer
) -> None:
    """The model calls a slow MCP tool and a client function: the steer comes while the MCP call runs, so the
    response goes on to pause for the function's output, and the steer rides on the caller's resumption."""
    slow = mcp_server.slow_tool(mcp)
    both = Reply(tool_calls=[("wait_then_echo", {"seconds": 4, "text": "echoed"}), ("get_weather", {"city": "Oslo"})])
    model.script(both, text("Snow, and rain later."))
    async with client.beta.responses.connect() as connection:
        await connection.response.create(model=SCRIPTED_MODEL, input="weather?", tools=[WEATHER, slow])  # type: ignore[list-item]
        steered = (await recv_until(connection, "response.created"))[-1].response.id
        await recv_until(connection, "response.mcp_call.in_progress")
        await connection.response.steer(previous_response_id=steered, input="Say if it rains.")
        accepted = (await recv_until(connection, "response.steer.accepted"))[-1]
        await connection.response.steer(previous_response_id=steered, input="And wind.")
        second = (await recv_until(connection, "response.steer.failed"))[-1]
        paused = (await recv_until(connection, "response.completed"))[-1].response
        pending = (await recv_until(connection, "response.steer.pending"))[-1]
        [call] = [item for item in paused.output if item.type == "function_call"]
        output = {"type": "function_call_output", "call_id": call.call_id, "output": "snow"}
        await connection.response.create(model=SCRIPTED_MODEL, previous_response_id=steered, input=[output])  # type: ignore[list-item]
        resumed = await until_terminal(connection)
    assert second.error.code == "too_many_pending_steers" and second.steer.input == "And wind."
    assert pending.steer.id == accepted.steer.id and pending.reason == "waiting_for_required_input"
    assert [(stub.type, stub.call_id, stub.name) for stub in pending.required_input] == [
        ("function_call_output", call.call_id, "get_weather")
    ]
    assert resumed[-1].type == "response.completed" and texts(resumed).strip() == "Snow, and rain later."
    assert len(model.requests) == 2  # no tool or model call made again
    sent = [str(message.get("content")) for message in model.requests[1]["messages"]]
    assert sum(text.count("Say if it rains.") for text in sent) == 1
    assert sent.index(next(text for text in sent if "Say if it rains." in text)) > sent.index("snow")
