"""`POST /v1/responses` request, written from the wire spec §2: accepted liberally, refused clearly.

Liberal where clients differ: a message without `type` (openai-agents), content as a string or parts,
`conversation` as a string or `{"id"}`, `include` empty or absent, unknown fields inside items ignored. Clear
where the runtime cannot do what was asked: unknown top-level parameters (`extra_body` keys included) and the
OpenAI parameters this server does not implement (`prompt`, …), tool types other than function, mcp and
file_search, unknown `include` values and out-of-range numbers are a 400 naming the field (`parse_create`).
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError, field_validator, model_validator

from api.openai.errors import OpenAIError, invalid
from api.openai.parameters import field_names, refuse_unknown
from api.openai.responses.code_interpreter import CodeInterpreterTool
from api.openai.responses.file_search import FileSearchTool
from api.openai.responses.shell import ShellTool
from api.openai.responses.web_search import WebSearchCallInput, WebSearchTool
from knowledge import filters as attribute_filters


class Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


# Content parts


class InputText(Lenient):
    type: Literal["input_text"] = "input_text"
    text: str


class InputImage(Lenient):
    type: Literal["input_image"] = "input_image"
    image_url: str | None = None
    file_id: str | None = None
    detail: str = "auto"


class InputFile(Lenient):
    type: Literal["input_file"] = "input_file"
    file_id: str | None = None
    file_data: str | None = None
    filename: str | None = None
    file_url: str | None = None


class OutputText(Lenient):
    type: Literal["output_text"] = "output_text"
    text: str
    annotations: list[Any] = Field(default_factory=list)
    logprobs: list[Any] | None = None


class Refusal(Lenient):
    type: Literal["refusal"] = "refusal"
    refusal: str


ContentPart = Annotated[InputText | InputImage | InputFile | OutputText | Refusal, Field(discriminator="type")]


def part_text(part: ContentPart) -> str:
    if isinstance(part, InputText | OutputText):
        return part.text
    if isinstance(part, Refusal):
        return part.refusal
    return ""


# Input items


class MessageItem(Lenient):
    type: Literal["message"] = "message"
    id: str | None = None
    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[ContentPart]
    status: str | None = None

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "".join(part_text(part) for part in self.content)


class FunctionCallItem(Lenient):
    type: Literal["function_call"] = "function_call"
    id: str | None = None
    call_id: str = Field(min_length=1)
    name: str
    arguments: str = ""
    status: str | None = None


class FunctionCallOutputItem(Lenient):
    type: Literal["function_call_output"] = "function_call_output"
    id: str | None = None
    call_id: str = Field(min_length=1)
    output: str | list[ContentPart]
    status: str | None = None

    def text(self) -> str:
        if isinstance(self.output, str):
            return self.output
        return "".join(part_text(part) for part in self.output)


class McpApprovalResponseItem(Lenient):
    type: Literal["mcp_approval_response"] = "mcp_approval_response"
    id: str | None = None
    approval_request_id: str = Field(min_length=1)
    approve: bool
    reason: str | None = None


class McpApprovalRequestItem(Lenient):
    type: Literal["mcp_approval_request"] = "mcp_approval_request"
    id: str
    server_label: str
    name: str
    arguments: str = ""


class McpListToolsItem(Lenient):
    type: Literal["mcp_list_tools"] = "mcp_list_tools"
    id: str | None = None
    server_label: str
    tools: list[dict[str, Any]] = Field(default_factory=list)
    error: Any = None


class McpCallItem(Lenient):
    type: Literal["mcp_call"] = "mcp_call"
    id: str | None = None
    server_label: str
    name: str
    arguments: str = ""
    output: str | None = None
    error: Any = None
    approval_request_id: str | None = None
    status: str | None = None


class FileSearchCallItem(Lenient):
    """A file_search call of an earlier response, sent back as input (openai-agents does): the model
    reads the answer that used it, not the search again."""

    type: Literal["file_search_call"] = "file_search_call"
    id: str | None = None
    queries: list[str] = Field(default_factory=list)
    status: str | None = None
    results: list[dict[str, Any]] | None = None


class CodeInterpreterCallItem(Lenient):
    """A code_interpreter call of an earlier response, sent back as input (openai-agents does): the model
    reads the answer that used it; the call is not run again."""

    type: Literal["code_interpreter_call"] = "code_interpreter_call"
    id: str | None = None
    container_id: str | None = None
    code: str | None = None
    outputs: list[dict[str, Any]] | None = None
    status: str | None = None


class ShellCallInput(Lenient):
    """A shell call (or its output) sent as input: replayed history, or the output of a call the caller ran
    (`environment: local`). Read as the `shell` function's call and output (`as_function_item`), so a
    caller's output resumes the waiting turn exactly as a function_call_output does."""

    type: Literal["shell_call", "shell_call_output"]
    id: str | None = None
    call_id: str = Field(min_length=1)
    action: dict[str, Any] | None = None
    output: list[dict[str, Any]] | None = None

    def as_function_item(self) -> FunctionCallItem | FunctionCallOutputItem:
        if self.type == "shell_call":
            commands = (self.action or {}).get("commands") or []
            return FunctionCallItem(call_id=self.call_id, name="shell", arguments=json.dumps({"commands": commands}))
        return FunctionCallOutputItem(call_id=self.call_id, output=shell_output_text(self.output or []))


def shell_output_text(outputs: list[dict[str, Any]]) -> str:
    """What a shell call's commands printed and how each ended, as the model reads it."""
    parts = []
    for output in outputs:
        outcome = output.get("outcome") or {}
        ended = "timed out" if outcome.get("type") == "timeout" else f"exit code {outcome.get('exit_code')}"
        parts.append(f"{output.get('stdout') or ''}{output.get('stderr') or ''}[{ended}]")
    return "\n".join(parts)


class ItemReference(Lenient):
    type: Literal["item_reference"] = "item_reference"
    id: str = Field(min_length=1)


class ReasoningItem(Lenient):
    type: Literal["reasoning"] = "reasoning"
    id: str | None = None
    summary: list[Any] = Field(default_factory=list)
    content: list[Any] | None = None
    encrypted_content: str | None = None


class CompactionItem(Lenient):
    """A summary that stands for the items before it (responses/compaction_items.py); sealed by this server."""

    type: Literal["compaction"] = "compaction"
    id: str | None = None
    encrypted_content: str = Field(min_length=1)


_ITEM_TYPES = {
    "message": MessageItem,
    "function_call": FunctionCallItem,
    "function_call_output": FunctionCallOutputItem,
    "mcp_approval_response": McpApprovalResponseItem,
    "mcp_approval_request": McpApprovalRequestItem,
    "mcp_list_tools": McpListToolsItem,
    "mcp_call": McpCallItem,
    "file_search_call": FileSearchCallItem,
    "web_search_call": WebSearchCallInput,
    "code_interpreter_call": CodeInterpreterCallItem,
    "shell_call": ShellCallInput,
    "shell_call_output": ShellCallInput,
    "item_reference": ItemReference,
    "reasoning": ReasoningItem,
    "compaction": CompactionItem,
}


def _item_kind(value: Any) -> str | None:
    """The item's type; a message may come without one (openai-agents), an item_reference too."""
    if isinstance(value, BaseModel):
        return getattr(value, "type", None)
    if not isinstance(value, dict):
        return None
    kind = value.get("type")
    if kind is None and "role" in value:
        return "message"
    if kind is None and set(value) == {"id"}:
        return "item_reference"
    return kind


InputItem = Annotated[
    Annotated[MessageItem, Tag("message")]
    | Annotated[FunctionCallItem, Tag("function_call")]
    | Annotated[FunctionCallOutputItem, Tag("function_call_output")]
    | Annotated[McpApprovalResponseItem, Tag("mcp_approval_response")]
    | Annotated[McpApprovalRequestItem, Tag("mcp_approval_request")]
    | Annotated[McpListToolsItem, Tag("mcp_list_tools")]
    | Annotated[McpCallItem, Tag("mcp_call")]
    | Annotated[FileSearchCallItem, Tag("file_search_call")]
    | Annotated[WebSearchCallInput, Tag("web_search_call")]
    | Annotated[CodeInterpreterCallItem, Tag("code_interpreter_call")]
    | Annotated[ShellCallInput, Tag("shell_call")]
    | Annotated[ShellCallInput, Tag("shell_call_output")]
    | Annotated[ItemReference, Tag("item_reference")]
    | Annotated[ReasoningItem, Tag("reasoning")]
    | Annotated[CompactionItem, Tag("compaction")],
    Discriminator(
        _item_kind,
        custom_error_type="invalid_item",
        custom_error_message=f"input items are one of: {', '.join(_ITEM_TYPES)} (a message may omit `type`)",
    ),
]


# Tools


class FunctionTool(Lenient):
    type: Literal["function"]
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ToolNames(Lenient):
    tool_names: list[str] = Field(default_factory=list)
    read_only: bool | None = None


class ApprovalFilter(Lenient):
    """`{"always": {"tool_names": [...]}, "never": {...}}`, or OGX's older `{"always": [...], "never": [...]}`."""

    always: ToolNames | list[str] | None = None
    never: ToolNames | list[str] | None = None


class McpTool(Lenient):
    type: Literal["mcp"]
    server_label: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    server_url: str | None = None
    connector_id: str | None = None
    server_description: str | None = None
    headers: dict[str, str] | None = Field(default=None, repr=False)
    authorization: str | None = Field(default=None, repr=False)
    allowed_tools: list[str] | ToolNames | None = None
    require_approval: Literal["always", "never"] | ApprovalFilter | None = None

    @model_validator(mode="after")
    def _needs_url(self) -> McpTool:
        if self.server_url is None:
            # Connectors are OpenAI-hosted; this server reaches MCP servers by URL only.
            raise ValueError(f"mcp tool {self.server_label!r}: server_url is required (connectors are not supported)")
        return self

    def allowed(self) -> list[str] | None:
        if self.allowed_tools is None:
            return None
        return self.allowed_tools.tool_names if isinstance(self.allowed_tools, ToolNames) else self.allowed_tools

    def credentials(self) -> dict[str, str]:
        """The headers the server needs: `headers` plus `authorization` as a bearer token."""
        found = dict(self.headers or {})
        if self.authorization:
            found["Authorization"] = f"Bearer {self.authorization}"
        return found

    def echo(self) -> dict[str, Any]:
        """The tool as the Response echoes it and as it is stored: without headers or authorization."""
        return self.model_dump(exclude={"headers", "authorization"}, exclude_none=True)


SUPPORTED_TOOLS = (
    "function",
    "mcp",
    "file_search",
    "web_search",
    "web_search_2025_08_26",
    "code_interpreter",
    "shell",
)


def _tool_kind(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    if kind == "web_search_2025_08_26":
        return "web_search"
    return kind if kind in SUPPORTED_TOOLS else "unsupported"


class UnsupportedTool(Lenient):
    type: str | None = None

    @model_validator(mode="after")
    def _refuse(self) -> UnsupportedTool:
        raise ValueError(
            f"tool type {self.type!r} is not supported by this server; supported: {', '.join(SUPPORTED_TOOLS)}"
        )


Tool = Annotated[
    Annotated[FunctionTool, Tag("function")]
    | Annotated[McpTool, Tag("mcp")]
    | Annotated[FileSearchTool, Tag("file_search")]
    | Annotated[WebSearchTool, Tag("web_search")]
    | Annotated[CodeInterpreterTool, Tag("code_interpreter")]
    | Annotated[ShellTool, Tag("shell")]
    | Annotated[UnsupportedTool, Tag("unsupported")],
    Discriminator(_tool_kind),
]


# tool_choice


class FunctionChoice(Lenient):
    type: Literal["function"]
    name: str


class McpChoice(Lenient):
    type: Literal["mcp"]
    server_label: str
    name: str | None = None


class HostedToolChoice(Lenient):
    """`{"type": "file_search"}` or `{"type": "web_search"}`: the model must search first."""

    type: Literal["file_search", "web_search", "web_search_2025_08_26"]


class AllowedTool(Lenient):
    type: str
    name: str | None = None
    server_label: str | None = None


class AllowedToolsChoice(Lenient):
    type: Literal["allowed_tools"]
    mode: Literal["auto", "required"] = "auto"
    tools: list[AllowedTool] = Field(default_factory=list)


ToolChoice = (
    Literal["auto", "none", "required"]
    | Annotated[FunctionChoice | McpChoice | HostedToolChoice | AllowedToolsChoice, Field(discriminator="type")]
)


# text.format


class TextFormatPlain(Lenient):
    type: Literal["text"]


class TextFormatJsonObject(Lenient):
    type: Literal["json_object"]


class TextFormatJsonSchema(Lenient):
    type: Literal["json_schema"]
    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    schema_: dict[str, Any] = Field(alias="schema")
    description: str | None = None
    strict: bool | None = None


class TextConfig(Lenient):
    format: Annotated[TextFormatPlain | TextFormatJsonObject | TextFormatJsonSchema, Field(discriminator="type")] = (
        TextFormatPlain(type="text")
    )
    verbosity: Literal["low", "medium", "high"] | None = None


class ConversationRef(Lenient):
    id: str


class ContextManagement(Lenient):
    """`{"type": "compaction", "compact_threshold": N}`: compact the context once it is estimated over N tokens."""

    type: Literal["compaction"]
    compact_threshold: int | None = Field(default=None, ge=1)


INCLUDABLE = frozenset(
    {
        "file_search_call.results",
        "web_search_call.results",
        "web_search_call.action.sources",
        "message.input_image.image_url",
        "computer_call_output.output.image_url",
        "code_interpreter_call.outputs",
        "reasoning.encrypted_content",
        "message.output_text.logprobs",
    }
)
_CONVERSATION_ID = re.compile(r"^conv_[0-9a-f]{48}$")


class CreateResponse(Lenient):
    model: str = Field(min_length=1)
    input: str | list[InputItem] = Field(default_factory=list)
    instructions: str | None = None
    tools: list[Tool] = Field(default_factory=list)
    tool_choice: ToolChoice = "auto"
    parallel_tool_calls: bool = True
    previous_response_id: str | None = None
    conversation: str | ConversationRef | None = None
    store: bool = True
    background: bool = False
    stream: bool = False
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    max_output_tokens: int | None = Field(default=None, ge=16)
    max_tool_calls: int | None = Field(default=None, ge=1)
    metadata: dict[str, str] | None = None
    text: TextConfig | None = None
    truncation: Literal["auto", "disabled"] = "disabled"
    include: list[str] = Field(default_factory=list)
    reasoning: dict[str, Any] | None = None
    user: str | None = None
    safety_identifier: str | None = Field(default=None, max_length=128)
    prompt_cache_key: str | None = None
    service_tier: str | None = None
    context_management: list[ContextManagement] | None = Field(default=None, max_length=1)

    @field_validator("tools", "include", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any) -> Any:
        return [] if value is None else value

    @field_validator("tool_choice", "truncation", mode="before")
    @classmethod
    def _null_is_default(cls, value: Any, info: Any) -> Any:
        if value is None:
            return "auto" if info.field_name == "tool_choice" else "disabled"
        return value

    @field_validator("parallel_tool_calls", "store", "background", "stream", mode="before")
    @classmethod
    def _null_flag(cls, value: Any, info: Any) -> Any:
        if value is None:
            return info.field_name in ("parallel_tool_calls", "store")
        return value

    @field_validator("metadata")
    @classmethod
    def _metadata_limits(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        if value is None:
            return None
        if len(value) > 16:
            raise ValueError(f"at most 16 pairs, got {len(value)}")
        for key, item in value.items():
            if len(key) > 64:
                raise ValueError(f"key {key[:64]!r}… is longer than 64 characters")
            if len(item) > 512:
                raise ValueError(f"the value of {key!r} is longer than 512 characters")
        return value

    @field_validator("include")
    @classmethod
    def _known_includes(cls, value: list[str]) -> list[str]:
        unknown = [name for name in value if name not in INCLUDABLE]
        if unknown:
            raise ValueError(f"unknown include value(s) {unknown}; known: {', '.join(sorted(INCLUDABLE))}")
        return value

    @field_validator("conversation")
    @classmethod
    def _conversation_id(cls, value: str | ConversationRef | None) -> str | ConversationRef | None:
        identifier = value.id if isinstance(value, ConversationRef) else value
        if identifier is not None and not _CONVERSATION_ID.match(identifier):
            raise ValueError(f"{identifier!r} is not a conversation id (conv_ followed by 48 hex digits)")
        return value

    @property
    def conversation_id(self) -> str | None:
        return self.conversation.id if isinstance(self.conversation, ConversationRef) else self.conversation

    def items(self) -> list[InputItem]:
        """The input as items: a string is one user message."""
        if isinstance(self.input, str):
            return [MessageItem(role="user", content=self.input)]
        return list(self.input)

    def function_tools(self) -> list[FunctionTool]:
        return [tool for tool in self.tools if isinstance(tool, FunctionTool)]

    def mcp_tools(self) -> list[McpTool]:
        return [tool for tool in self.tools if isinstance(tool, McpTool)]

    def file_search_tool(self) -> FileSearchTool | None:
        return next((tool for tool in self.tools if isinstance(tool, FileSearchTool)), None)

    def web_search_tool(self) -> WebSearchTool | None:
        return next((tool for tool in self.tools if isinstance(tool, WebSearchTool)), None)

    def code_interpreter_tools(self) -> list[tuple[int, CodeInterpreterTool]]:
        """The code_interpreter tools with their index in `tools` (the request's `param`)."""
        return [(index, tool) for index, tool in enumerate(self.tools) if isinstance(tool, CodeInterpreterTool)]

    def shell_tools(self) -> list[tuple[int, ShellTool]]:
        return [(index, tool) for index, tool in enumerate(self.tools) if isinstance(tool, ShellTool)]

    def echo_tools(self) -> list[dict[str, Any]]:
        """The request's tools as stored and echoed: MCP credentials left out."""
        return [tool.echo() if isinstance(tool, McpTool) else tool.model_dump(exclude_none=True) for tool in self.tools]


RequestModel = TypeVar("RequestModel", bound=BaseModel)
_UNION_PARTS = re.compile(r"[\[\]]|^function-")
_UNION_MEMBERS = frozenset(
    {
        *_ITEM_TYPES,
        *SUPPORTED_TOOLS,
        "unsupported",
        "str",
        "input_text",
        "input_image",
        "input_file",
        "output_text",
        "refusal",
        "json_object",
        "json_schema",
        "allowed_tools",
        "file_search_call",
        "code_interpreter_call",
        "shell_call",
        "shell_call_output",
    }
)


def _where(loc: tuple[int | str, ...]) -> str:
    """A readable path to the field: `input[2].content`, without pydantic's union member names."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif _UNION_PARTS.search(part) or part in _UNION_MEMBERS:
            continue
        else:
            path += f".{part}" if path else part
    return path or "body"


UNSUPPORTED_CREATE_PARAMETERS = {
    "prompt": "reusable prompt templates are not stored on this server; send the instructions and input themselves.",
    "top_logprobs": "this server does not return log probabilities.",
    "stream_options": "this server has no stream options.",
    "prompt_cache_retention": "prompt caching is the model provider's; this server does not control it.",
    "prompt_cache_options": "prompt caching is the model provider's; this server does not control it.",
    "background_options": "background responses run as soon as they can; there are no completion windows.",
    "moderation": "this server does not moderate; use a guard model (shields) instead.",
    "image": "this server does not generate images.",
    "access_programs": "this server has no access programs.",
    "multi_agent": "multi-agent responses are not supported.",
}
"""Parameters of the OpenAI create request this server does not implement: refused by name unless null."""


def parse_create(body: Any) -> CreateResponse:
    """The request, or the 400 that names the first field to fix (`param` is its top-level name)."""
    refuse_unknown(body, field_names(CreateResponse), UNSUPPORTED_CREATE_PARAMETERS)
    request = parse_body(CreateResponse, body)
    if isinstance(request.input, list):
        request.input = [
            item.as_function_item() if isinstance(item, ShellCallInput) else item for item in request.input
        ]
    _check_combinations(request)
    return request


def parse_body(model: type[RequestModel], body: Any) -> RequestModel:
    """A request body as `model`, or the 400 that names the first field to fix."""
    if not isinstance(body, dict):
        raise invalid("The request body must be a JSON object.")
    try:
        return model.model_validate(body)
    except ValidationError as error:
        # The deepest error is the informative one: a bad item also fails the `str` branch of `input`.
        first = max(error.errors(), key=lambda issue: len(issue["loc"]))
        loc = tuple(first["loc"])
        field = str(loc[0]) if loc else None
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] == "missing":
            raise invalid(
                f"Missing required parameter: '{_where(loc)}'.", field, "missing_required_parameter"
            ) from None
        raise invalid(f"Invalid '{_where(loc)}': {message}.", field, "invalid_value") from None


def _check_combinations(request: CreateResponse) -> None:
    if request.previous_response_id is not None and request.conversation is not None:
        raise invalid(
            "Mutually exclusive parameters: 'previous_response_id' and 'conversation'. Send one of them.",
            "conversation",
            "mutually_exclusive_parameters",
        )
    if request.background and not request.store:
        raise invalid(
            "Background responses must be stored: 'background' requires 'store': true.",
            "background",
            "unsupported_parameter",
        )
    labels = [tool.server_label for tool in request.mcp_tools()]
    names = [tool.name for tool in request.function_tools()]
    for kind, values in (("mcp server_label", labels), ("function name", names)):
        twice = sorted({value for value in values if values.count(value) > 1})
        if twice:
            raise invalid(f"Each {kind} may appear once in 'tools'; repeated: {twice}.", "tools")
    if len([tool for tool in request.tools if isinstance(tool, FileSearchTool)]) > 1:
        raise invalid("'tools' may hold one file_search tool; list all its vector stores in it.", "tools")
    if len(request.code_interpreter_tools()) > 1 or len(request.shell_tools()) > 1:
        raise invalid("'tools' may hold one code_interpreter tool and one shell tool.", "tools")
    if request.shell_tools() and "shell" in names:
        raise invalid("A function named 'shell' clashes with the shell tool; rename the function.", "tools")
    if request.code_interpreter_tools() and "code_interpreter" in names:
        raise invalid(
            "A function named 'code_interpreter' clashes with the code_interpreter tool; rename the function.", "tools"
        )
    if request.file_search_tool() is not None and "file_search" in names:
        raise invalid("A function named 'file_search' clashes with the file_search tool; rename the function.", "tools")
    _check_web_search(request, names)
    searching = request.file_search_tool()
    if searching is not None and searching.filters is not None:
        try:
            attribute_filters.validate(searching.filters)
        except attribute_filters.InvalidFilter as bad:
            raise invalid(f"Invalid file_search filters: {bad}.", "tools") from None
    ranker = searching.ranking_options.ranker if searching is not None and searching.ranking_options else None
    if ranker not in (None, "auto", "none"):
        raise invalid(
            f"file_search ranking_options.ranker {ranker!r} is OpenAI's own reranker, which this server does not "
            "have: use 'auto' or 'none' (results rank by similarity, or by hybrid_search's fusion).",
            "tools",
        )
    if not request.items() and request.previous_response_id is None and request.conversation is None:
        raise invalid("'input' is empty: send a message or items.", "input")


def _check_web_search(request: CreateResponse, function_names: list[str]) -> None:
    tools = [tool for tool in request.tools if isinstance(tool, WebSearchTool)]
    if len(tools) > 1:
        raise invalid("'tools' may hold one web_search tool.", "tools")
    if tools and "web_search" in function_names:
        raise invalid("A function named 'web_search' clashes with the web_search tool; rename the function.", "tools")
    unsupported = tools[0].unsupported() if tools else None
    if unsupported is not None:
        raise invalid(f"Unsupported web_search parameter {unsupported}.", "tools", "unsupported_parameter")


def require_known_tool_choice(request: CreateResponse) -> None:
    """A tool_choice naming a tool or server the request does not carry is a 400, as OpenAI answers."""
    choice = request.tool_choice
    if isinstance(choice, FunctionChoice) and choice.name not in {tool.name for tool in request.function_tools()}:
        raise OpenAIError(400, f"Tool choice '{choice.name}' not found in 'tools' parameter.", "tool_choice")
    if isinstance(choice, HostedToolChoice) and choice.type == "file_search" and request.file_search_tool() is None:
        raise OpenAIError(400, "Tool choice 'file_search' not found in 'tools' parameter.", "tool_choice")
    if isinstance(choice, HostedToolChoice) and choice.type != "file_search" and request.web_search_tool() is None:
        raise OpenAIError(400, f"Tool choice '{choice.type}' not found in 'tools' parameter.", "tool_choice")
    if isinstance(choice, McpChoice) and choice.server_label not in {t.server_label for t in request.mcp_tools()}:
        raise OpenAIError(400, f"MCP server '{choice.server_label}' not found in 'tools' parameter.", "tool_choice")
