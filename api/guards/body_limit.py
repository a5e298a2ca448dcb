"""A ceiling on request body size (`DA_MAX_REQUEST_BYTES`): larger bodies get 413 naming the limit.

A file upload (`POST /v1/files`) has its own, larger ceiling: `DA_MAX_FILE_BYTES` and room for the multipart
framing around the file (the route counts the file's own bytes exactly, api/openai/platform/uploads.py); so
does the console's upload, which sends the file on to `POST /v1/files` (api/console/knowledge_page.py).

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

UPLOAD_PATH = "/v1/files"
CONSOLE_UPLOAD_PATH = "/console/knowledge/upload"
UPLOAD_FRAMING_BYTES = 1024 * 1024
"""Besides the file, an upload's body has its multipart headers and fields."""


class BodyTooLarge(HTTPException):
    """Raised from `receive`; FastAPI re-raises HTTPExceptions met while reading a body, so it becomes the 413."""

    def __init__(self, limit: int, setting: str = "DA_MAX_REQUEST_BYTES") -> None:
        super().__init__(
            413,
            f"The request body is larger than this server's limit of {limit} bytes ({setting}); send a smaller one.",
        )


class BodySizeLimit:
    def __init__(self, app: ASGIApp, settings: Callable[[], Settings]) -> None:
        self._app = app
        self._settings = settings
        """Read at the first request: the app is built before its settings are (see api.app)."""

    @cached_property
    def _limit(self) -> int:
        return self._settings().max_request_bytes

    @cached_property
    def _upload_limit(self) -> int:
        return self._settings().max_file_bytes + UPLOAD_FRAMING_BYTES

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        limit, setting = self._limit, "DA_MAX_REQUEST_BYTES"
        if scope["path"] in (UPLOAD_PATH, CONSOLE_UPLOAD_PATH) and scope["method"] == "POST":
            limit, setting = self._upload_limit, "DA_MAX_FILE_BYTES"
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await _refusal(limit, setting)(scope, receive, send)
            return
        received = 0
        response_started = False

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit, setting)
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
            await _refusal(limit, setting)(scope, receive, send)


def _refusal(limit: int, setting: str) -> JSONResponse:
    return JSONResponse({"detail": BodyTooLarge(limit, setting).detail}, status_code=413)
