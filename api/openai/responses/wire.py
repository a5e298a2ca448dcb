"""What the Responses dialect sends: the Response object, its items and its stream events.

Written from the wire reference (`openai==3.51.0` types, OpenAI captures): every field OpenAI sends
is sent, null where we do not know it, because clients read the shape leniently but some
(llama-stack-client's typed unions) need fields OpenAI itself does not have, like `response_id`
on item events.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, field_validator

# --- content parts ---------------------------------------------------------------------------


class OutputText(BaseModel):
    type: Literal["output_text"] = "output_text"
    text: str = ""
    annotations: list[dict[str, Any]] = Field(default_factory=list)
    logprobs: list[dict[str, Any]] = Field(default_factory=list)


class Refusal(BaseModel):
    type: Literal["refusal"] = "refusal"
    refusal: str


class InputText(BaseModel):
    type: Literal["input_text"] = "input_text"
    text: str


class InputImage(BaseModel):
    type: Literal["input_image"] = "input_image"
    image_url: str | None = None
    file_id: str | None = None
    detail: Literal["low", "high", "auto", "original"] = "auto"


class InputFile(BaseModel):
    type: Literal["input_file"] = "input_file"
    file_id: str | None = None
    file_data: str | None = None
    file_url: str | None = None
    filename: str | None = None


ContentPart = Annotated[OutputText | Refusal | InputText | InputImage | InputFile, Field(discriminator="type")]

# --- items -------------------------------------------------------------------------------------

ItemStatus = Literal["in_progress", "completed", "incomplete"]


class MessageItem(BaseModel):
    """An assistant's output message, or any message as listed in input_items / conversations."""

    type: Literal["message"] = "message"
    id: str
    role: Literal["assistant", "user", "system", "developer"] = "assistant"
    status: ItemStatus = "completed"
    content: list[ContentPart] = Field(default_factory=list)


class FunctionCallItem(BaseModel):
    """A call of a client-run function; the client answers it with a function_call_output by `call_id`."""

    type: Literal["function_call"] = "function_call"
    id: str
    call_id: str
    name: str
    arguments: str
    """A JSON string, as OpenAI sends it."""
    status: ItemStatus = "completed"


class FunctionCallOutputItem(BaseModel):
    """A client's answer to a function_call, as listed in input_items and conversation items."""

    type: Literal["function_call_output"] = "function_call_output"
    id: str
    call_id: str
    output: str | list[ContentPart]
    status: ItemStatus = "completed"


class McpListToolsTool(BaseModel):
    name: str
    description: str | None = None
    input_schema: dict[str, Any] = Field(default_factory=dict)
    annotations: dict[str, Any] | None = None


class McpListToolsItem(BaseModel):
    type: Literal["mcp_list_tools"] = "mcp_list_tools"
    id: str
    server_label: str
    tools: list[McpListToolsTool] = Field(default_factory=list)
    error: str | None = None


class McpProtocolError(BaseModel):
    type: Literal["mcp_protocol_error"] = "mcp_protocol_error"
    code: int
    message: str


class McpToolExecutionError(BaseModel):
    """A tool that answered with an error (MCP `isError`): what it said is the error's content."""

    type: Literal["mcp_tool_execution_error"] = "mcp_tool_execution_error"
    content: Any


class McpHttpError(BaseModel):
    type: Literal["http_error"] = "http_error"
    code: int
    message: str


McpCallError = Annotated[McpProtocolError | McpToolExecutionError | McpHttpError, Field(discriminator="type")]


class McpCallItem(BaseModel):
    type: Literal["mcp_call"] = "mcp_call"
    id: str
    server_label: str
    name: str
    arguments: str
    output: str | None = None
    error: McpCallError | None = None
    approval_request_id: str | None = None
    """The `mcpr_` id the caller approved this call under; null when no approval was needed."""
    status: Literal["in_progress", "completed", "incomplete", "calling", "failed"] = "completed"


class McpApprovalRequestItem(BaseModel):
    """An MCP call held for the caller's decision; its `id` is what the caller's response names."""

    type: Literal["mcp_approval_request"] = "mcp_approval_request"
    id: str
    server_label: str
    name: str
    arguments: str


class McpApprovalResponseItem(BaseModel):
    type: Literal["mcp_approval_response"] = "mcp_approval_response"
    id: str
    approval_request_id: str
    approve: bool
    reason: str | None = None


class CompactionItem(BaseModel):
    """A summary standing for the context before it; its content is sealed (responses/compaction_items.py)."""

    type: Literal["compaction"] = "compaction"
    id: str
    encrypted_content: str


class FileSearchResult(BaseModel):
    file_id: str
    filename: str
    score: float
    attributes: dict[str, Any] | None = None
    text: str


class FileSearchCallItem(BaseModel):
    """A file_search call the turn ran; `results` only when the request included `file_search_call.results`."""

    type: Literal["file_search_call"] = "file_search_call"
    id: str
    queries: list[str] = Field(default_factory=list)
    status: Literal["in_progress", "searching", "completed", "incomplete", "failed"] = "completed"
    results: list[FileSearchResult] | None = None


class WebSearchSource(BaseModel):
    type: Literal["url"] = "url"
    url: str


class WebSearchAction(BaseModel):
    """The `search` action: the only one this server's web search takes (no `open_page`, `find_in_page`).
    `sources` only when the request included `web_search_call.action.sources`."""

    type: Literal["search"] = "search"
    query: str
    queries: list[str] = Field(default_factory=list)
    sources: list[WebSearchSource] | None = None


class WebSearchCallItem(BaseModel):
    """A web_search call the turn ran (tool_runtime/web_search.py)."""

    type: Literal["web_search_call"] = "web_search_call"
    id: str
    action: WebSearchAction
    status: Literal["in_progress", "searching", "completed", "failed", "incomplete"] = "completed"


class CodeInterpreterCallItem(BaseModel):
    """A code_interpreter call the turn ran in its container: the code and what came out (logs, images)."""

    type: Literal["code_interpreter_call"] = "code_interpreter_call"
    id: str
    container_id: str
    code: str | None = None
    outputs: list[dict[str, Any]] | None = None
    status: Literal["in_progress", "completed", "incomplete", "interpreting", "failed"] = "completed"


class ShellCallItem(BaseModel):
    """A shell call the turn ran in its container: the commands."""

    type: Literal["shell_call"] = "shell_call"
    id: str
    call_id: str
    action: dict[str, Any]
    environment: dict[str, Any] | None = None
    status: Literal["in_progress", "completed", "incomplete"] = "completed"


class ShellCallOutputItem(BaseModel):
    """What a shell call's commands printed, and how each ended (`exit` with its code, or `timeout`)."""

    type: Literal["shell_call_output"] = "shell_call_output"
    id: str
    call_id: str
    output: list[dict[str, Any]]
    status: Literal["in_progress", "completed", "incomplete"] = "completed"


OutputItem = Annotated[
    MessageItem
    | FunctionCallItem
    | McpListToolsItem
    | McpCallItem
    | McpApprovalRequestItem
    | CompactionItem
    | FileSearchCallItem
    | WebSearchCallItem
    | CodeInterpreterCallItem
    | ShellCallItem
    | ShellCallOutputItem,
    Field(discriminator="type"),
]
"""What a response's `output` holds."""

Item = Annotated[
    MessageItem
    | FunctionCallItem
    | FunctionCallOutputItem
    | McpListToolsItem
    | McpCallItem
    | McpApprovalRequestItem
    | McpApprovalResponseItem
    | CompactionItem
    | FileSearchCallItem
    | WebSearchCallItem
    | CodeInterpreterCallItem
    | ShellCallItem
    | ShellCallOutputItem,
    Field(discriminator="type"),
]
"""Any item as listed in a response's input_items or a conversation."""

# --- the Response object ------------------------------------------------------------------------

ResponseStatus = Literal["queued", "in_progress", "completed", "failed", "cancelled", "incomplete"]


class ResponseError(BaseModel):
    code: str = "server_error"
    message: str


class IncompleteDetails(BaseModel):
    reason: Literal["max_output_tokens", "content_filter"]


class InputTokensDetails(BaseModel):
    cached_tokens: int = 0
    cache_write_tokens: int = 0


class OutputTokensDetails(BaseModel):
    reasoning_tokens: int = 0


class Usage(BaseModel):
    input_tokens: int
    input_tokens_details: InputTokensDetails = Field(default_factory=InputTokensDetails)
    output_tokens: int
    output_tokens_details: OutputTokensDetails = Field(default_factory=OutputTokensDetails)
    total_tokens: int


class ConversationRef(BaseModel):
    id: str


class Reasoning(BaseModel):
    effort: str | None = None
    summary: str | None = None


class TextConfig(BaseModel):
    format: dict[str, Any] = Field(default_factory=lambda: {"type": "text"})
    verbosity: str | None = "medium"


_SECRET_MCP_KEYS = ("headers", "authorization")


def redacted_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The request's tools as echoed: an mcp tool's headers and authorization are credentials."""
    return [_without_secrets(tool) if tool.get("type") == "mcp" else tool for tool in tools]


def _without_secrets(tool: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in tool.items() if key not in _SECRET_MCP_KEYS}


class Response(BaseModel):
    """The Response object (spec §3): the union of what the openai SDK and llama-stack-client require."""

    id: str
    object: Literal["response"] = "response"
    created_at: int
    status: ResponseStatus
    completed_at: int | None = None
    background: bool = False
    error: ResponseError | None = None
    incomplete_details: IncompleteDetails | None = None
    instructions: str | list[dict[str, Any]] | None = None
    max_output_tokens: int | None = None
    max_tool_calls: int | None = None
    model: str
    output: list[OutputItem] = Field(default_factory=list)
    parallel_tool_calls: bool = True
    previous_response_id: str | None = None
    conversation: ConversationRef | None = None
    prompt_cache_key: str | None = None
    reasoning: Reasoning = Field(default_factory=Reasoning)
    safety_identifier: str | None = None
    service_tier: str = "default"
    store: bool = True
    temperature: float = 1.0
    text: TextConfig = Field(default_factory=TextConfig)
    tool_choice: str | dict[str, Any] = "auto"
    tools: list[dict[str, Any]] = Field(default_factory=list)
    top_logprobs: int = 0
    top_p: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    truncation: Literal["auto", "disabled"] = "disabled"
    usage: Usage | None = None
    user: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)

    @field_validator("tools")
    @classmethod
    def _redact(cls, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # Here rather than at the call sites: no path can echo an MCP server's credentials.
        return redacted_tools(tools)


# --- stream events --------------------------------------------------------------------------------


class EventBase(BaseModel):
    sequence_number: int


class ItemEvent(EventBase):
    """An event about one output item: which, and where it stands in the response's `output`."""

    item_id: str
    output_index: int


class ContentEvent(ItemEvent):
    """An event about one content part of a message item."""

    content_index: int


class ResponseCreated(EventBase):
    type: Literal["response.created"] = "response.created"
    response: Response


class ResponseQueued(EventBase):
    type: Literal["response.queued"] = "response.queued"
    response: Response


class ResponseInProgress(EventBase):
    type: Literal["response.in_progress"] = "response.in_progress"
    response: Response


class ResponseCompleted(EventBase):
    type: Literal["response.completed"] = "response.completed"
    response: Response


class ResponseIncomplete(EventBase):
    type: Literal["response.incomplete"] = "response.incomplete"
    response: Response


class ResponseFailed(EventBase):
    """Also ends a cancelled stream, with `response.status` "cancelled": the SDK has no cancelled event."""

    type: Literal["response.failed"] = "response.failed"
    response: Response


class OutputItemAdded(EventBase):
    type: Literal["response.output_item.added"] = "response.output_item.added"
    response_id: str
    output_index: int
    item: OutputItem


class OutputItemDone(EventBase):
    type: Literal["response.output_item.done"] = "response.output_item.done"
    response_id: str
    output_index: int
    item: OutputItem


class ContentPartAdded(ContentEvent):
    type: Literal["response.content_part.added"] = "response.content_part.added"
    response_id: str
    part: OutputText


class ContentPartDone(ContentEvent):
    type: Literal["response.content_part.done"] = "response.content_part.done"
    response_id: str
    part: OutputText


class OutputTextDelta(ContentEvent):
    type: Literal["response.output_text.delta"] = "response.output_text.delta"
    delta: str
    logprobs: list[dict[str, Any]] = Field(default_factory=list)


class OutputTextDone(ContentEvent):
    type: Literal["response.output_text.done"] = "response.output_text.done"
    text: str
    logprobs: list[dict[str, Any]] = Field(default_factory=list)


class FunctionCallArgumentsDelta(ItemEvent):
    type: Literal["response.function_call_arguments.delta"] = "response.function_call_arguments.delta"
    delta: str


class FunctionCallArgumentsDone(ItemEvent):
    type: Literal["response.function_call_arguments.done"] = "response.function_call_arguments.done"
    arguments: str


class McpListToolsInProgress(ItemEvent):
    type: Literal["response.mcp_list_tools.in_progress"] = "response.mcp_list_tools.in_progress"


class McpListToolsCompleted(ItemEvent):
    type: Literal["response.mcp_list_tools.completed"] = "response.mcp_list_tools.completed"


class McpListToolsFailed(ItemEvent):
    type: Literal["response.mcp_list_tools.failed"] = "response.mcp_list_tools.failed"


class McpCallInProgress(ItemEvent):
    type: Literal["response.mcp_call.in_progress"] = "response.mcp_call.in_progress"


class McpCallCompleted(ItemEvent):
    type: Literal["response.mcp_call.completed"] = "response.mcp_call.completed"


class McpCallFailed(ItemEvent):
    type: Literal["response.mcp_call.failed"] = "response.mcp_call.failed"


class McpCallArgumentsDelta(ItemEvent):
    type: Literal["response.mcp_call_arguments.delta"] = "response.mcp_call_arguments.delta"
    delta: str


class McpCallArgumentsDone(ItemEvent):
    type: Literal["response.mcp_call_arguments.done"] = "response.mcp_call_arguments.done"
    arguments: str


class FileSearchCallInProgress(ItemEvent):
    type: Literal["response.file_search_call.in_progress"] = "response.file_search_call.in_progress"


class FileSearchCallSearching(ItemEvent):
    type: Literal["response.file_search_call.searching"] = "response.file_search_call.searching"


class FileSearchCallCompleted(ItemEvent):
    type: Literal["response.file_search_call.completed"] = "response.file_search_call.completed"


class WebSearchCallInProgress(ItemEvent):
    type: Literal["response.web_search_call.in_progress"] = "response.web_search_call.in_progress"


class WebSearchCallSearching(ItemEvent):
    type: Literal["response.web_search_call.searching"] = "response.web_search_call.searching"


class WebSearchCallCompleted(ItemEvent):
    type: Literal["response.web_search_call.completed"] = "response.web_search_call.completed"


class CodeInterpreterCallInProgress(ItemEvent):
    type: Literal["response.code_interpreter_call.in_progress"] = "response.code_interpreter_call.in_progress"


class CodeInterpreterCallCodeDelta(ItemEvent):
    type: Literal["response.code_interpreter_call_code.delta"] = "response.code_interpreter_call_code.delta"
    delta: str


class CodeInterpreterCallCodeDone(ItemEvent):
    type: Literal["response.code_interpreter_call_code.done"] = "response.code_interpreter_call_code.done"
    code: str


class CodeInterpreterCallInterpreting(ItemEvent):
    type: Literal["response.code_interpreter_call.interpreting"] = "response.code_interpreter_call.interpreting"


class CodeInterpreterCallCompleted(ItemEvent):
    type: Literal["response.code_interpreter_call.completed"] = "response.code_interpreter_call.completed"


class ShellCallCommandAdded(EventBase):
    type: Literal["response.shell_call_command.added"] = "response.shell_call_command.added"
    output_index: int
    command_index: int
    command: str


class ShellCallCommandDelta(EventBase):
    type: Literal["response.shell_call_command.delta"] = "response.shell_call_command.delta"
    output_index: int
    command_index: int
    delta: str


class ShellCallCommandDone(EventBase):
    type: Literal["response.shell_call_command.done"] = "response.shell_call_command.done"
    output_index: int
    command_index: int
    command: str


class ShellCallOutputContentDelta(ItemEvent):
    type: Literal["response.shell_call_output_content.delta"] = "response.shell_call_output_content.delta"
    command_index: int
    delta: dict[str, str]


class ShellCallOutputContentDone(ItemEvent):
    type: Literal["response.shell_call_output_content.done"] = "response.shell_call_output_content.done"
    command_index: int
    output: list[dict[str, Any]]


class OutputTextAnnotationAdded(ContentEvent):
    type: Literal["response.output_text.annotation.added"] = "response.output_text.annotation.added"
    annotation_index: int
    annotation: dict[str, Any]


class CompactionCompacting(ItemEvent):
    type: Literal["response.compaction.compacting"] = "response.compaction.compacting"


class ErrorEvent(EventBase):
    """Only for a failure before `response.created` once headers are out; flat code/message."""

    type: Literal["error"] = "error"
    code: str | None = None
    message: str
    param: str | None = None


StreamEvent = Annotated[
    ResponseCreated
    | ResponseQueued
    | ResponseInProgress
    | ResponseCompleted
    | ResponseIncomplete
    | ResponseFailed
    | OutputItemAdded
    | OutputItemDone
    | ContentPartAdded
    | ContentPartDone
    | OutputTextDelta
    | OutputTextDone
    | FunctionCallArgumentsDelta
    | FunctionCallArgumentsDone
    | McpListToolsInProgress
    | McpListToolsCompleted
    | McpListToolsFailed
    | McpCallInProgress
    | McpCallCompleted
    | McpCallFailed
    | McpCallArgumentsDelta
    | McpCallArgumentsDone
    | CompactionCompacting
    | FileSearchCallInProgress
    | FileSearchCallSearching
    | FileSearchCallCompleted
    | CodeInterpreterCallInProgress
    | CodeInterpreterCallCodeDelta
    | CodeInterpreterCallCodeDone
    | CodeInterpreterCallInterpreting
    | CodeInterpreterCallCompleted
    | ShellCallCommandAdded
    | ShellCallCommandDelta
    | ShellCallCommandDone
    | ShellCallOutputContentDelta
    | ShellCallOutputContentDone
    | OutputTextAnnotationAdded
    | ErrorEvent,
    Field(discriminator="type"),
]

TERMINAL_EVENT_TYPES = frozenset({"response.completed", "response.incomplete", "response.failed"})


KEEPALIVE_FRAME = b": keep-alive\n\n"
"""A comment line: SSE decoders skip it, proxies see traffic."""


def event_data(event: EventBase) -> dict[str, Any]:
    """An event's JSON object, as SSE and WebSocket send it.

    The openai SDK raises on any `data` object with a top-level `error` key, so only the bare
    error event may have one (and it is flat)."""
    data = event.model_dump(mode="json")
    if "error" in data and data.get("type") != "error":
        raise ValueError(f"a {data.get('type')} event must not carry a top-level error key")
    return data


def sse_frame(event: EventBase) -> bytes:
    """One Server-Sent Event as OpenAI frames it: `event:` line, one `data:` line, blank line."""
    data = event_data(event)
    return f"event: {data['type']}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()
