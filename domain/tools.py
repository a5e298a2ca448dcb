"""Server-side tools: toolgroups, their tools, and one-off invocations (the Tools API's wire models)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from domain.agents import ToolParameter
from domain.content import URL, InterleavedContent, WireModel

MCP_PROVIDER = "model-context-protocol"
BUILTIN_PROVIDER = "builtin"


class ToolGroup(WireModel):
    identifier: str
    provider_id: str
    provider_resource_id: str | None = None
    type: Literal["tool_group"] = "tool_group"
    mcp_endpoint: URL | None = None
    args: dict[str, Any] | None = None


class RegisterToolGroupRequest(WireModel):
    toolgroup_id: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.:/-]+$")
    provider_id: Literal["model-context-protocol"]
    """Only MCP servers are registered; built-in toolgroups need no registration."""
    mcp_endpoint: URL | None = None
    args: dict[str, Any] | None = None


class Tool(WireModel):
    identifier: str
    provider_resource_id: str | None = None
    provider_id: str
    type: Literal["tool"] = "tool"
    toolgroup_id: str
    description: str = ""
    parameters: list[ToolParameter] = Field(default_factory=list)
    metadata: dict[str, Any] | None = None


class ToolInvocation(WireModel):  # type: ignore[no-redef]  # the pydantic plugin takes the field `kwargs` for its __init__'s **kwargs
    tool_name: str
    kwargs: dict[str, Any] = Field(default_factory=dict)


class ToolInvocationResult(WireModel):
    content: InterleavedContent | None = None
    error_message: str | None = None
    error_code: int | None = None
    metadata: dict[str, Any] | None = None
