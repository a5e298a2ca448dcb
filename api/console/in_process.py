"""Sending a dialect's own request through the whole application, inside this process, with the console
visitor's credentials — and, unlike httpx's ASGI transport (which holds the body until the handler returns),
passing a streamed answer on chunk by chunk, so Server-Sent Events reach the browser as they are made.

The console spans the dialects only this way (pyproject.toml forbids api.console to import them): the request
meets the same guards, checks and handlers as one from any client, and nothing here can drift from them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
from fastapi import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Message

from api.guards.auth import CONSOLE_KEY_COOKIE

PASSED_ON = ("content-type", "cache-control")
"""What the browser is told of the inner answer's headers: what it is, and not to keep it."""


def credentials(request: Request, keys_required: bool) -> dict[str, str]:
    """The headers the visitor's request through the application carries: its key (from the console's cookie,
    where the server requires keys), and the host and origin the host/origin check judges."""
    headers = {name: value for name, value in request.headers.items() if name in ("host", "origin")}
    key = request.cookies.get(CONSOLE_KEY_COOKIE)
    if key and keys_required:
        headers["authorization"] = f"Bearer {key}"
    return headers


async def get_json(request: Request, path: str, headers: dict[str, str], **params: Any) -> Any:
    """A GET through the application; its JSON answer, or None when it was refused."""
    transport = httpx.ASGITransport(app=request.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://console", timeout=None) as client:
        answer = await client.get(path, params=params, headers=headers)
    return answer.json() if answer.status_code == 200 else None


def _scope(request: Request, path: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    sent = {**headers, "content-type": "application/json", "content-length": str(len(body))}
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": request.url.scheme,
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in sent.items()],
        "client": request.scope.get("client"),
        "server": request.scope.get("server"),
        "state": {},  # a fresh one: the inner request is signed in by its own header, not by the outer principal
    }


async def post_streamed(request: Request, path: str, headers: dict[str, str], body: dict[str, Any]) -> Response:
    """POST `body` as JSON to `path` through the application and answer with what it answers, streamed on as it
    comes. The browser leaving ends the inner request as a client's leaving would (it sees `http.disconnect`)."""
    raw = json.dumps(body).encode()
    messages: asyncio.Queue[Message | None] = asyncio.Queue()
    left = asyncio.Event()
    body_sent = False

    async def receive() -> Message:
        nonlocal body_sent
        if not body_sent:
            body_sent = True
            return {"type": "http.request", "body": raw, "more_body": False}
        await left.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        await messages.put(message)

    async def run() -> None:
        # An exception has been answered as a 500 and logged by the application (ServerErrorMiddleware).
        with contextlib.suppress(Exception):
            await request.app(_scope(request, path, headers, raw), receive, send)
        await messages.put(None)

    inner = asyncio.get_running_loop().create_task(run())
    start = await messages.get()
    if start is None or start["type"] != "http.response.start":
        await inner
        raise RuntimeError(f"{path} answered nothing")
    answered = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in start.get("headers", [])}

    async def chunks() -> AsyncIterator[bytes]:
        ended = False
        try:
            while (message := await messages.get()) is not None:
                if message["type"] != "http.response.body":
                    continue
                if chunk := message.get("body", b""):
                    yield chunk
                if not message.get("more_body", False):
                    break
            ended = True
        finally:
            left.set()
            if ended:
                await inner
            else:
                inner.cancel()

    kept = {name: value for name, value in answered.items() if name in PASSED_ON}
    return StreamingResponse(chunks(), status_code=start["status"], headers=kept)
