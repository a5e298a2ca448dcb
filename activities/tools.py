"""Server-side tools for a turn: resolving its toolgroups, and running one tool call."""

from __future__ import annotations

import logging

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.deadline import RETRY_DELAY, Deadline
from activities.heartbeat import heartbeating
from activities.knowledge_search import KnowledgeSearch, SearchUnavailable
from activities.pending_writes import write_pending
from domain.content import ToolResponse
from domain.events import KeyedEvent, StepProgress, StepStart, ToolCallDelta, chunk_of
from hosting.fault_points import DURING_SEARCH, crash_point
from observability import metrics
from store.repository import Store
from tool_runtime.catalog import ToolCatalog, ToolNameClash, UnknownToolGroup
from tool_runtime.credential_seal import CredentialSeal, CredentialsUnreadable, turn_headers, turn_label_headers
from tool_runtime.mcp import McpUnavailable
from tool_runtime.output_limit import MAX_TOOL_OUTPUT_CHARS, truncate_text
from workflows.contracts import (
    LIST_MCP_SERVER_ACTIVITY,
    RESOLVE_TOOLS_ACTIVITY,
    RUN_TOOL_ACTIVITY,
    TOOLS_UNAVAILABLE,
    TURN_WORKFLOW_PREFIX,
    ListMcpServerRequest,
    ListMcpServerResult,
    ResolveToolsRequest,
    ResolveToolsResult,
    ServerTool,
    ToolRunRequest,
    runtime_event,
)
from workflows.knowledge_tools import FILE_SEARCH, is_knowledge_tool
from workflows.steps import mcp_metadata
from workflows.web_search_tool import is_web_search

log = logging.getLogger(__name__)

TOOL_UNAVAILABLE = "ToolUnavailable"
"""A call's MCP server could not be used; the turn's tool step answers the model with the reason."""


def tool_run_started(request: ToolRunRequest) -> list[KeyedEvent]:
    """What a call's activity writes before it runs the tool: the step's start and its call, and for a
    call to a request-named MCP server the server's label too, from which a Responses stream shows the
    `mcp_call` (or, for a web search, the `web_search_call`) in progress while it runs (the llama-stack
    stream skips runtime events)."""
    step_id = request.step_id
    start = StepStart(step_type="tool_execution", step_id=step_id)
    progress = StepProgress(
        step_type="tool_execution",
        step_id=step_id,
        delta=ToolCallDelta(tool_call=request.call, parse_status="in_progress"),
    )
    events = [
        KeyedEvent(key=f"{step_id}:start", body=chunk_of(start).model_dump(mode="json")),
        KeyedEvent(key=f"{step_id}:call", body=chunk_of(progress).model_dump(mode="json")),
    ]
    if request.tool.toolgroup_id == FILE_SEARCH and is_knowledge_tool(request.tool):
        call = request.call.model_dump(mode="json")
        events.append(
            runtime_event(f"{step_id}:file_search_started", "file_search_started", step_id=step_id, call=call)
        )
    if is_web_search(request.tool):
        call = request.call.model_dump(mode="json")
        events.append(runtime_event(f"{step_id}:web_search_started", "web_search_started", step_id=step_id, call=call))
    if request.tool.server_label is not None:
        events.append(
            runtime_event(
                f"{step_id}:mcp_call_started",
                "mcp_call_started",
                step_id=step_id,
                server_label=request.tool.server_label,
                call=request.call.model_dump(mode="json"),
                approval_request_id=request.approval_request_id,
            )
        )
    return events


class ToolActivities:
    def __init__(
        self,
        store: Store,
        catalog: ToolCatalog,
        max_output_chars: int = MAX_TOOL_OUTPUT_CHARS,
        seal: CredentialSeal | None = None,
        knowledge: KnowledgeSearch | None = None,
    ) -> None:
        """`seal`: opens the MCP headers a turn's request brought (DA_CREDENTIALS_KEY), read from the store
        by turn id for each activity: they never travel in the workflow's inputs or history.
        `knowledge`: runs the knowledge tools (file_search, knowledge_search); None: they answer unavailable."""
        self._knowledge = knowledge
        self._store = store
        self._catalog = catalog
        self._max_output_chars = max_output_chars
        self._seal = seal

    @activity.defn(name=RESOLVE_TOOLS_ACTIVITY)
    async def resolve_tools(self, request: ResolveToolsRequest) -> ResolveToolsResult:
        """Resolve within the turn's tenant. The tenant is read from the turn's row, not taken from the
        workflow's input: inputs recorded before tenancy existed still resolve, and nothing a workflow
        carries can point a turn at another tenant's toolgroups."""
        turn_id = (activity.info().workflow_id or "").removeprefix(TURN_WORKFLOW_PREFIX)
        tenant = await self._store.turns.turn_tenant(turn_id)
        if tenant is None:
            raise ApplicationError(f"Turn {turn_id} is not in the store", type=TOOLS_UNAVAILABLE, non_retryable=True)
        try:
            headers = await turn_headers(self._store, self._seal, turn_id)
        except CredentialsUnreadable:
            # Listed without them; each call of the turn's MCP tools then fails with the reason, for the model.
            log.warning("turn %s's MCP credentials cannot be decrypted; its tools are listed without them", turn_id)
            headers = None
        try:
            async with heartbeating():
                tools = await self._catalog.resolve(tenant, request.toolgroups, request.client_tool_names, headers)
        except (UnknownToolGroup, ToolNameClash, McpUnavailable) as problem:
            raise ApplicationError(str(problem), type=TOOLS_UNAVAILABLE, non_retryable=True) from problem
        return ResolveToolsResult(tools=tools)

    @activity.defn(name=LIST_MCP_SERVER_ACTIVITY)
    async def list_mcp_server(self, request: ListMcpServerRequest) -> ListMcpServerResult:
        """List the tools of an MCP server the turn's request named, with the request's headers for it.
        A server that cannot be listed is the answer's `error`, not a failure: the turn goes on without it."""
        server = request.server
        try:
            headers = (await turn_label_headers(self._store, self._seal, request.turn_id)).get(server.label)
            async with heartbeating():
                tools = await self._catalog.server_tools(server, headers)
        except (McpUnavailable, CredentialsUnreadable) as problem:
            return ListMcpServerResult(error=str(problem))
        return ListMcpServerResult(tools=tools)

    async def _headers(self, turn_id: str, tool: ServerTool) -> dict[str, dict[str, str]] | None:
        """The turn's headers for the tool's server: by label for a server the request named, else by URI."""
        if tool.mcp_uri is None:
            return None
        if tool.server_label is not None:
            by_label = await turn_label_headers(self._store, self._seal, turn_id)
            return {tool.mcp_uri: by_label.get(tool.server_label, {})}
        return await turn_headers(self._store, self._seal, turn_id)

    @activity.defn(name=RUN_TOOL_ACTIVITY)
    async def run_tool(self, request: ToolRunRequest) -> ToolResponse:
        """Run the call; what the tool reports as an error is its response, for the model to read.

        The call, its retries included, ends within DA_TOOL_CALL_DEADLINE: then the turn's tool step
        answers the model with the reason (an ApplicationError that is not retried)."""
        deadline = Deadline.of_this_attempt(self._catalog.call_deadline)
        await write_pending(self._store, request.turn_id, request.pending, *tool_run_started(request))
        if is_knowledge_tool(request.tool):
            return await self._search(request, deadline)
        arguments = request.call.arguments if isinstance(request.call.arguments, dict) else {}
        try:
            if (left := deadline.remaining()) <= 0:
                raise McpUnavailable(
                    f"The tool call used up its {deadline.seconds:g} s deadline in earlier attempts", retryable=False
                )
            headers = await self._headers(request.turn_id, request.tool)
            async with heartbeating():
                with metrics.tool_call(request.call.tool_name):
                    outcome = await self._catalog.call(request.tool, arguments, headers, within=left)
        except McpUnavailable as unavailable:
            if not unavailable.retryable:
                raise ApplicationError(str(unavailable), type=TOOL_UNAVAILABLE, non_retryable=True) from None
            if not deadline.allows_retry():
                raise ApplicationError(
                    f"{unavailable} (gave up at the tool call's {deadline.seconds:g} s deadline)",
                    type=TOOL_UNAVAILABLE,
                    non_retryable=True,
                ) from None
            raise ApplicationError(str(unavailable), type=TOOL_UNAVAILABLE, next_retry_delay=RETRY_DELAY) from None
        except CredentialsUnreadable as unreadable:
            raise ApplicationError(str(unreadable), type=TOOL_UNAVAILABLE, non_retryable=True) from None
        if outcome.is_error:
            metrics.tool_answered_with_error(request.call.tool_name)
        metadata = {"is_error": True} if outcome.is_error else None
        if outcome.metadata:
            metadata = {**(metadata or {}), **outcome.metadata}
        if request.tool.server_label is not None:
            metadata = mcp_metadata(request.tool.server_label, request.approval_request_id, error=outcome.is_error)
        return ToolResponse(
            call_id=request.call.call_id,
            tool_name=request.call.tool_name,
            content=truncate_text(outcome.content, self._max_output_chars),
            metadata=metadata,
        )

    async def _search(self, request: ToolRunRequest, deadline: Deadline) -> ToolResponse:
        """A knowledge tool's call, searched within the turn's tenant (read from its row, as tools resolve)."""
        tenant = await self._store.turns.turn_tenant(request.turn_id)
        if self._knowledge is None or tenant is None:
            raise ApplicationError("This worker cannot search", type=TOOL_UNAVAILABLE, non_retryable=True)
        try:
            async with heartbeating():
                with metrics.tool_call(request.call.tool_name):
                    response = await self._knowledge.run(tenant, request.tool, request.call)
        except SearchUnavailable as unavailable:
            retry = deadline.allows_retry()
            raise ApplicationError(
                str(unavailable), type=TOOL_UNAVAILABLE, non_retryable=not retry, next_retry_delay=RETRY_DELAY
            ) from None
        crash_point(DURING_SEARCH)
        if (response.metadata or {}).get("is_error"):
            metrics.tool_answered_with_error(request.call.tool_name)
        return response
