"""Toolgroups and tools: the catalogue the official client reads, registration of MCP servers,
and one-off tool invocations."""

from __future__ import annotations

import logging
from typing import Any

import httpx
from fastapi import APIRouter, HTTPException

from api.errors import not_found
from api.runtime import Runtime, RuntimeDep
from api.schemas import ListResponse
from domain.tools import MCP_PROVIDER, RegisterToolGroupRequest, ToolGroup, ToolInvocation, ToolInvocationResult
from tool_runtime.catalog import BUILTIN_TOOLS, UnknownToolGroup, as_wire_tool

router = APIRouter(tags=["tools"])

log = logging.getLogger(__name__)


def _unreachable(group: str) -> HTTPException:
    # Why (the connection error, its host and port) is logged by the caller, not answered.
    return HTTPException(502, f"The MCP server of toolgroup {group} did not answer; check that it runs at its URL")


async def _group_tools(runtime: Runtime, toolgroup_id: str) -> list[dict[str, Any]]:
    try:
        tools = await runtime.tools.tools(toolgroup_id)
    except UnknownToolGroup as unknown:
        raise HTTPException(404, str(unknown)) from unknown
    except (httpx.HTTPError, OSError, RuntimeError) as error:
        log.warning("the MCP server of toolgroup %s did not answer", toolgroup_id, exc_info=True)
        raise _unreachable(toolgroup_id) from error
    return [as_wire_tool(tool).model_dump(mode="json") for tool in tools]


@router.get("/tools", response_model=ListResponse)
async def list_tools(runtime: RuntimeDep, toolgroup_id: str | None = None) -> ListResponse:
    """The tools of one toolgroup (the `group/tool` form names a group too), or of all of them."""
    if toolgroup_id is not None:
        return ListResponse(data=await _group_tools(runtime, toolgroup_id.split("/")[0]))
    data: list[dict[str, Any]] = []
    for group in await runtime.tools.groups():
        data += await _group_tools(runtime, group.identifier)
    return ListResponse(data=data)


@router.get("/toolgroups", response_model=ListResponse)
async def list_toolgroups(runtime: RuntimeDep) -> ListResponse:
    return ListResponse(data=[group.model_dump(mode="json") for group in await runtime.tools.groups()])


@router.get("/toolgroups/{toolgroup_id:path}", response_model=ToolGroup)
async def get_toolgroup(runtime: RuntimeDep, toolgroup_id: str) -> ToolGroup:
    group = await runtime.tools.group(toolgroup_id)
    if group is None:
        raise not_found("Toolgroup", toolgroup_id)
    return group


@router.post("/toolgroups", response_model=None)
async def register_toolgroup(runtime: RuntimeDep, body: RegisterToolGroupRequest) -> None:
    """Register an MCP server (streamable HTTP) as a toolgroup, e.g. `mcp::weather`."""
    if body.mcp_endpoint is None or not body.mcp_endpoint.uri.startswith(("http://", "https://")):
        raise HTTPException(400, "mcp_endpoint.uri must be the MCP server's streamable-HTTP URL (http:// or https://)")
    if body.toolgroup_id in BUILTIN_TOOLS:
        raise HTTPException(409, f"Toolgroup {body.toolgroup_id} is built in")
    group = ToolGroup(
        identifier=body.toolgroup_id, provider_id=MCP_PROVIDER, mcp_endpoint=body.mcp_endpoint, args=body.args
    )
    if not await runtime.store.register_toolgroup(group):
        raise HTTPException(409, f"Toolgroup {body.toolgroup_id} is already registered; unregister it first")


@router.delete("/toolgroups/{toolgroup_id:path}", response_model=None)
async def unregister_toolgroup(runtime: RuntimeDep, toolgroup_id: str) -> None:
    if toolgroup_id in BUILTIN_TOOLS:
        raise HTTPException(409, f"Toolgroup {toolgroup_id} is built in and cannot be unregistered")
    if not await runtime.store.unregister_toolgroup(toolgroup_id):
        raise not_found("Toolgroup", toolgroup_id)


@router.post("/tool-runtime/invoke", response_model=ToolInvocationResult)
async def invoke_tool(runtime: RuntimeDep, body: ToolInvocation) -> ToolInvocationResult:
    """Run one server-side tool outside any turn (the Agent helper does, for toolgroup tools a
    paused turn hands back)."""
    try:
        tool = await runtime.tools.find(body.tool_name)
        if tool is None:
            raise not_found("Tool", body.tool_name)
        outcome = await runtime.tools.call(tool, body.kwargs)
    except (httpx.HTTPError, OSError, RuntimeError) as error:
        log.warning("the tool %s could not be reached", body.tool_name, exc_info=True)
        raise HTTPException(502, f"The tool {body.tool_name} could not be reached; try again later") from error
    if outcome.is_error:
        return ToolInvocationResult(content=outcome.content, error_message=outcome.content, error_code=1)
    return ToolInvocationResult(content=outcome.content, error_code=0)
