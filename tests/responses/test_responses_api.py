"""`/v1/responses` with the unmodified `openai` SDK against the real stack and the scripted model: create
(streamed and not), retrieve, background and stream resumption, cancel, delete, input items, list,
store:false and Idempotency-Key."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import openai
import pytest
from openai import AsyncOpenAI
from openai.types.responses import ResponseInputMessageItem, ResponseItem

from api.openai.responses.create import response_id_for
from tests.support.processes import EVENT_SECONDS
from tests.support.scripted_model import ScriptedModel, failure, text
from tests.support.stack import SCRIPTED_MODEL, Stack


@pytest.fixture
async def client(stack: Stack) -> AsyncIterator[AsyncOpenAI]:
    async with AsyncOpenAI(base_url=f"{stack.base_url}/v1", api_key="unused", max_retries=0, timeout=60) as made:
        yield made


@pytest.fixture
async def api(stack: Stack) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=stack.base_url, timeout=60) as made:
        yield made


async def events_of(stream: Any) -> list[Any]:
    return [event async for event in stream]


async def until(client: AsyncOpenAI, response_id: str, *statuses: str, seconds: float = EVENT_SECONDS) -> Any:
    for _ in range(int(seconds * 10)):
        response = await client.responses.retrieve(response_id)
        if response.status in statuses:
            return response
        await asyncio.sleep(0.1)
    raise AssertionError(f"{response_id} never reached {statuses}; it is {response.status}")


def sent_messages(model: ScriptedModel, index: int = -1) -> list[dict[str, Any]]:
    return model.requests[index]["messages"]


async def test_a_blocking_create_answers_the_whole_response(client: AsyncOpenAI, model: ScriptedModel) -> None:
    model.script(text("Hello from the model"))
    response = await client.responses.create(
        model=SCRIPTED_MODEL, input="Say hello", instructions="Be brief.", metadata={"k": "v"}
    )
    assert response.status == "completed" and response.output_text.strip() == "Hello from the model"
    assert response.id.startswith("resp_") and len(response.id) == 53
    assert response.instructions == "Be brief." and response.metadata == {"k": "v"} and response.tools == []
    assert sent_messages(model)[0] == {"role": "system", "content": "Be brief."}
    assert sent_messages(model)[-1]["content"] == "Say hello"
    again = await client.responses.retrieve(response.id)
    assert again.model_dump() == response.model_dump()


async def test_streams_carry_every_event_in_order(client: AsyncOpenAI, model: ScriptedModel) -> None:
    model.script(text("one two three"), text("four five"))
    async with client.responses.stream(model=SCRIPTED_MODEL, input="count") as stream:
        events = await events_of(stream)
        final = await stream.get_final_response()
    kinds = [event.type for event in events]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds and "response.output_text.done" in kinds
    assert [event.sequence_number for event in events] == list(range(len(events)))
    assert final.output_text.strip() == "one two three"

    raw = await client.responses.create(model=SCRIPTED_MODEL, input="more", stream=True)
    raw_events = await events_of(raw)
    assert raw_events[-1].type == "response.completed" and raw_events[-1].response.output_text.strip() == "four five"
    replay = await events_of(await client.responses.retrieve(raw_events[0].response.id, stream=True))
    assert [e.model_dump() for e in replay] == [e.model_dump() for e in raw_events]


async def test_background_responses_are_polled_and_their_stream_resumed(
    client: AsyncOpenAI, model: ScriptedModel
) -> None:
    model.script(text("slow words arrive one at a time", token_delay_seconds=0.1))
    queued = await client.responses.create(model=SCRIPTED_MODEL, input="go", background=True)
    assert queued.status in ("queued", "in_progress") and queued.background and queued.output == []
    done = await until(client, queued.id, "completed")
    assert done.output_text.strip() == "slow words arrive one at a time"

    model.script(text("a b c d e f g h", token_delay_seconds=0.1))
    stream = await client.responses.create(model=SCRIPTED_MODEL, input="go", background=True, stream=True)
    first: list[Any] = []
    async for event in stream:
        first.append(event)
        if len(first) == 5:
            break
    await stream.close()
    assert first[0].response.status == "queued" and first[1].type == "response.queued"
    response_id = first[0].response.id
    rest = await events_of(
        await client.responses.retrieve(response_id, stream=True, starting_after=first[-1].sequence_number)
    )
    whole = await events_of(await client.responses.retrieve(response_id, stream=True))
    assert [e.model_dump() for e in first + rest] == [e.model_dump() for e in whole]
    assert whole[-1].type == "response.completed" and whole[-1].response.output_text.strip() == "a b c d e f g h"


async def test_cancel_answers_as_the_spec_says(client: AsyncOpenAI, model: ScriptedModel) -> None:
    model.script(text("quick"))
    synchronous = await client.responses.create(model=SCRIPTED_MODEL, input="x")
    with pytest.raises(openai.BadRequestError, match=re.escape("Cannot cancel a synchronous response.")):
        await client.responses.cancel(synchronous.id)

    model.script(text("never finished", delay_seconds=30))
    running = await client.responses.create(model=SCRIPTED_MODEL, input="x", background=True)
    await until(client, running.id, "in_progress")
    cancelled = await client.responses.cancel(running.id)
    assert cancelled.status == "cancelled" and cancelled.output == []
    assert (await client.responses.cancel(running.id)).status == "cancelled"  # idempotent

    model.script(text("done"))
    finished = await client.responses.create(model=SCRIPTED_MODEL, input="x", background=True)
    await until(client, finished.id, "completed")
    with pytest.raises(openai.BadRequestError, match=re.escape("Cannot cancel a completed response.")):
        await client.responses.cancel(finished.id)
    with pytest.raises(openai.NotFoundError):
        await client.responses.cancel("resp_" + "0" * 48)


async def test_a_cancelled_background_stream_ends_with_response_failed(
    client: AsyncOpenAI, model: ScriptedModel
) -> None:
    model.script(text("a b c d e f g h i j k l m n o p", token_delay_seconds=0.5))
    stream = await client.responses.create(model=SCRIPTED_MODEL, input="x", background=True, stream=True)
    events = []
    async for event in stream:
        events.append(event)
        if event.type == "response.output_text.delta":
            await client.responses.cancel(event_response_id(events))
    assert events[-1].type == "response.failed" and events[-1].response.status == "cancelled"


def event_response_id(events: list[Any]) -> str:
    return next(event.response.id for event in events if hasattr(event, "response"))


def _input_text(item: ResponseItem) -> str:
    """The text of a user's input message, which the SDK types as any kind of item."""
    assert isinstance(item, ResponseInputMessageItem)
    return item.content[0].text


async def test_delete_input_items_and_list(client: AsyncOpenAI, model: ScriptedModel, api: httpx.AsyncClient) -> None:
    model.script(text("noted"), text("later"))
    items = [{"role": "user", "content": f"message {n}"} for n in range(5)]
    response = await client.responses.create(model=SCRIPTED_MODEL, input=items)  # type: ignore[arg-type]
    page = await client.responses.input_items.list(response.id, limit=2, order="asc")
    assert [_input_text(item) for item in page.data] == ["message 0", "message 1"] and page.has_more
    every = [item async for item in client.responses.input_items.list(response.id, limit=2, order="asc")]
    assert [_input_text(item) for item in every] == [f"message {n}" for n in range(5)]
    assert all(item.id.startswith("msg_") for item in every)
    newest = await client.responses.input_items.list(response.id)
    assert _input_text(newest.data[0]) == "message 4"

    other = await client.responses.create(model=SCRIPTED_MODEL, input="x")
    listed = (await api.get("/v1/responses", params={"limit": 1})).json()
    assert listed["object"] == "list" and listed["data"][0]["id"] == other.id and listed["has_more"]
    after = (await api.get("/v1/responses", params={"after": other.id, "limit": 1})).json()
    assert after["data"][0]["id"] == response.id
    assert (await api.get("/v1/responses", params={"after": "resp_nope"})).json()["error"]["param"] == "after"

    await client.responses.delete(response.id)
    with pytest.raises(openai.NotFoundError, match="not found"):
        await client.responses.retrieve(response.id)

    model.script(text("slow", delay_seconds=30))
    running = await client.responses.create(model=SCRIPTED_MODEL, input="x", background=True)
    with pytest.raises(openai.BadRequestError, match=re.escape("Cannot delete an in-flight response.")):
        await client.responses.delete(running.id)
    await client.responses.cancel(running.id)


async def test_store_false_leaves_nothing_to_read(client: AsyncOpenAI, model: ScriptedModel) -> None:
    model.script(text("ephemeral"))
    response = await client.responses.create(model=SCRIPTED_MODEL, input="x", store=False)
    # The SDK's Response declares no `store`, which the API returns.
    assert response.output_text.strip() == "ephemeral" and response.store is False  # type: ignore[attr-defined]
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(response.id)
    with pytest.raises(openai.BadRequestError) as refused:
        await client.responses.create(model=SCRIPTED_MODEL, input="y", previous_response_id=response.id)
    assert refused.value.code == "previous_response_not_found"


async def test_a_retried_create_with_an_idempotency_key_starts_nothing_new(
    client: AsyncOpenAI, model: ScriptedModel
) -> None:
    model.script(text("once"), text("twice"))
    key = {"Idempotency-Key": "create-7"}
    first = await client.responses.create(model=SCRIPTED_MODEL, input="x", extra_headers=key)
    second = await client.responses.create(model=SCRIPTED_MODEL, input="x", extra_headers=key)
    assert second.id == first.id and second.output_text.strip() == "once" and len(model.requests) == 1


SDK_RETRY = {"x-stainless-retry-count": "1"}
"""What the openai SDK sends on its own retry of a request (here set by hand: the SDK's custom header wins)."""


async def test_the_sdks_own_retry_of_a_create_without_a_key_starts_nothing_new(
    client: AsyncOpenAI, model: ScriptedModel
) -> None:
    """The SDK retries a create it saw fail in transit (a connection lost as an API process died, a proxy's
    5xx) with the same body and no Idempotency-Key: the retry answers the response its first attempt made."""
    model.script(text("once"), text("twice"), text("other"))
    first = await client.responses.create(model=SCRIPTED_MODEL, input="say it")
    retry = await client.responses.create(model=SCRIPTED_MODEL, input="say it", extra_headers=SDK_RETRY)
    assert retry.id == first.id and retry.output_text.strip() == "once" and len(model.requests) == 1

    again = await client.responses.create(model=SCRIPTED_MODEL, input="say it")  # sent again on purpose
    assert again.id != first.id and again.output_text.strip() == "twice"
    assert (await client.responses.create(model=SCRIPTED_MODEL, input="say it", extra_headers=SDK_RETRY)).id == again.id
    other = await client.responses.create(model=SCRIPTED_MODEL, input="say more", extra_headers=SDK_RETRY)
    assert other.id not in (first.id, again.id) and other.output_text.strip() == "other"  # no attempt to repeat
    assert len(model.requests) == 3


async def test_the_sdks_retry_of_a_cancelled_attempt_is_a_fresh_attempt(
    client: AsyncOpenAI, model: ScriptedModel
) -> None:
    model.script(text("slow", delay_seconds=30), text("fresh"))
    first = await client.responses.create(model=SCRIPTED_MODEL, input="try", background=True)
    await until(client, first.id, "in_progress")
    await client.responses.cancel(first.id)
    await until(client, first.id, "cancelled")
    retry = await client.responses.create(model=SCRIPTED_MODEL, input="try", background=True, extra_headers=SDK_RETRY)
    assert retry.id != first.id
    assert (await until(client, retry.id, "completed")).output_text.strip() == "fresh"


def test_errors_have_the_openai_envelope(http: httpx.Client) -> None:
    refused = http.post(
        "/v1/responses", json={"model": SCRIPTED_MODEL, "input": "x", "tools": [{"type": "computer_use_preview"}]}
    )
    assert refused.status_code == 400
    assert refused.json()["error"]["param"] == "tools" and refused.json()["error"]["type"] == "invalid_request_error"
    assert http.post("/v1/responses", content=b"{not json").status_code == 400
    unknown = http.post("/v1/responses", json={"model": "gpt-nope", "input": "x"})
    assert unknown.status_code == 400 and unknown.json()["error"]["param"] == "model"
    wrong = http.get("/v1/responses/resp_x/input_items", params={"limit": 1000})
    assert wrong.status_code == 400 and wrong.json()["error"]["param"] == "limit"
    missing = http.get("/v1/responses/resp_missing")
    assert (
        missing.status_code == 404
        and missing.json()["error"]["message"] == "Response with id 'resp_missing' not found."
    )
    assert "detail" in http.get("/v1/agents/nope").json()  # the llama-stack routes keep their shape


async def test_the_request_settings_reach_the_model_and_are_echoed(client: AsyncOpenAI, model: ScriptedModel) -> None:
    model.script(text('{"a": 1}'))
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    weather: Any = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}
    response = await client.responses.create(
        model=SCRIPTED_MODEL,
        input="json please",
        temperature=0.2,
        top_p=0.5,
        max_output_tokens=64,
        tools=[weather],
        tool_choice={"type": "function", "name": "get_weather"},
        parallel_tool_calls=False,
        text={"format": {"type": "json_schema", "name": "answer", "schema": schema, "strict": True}},
    )
    sent = model.requests[-1]
    assert (sent["temperature"], sent["top_p"], sent["max_tokens"]) == (0.2, 0.5, 64)
    assert sent["response_format"]["json_schema"]["name"] == "answer"
    assert sent["tool_choice"]["function"]["name"] == "get_weather" and sent["parallel_tool_calls"] is False
    assert response.text.format.type == "json_schema" and response.temperature == 0.2
    assert response.tool_choice.name == "get_weather" and response.max_output_tokens == 64


async def test_instructions_are_per_response(client: AsyncOpenAI, model: ScriptedModel) -> None:
    model.script(text("first"), text("second"))
    first = await client.responses.create(model=SCRIPTED_MODEL, input="one", instructions="Speak French.")
    second = await client.responses.create(model=SCRIPTED_MODEL, input="two", previous_response_id=first.id)
    assert second.instructions is None and second.previous_response_id == first.id
    messages = model.requests[-1]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"], messages
    assert "Speak French." not in str(messages)


def test_the_shared_guards_answer_in_the_openai_envelope(stack: Stack) -> None:
    settings = stack.settings.model_copy(update={"api_keys": ("k-1",)})
    with stack.other_api(settings) as url, httpx.Client(base_url=url, timeout=30) as http:
        refused = http.post("/v1/responses", json={"model": SCRIPTED_MODEL, "input": "x"})
        assert refused.status_code == 401 and refused.json()["error"]["type"] == "authentication_error"
        assert "Authorization" in refused.json()["error"]["message"]
        assert "detail" in http.get("/v1/agents").json()
        huge = http.post(
            "/v1/responses",
            headers={"Authorization": "Bearer k-1"},
            content=b"x" * (stack.settings.max_request_bytes + 1),
        )
        assert huge.status_code == 413 and "DA_MAX_REQUEST_BYTES" in huge.json()["error"]["message"]


@pytest.mark.parametrize("stream", [False, True])
async def test_a_client_leaving_a_synchronous_response_cancels_it(
    client: AsyncOpenAI, model: ScriptedModel, stack: Stack, stream: bool
) -> None:
    model.script(text("a b c d e f g h i j k l m n o p q r s t", token_delay_seconds=0.5))
    key = f"leave-{stream}-{id(model)}"
    body = {"model": SCRIPTED_MODEL, "input": "talk slowly", "stream": stream}
    async with httpx.AsyncClient(base_url=stack.base_url, timeout=30) as http:
        if stream:
            async with http.stream("POST", "/v1/responses", json=body, headers={"Idempotency-Key": key}) as answer:
                async for line in answer.aiter_lines():
                    if "response.output_text.delta" in line:
                        break
        else:
            with pytest.raises(httpx.ReadTimeout):
                await http.post("/v1/responses", json=body, headers={"Idempotency-Key": key}, timeout=2)
    response_id = response_id_for("default", key)
    cancelled = await until(client, response_id, "cancelled", "completed")
    assert cancelled.status == "cancelled"


RESPONSE_ROUTES = {
    ("post", "/v1/responses"),
    ("get", "/v1/responses"),
    ("get", "/v1/responses/{response_id}"),
    ("post", "/v1/responses/{response_id}/cancel"),
    ("delete", "/v1/responses/{response_id}"),
    ("get", "/v1/responses/{response_id}/input_items"),
}
"""Walked by the tenancy test here (tests/security/test_tenancy.py counts them as walked)."""


def _foreign_requests(response_id: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    path = f"/v1/responses/{response_id}"
    return [
        ("get", path, None),
        ("get", f"{path}?stream=true", None),
        ("post", f"{path}/cancel", None),
        ("get", f"{path}/input_items", None),
        ("delete", path, None),
    ]


def test_another_tenants_response_is_not_found_on_every_route(stack: Stack, model: ScriptedModel) -> None:
    model.script(text("mine"), text("theirs"))
    settings = stack.settings.model_copy(update={"api_keys": ("resp-owner-0123", "resp-other-4567")})
    with stack.other_api(settings) as url:
        owner = httpx.Client(base_url=url, headers={"Authorization": "Bearer resp-owner-0123"}, timeout=30)
        other = httpx.Client(base_url=url, headers={"Authorization": "Bearer resp-other-4567"}, timeout=30)
        mine = owner.post("/v1/responses", json={"model": SCRIPTED_MODEL, "input": "x", "background": True}).json()
        for method, path, body in _foreign_requests(mine["id"]):
            refused = other.request(method, path, json=body)
            assert refused.status_code == 404, (method, path, refused.text)
            assert refused.json()["error"]["message"] == f"Response with id '{mine['id']}' not found."
        assert other.get("/v1/responses").json()["data"] == []
        chained = other.post(
            "/v1/responses", json={"model": SCRIPTED_MODEL, "input": "y", "previous_response_id": mine["id"]}
        )
        assert chained.status_code == 400 and chained.json()["error"]["code"] == "previous_response_not_found"
        assert owner.get(f"/v1/responses/{mine['id']}").status_code == 200
    walked = {
        (method, re.sub(r"resp_\w+", "{response_id}", path.split("?")[0]))
        for method, path, _ in _foreign_requests("resp_x")
    }
    assert walked | {("post", "/v1/responses"), ("get", "/v1/responses")} == RESPONSE_ROUTES


async def test_a_response_cut_short_is_incomplete_and_a_failed_one_says_why(
    client: AsyncOpenAI, model: ScriptedModel
) -> None:
    model.script(text("cut off mid", finish_reason="length"), failure(400))
    cut = await client.responses.create(model=SCRIPTED_MODEL, input="x", max_output_tokens=16)
    assert cut.status == "incomplete" and cut.incomplete_details.reason == "max_output_tokens"
    failed = await client.responses.create(model=SCRIPTED_MODEL, input="x")
    assert failed.status == "failed" and failed.error is not None and failed.error.message


async def test_a_provider_error_is_retried_and_the_response_streams_its_answer_once(
    client: AsyncOpenAI, model: ScriptedModel
) -> None:
    """A foreground response's model call is a local activity: a 503 is retried after its backoff, as an activity's."""
    model.script(failure(503), text("after a retry"))
    events = await events_of(await client.responses.create(model=SCRIPTED_MODEL, input="x", stream=True))
    final = events[-1].response
    assert final.status == "completed" and final.output_text.strip() == "after a retry"
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == final.output_text
    assert len(model.requests) == 2
