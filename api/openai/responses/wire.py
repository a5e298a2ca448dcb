"""What the Responses dialect sends: the Response object and its items (its stream events: stream_events.py).

Written from the wire reference (`openai==3.51.0` types, OpenAI captures): every field OpenAI sends
is sent, null where we do not know it, because clients read the shape leniently but some
(llama-stack-client's typed unions) need fields OpenAI itself does not have, like `response_id`
on item events.
"""

from __future__ import annotations

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
    reason: Literal["max_output_tokens", "content_filter", "steered"]


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
