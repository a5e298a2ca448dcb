"""The MCP servers a request names (Responses `mcp` tools), as a turn handles them.

A server is listed once per turn, the first time a segment's plan names it; its tools are
offered to the model only while the current segment's plan names it; its require_approval policy
decides which calls wait for the caller; and the runtime's answers in its tools' place carry the
metadata a Responses `mcp_call` item shows. Runs inside the workflow sandbox: deterministic code.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from domain.content import ToolCall
    from domain.events import KeyedEvent
    from domain.turn_settings import ApprovalRequest, McpServer
    from workflows import steps
    from workflows.contracts import (
        LIST_MCP_SERVER_ACTIVITY,
        TOOL_HEARTBEAT_TIMEOUT,
        ListMcpServerRequest,
        ListMcpServerResult,
        ServerTool,
        TurnPlan,
        runtime_event,
    )


def offered_tools(plan: TurnPlan, server_tools: list[ServerTool]) -> list[ServerTool]:
    """The server tools the model may call now: a request-named MCP server's only while the current
    segment's plan names it."""
    labels = {server.label for server in plan.mcp_servers}
    return [tool for tool in server_tools if tool.server_label is None or tool.server_label in labels]


def approvals_needed(
    plan: TurnPlan, calls: list[ToolCall], tools: dict[str, ServerTool]
) -> tuple[list[ApprovalRequest], list[KeyedEvent]]:
    """The calls the caller must approve first (their server's require_approval), as approval requests,
    with the approval_requested event of each (with the seconds it may wait undecided, if it may not forever)."""
    policies = {server.label: server.approval for server in plan.mcp_servers}
    requests: list[ApprovalRequest] = []
    events: list[KeyedEvent] = []
    for call in calls:
        label = tools[call.tool_name].server_label
        if label is not None and label in policies and policies[label].required(call.tool_name):
            request_id = f"mcpr_{workflow.uuid4().hex}"
            requests.append(ApprovalRequest(approval_request_id=request_id, server_label=label, call=call))
            timeout = policies[label].timeout
            deadline = {"timeout_seconds": timeout.total_seconds()} if timeout is not None else {}
            events.append(
                runtime_event(
                    f"approval:{request_id}",
                    "approval_requested",
                    approval_request_id=request_id,
                    server_label=label,
                    call=call.model_dump(mode="json"),
                    **deadline,
                )
            )
    return requests, events


async def list_new(
    turn_id: str, plan: TurnPlan, listed: list[str], server_tools: list[ServerTool]
) -> tuple[list[ServerTool], list[KeyedEvent]]:
    """List the plan's MCP servers not in `listed` yet, concurrently, adding each to `listed`; returns
    the turn's server tools with theirs added, and a tools_listed event per listing. A server that
    cannot be listed is reported there, and the turn goes on without it. A tool whose name another
    tool of the turn has already is left out."""
    new = [server for server in plan.mcp_servers if server.label not in listed]
    if not new:
        return server_tools, []
    results = await asyncio.gather(*(_list(turn_id, server) for server in new))
    taken = {tool.name for tool in server_tools} | set(plan.client_tool_names)
    events: list[KeyedEvent] = []
    for server, result in zip(new, results, strict=True):
        listed.append(server.label)
        tools = [tool for tool in result.tools if tool.name not in taken]
        taken |= {tool.name for tool in tools}
        server_tools = [*server_tools, *tools]
        described = [{"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in tools]
        events.append(
            runtime_event(
                f"tools_listed:{server.label}",
                "tools_listed",
                server_label=server.label,
                tools=described,
                error=result.error,
            )
        )
    return server_tools, events


async def _list(turn_id: str, server: McpServer) -> ListMcpServerResult:
    try:
        listed: ListMcpServerResult = await workflow.execute_activity(
            LIST_MCP_SERVER_ACTIVITY,
            ListMcpServerRequest(turn_id=turn_id, server=server),
            result_type=ListMcpServerResult,
            summary=f"tools · list {server.label}",
            start_to_close_timeout=timedelta(seconds=60),
            heartbeat_timeout=TOOL_HEARTBEAT_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=3, maximum_interval=timedelta(seconds=10)),
        )
        return listed
    except ActivityError as failure:
        if is_cancelled_exception(failure):
            raise
        cause = failure.cause
        reason = cause.message if isinstance(cause, ApplicationError) else str(cause or failure)
        return ListMcpServerResult(error=f"The MCP server {server.label} could not be listed: {reason}")


def answer_metadata(tool: ServerTool, approval_request_id: str | None, error: bool) -> dict[str, object] | None:
    """A server tool's answer's metadata when the runtime answers for a request-named MCP server's tool."""
    if tool.server_label is None:
        return None
    return steps.mcp_metadata(tool.server_label, approval_request_id, error=error)
