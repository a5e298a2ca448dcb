"""Any OpenAI-compatible chat-completions server (vLLM, Ollama, llama.cpp, OpenAI …)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

from domain.content import StopReason, ToolCall
from providers.base import (
    ChatRequest,
    FinishPart,
    ProviderRejected,
    ProviderUnavailable,
    ReplyPart,
    TextPart,
    ToolCallPart,
)

_RETRYABLE_STATUS = {408, 409, 425, 429}

if TYPE_CHECKING:
    from openai._types import RequestOptions


@cache
def _request_options() -> RequestOptions:
    """What `create` asks of the client besides the body: the bearer key, which openai 3 sends only when a
    request asks for it (earlier majors have no such option and send the key with every request)."""
    from openai._types import RequestOptions

    return {"security": {"bearer_auth": True}} if "security" in RequestOptions.__annotations__ else {}


_DRAIN_SECONDS = 0.5
"""How long the body's end after `[DONE]` is waited for before the connection is given up instead."""

_STOP_REASONS: dict[str | None, StopReason] = {"length": "out_of_tokens", "content_filter": "end_of_turn"}


@dataclass
class _PendingCall:
    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)

    def finish(self, index: int) -> ToolCall:
        raw = "".join(self.arguments) or "{}"
        try:
            arguments: dict[str, Any] | str = json.loads(raw)
        except ValueError:
            arguments = raw
        return ToolCall(call_id=self.call_id or f"call_{index}", tool_name=self.name, arguments=arguments)


async def _chunks(response: Any) -> AsyncIterator[dict[str, Any]]:
    """The stream's chunks as JSON objects: each server-sent event's `data`, until `[DONE]`.

    Read as plain JSON rather than as the SDK's typed chunks, whose construction cost a tenth of a
    millisecond per token (a 50-word answer: 9 ms of CPU against 3.6 ms).
    """
    data: list[str] = []
    lines = response.aiter_lines()
    async for line in lines:
        if line.startswith("data:"):
            data.append(line[6:] if line.startswith("data: ") else line[5:])
        if line or not data:
            continue  # other fields (event, id, retry) and comments carry nothing read here
        payload, data = "\n".join(data), []
        if payload == "[DONE]":
            await _drain(lines)
            return
        yield _object(payload)
    if data and (payload := "\n".join(data)) != "[DONE]":
        yield _object(payload)


async def _drain(lines: AsyncIterator[str]) -> None:
    """Read the body's end after `[DONE]`: HTTP/1.1 hands a connection back to the pool only once its
    response was read to the end and closes it otherwise, which cost every model call a new connection.
    Best effort: the answer is complete, and a server that keeps the body open only loses its connection."""
    with contextlib.suppress(Exception):
        async with asyncio.timeout(_DRAIN_SECONDS):
            async for _ in lines:
                pass


def _object(payload: str) -> dict[str, Any]:
    chunk = json.loads(payload)
    if not isinstance(chunk, dict):
        raise ValueError(f"expected a JSON object, got {payload[:80]!r}")
    return chunk


class OpenAIChatModel:
    def __init__(self, base_url: str, api_key: str | None, timeout_seconds: float) -> None:
        # The SDK when a model of this kind is first built, not at import: it costs a process near half a
        # second of CPU, which a deployment on the built-in model never needs to pay.
        import openai

        self._api_key = api_key
        # Retries are Temporal's job: it backs off durably and records every attempt.
        self._client = openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_seconds, max_retries=0
        )

    def _redacted(self, text: str) -> str:
        return text.replace(self._api_key, "[redacted]") if self._api_key else text

    def _arguments(self, request: ChatRequest) -> dict[str, Any]:
        # include_usage: the last chunk reports the tokens used (OpenAI, vLLM, Ollama, llama.cpp).
        arguments: dict[str, Any] = {
            "model": request.model,
            "messages": request.messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            arguments["tools"] = request.tools
            if request.tool_choice is not None:
                arguments["tool_choice"] = request.tool_choice
            if request.parallel_tool_calls is not None:
                arguments["parallel_tool_calls"] = request.parallel_tool_calls
        optional = {
            "temperature": request.temperature,
            "top_p": request.top_p,
            "max_tokens": request.max_tokens,
            "stop": request.stop,
            "response_format": request.response_format,
        }
        arguments.update({key: value for key, value in optional.items() if value is not None})
        return arguments

    async def stream(self, request: ChatRequest) -> AsyncIterator[ReplyPart]:
        import httpx
        import openai  # imported already by __init__

        try:
            # The body as built, not through `chat.completions.create`: its request transform walks
            # every message with typing introspection (O(conversation) per call, half the worker's
            # CPU late in a long session) to change nothing in a body of plain JSON like ours.
            # `cast_to=httpx.Response`: the SDK's way to a raw response (its errors, retries and
            # auth still apply); with stream=True its body is read here, as it arrives.
            response = await self._client.post(
                "/chat/completions",
                body=self._arguments(request),
                options=_request_options(),
                cast_to=httpx.Response,
                stream=True,
            )
            calls: dict[int, _PendingCall] = {}
            finish_reason: str | None = None
            usage: dict[str, Any] | None = None
            try:
                async for chunk in _chunks(response):
                    if error := chunk.get("error"):
                        message = error.get("message") if isinstance(error, dict) else error
                        raise ProviderUnavailable(f"{request.model}: {self._redacted(str(message))}")
                    usage = chunk.get("usage") or usage
                    if not (choices := chunk.get("choices")):
                        continue
                    choice = choices[0]
                    finish_reason = choice.get("finish_reason") or finish_reason
                    delta = choice.get("delta") or {}
                    if content := delta.get("content"):
                        yield TextPart(content)
                    for call in delta.get("tool_calls") or []:
                        pending = calls.setdefault(call.get("index", 0), _PendingCall())
                        pending.call_id = call.get("id") or pending.call_id
                        if function := call.get("function"):
                            pending.name = function.get("name") or pending.name
                            if function.get("arguments"):
                                pending.arguments.append(function["arguments"])
            except ValueError as malformed:
                raise ProviderUnavailable(f"{request.model}: a malformed stream chunk ({malformed})") from None
            finally:
                await response.aclose()
        except openai.APIStatusError as exc:
            # The message ends up in workflow history and in the turn's error; some providers quote
            # the key they were sent ("Incorrect API key provided: sk-…"). `from None`: the original
            # exception, with the raw body, must not travel along as the cause.
            reason = f"{request.model}: HTTP {exc.status_code}: {self._redacted(exc.message)}"
            if exc.status_code in _RETRYABLE_STATUS or exc.status_code >= 500:
                raise ProviderUnavailable(reason) from None
            raise ProviderRejected(reason) from None
        for index in sorted(calls):
            yield ToolCallPart(calls[index].finish(index))
        yield FinishPart(
            _STOP_REASONS.get(finish_reason, "end_of_turn"),
            prompt_tokens=usage.get("prompt_tokens") if usage else None,
            completion_tokens=usage.get("completion_tokens") if usage else None,
        )
