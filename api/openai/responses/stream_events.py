"""The Responses dialect's stream events: what a streamed response (SSE or WebSocket) sends, item by item.

Written from the wire reference like the objects they carry (wire.py): every field OpenAI sends is sent.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from api.openai.responses.wire import OutputItem, OutputText, Response

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
