"""A real MCP server for the tests, built with the `mcp` SDK: over streamable HTTP (`start`) or over the older
HTTP+SSE transport (`start_sse`)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from starlette.types import Receive, Scope, Send

from tests.support.scripted_model import ThreadedServer
from tests.support.stack import free_port

STARTED: list[str] = []
"""Names of the tools called so far, appended as each call starts (the server runs in-process)."""
AUTHORIZATIONS: list[str] = []
"""The Authorization header of every request the server received (for credential tests)."""
WAITING = {"now": 0, "most": 0}
"""`wait_then_echo` calls in progress now, and the most at once since a test set "most" to 0."""
SECRET = "Bearer tenant-secret-7f3a9c"
"""What `open_vault` requires in the Authorization header of the call."""


def slow_tool(server: ThreadedServer) -> dict[str, Any]:
    """A Responses request's `mcp` tool offering only `wait_then_echo` of `server`, called without approval."""
    return {
        "type": "mcp",
        "server_label": "slow",
        "server_url": f"{server.allowed_url}/mcp",
        "allowed_tools": ["wait_then_echo"],
        "require_approval": "never",
    }


def build() -> MCPServer:
    server = MCPServer("durable-agents-tests")

    @server.tool()
    def add_numbers(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    async def wait_then_echo(seconds: float, text: str) -> str:
        """Wait, then echo the text."""
        STARTED.append("wait_then_echo")
        WAITING["now"] += 1
        WAITING["most"] = max(WAITING["most"], WAITING["now"])
        try:
            await asyncio.sleep(seconds)
        finally:
            WAITING["now"] -= 1
        return text

    @server.tool()
    def big_output(characters: int) -> str:
        """Return that many characters."""
        return "x" * characters

    @server.tool()
    def open_vault(ctx: Context) -> str:
        """Open the vault; needs the tenant's credentials."""
        if (ctx.headers or {}).get("authorization") != SECRET:
            raise ToolError("401: this tool needs the tenant's Authorization header")
        return "the vault is open"

    @server.tool()
    def always_fails() -> str:
        """Fails every time."""
        raise ValueError("the database is on fire")

    return server


@contextmanager
def registered_toolgroup(http: httpx.Client, server: ThreadedServer | None = None) -> Iterator[str]:
    """An MCP toolgroup registered for the duration (on `server`, or on one started for it)."""
    own = server is None
    server = server or start()
    toolgroup_id = f"mcp::tests-{uuid.uuid4().hex[:8]}"
    body = {
        "toolgroup_id": toolgroup_id,
        "provider_id": "model-context-protocol",
        "mcp_endpoint": {"uri": f"{server.allowed_url}/mcp"},
    }
    http.post("/v1/toolgroups", json=body).raise_for_status()
    try:
        yield toolgroup_id
    finally:
        http.delete(f"/v1/toolgroups/{toolgroup_id}")
        if own:
            server.stop()


def start() -> ThreadedServer:
    """Serve it on a free loopback port; its endpoint is `<url>/mcp`."""
    app = build().streamable_http_app()

    async def recording(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            if b"authorization" in headers:
                AUTHORIZATIONS.append(headers[b"authorization"].decode())
        await app(scope, receive, send)

    return ThreadedServer(recording, free_port()).start()


def start_sse() -> ThreadedServer:
    """The same tools over the HTTP+SSE transport on a free loopback port: its event stream is `<url>/sse`, and
    again at `<url>/events` (a path that does not say which transport it speaks); messages go where it says."""
    server = build()
    by_name = server.sse_app(sse_path="/sse")
    unnamed = server.sse_app(sse_path="/events", message_path="/events-messages/")

    async def either(scope: Scope, receive: Receive, send: Send) -> None:
        chosen = unnamed if scope["type"] == "http" and scope["path"].startswith("/events") else by_name
        await chosen(scope, receive, send)

    return ThreadedServer(either, free_port()).start()
