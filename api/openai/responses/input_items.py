"""The input items of a `POST /v1/responses` request (and of conversations' items), accepted liberally: a message
without `type` (openai-agents), content as a string or parts, unknown fields inside items ignored.

request.py reads the rest of the request (tools, tool choice, text format) and refuses what the runtime cannot do.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from api.openai.responses.web_search import WebSearchCallInput


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


ITEM_TYPES = {
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
        custom_error_message=f"input items are one of: {', '.join(ITEM_TYPES)} (a message may omit `type`)",
    ),
]


# Tools
