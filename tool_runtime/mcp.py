"""Listing and calling the tools of an MCP server over streamable HTTP (the `mcp` SDK)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
from mcp import Client


class McpUnavailable(ConnectionError):
    """The MCP server could not be reached or broke off the exchange (the SDK raises its HTTP client's
    errors, often inside an exception group); a ConnectionError, so callers treat it as one."""


@asynccontextmanager
async def _connected(uri: str, timeout_seconds: float) -> AsyncIterator[Client]:
    try:
        async with Client(uri, read_timeout_seconds=timeout_seconds) as client:
            yield client
    except (httpx2.HTTPError, ExceptionGroup) as error:
        raise McpUnavailable(f"The MCP server at {uri} did not answer") from error


@dataclass(frozen=True)
class McpTool:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class McpResult:
    text: str
    is_error: bool


async def list_tools(uri: str, timeout_seconds: float) -> list[McpTool]:
    async with _connected(uri, timeout_seconds) as client:
        listing = await client.list_tools()
    return [McpTool(t.name, t.description or "", dict(t.input_schema or {})) for t in listing.tools]


async def call_tool(uri: str, name: str, arguments: dict[str, Any], timeout_seconds: float) -> McpResult:
    async with _connected(uri, timeout_seconds) as client:
        result = await client.call_tool(name, arguments)
    text = "\n".join(getattr(item, "text", "") for item in result.content if getattr(item, "type", "") == "text")
    return McpResult(text=text, is_error=bool(result.is_error))
