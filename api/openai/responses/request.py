"""`POST /v1/responses` request, written from the wire spec §2: accepted liberally, refused clearly.

Liberal where clients differ: the input items as input_items.py reads them, `conversation` as a string or
`{"id"}`, `include` empty or absent. Clear
where the runtime cannot do what was asked: unknown top-level parameters (`extra_body` keys included) and the
OpenAI parameters this server does not implement (`prompt`, …), tool types other than function, mcp and
file_search, unknown `include` values and out-of-range numbers are a 400 naming the field (`parse_create`).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, Discriminator, Field, Tag, ValidationError, field_validator, model_validator

from api.openai.errors import OpenAIError, invalid
from api.openai.parameters import field_names, refuse_unknown
from api.openai.responses.code_interpreter import CodeInterpreterTool
from api.openai.responses.file_search import FileSearchTool
from api.openai.responses.input_items import ITEM_TYPES, InputItem, Lenient, MessageItem, ShellCallInput
from api.openai.responses.shell import ShellTool
from api.openai.responses.web_search import WebSearchTool
from knowledge import filters as attribute_filters


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
    approval_timeout: int | None = Field(default=None, ge=1)
    """Our extension: seconds after which an undecided approval is denied; only shortens DA_APPROVAL_TIMEOUT."""

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
        *ITEM_TYPES,
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
