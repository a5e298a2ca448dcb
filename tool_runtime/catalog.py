"""Which server-side tools exist, what a turn may use, and running one call."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from configuration.settings import Settings
from domain.agents import PARAMETER_TYPES, AgentToolGroup, ToolParameter, toolgroup_name
from domain.tools import BUILTIN_PROVIDER, MCP_PROVIDER, Tool, ToolGroup
from domain.turn_settings import McpServer
from outbound.http import outbound_from
from outbound.policy import OutboundPolicy
from store.repository import Store
from tool_runtime import calculator
from tool_runtime.mcp import McpConnector, McpUnavailable
from tool_runtime.search_engines import web_search_from
from tool_runtime.web_search import NOT_CONFIGURED, WebSearch
from workflows.code_tools import CODE_INTERPRETER_TOOLGROUP, SESSION_CODE_INTERPRETER
from workflows.contracts import ServerTool
from workflows.knowledge_tools import KNOWLEDGE_SEARCH_TOOL, RAG_TOOLGROUP
from workflows.web_search_tool import WEB_SEARCH_TOOL, WEB_SEARCH_TOOLGROUP, is_web_search

BUILTIN_TOOLS: dict[str, list[ServerTool]] = {
    calculator.TOOLGROUP_ID: [
        ServerTool(
            toolgroup_id=calculator.TOOLGROUP_ID,
            provider_id=BUILTIN_PROVIDER,
            name="calculate",
            description=calculator.DESCRIPTION,
            input_schema=calculator.INPUT_SCHEMA,
        )
    ],
    RAG_TOOLGROUP: [KNOWLEDGE_SEARCH_TOOL],
    WEB_SEARCH_TOOLGROUP: [WEB_SEARCH_TOOL],
    CODE_INTERPRETER_TOOLGROUP: [SESSION_CODE_INTERPRETER],
}
"""Built-in toolgroups. The RAG group's tool is run by the knowledge search (activities/knowledge_search.py), the
code interpreter's in the sandbox (activities/code_calls.py), neither by `call`. The web search group exists only
where an engine is configured (`ToolCatalog.web_search`)."""


class UnknownToolGroup(LookupError):
    pass


class ToolNameClash(ValueError):
    pass


class WebSearchNotConfigured(UnknownToolGroup):
    """The web search toolgroup was named where no engine is configured; the message names the setting."""

    def __init__(self) -> None:
        super().__init__(NOT_CONFIGURED)


McpHeaders = dict[str, dict[str, str]]
"""MCP endpoint URI → HTTP headers sent to it (credentials); never stored or shown in readable form.
Where a request's (or turn's) headers and the operator's name the same header, the request's win."""


@dataclass(frozen=True)
class Listing:
    """Every toolgroup's tools, and why the groups that could not be listed were left out."""

    tools: list[ServerTool]
    failures: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolOutcome:
    content: str
    is_error: bool
    metadata: dict[str, Any] | None = None
    """What the tool's response records besides its content (a web search's sources)."""


def split_toolgroup(group: AgentToolGroup) -> tuple[str, str | None, dict[str, Any]]:
    """`group`, `group/tool` or {name, args} → (group id, the one tool wanted or None, args)."""
    name = toolgroup_name(group)
    args = {} if isinstance(group, str) else dict(group.args)
    if name in BUILTIN_TOOLS or "/" not in name:
        return name, None, args
    group_id, tool = name.rsplit("/", 1)
    return group_id, tool, args


def as_wire_tool(tool: ServerTool) -> Tool:
    schema = tool.input_schema.get("properties", {})
    required = set(tool.input_schema.get("required", []))
    parameters = [
        ToolParameter(
            name=name,
            parameter_type=prop.get("type") if prop.get("type") in PARAMETER_TYPES else "string",
            description=prop.get("description", ""),
            required=name in required,
            default=prop.get("default"),
        )
        for name, prop in schema.items()
    ]
    return Tool(
        identifier=tool.name,
        provider_id=tool.provider_id,
        toolgroup_id=tool.toolgroup_id,
        description=tool.description,
        parameters=parameters,
    )


class ToolCatalog:
    """The toolgroups one tenant may use: the built-in ones, shared and read-only, and its own."""

    def __init__(
        self,
        store: Store,
        mcp: McpConnector,
        mcp_headers: McpHeaders | None = None,
        web_search: WebSearch | None = None,
    ) -> None:
        """`mcp_headers`: the operator's headers per MCP endpoint; a request's own add to them.
        `web_search`: the configured search engine; None: the web search toolgroup does not exist."""
        self._store = store
        self._mcp = mcp
        self._headers = mcp_headers or {}
        self.web_search = web_search

    @classmethod
    def from_settings(cls, store: Store, settings: Settings) -> ToolCatalog:
        connector = McpConnector(
            outbound=outbound_from(settings),
            max_reply_bytes=settings.max_tool_reply_bytes,
            call_deadline=settings.tool_call_deadline,
            listing_deadline=settings.tools_listing_deadline,
        )
        outbound = connector.outbound
        return cls(store, connector, settings.mcp_headers, web_search_from(settings, outbound))

    @property
    def outbound_policy(self) -> OutboundPolicy:
        return self._mcp.outbound.policy

    def _headers_for(self, uri: str, request_headers: McpHeaders | None) -> dict[str, str] | None:
        merged = {**self._headers.get(uri, {}), **(request_headers or {}).get(uri, {})}
        return merged or None

    def _builtin(self, toolgroup_id: str) -> bool:
        return toolgroup_id in BUILTIN_TOOLS and (toolgroup_id != WEB_SEARCH_TOOLGROUP or self.web_search is not None)

    async def groups(self, tenant: str) -> list[ToolGroup]:
        builtin = [
            ToolGroup(identifier=gid, provider_id=BUILTIN_PROVIDER) for gid in BUILTIN_TOOLS if self._builtin(gid)
        ]
        return builtin + await self._store.turns.toolgroups(tenant)

    async def group(self, tenant: str, toolgroup_id: str) -> ToolGroup | None:
        if self._builtin(toolgroup_id):
            return ToolGroup(identifier=toolgroup_id, provider_id=BUILTIN_PROVIDER)
        return await self._store.turns.toolgroup(tenant, toolgroup_id)

    async def tools(self, tenant: str, toolgroup_id: str, headers: McpHeaders | None = None) -> list[ServerTool]:
        """The group's tools; for an MCP group, as its server lists them now (raises McpUnavailable)."""
        if toolgroup_id == WEB_SEARCH_TOOLGROUP and self.web_search is None:
            raise WebSearchNotConfigured()
        if toolgroup_id in BUILTIN_TOOLS:
            return BUILTIN_TOOLS[toolgroup_id]
        group = await self._store.turns.toolgroup(tenant, toolgroup_id)
        if group is None:
            known = ", ".join(g.identifier for g in await self.groups(tenant))
            raise UnknownToolGroup(f"Toolgroup {toolgroup_id} not found; available toolgroups: {known}")
        assert group.provider_id == MCP_PROVIDER and group.mcp_endpoint is not None
        uri = group.mcp_endpoint.uri
        listed = await self._mcp.list_tools(uri, self._headers_for(uri, headers))
        return [
            ServerTool(
                toolgroup_id=toolgroup_id,
                provider_id=MCP_PROVIDER,
                name=tool.name,
                description=tool.description,
                input_schema=tool.input_schema,
                args=group.args or {},
                mcp_uri=group.mcp_endpoint.uri,
            )
            for tool in listed
        ]

    async def server_tools(self, server: McpServer, headers: dict[str, str] | None = None) -> list[ServerTool]:
        """The tools of an MCP server a request names, as it lists them now, within its `allowed_tools`
        (raises McpUnavailable). `headers`: the request's for this server."""
        listed = await self._mcp.list_tools(server.url, self._headers_for(server.url, {server.url: headers or {}}))
        allowed = server.allowed_tools
        return [
            ServerTool(
                toolgroup_id=f"mcp_server:{server.label}",
                provider_id=MCP_PROVIDER,
                name=tool.name,
                description=tool.description,
                input_schema=tool.input_schema,
                mcp_uri=server.url,
                server_label=server.label,
            )
            for tool in listed
            if allowed is None or tool.name in allowed
        ]

    async def listing(self, tenant: str, headers: McpHeaders | None = None) -> Listing:
        """All groups' tools, the MCP servers asked concurrently, each within its listing deadline:
        one dead or mute server costs its own entry, not the listing."""
        groups = [group.identifier for group in await self.groups(tenant)]
        results = await asyncio.gather(
            *(self.tools(tenant, group, headers) for group in groups), return_exceptions=True
        )
        listing = Listing(tools=[])
        for group, result in zip(groups, results, strict=True):
            if isinstance(result, McpUnavailable | UnknownToolGroup):
                listing.failures[group] = str(result)
            elif isinstance(result, BaseException):
                raise result
            else:
                listing.tools.extend(result)
        return listing

    async def resolve(
        self,
        tenant: str,
        toolgroups: list[AgentToolGroup],
        client_tool_names: list[str],
        headers: McpHeaders | None = None,
    ) -> list[ServerTool]:
        """The server tools a turn of the tenant offers the model, with each group's args; names must be unique."""
        resolved: list[ServerTool] = []
        for entry in toolgroups:
            group_id, only, args = split_toolgroup(entry)
            tools = await self.tools(tenant, group_id, headers)
            if only is not None:
                tools = [tool for tool in tools if tool.name == only]
                if not tools:
                    raise UnknownToolGroup(f"Toolgroup {group_id} has no tool named {only}")
            resolved += [tool.model_copy(update={"args": {**tool.args, **args}}) for tool in tools]
        names = [tool.name for tool in resolved] + client_tool_names
        clashes = sorted({name for name in names if names.count(name) > 1})
        if clashes:
            raise ToolNameClash(f"Tool names must be unique across toolgroups and client tools; clashing: {clashes}")
        return resolved

    async def find(self, tenant: str, tool_name: str, headers: McpHeaders | None = None) -> ServerTool | None:
        """The tenant's tool with this name (for one-off invocations). Raises ToolNameClash when
        several of the tenant's toolgroups offer it (the call names no toolgroup, and guessing could
        send its arguments to the wrong server), McpUnavailable when it is nowhere to be found and
        some server could not be asked."""
        listing = await self.listing(tenant, headers)
        matches = [tool for tool in listing.tools if tool.name == tool_name]
        if len(matches) > 1:
            groups = ", ".join(sorted(tool.toolgroup_id for tool in matches))
            raise ToolNameClash(
                f"Several toolgroups offer a tool named {tool_name} ({groups}); unregister all but one to invoke it"
            )
        if matches:
            return matches[0]
        if listing.failures:
            raise McpUnavailable(
                f"No reachable toolgroup has a tool named {tool_name}; not listed: "
                + "; ".join(listing.failures.values()),
                retryable=True,
            )
        return None

    @property
    def call_deadline(self) -> float:
        """Seconds one MCP tool call may take, its retries included (DA_TOOL_CALL_DEADLINE)."""
        return self._mcp.call_deadline

    async def call(
        self,
        tool: ServerTool,
        arguments: dict[str, Any],
        headers: McpHeaders | None = None,
        within: float | None = None,
    ) -> ToolOutcome:
        """Run one call. The tool's own failures come back as an error outcome; an MCP server that
        cannot be used raises McpUnavailable. `within`: the seconds left of the call's deadline."""
        merged = {**arguments, **tool.args}
        if is_web_search(tool):
            if self.web_search is None:
                return ToolOutcome(f"Error: {NOT_CONFIGURED}", is_error=True)
            searched = await self.web_search.run(merged)
            return ToolOutcome(searched.content, searched.is_error, {"web_search": searched.record})
        if tool.provider_id == BUILTIN_PROVIDER:
            try:
                return ToolOutcome(calculator.calculate(**merged), is_error=False)
            except (calculator.CalculatorError, TypeError) as error:
                return ToolOutcome(f"Error: {error}", is_error=True)
        assert tool.mcp_uri is not None
        uri = tool.mcp_uri
        result = await self._mcp.call_tool(uri, tool.name, merged, self._headers_for(uri, headers), within)
        return ToolOutcome(result.text, result.is_error)
