"""Tool execution: server-side tools (toolgroups and MCP servers) resolved, listed and run concurrently, one step
each; calls to unknown tools answered as errors."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception
from temporalio.workflow import ActivityCancellationType

from workflows.turn_steps.code_calls import CodeCalls

with workflow.unsafe.imports_passed_through():
    from domain.agents import AgentToolGroup
    from domain.content import ToolCall, ToolResponse
    from workflows import code_tools, knowledge_tools, mcp_servers, steps, web_search_tool
    from workflows.contracts import (
        RESOLVE_TOOLS_ACTIVITY,
        RUN_TOOL_ACTIVITY,
        TOOL_HEARTBEAT_TIMEOUT,
        TOOLS_UNAVAILABLE,
        ResolveToolsRequest,
        ResolveToolsResult,
        ServerTool,
        ToolRunRequest,
    )


class ToolSteps(CodeCalls):
    async def _resolve_tools(self, toolgroups: list[AgentToolGroup], client_tools: list[str]) -> list[ServerTool]:
        result: ResolveToolsResult = await workflow.execute_activity(
            RESOLVE_TOOLS_ACTIVITY,
            ResolveToolsRequest(toolgroups=toolgroups, client_tool_names=client_tools),
            result_type=ResolveToolsResult,
            summary="tools · resolve toolgroups",
            start_to_close_timeout=timedelta(seconds=60),
            heartbeat_timeout=TOOL_HEARTBEAT_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=5, non_retryable_error_types=[TOOLS_UNAVAILABLE]),
        )
        return result.tools

    def _offered_tools(self) -> list[ServerTool]:
        """The server tools the model may call now; the request's file_search and web_search tools while its
        segment runs."""
        offered = mcp_servers.offered_tools(self._plan, self._server_tools)
        if self._plan.file_search is not None:
            offered.append(knowledge_tools.file_search_tool(self._plan.file_search))
        # No recorded history's plan names a web search, so the patch is only ever asked by turns that do.
        if self._plan.web_search is not None and workflow.patched(web_search_tool.WEB_SEARCH_PATCH):
            offered.append(web_search_tool.web_search_tool(self._plan.web_search))
        offered += [code_tools.code_tool(config) for config in self._plan.code_tools]
        return offered

    async def _list_new_mcp_servers(self) -> None:
        self._server_tools, listed = await mcp_servers.list_new(
            self._start.turn_id, self._plan, self._listed_servers, self._server_tools
        )
        self._runtime_events += listed

    async def _run_server_tools(
        self,
        calls: list[ToolCall],
        tools: dict[str, ServerTool],
        approved: dict[str, str] | None = None,
        decisions: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        """Run the calls concurrently, each its own activity and step; a failure is that call's answer.
        `approved`: call id → the approval request it runs under; `decisions`: call id → the decision that
        let it run, kept in its response's `metadata.decision`. Calls beyond the segment's max_tool_calls are
        answered unexecuted."""
        approved = approved or {}
        decisions = decisions or {}
        if self._plan.max_tool_calls is not None:
            room = max(0, self._plan.max_tool_calls - self._segment_server_calls)
            calls, over = calls[:room], calls[room:]
            if over:
                reason = (
                    f"Error: not executed: this response reached its limit of {self._plan.max_tool_calls} tool calls."
                )
                answers = [
                    steps.answer(
                        c, reason, mcp_servers.answer_metadata(tools[c.tool_name], approved.get(c.call_id), True)
                    )
                    for c in over
                ]
                now = self._now()
                self._add_step(
                    steps.tool_execution(self._start.turn_id, str(workflow.uuid4()), now, self._now(), over, answers)
                )
            self._segment_server_calls += len(calls)
            if not calls:
                return
        started_at = self._now()
        requests = [
            ToolRunRequest(
                turn_id=self._start.turn_id,
                session_id=self._start.session_id,
                step_id=str(workflow.uuid4()),
                tool=tools[call.tool_name],
                call=call,
                approval_request_id=approved.get(call.call_id),
            )
            for call in calls
        ]
        # Every call carries the pending writes (the inference's step): written once, by whichever
        # activity comes first, and always before that activity's own events.
        pending = await self._carry(*requests)
        responses = await asyncio.gather(
            *(self._run_tool(request.model_copy(update={"pending": pending})) for request in requests)
        )
        step_ids = [request.step_id for request in requests]
        self._written(pending)
        for step_id, call, response in zip(step_ids, calls, responses, strict=True):
            if call.call_id in decisions:
                metadata = {**(response.metadata or {}), "decision": decisions[call.call_id]}
                response = response.model_copy(update={"metadata": metadata})
            self._add_step(
                steps.tool_execution(self._start.turn_id, step_id, started_at, self._now(), [call], [response])
            )

    async def _run_tool(self, request: ToolRunRequest) -> ToolResponse:
        call = request.call
        if code_tools.code_tool_config(request.tool) is not None:
            return await self._run_code(request)
        try:
            response: ToolResponse = await workflow.execute_activity(
                RUN_TOOL_ACTIVITY,
                request,
                result_type=ToolResponse,
                summary=f"tool · {call.tool_name}",
                start_to_close_timeout=timedelta(minutes=5),
                heartbeat_timeout=TOOL_HEARTBEAT_TIMEOUT,
                retry_policy=RetryPolicy(maximum_attempts=3, maximum_interval=timedelta(seconds=10)),
                cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            )
            return response
        except ActivityError as failure:
            if is_cancelled_exception(failure):
                raise
            cause = failure.cause
            reason = cause.message if isinstance(cause, ApplicationError) else str(cause or failure)
            metadata = mcp_servers.answer_metadata(request.tool, request.approval_request_id, error=True)
            return steps.answer(call, f"Error: the tool failed: {reason}", metadata)

    def _answer_unknown_tools(self, calls: list[ToolCall]) -> None:
        """Calls to tools the agent does not have go back to the model as errors, not to the client."""
        now = self._now()
        answers = [steps.answer(call, f"Error: this agent has no tool named {call.tool_name!r}.") for call in calls]
        self._add_step(
            steps.tool_execution(self._start.turn_id, str(workflow.uuid4()), now, self._now(), calls, answers)
        )
