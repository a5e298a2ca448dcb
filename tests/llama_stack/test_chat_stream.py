"""How the worker reads a model's streamed reply, against real HTTP servers answering with chosen bytes.

OpenAI-compatible servers differ in small ways (`data:` with or without a space, comments and
`event:` lines, usage in a last chunk without choices, a missing `[DONE]`); the reply must read
the same. A failure reported inside the stream, or a chunk that is not JSON, fails the call as
retryable instead of ending the turn with a partial answer.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

from providers.base import ChatRequest, FinishPart, ProviderUnavailable, ReplyPart, TextPart, ToolCallPart
from providers.openai_chat import OpenAIChatModel
from tests.support.scripted_model import ThreadedServer
from tests.support.stack import free_port


def _data(payload: dict[str, Any], prefix: str = "data: ") -> str:
    return f"{prefix}{json.dumps(payload)}\n\n"


def _delta(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


_client_ports: list[int] = []
"""The client port of each request the server below received: which connection it came on."""


@pytest.fixture(scope="module")
def bodies() -> Iterator[tuple[dict[str, list[str]], str]]:
    """A server answering each model name with its list of raw SSE pieces, sent one by one."""
    replies: dict[str, list[str]] = {}
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def complete(body: dict[str, Any], request: Request) -> StreamingResponse:
        assert request.client is not None
        _client_ports.append(request.client.port)

        async def pieces():
            for piece in replies[body["model"]]:
                yield piece
                await asyncio.sleep(0)

        return StreamingResponse(pieces(), media_type="text/event-stream")

    server = ThreadedServer(app, free_port()).start()
    try:
        yield replies, f"{server.url}/v1"
    finally:
        server.stop()


async def _read(base_url: str, model: str) -> list[ReplyPart]:
    chat = OpenAIChatModel(base_url, None, timeout_seconds=10)
    return [part async for part in chat.stream(ChatRequest(model=model, messages=[{"role": "user", "content": "hi"}]))]


async def test_text_tool_calls_and_usage_read_the_same_from_every_server_dialect(
    bodies: tuple[dict[str, list[str]], str],
) -> None:
    replies, url = bodies
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"ci'}}
    rest = {"index": 0, "function": {"arguments": 'ty": "Paris"}'}}
    replies["varied"] = [
        ": keep-alive comment\n\n",
        "event: message\n" + _data(_delta({"role": "assistant", "content": ""})),
        _data(_delta({"content": "Hello"}), prefix="data:"),  # no space after the colon
        'data: {"id": "c", "object": "chat.completion.chunk",\ndata: "choices": [{"index": 0, "delta": '
        '{"content": " world"}, "finish_reason": null}]}\n\n',  # one event's data over two lines
        _data(_delta({"tool_calls": [call]})),
        _data(_delta({"tool_calls": [rest]}), prefix="data:")[:30],  # an event split between two sends
        _data(_delta({"tool_calls": [rest]}), prefix="data:")[30:],
        _data(_delta({}, "tool_calls")),
        _data({"id": "c", "choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}}),
        "data: [DONE]\n\n",
    ]
    parts = await _read(url, "varied")
    assert [p.text for p in parts if isinstance(p, TextPart)] == ["Hello", " world"]
    calls = [p.tool_call for p in parts if isinstance(p, ToolCallPart)]
    assert [(c.call_id, c.tool_name, c.arguments) for c in calls] == [("call_1", "get_weather", {"city": "Paris"})]
    assert parts[-1] == FinishPart("end_of_turn", prompt_tokens=7, completion_tokens=3)


async def test_successive_calls_reuse_one_connection(bodies: tuple[dict[str, list[str]], str]) -> None:
    replies, url = bodies
    replies["short"] = [_data(_delta({"content": "hi"})), _data(_delta({}, "stop")), "data: [DONE]\n\n"]
    chat = OpenAIChatModel(url, None, timeout_seconds=10)
    request = ChatRequest(model="short", messages=[{"role": "user", "content": "hi"}])
    _client_ports.clear()
    for _ in range(3):
        parts = [part async for part in chat.stream(request)]
        assert parts[0] == TextPart("hi")
    assert len(_client_ports) == 3 and len(set(_client_ports)) == 1


async def test_a_stream_without_done_ends_with_its_last_chunk(bodies: tuple[dict[str, list[str]], str]) -> None:
    replies, url = bodies
    replies["no-done"] = [_data(_delta({"content": "cut"})), _data(_delta({}, "length")).rstrip("\n")]
    parts = await _read(url, "no-done")
    assert parts == [TextPart("cut"), FinishPart("out_of_tokens", prompt_tokens=None, completion_tokens=None)]


@pytest.mark.parametrize(
    ("model", "reply", "reason"),
    [
        ("in-stream-error", _data({"error": {"message": "overloaded, try later"}}), "overloaded, try later"),
        ("not-json", "data: {not json\n\n", "a malformed stream chunk"),
        ("not-an-object", "data: [1, 2]\n\n", "a malformed stream chunk"),
    ],
)
async def test_a_failure_inside_the_stream_is_retryable(
    bodies: tuple[dict[str, list[str]], str], model: str, reply: str, reason: str
) -> None:
    replies, url = bodies
    replies[model] = [_data(_delta({"content": "partial"})), reply, "data: [DONE]\n\n"]
    with pytest.raises(ProviderUnavailable, match=reason):
        await _read(url, model)
