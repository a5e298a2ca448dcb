"""An OpenAI-compatible chat-completions server for the tests, answering from a script.

Each request takes the next scripted reply (or, with none left, answers "ok"), and every
request body is recorded so tests can assert on what the runtime sent to the model.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

GUARD_MODEL = "scripted-guard"


@dataclass(frozen=True)
class Reply:
    text: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    status: int = 200
    """A non-200 status answers with an OpenAI-style error body instead."""
    delay_seconds: float = 0.0
    """Before the first byte."""
    held_until: threading.Event | None = None
    """Before the first byte (after any delay), until the test sets it: a model call that lasts until something
    the test waits for has happened, however long that takes on a loaded machine."""
    token_delay_seconds: float = 0.0
    """Between streamed words."""
    finish_reason: str | None = None
    echo_key: bool = False
    """With a non-200 status: quote the Authorization header in the error, as some providers do."""


def text(content: str, **kwargs: Any) -> Reply:
    return Reply(text=content, **kwargs)


def tool_call(name: str, arguments: dict[str, Any] | None = None, **kwargs: Any) -> Reply:
    return Reply(tool_calls=[(name, arguments or {})], **kwargs)


def failure(status: int, echo_key: bool = False) -> Reply:
    return Reply(status=status, echo_key=echo_key)


class ScriptedModel:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []
        """The Authorization header of each request: proof that the worker sent its key."""
        self._script: deque[Reply] = deque()
        self._guard_script: deque[Reply] = deque()
        self.guard_requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._calls = 0
        self.hung_up: list[int] = []
        """The numbers (1 on, counted since the script was set) of the replies whose caller left mid-stream."""

    def script(self, *replies: Reply, guard: tuple[Reply, ...] = ()) -> None:
        """Replace the script. `guard` replies answer requests for GUARD_MODEL, in order; with none
        left, the guard answers "safe". Guard requests are recorded apart, in `guard_requests`."""
        with self._lock:
            self._script.clear()
            self._script.extend(replies)
            self._guard_script = deque(guard)
            self.requests.clear()
            self.guard_requests.clear()
            self.authorizations.clear()
            self._calls = 0
            self.hung_up.clear()

    def _next(self, body: dict[str, Any], authorization: str | None) -> tuple[Reply, int]:
        with self._lock:
            self.authorizations.append(authorization)
            self._calls += 1
            if body.get("model") == GUARD_MODEL:
                self.guard_requests.append(body)
                return (self._guard_script.popleft() if self._guard_script else Reply(text="safe")), self._calls
            self.requests.append(body)
            return (self._script.popleft() if self._script else Reply(text="ok")), self._calls

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions", response_model=None)
        async def complete(request: Request) -> StreamingResponse | JSONResponse:
            body = await request.json()
            authorization = request.headers.get("authorization")
            reply, number = self._next(body, authorization)
            for _ in range(round(reply.delay_seconds / 0.05)):  # stop waiting once the caller hangs up
                if await request.is_disconnected():
                    break
                await asyncio.sleep(0.05)
            while reply.held_until is not None and not reply.held_until.is_set():
                if await request.is_disconnected():
                    break
                await asyncio.sleep(0.05)
            if reply.status != 200:
                message = f"scripted failure {reply.status}"
                if reply.echo_key:
                    message += f": incorrect API key provided: {(authorization or '').removeprefix('Bearer ')}"
                error = {"message": message, "type": "scripted", "code": reply.status}
                return JSONResponse({"error": error}, status_code=reply.status)
            usage = _usage(body, reply) if (body.get("stream_options") or {}).get("include_usage") else None
            return StreamingResponse(
                self._watched(_chunks(reply, number, body["model"], usage), number), media_type="text/event-stream"
            )

        return app

    async def _watched(self, chunks: AsyncIterator[str], number: int) -> AsyncIterator[str]:
        """The reply's chunks; a reply its caller stopped reading before the end is noted in `hung_up`."""
        finished = False
        try:
            async for chunk in chunks:
                yield chunk
            finished = True
        finally:
            if not finished:
                with self._lock:
                    self.hung_up.append(number)


def _usage(body: dict[str, Any], reply: Reply) -> dict[str, int]:
    """Token usage as OpenAI reports it when asked (`stream_options.include_usage`): words stand for tokens."""
    prompt = sum(len(str(message.get("content") or "").split()) for message in body.get("messages", []))
    completion = len(reply.text.split()) + len(reply.tool_calls)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _chunk(
    number: int,
    model: str,
    delta: dict[str, Any] | None,
    finish: str | None = None,
    usage: dict[str, int] | None = None,
) -> str:
    payload: dict[str, Any] = {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        payload["usage"] = usage
    return f"data: {json.dumps(payload)}\n\n"


async def _chunks(reply: Reply, number: int, model: str, usage: dict[str, int] | None):
    yield _chunk(number, model, {"role": "assistant", "content": ""})
    for word in reply.text.split(" ") if reply.text else []:
        if reply.token_delay_seconds:
            await asyncio.sleep(reply.token_delay_seconds)
        yield _chunk(number, model, {"content": word + " "})
    for index, (name, arguments) in enumerate(reply.tool_calls):
        call = {
            "index": index,
            "id": f"call_{number}_{index}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        yield _chunk(number, model, {"tool_calls": [call]})
    finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
    yield _chunk(number, model, {}, finish)
    if usage is not None:
        yield _chunk(number, model, None, usage=usage)
    yield "data: [DONE]\n\n"


ALLOWED_HOST = "localhost"
"""What the test stacks put in DA_OUTBOUND_ALLOW."""


class ThreadedServer:
    """uvicorn serving an ASGI app from a background thread, on a free loopback port."""

    def __init__(self, app: Any, port: int) -> None:
        self.port = port
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def allowed_url(self) -> str:
        """The same listener by the name the test stacks' DA_OUTBOUND_ALLOW admits (`localhost`);
        `url` (127.0.0.1) is refused to documents and MCP, as any loopback address is."""
        return f"http://{ALLOWED_HOST}:{self.port}"

    def start(self) -> ThreadedServer:
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"server on port {self.port} did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
