"""Listing and calling the tools of an MCP server (the `mcp` SDK), over streamable HTTP or the older
HTTP+SSE transport.

The transport is chosen as MCP clients do for backwards compatibility: an endpoint whose path ends in
`/sse` is an HTTP+SSE server's event stream; any other is tried as streamable HTTP first, and when the
server answers but not as a streamable HTTP MCP server, as an HTTP+SSE one. Every connection goes
through the outbound policy (outbound/), every reply is limited in size while it streams in, and every
operation has a deadline. Whatever goes wrong comes out as one `McpUnavailable` whose message says what,
never as the SDK's exception groups.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx2

from outbound.http import Outbound

if TYPE_CHECKING:
    from mcp import Client

T = TypeVar("T")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class McpTool:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class McpResult:
    text: str
    is_error: bool


class McpUnavailable(Exception):
    """The MCP server could not be used; the message says why. `retryable`: trying again may help
    (the server was unreachable), as opposed to a refusal, an oversized reply or a missed deadline."""

    def __init__(self, message: str, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


def shown_uri(uri: str) -> str:
    """The endpoint as messages show it: without user info, query or fragment, which may hold secrets."""
    parts = urlsplit(uri)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _innermost(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


@dataclass(frozen=True)
class McpConnector:
    outbound: Outbound
    max_reply_bytes: int
    call_deadline: float
    listing_deadline: float

    async def list_tools(self, uri: str, headers: dict[str, str] | None = None) -> list[McpTool]:
        async def listed(client: Client) -> list[McpTool]:
            listing = await client.list_tools()
            return [McpTool(t.name, t.description or "", dict(t.input_schema or {})) for t in listing.tools]

        return await self._session(uri, headers, self.listing_deadline, "list its tools", listed)

    async def call_tool(
        self,
        uri: str,
        name: str,
        arguments: dict[str, Any],
        headers: dict[str, str] | None = None,
        within: float | None = None,
    ) -> McpResult:
        """`within`: the seconds left of the call's deadline (earlier attempts spent the rest); by default
        the whole deadline. A missed deadline's message names the whole deadline either way."""

        async def called(client: Client) -> McpResult:
            result = await client.call_tool(name, arguments)
            items = result.content
            text = "\n".join(getattr(item, "text", "") for item in items if getattr(item, "type", "") == "text")
            return McpResult(text=text, is_error=bool(result.is_error))

        limit = self.call_deadline if within is None else min(within, self.call_deadline)
        return await self._session(uri, headers, self.call_deadline, f"run {name}", called, limit)

    async def _session(
        self,
        uri: str,
        headers: dict[str, str] | None,
        deadline: float,
        purpose: str,
        operation: Callable[[Client], Awaitable[T]],
        limit: float | None = None,
    ) -> T:
        """`limit`: when this attempt must end, if sooner than `deadline`."""
        # The SDK on first use, not at import: it costs every API and worker process half a second of CPU
        # at start, and most never reach an MCP server. Outside the `try`, so a broken install fails loudly
        # (the transports below import from the modules loaded here).
        import mcp.client.sse
        import mcp.client.streamable_http  # noqa: F401

        incidents: list[Exception] = []
        where = shown_uri(uri)
        try:
            with anyio.fail_after(deadline if limit is None else limit):
                if _is_sse_endpoint(uri):
                    return await self._attempt(uri, headers, deadline, incidents, operation, True)
                connected: list[bool] = []
                try:
                    return await self._attempt(uri, headers, deadline, incidents, operation, False, connected)
                except Exception as error:
                    # Only a server that never became a session is tried again: an operation that failed
                    # once connected (a call) is never sent twice.
                    if incidents or connected or not _answered_otherwise(error):
                        raise
                    log.info("MCP server at %s is not streamable HTTP; trying HTTP+SSE", where)
                    return await self._attempt(uri, headers, deadline, incidents, operation, True)
        except Exception as error:
            if incidents:
                raise McpUnavailable(f"The MCP server at {where} could not {purpose}: {incidents[0]}", False) from None
            if isinstance(error, TimeoutError):
                raise McpUnavailable(
                    f"The MCP server at {where} did not {purpose} within {deadline:g} s", retryable=False
                ) from None
            cause = _innermost(error)
            # The cause's own text (resolver, socket and TLS messages, internal addresses) goes to the log;
            # the message, which callers and the model read, says what kind of failure it was.
            log.warning("MCP server at %s could not %s: %r", where, purpose, cause)
            unreachable = isinstance(cause, httpx2.TransportError | OSError)
            what = "it could not be reached" if unreachable else "it did not answer as an MCP server"
            raise McpUnavailable(
                f"The MCP server at {where} could not {purpose}: {what}", retryable=unreachable
            ) from None

    async def _attempt(
        self,
        uri: str,
        headers: dict[str, str] | None,
        deadline: float,
        incidents: list[Exception],
        operation: Callable[[Client], Awaitable[T]],
        over_sse: bool,
        connected: list[bool] | None = None,
    ) -> T:
        """One session over one transport. Over HTTP+SSE, an event stream (GET) names where to POST the
        messages; both go through an outbound client of ours, and the stream's bytes, all messages together,
        are limited like one reply. `connected` gets a True once the session is initialized."""
        from mcp import Client
        from mcp.client.sse import sse_client
        from mcp.client.streamable_http import streamable_http_client

        def guarded_client(
            headers: dict[str, str] | None = None,
            timeout: httpx2.Timeout | None = None,
            auth: httpx2.Auth | None = None,
        ) -> httpx2.AsyncClient:
            return self.outbound.client(self.max_reply_bytes, headers, incidents)

        async with AsyncExitStack() as stack:
            if over_sse:
                transport = sse_client(
                    uri, headers=headers, sse_read_timeout=deadline, httpx_client_factory=guarded_client
                )
            else:
                http = await stack.enter_async_context(guarded_client(headers))
                transport = streamable_http_client(
                    uri, http_client=http, terminate_on_close=False, max_sse_event_size=self.max_reply_bytes
                )
            client = await stack.enter_async_context(Client(transport, read_timeout_seconds=deadline))
            if connected is not None:
                connected.append(True)
            return await operation(client)


def _is_sse_endpoint(uri: str) -> bool:
    return urlsplit(uri).path.rstrip("/").endswith("/sse")


def _answered_otherwise(error: BaseException) -> bool:
    """Whether a streamable HTTP attempt failed because the server answered with something else (a 4xx
    status such as 404 or 405, or a reply that is no MCP message), as an HTTP+SSE server does: then
    HTTP+SSE is worth a try. Unreachable servers and missed deadlines are not."""
    cause = _innermost(error)
    if isinstance(cause, httpx2.HTTPStatusError):
        return 400 <= cause.response.status_code < 500
    return not isinstance(cause, httpx2.TransportError | OSError | TimeoutError)
