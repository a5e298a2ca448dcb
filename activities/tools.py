"""Server-side tools for a turn: resolving its toolgroups, and running one tool call."""

from __future__ import annotations

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.heartbeat import heartbeating
from activities.pending_writes import write_pending
from domain.content import ToolResponse
from domain.events import KeyedEvent, StepProgress, StepStart, ToolCallDelta, chunk_of
from store.repository import Store
from tool_runtime.catalog import ToolCatalog, ToolNameClash, UnknownToolGroup
from tool_runtime.output_limit import MAX_TOOL_OUTPUT_CHARS, truncate_text
from workflows.contracts import (
    RESOLVE_TOOLS_ACTIVITY,
    RUN_TOOL_ACTIVITY,
    TOOLS_UNAVAILABLE,
    ResolveToolsRequest,
    ResolveToolsResult,
    ToolRunRequest,
)


class ToolActivities:
    def __init__(self, store: Store, catalog: ToolCatalog, max_output_chars: int = MAX_TOOL_OUTPUT_CHARS) -> None:
        self._store = store
        self._catalog = catalog
        self._max_output_chars = max_output_chars

    @activity.defn(name=RESOLVE_TOOLS_ACTIVITY)
    async def resolve_tools(self, request: ResolveToolsRequest) -> ResolveToolsResult:
        try:
            tools = await self._catalog.resolve(request.toolgroups, request.client_tool_names)
        except (UnknownToolGroup, ToolNameClash) as problem:
            raise ApplicationError(str(problem), type=TOOLS_UNAVAILABLE, non_retryable=True) from problem
        return ResolveToolsResult(tools=tools)

    @activity.defn(name=RUN_TOOL_ACTIVITY)
    async def run_tool(self, request: ToolRunRequest) -> ToolResponse:
        """Run the call; what the tool reports as an error is its response, for the model to read."""
        start = StepStart(step_type="tool_execution", step_id=request.step_id)
        progress = StepProgress(
            step_type="tool_execution",
            step_id=request.step_id,
            delta=ToolCallDelta(tool_call=request.call, parse_status="in_progress"),
        )
        await write_pending(
            self._store,
            request.turn_id,
            request.pending,
            KeyedEvent(key=f"{request.step_id}:start", body=chunk_of(start).model_dump(mode="json")),
            KeyedEvent(key=f"{request.step_id}:call", body=chunk_of(progress).model_dump(mode="json")),
        )
        arguments = request.call.arguments if isinstance(request.call.arguments, dict) else {}
        async with heartbeating():
            outcome = await self._catalog.call(request.tool, arguments)
        return ToolResponse(
            call_id=request.call.call_id,
            tool_name=request.call.tool_name,
            content=truncate_text(outcome.content, self._max_output_chars),
            metadata={"is_error": True} if outcome.is_error else None,
        )
