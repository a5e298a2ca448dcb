"""Toolgroups and tools: the catalogue the official client reads, registration of MCP servers,
and one-off tool invocations.

Every route acts within the caller's tenant: the built-in toolgroups are shared and read-only, and
a registered toolgroup is its tenant's alone (another tenant may register the same id).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter, HTTPException

from activities.knowledge_search import KnowledgeSearch, SearchUnavailable
from api.guards.tenancy import TenantDep
from api.http.errors import not_found
from api.http.pagination import PageDep
from api.knowledge import Knowledge, KnowledgeDep
from api.llama_stack.provider_data import McpHeadersDep
from api.llama_stack.schemas import ListResponse, ToolListResponse
from api.services import Services, ServicesDep
from domain.content import ToolCall
from domain.tools import MCP_PROVIDER, RegisterToolGroupRequest, ToolGroup, ToolInvocation, ToolInvocationResult
from outbound.policy import OutboundRefused
from store.turns.records import LimitReached
from tool_runtime.catalog import BUILTIN_TOOLS, McpHeaders, ToolNameClash, UnknownToolGroup, as_wire_tool
from tool_runtime.mcp import McpUnavailable
from workflows.contracts import ServerTool
from workflows.knowledge_tools import is_knowledge_tool

router = APIRouter(tags=["tools"])


async def _group_tools(
    services: Services, tenant: str, toolgroup_id: str, headers: McpHeaders | None
) -> list[dict[str, Any]]:
    try:
        tools = await services.tools.tools(tenant, toolgroup_id, headers)
    except UnknownToolGroup as unknown:
        raise HTTPException(404, str(unknown)) from unknown
    except McpUnavailable as unavailable:
        raise HTTPException(502, f"Toolgroup {toolgroup_id}: {unavailable}") from None
    return [as_wire_tool(tool).model_dump(mode="json") for tool in tools]


@router.get("/tools", response_model=ToolListResponse)
async def list_tools(
    services: ServicesDep,
    tenant: TenantDep,
    headers: McpHeadersDep,
    window: PageDep,
    toolgroup_id: str | None = None,
) -> ToolListResponse:
    """The tools of one toolgroup (the `group/tool` form names a group too), or of all of them; a
    toolgroup whose MCP server fails is left out and named in `unavailable` with the reason.
    `start_index` and `limit` page through the tools."""
    page = slice(window.start_index, window.start_index + window.limit)
    if toolgroup_id is not None:
        return ToolListResponse(data=(await _group_tools(services, tenant, toolgroup_id.split("/")[0], headers))[page])
    listing = await services.tools.listing(tenant, headers)
    data = [as_wire_tool(tool).model_dump(mode="json") for tool in listing.tools[page]]
    return ToolListResponse(data=data, unavailable=listing.failures)


@router.get("/toolgroups", response_model=ListResponse)
async def list_toolgroups(services: ServicesDep, tenant: TenantDep, window: PageDep) -> ListResponse:
    groups = (await services.tools.groups(tenant))[window.start_index : window.start_index + window.limit]
    return ListResponse(data=[group.model_dump(mode="json") for group in groups])


@router.get("/toolgroups/{toolgroup_id:path}", response_model=ToolGroup)
async def get_toolgroup(services: ServicesDep, tenant: TenantDep, toolgroup_id: str) -> ToolGroup:
    group = await services.tools.group(tenant, toolgroup_id)
    if group is None:
        raise not_found("Toolgroup", toolgroup_id)
    return group


@router.post("/toolgroups", response_model=None)
async def register_toolgroup(services: ServicesDep, tenant: TenantDep, body: RegisterToolGroupRequest) -> None:
    """Register an MCP server (streamable HTTP or HTTP+SSE) as one of the caller's toolgroups, e.g. `mcp::weather`."""
    if body.mcp_endpoint is None or not body.mcp_endpoint.uri.startswith(("http://", "https://")):
        raise HTTPException(400, "mcp_endpoint.uri must be the MCP server's URL (http:// or https://)")
    if body.toolgroup_id in BUILTIN_TOOLS:
        raise HTTPException(409, f"Toolgroup {body.toolgroup_id} is built in and shared; choose another id")
    endpoint = urlsplit(body.mcp_endpoint.uri)
    try:
        await services.tools.outbound_policy.check_url_host(
            endpoint.hostname or "", endpoint.port or (443 if endpoint.scheme == "https" else 80)
        )
    except OutboundRefused as refused:
        raise HTTPException(400, f"mcp_endpoint.uri is refused: {refused}") from None
    except ValueError as invalid:
        raise HTTPException(400, f"mcp_endpoint.uri is not a valid URL: {invalid}") from None
    group = ToolGroup(
        identifier=body.toolgroup_id, provider_id=MCP_PROVIDER, mcp_endpoint=body.mcp_endpoint, args=body.args
    )
    try:
        registered = await services.store.turns.register_toolgroup(
            tenant, group, services.settings.max_toolgroups_per_tenant
        )
    except LimitReached as limit:
        raise HTTPException(409, str(limit)) from limit
    if not registered:
        raise HTTPException(409, f"Toolgroup {body.toolgroup_id} is already registered; unregister it first")


@router.delete("/toolgroups/{toolgroup_id:path}", response_model=None)
async def unregister_toolgroup(services: ServicesDep, tenant: TenantDep, toolgroup_id: str) -> None:
    if toolgroup_id in BUILTIN_TOOLS:
        raise HTTPException(409, f"Toolgroup {toolgroup_id} is built in and shared; it cannot be unregistered")
    if not await services.store.turns.unregister_toolgroup(tenant, toolgroup_id):
        raise not_found("Toolgroup", toolgroup_id)


async def _search(knowledge: Knowledge, tenant: str, tool: ServerTool, body: ToolInvocation) -> ToolInvocationResult:
    searcher = KnowledgeSearch(knowledge.stores, knowledge.embeddings, knowledge.settings.max_search_results)
    call = ToolCall(call_id="invoke", tool_name=tool.name, arguments=body.kwargs)
    try:
        response = await searcher.run(tenant, tool.model_copy(update={"args": {**tool.args, **body.kwargs}}), call)
    except SearchUnavailable as unavailable:
        raise HTTPException(502, f"The tool {body.tool_name} could not be run: {unavailable}") from None
    metadata = response.metadata or {}
    if metadata.get("is_error"):
        text = str(response.content)
        return ToolInvocationResult(content=text, error_message=text, error_code=1)
    return ToolInvocationResult(content=response.content, error_code=0, metadata=metadata or None)


@router.post("/tool-runtime/invoke", response_model=ToolInvocationResult)
async def invoke_tool(
    services: ServicesDep, tenant: TenantDep, headers: McpHeadersDep, knowledge: KnowledgeDep, body: ToolInvocation
) -> ToolInvocationResult:
    """Run one server-side tool of the caller's outside any turn (the Agent helper does, for toolgroup
    tools a paused turn hands back). `knowledge_search` takes its `vector_db_ids` among the kwargs."""
    try:
        tool = await services.tools.find(tenant, body.tool_name, headers)
        if tool is None:
            raise not_found("Tool", body.tool_name)
        if is_knowledge_tool(tool):
            return await _search(knowledge, tenant, tool, body)
        outcome = await services.tools.call(tool, body.kwargs, headers)
    except ToolNameClash as clash:
        raise HTTPException(400, str(clash)) from None
    except McpUnavailable as unavailable:
        raise HTTPException(502, f"The tool {body.tool_name} could not be run: {unavailable}") from None
    if outcome.is_error:
        return ToolInvocationResult(content=outcome.content, error_message=outcome.content, error_code=1)
    return ToolInvocationResult(content=outcome.content, error_code=0)
