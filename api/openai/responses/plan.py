"""A create request as the runtime reads it: TurnSettings (stored per segment) and TurnPlan (carried).

Everything here is per response: instructions and tools are never inherited through previous_response_id or a
conversation (spec §2.4), so a resumed turn gets the new response's settings and plan with its outputs.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from api.containers import Containers
from api.knowledge import Knowledge
from api.openai.errors import invalid, not_found
from api.openai.responses.code_interpreter import bind_container
from api.openai.responses.request import (
    AllowedToolsChoice,
    ApprovalFilter,
    CreateResponse,
    FunctionChoice,
    HostedToolChoice,
    McpChoice,
    McpTool,
    TextFormatJsonObject,
    TextFormatJsonSchema,
    ToolNames,
)
from api.openai.responses.shell import SHELL_PARAMETERS, ContainerReference, bind_shell_container
from domain.turn_settings import ApprovalPolicy, FunctionTool, McpServer, TurnSettings
from outbound.policy import OutboundPolicy, OutboundRefused
from tool_runtime.web_search import NOT_CONFIGURED
from workflows.code_tools import SHELL
from workflows.contracts import CodeToolConfig, FileSearchConfig, TurnPlan
from workflows.knowledge_tools import FILE_SEARCH
from workflows.web_search_tool import WEB_SEARCH

LOCAL_SHELL_DESCRIPTION = "Run shell commands on the user's machine; the user runs them and returns their output."


def _tool_choice(request: CreateResponse) -> str:
    choice = request.tool_choice
    if isinstance(choice, str):
        return choice
    if isinstance(choice, FunctionChoice):
        return choice.name
    if isinstance(choice, McpChoice):
        return choice.name or "required"
    if isinstance(choice, HostedToolChoice):
        return FILE_SEARCH if choice.type == FILE_SEARCH else WEB_SEARCH
    return choice.mode


def _allowed_function_names(request: CreateResponse) -> set[str] | None:
    choice = request.tool_choice
    if isinstance(choice, AllowedToolsChoice):
        return {tool.name for tool in choice.tools if tool.type == "function" and tool.name}
    return None


def _response_format(request: CreateResponse) -> dict[str, Any] | None:
    found = request.text.format if request.text is not None else None
    if isinstance(found, TextFormatJsonSchema):
        schema: dict[str, Any] = {"name": found.name, "schema": found.schema_}
        if found.strict is not None:
            schema["strict"] = found.strict
        if found.description:
            schema["description"] = found.description
        return {"type": "json_schema", "json_schema": schema}
    if isinstance(found, TextFormatJsonObject):
        return {"type": "json_object"}
    return None


def turn_settings(request: CreateResponse) -> TurnSettings:
    allowed = _allowed_function_names(request)
    return TurnSettings(
        model=request.model,
        instructions=request.instructions or "",
        function_tools=[
            FunctionTool(
                name=tool.name,
                description=tool.description or "",
                parameters=tool.parameters or {"type": "object", "properties": {}},
                strict=tool.strict,
            )
            for tool in request.function_tools()
            if allowed is None or tool.name in allowed
        ]
        + [
            FunctionTool(name=SHELL, description=LOCAL_SHELL_DESCRIPTION, parameters=SHELL_PARAMETERS)
            for _, tool in request.shell_tools()
            if tool.local
        ],
        tool_choice=_tool_choice(request),
        parallel_tool_calls=request.parallel_tool_calls,
        temperature=request.temperature,
        top_p=request.top_p,
        max_output_tokens=request.max_output_tokens,
        response_format=_response_format(request),
    )


def _names(filter_: ToolNames | list[str] | None) -> list[str]:
    if filter_ is None:
        return []
    return filter_.tool_names if isinstance(filter_, ToolNames) else list(filter_)


def approval_policy(tool: McpTool, ceiling: timedelta | None = None) -> ApprovalPolicy:
    """OpenAI's default is "always". A filter that names only the tools that always need approval lets the
    others run; one that names those that never do holds the rest. `ceiling`: DA_APPROVAL_TIMEOUT."""
    timeout = approval_timeout(tool, ceiling)
    rule = tool.require_approval
    if rule is None or rule == "always":
        return ApprovalPolicy(default=True, timeout=timeout)
    if rule == "never":
        return ApprovalPolicy(default=False, timeout=timeout)
    assert isinstance(rule, ApprovalFilter)
    always, never = _names(rule.always), _names(rule.never)
    return ApprovalPolicy(default=not (always and not never), always=always, never=never, timeout=timeout)


def approval_timeout(tool: McpTool, ceiling: timedelta | None) -> timedelta | None:
    """How long the tool's approvals wait undecided: its `approval_timeout`, which may only shorten `ceiling`."""
    if tool.approval_timeout is None:
        return ceiling
    asked = timedelta(seconds=tool.approval_timeout)
    if ceiling is not None and asked > ceiling:
        raise invalid(
            f"tools: mcp tool {tool.server_label!r}: approval_timeout {tool.approval_timeout} s is longer than this "
            f"server's approval timeout (DA_APPROVAL_TIMEOUT, {ceiling.total_seconds():g} s); a request may only "
            "shorten it.",
            "tools",
        )
    return asked


def check_approval_timeouts(request: CreateResponse, ceiling: timedelta | None) -> None:
    """Refuse (400) an mcp tool that asks for a longer approval timeout than the server's, before anything starts."""
    for tool in request.mcp_tools():
        approval_timeout(tool, ceiling)


def turn_plan(
    request: CreateResponse,
    settings_id: str,
    max_infer_iters: int | None = None,
    compact_threshold: int | None = None,
    approval_ceiling: timedelta | None = None,
) -> TurnPlan:
    return TurnPlan(
        model=request.model,
        client_tool_names=sorted(
            [tool.name for tool in request.function_tools()]
            + [SHELL for _, tool in request.shell_tools() if tool.local]
        ),
        mcp_servers=[
            McpServer(
                label=tool.server_label,
                url=tool.server_url or "",
                allowed_tools=tool.allowed(),
                approval=approval_policy(tool, approval_ceiling),
            )
            for tool in request.mcp_tools()
        ],
        max_infer_iters=max_infer_iters,
        max_tool_calls=request.max_tool_calls,
        settings_id=settings_id,
        compact_threshold=compact_threshold,
        file_search=file_search_config(request),
        web_search=web.config() if (web := request.web_search_tool()) is not None else None,
        code_tools=[
            CodeToolConfig(kind="code_interpreter", container_id=tool.container)
            for _, tool in request.code_interpreter_tools()
            if isinstance(tool.container, str)  # bound by `bind_code_containers` before the plan is made
        ]
        + [
            CodeToolConfig(kind="shell", container_id=tool.environment.container_id)
            for _, tool in request.shell_tools()
            if not tool.local and isinstance(tool.environment, ContainerReference)
        ],
    )


def require_web_search(request: CreateResponse, available: bool) -> None:
    """A web_search tool where no search engine is configured is a 400 naming the setting."""
    if request.web_search_tool() is not None and not available:
        raise invalid(NOT_CONFIGURED, "tools", "unsupported_parameter")


def file_search_config(request: CreateResponse) -> FileSearchConfig | None:
    tool = request.file_search_tool()
    if tool is None:
        return None
    ranking = tool.ranking_options
    hybrid = ranking.hybrid_search if ranking is not None else None
    return FileSearchConfig(
        vector_store_ids=tool.vector_store_ids,
        max_num_results=tool.max_num_results,
        filters=tool.filters,
        score_threshold=ranking.score_threshold if ranking is not None else 0.0,
        embedding_weight=hybrid.embedding_weight if hybrid is not None else None,
        text_weight=hybrid.text_weight if hybrid is not None else None,
        include_results="file_search_call.results" in request.include,
    )


async def check_mcp_urls(request: CreateResponse, policy: OutboundPolicy) -> None:
    """Each MCP server URL is http(s) and allowed by the outbound policy (judged again at every connection)."""
    for index, tool in enumerate(request.tools):
        if not isinstance(tool, McpTool):
            continue
        url = urlsplit(tool.server_url or "")
        if url.scheme not in ("http", "https") or not url.hostname:
            raise invalid(f"tools[{index}].server_url must be an http(s) URL, got {tool.server_url!r}.", "tools")
        try:
            await policy.check_url_host(url.hostname, url.port or (443 if url.scheme == "https" else 80))
        except OutboundRefused as refused:
            raise invalid(f"tools[{index}].server_url: {refused}", "tools") from refused


async def check_vector_stores(request: CreateResponse, tenant: str, knowledge: Knowledge) -> None:
    """Each vector store a file_search tool names is the tenant's: another tenant's is as unknown as a made-up id."""
    tool = request.file_search_tool()
    for vector_store_id in tool.vector_store_ids if tool is not None else []:
        if await knowledge.stores.get(tenant, vector_store_id) is None:
            raise not_found("Vector store", vector_store_id)


async def bind_code_containers(request: CreateResponse, tenant: str, containers: Containers) -> None:
    """Each code tool's container, made (`auto`) or checked to be the tenant's; the request then names it."""
    for index, tool in request.code_interpreter_tools():
        tool.container = (await bind_container(tool, tenant, containers, index)).container_id
    for index, shell in request.shell_tools():
        await bind_shell_container(shell, tenant, containers, index)


def mcp_credentials(request: CreateResponse) -> dict[str, dict[str, str]]:
    """server_label → the headers its server needs (headers + authorization); servers with none left out."""
    found = {tool.server_label: tool.credentials() for tool in request.mcp_tools()}
    return {label: headers for label, headers in found.items() if headers}


def summary(request: CreateResponse) -> str:
    """The Temporal UI label of the response's workflow: its last user text."""
    for item in reversed(request.items()):
        text = getattr(item, "text", None)
        if callable(text) and getattr(item, "role", None) == "user":
            said: str = text()
            return said[:1000]
    return json.dumps([getattr(item, "type", "") for item in request.items()])[:1000]
