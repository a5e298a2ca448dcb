"""A ceiling on request body size (`DA_MAX_REQUEST_BYTES`): larger bodies get 413 naming the limit.

A body that declares a larger Content-Length is refused before a byte of it is read. A chunked body (or one
whose Content-Length understates it) is counted as it arrives and refused as soon as it passes the limit, so no
more than the limit is ever buffered.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from configuration.settings import Settings


class BodyTooLarge(HTTPException):
    """Raised from `receive`; FastAPI re-raises HTTPExceptions met while reading a body, so it becomes the 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            413,
            f"The request body is larger than this server's limit of {limit} bytes (DA_MAX_REQUEST_BYTES); "
            "send a smaller one.",
        )


class BodySizeLimit:
    def __init__(self, app: ASGIApp, settings: Callable[[], Settings]) -> None:
        self._app = app
        self._settings = settings
        """Read at the first request: the app is built before its settings are (see api.app)."""

    @cached_property
    def _limit(self) -> int:
        return self._settings().max_request_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        limit = self._limit
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await _refusal(limit)(scope, receive, send)
            return
        received = 0
        response_started = False

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
            return message

        async def watching_send(message: Message) -> None:
            nonlocal response_started
            response_started = response_started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self._app(scope, counting_receive, watching_send)
        except BodyTooLarge:
            # Only when the body was read outside FastAPI's request handling (which answers the 413 itself).
            if response_started:
                raise
            await _refusal(limit)(scope, receive, send)


def _refusal(limit: int) -> JSONResponse:
    return JSONResponse({"detail": BodyTooLarge(limit).detail}, status_code=413)
