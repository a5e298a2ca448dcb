"""A response's output from its segment of a turn's stored events.

A response is a segment of a turn: from the turn's first event (or the `segment_started` runtime
event naming the response) to the pause (`turn_awaiting_input`), the end (`turn_complete`) or the
failure (an error body) that closes it. `SegmentFold` reads those events one at a time, as they are
tailed live or replayed, and keeps the response's output items and outcome; what changed with each
event is returned as `Move`s, which the stream renderer (stream.py) turns into Responses events.
Both views come from this one fold, so a streamed response ends with exactly what a GET shows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import TypeAdapter

from api.openai.responses import ids
from api.openai.responses.code_interpreter import code_interpreter_call_item, file_citations, written_files
from api.openai.responses.file_search import cited, file_search_call_item, running_file_search_item, showable_end
from api.openai.responses.shell import local_shell_call_item, shell_items
from api.openai.responses.web_search import found_pages, running_web_search_item, url_citations, web_search_call_item
from api.openai.responses.wire import (
    CompactionItem,
    FunctionCallItem,
    IncompleteDetails,
    McpApprovalRequestItem,
    McpCallItem,
    McpListToolsItem,
    McpListToolsTool,
    McpToolExecutionError,
    MessageItem,
    OutputItem,
    OutputText,
    Response,
    ResponseError,
    ResponseStatus,
    Usage,
)
from domain.content import ToolCall, ToolResponse, content_as_text
from domain.events import Payload
from domain.turns import InferenceStep, ShieldCallStep, ToolExecutionStep, Turn, TurnStatus
from knowledge.rag_results import searched_sources
from workflows.code_tools import SHELL

_payloads: TypeAdapter[Any] = TypeAdapter(Payload)
_READ = frozenset({"step_progress", "step_complete", "turn_awaiting_input", "turn_complete"})


# --- what changed with one event -------------------------------------------------------------------


@dataclass(frozen=True)
class MessageOpened:
    """A message item began (its text streams next): output[index] is its in-progress form."""

    index: int


@dataclass(frozen=True)
class TextAdded:
    index: int
    delta: str


@dataclass(frozen=True)
class MessageClosed:
    """The message item at `index` is final."""

    index: int


@dataclass(frozen=True)
class ItemWhole:
    """An item that arrived complete (a call, a tool listing, an approval request)."""

    index: int


@dataclass(frozen=True)
class McpCallStarted:
    """An MCP server's call began running: output[index] is its in-progress form."""

    index: int


@dataclass(frozen=True)
class McpCallEnded:
    """The call at `index` answered (or failed): output[index] is final."""

    index: int


@dataclass(frozen=True)
class FileSearchStarted:
    """A file_search call began: output[index] is its in-progress form."""

    index: int


@dataclass(frozen=True)
class FileSearchEnded:
    """The file_search call at `index` finished (or failed): output[index] is final."""

    index: int


@dataclass(frozen=True)
class WebSearchStarted:
    """A web_search call began: output[index] is its in-progress form."""

    index: int


@dataclass(frozen=True)
class WebSearchEnded:
    """The web_search call at `index` finished (or failed): output[index] is final."""

    index: int


@dataclass(frozen=True)
class Ended:
    """The segment is over; the fold's status, error and output are final."""


Move = (
    MessageOpened
    | TextAdded
    | MessageClosed
    | ItemWhole
    | McpCallStarted
    | McpCallEnded
    | FileSearchStarted
    | FileSearchEnded
    | WebSearchStarted
    | WebSearchEnded
    | Ended
)


# --- stored things → items ------------------------------------------------------------------------


def arguments_json(call: ToolCall) -> str:
    if call.arguments_json is not None:
        return call.arguments_json
    return call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)


def function_call_item(turn_id: str, call: ToolCall) -> FunctionCallItem:
    return FunctionCallItem(
        id=ids.function_call_id(turn_id, call.call_id),
        call_id=call.call_id,
        name=call.tool_name,
        arguments=arguments_json(call),
    )


def mcp_call_item(turn_id: str, step_id: str, call: ToolCall, response: ToolResponse) -> McpCallItem | None:
    """The mcp_call item of a server step's call; None when the call was not to a request's MCP server
    (a client's result, an answer to a call of an unknown tool) or did not happen: the caller denied
    it (the model reads the denial; the caller's own mcp_approval_response already says so)."""
    metadata = response.metadata or {}
    label = metadata.get("server_label")
    if not label or metadata.get("denied"):
        return None
    text = content_as_text(response.content)
    failed = bool(metadata.get("error") or metadata.get("is_error"))
    error = McpToolExecutionError(content=[{"type": "text", "text": text}]) if failed else None
    return McpCallItem(
        id=ids.mcp_call_id(turn_id, step_id, call.call_id),
        server_label=label,
        name=call.tool_name,
        arguments=arguments_json(call),
        output=None if failed else text,
        error=error,
        approval_request_id=metadata.get("approval_request_id"),
        status="failed" if failed else "completed",
    )


def running_mcp_call_item(turn_id: str, started: dict[str, Any]) -> McpCallItem:
    """The mcp_call item of a call its activity has begun (activities/tools.py's `tool_run_started`)."""
    call = ToolCall.model_validate(started.get("call") or {})
    return McpCallItem(
        id=ids.mcp_call_id(turn_id, str(started.get("step_id", "")), call.call_id),
        server_label=str(started.get("server_label", "")),
        name=call.tool_name,
        arguments=arguments_json(call),
        approval_request_id=started.get("approval_request_id"),
        status="in_progress",
    )


def mcp_list_tools_item(response_id: str, ordinal: int, listed: dict[str, Any]) -> McpListToolsItem:
    label = str(listed.get("server_label", ""))
    tools = [
        McpListToolsTool(
            name=tool.get("name", ""),
            description=tool.get("description"),
            input_schema=tool.get("input_schema") or {},
            annotations=tool.get("annotations"),
        )
        for tool in listed.get("tools") or []
    ]
    error = listed.get("error")
    return McpListToolsItem(
        id=ids.mcp_list_tools_id(response_id, label, ordinal),
        server_label=label,
        tools=tools,
        error=str(error) if error else None,
    )


def approval_request_item(requested: dict[str, Any]) -> McpApprovalRequestItem:
    call = ToolCall.model_validate(requested.get("call") or {})
    return McpApprovalRequestItem(
        id=requested["approval_request_id"],
        server_label=requested.get("server_label", ""),
        name=call.tool_name,
        arguments=arguments_json(call),
    )


def _timestamp(moment: datetime | None) -> int | None:
    return int(moment.timestamp()) if moment is not None else None


# --- the fold ---------------------------------------------------------------------------------------


@dataclass
class _OpenMessage:
    index: int
    step_id: str
    text: str = ""
    """As the model wrote it, citation markers included."""
    consumed: int = 0
    """How much of `text` is shown (up to a marker still arriving)."""
    shown: str = ""
    """What the deltas so far showed: `text[:consumed]` without its markers."""
    annotations: list[dict[str, Any]] = field(default_factory=list)
    """The citations of `shown`."""


@dataclass
class SegmentFold:
    """One response's output and outcome, folded from its segment's stored events (bodies) in order.

    Deterministic: the same bodies give the same items (same ids) and the same moves. Items are
    never interleaved: one that arrives whole while a message streams waits until the message closes.
    """

    response_id: str
    turn_id: str
    local_shell: bool = False
    """The response's request has a local shell: the model's `shell` calls are shell_call items (the caller's)."""
    output: list[OutputItem] = field(default_factory=list)
    status: ResponseStatus = "in_progress"
    error: ResponseError | None = None
    incomplete_details: IncompleteDetails | None = None
    completed_at: int | None = None
    ended: bool = False
    usage: Usage | None = None
    """The tokens of the segment's inferences, summed; None while no inference has reported any."""
    _open: _OpenMessage | None = None
    _held: list[OutputItem] = field(default_factory=list)
    _listings: dict[str, int] = field(default_factory=dict)
    _running_calls: dict[str, int] = field(default_factory=dict)
    """Output indexes of the MCP calls shown in progress, by their tool step's id."""
    _running_searches: dict[str, int] = field(default_factory=dict)
    """Output indexes of the file_search calls shown in progress, by their tool step's id."""
    _searched: set[str] = field(default_factory=set)
    """The sources (file ids, vector-io document ids) the turn's file searches returned, whose markers are cited."""
    _running_web_searches: dict[str, int] = field(default_factory=dict)
    """Output indexes of the web_search calls shown in progress, by their tool step's id."""
    _pages: dict[str, str] = field(default_factory=dict)
    """URL → title of the pages the segment's web searches found: what its messages can cite."""
    _written: list[dict[str, str]] = field(default_factory=list)
    """Container files the code calls wrote, not yet cited by a message."""
    _steered: set[str] = field(default_factory=set)
    """The inferences whose reply a steer cut short: their message is incomplete, and so is the response."""

    def feed(self, body: dict[str, Any], turn_status: TurnStatus | None = None) -> list[Move]:
        """Fold one stored event. `turn_status`: the turn's stored status, read when `body` is an
        error (the body does not say whether the turn failed or was cancelled)."""
        if self.ended:
            return []
        if "runtime" in body:
            return self._runtime(body["runtime"])
        if "error" in body:
            message = str((body.get("error") or {}).get("message") or "The response failed.")
            return self._fail(message, cancelled=turn_status == TurnStatus.CANCELLED)
        raw = (body.get("event") or {}).get("payload") or {}
        if raw.get("event_type") not in _READ:
            return []  # step starts, and kinds a later runtime may add: nothing to show
        payload = _payloads.validate_python(raw)
        match payload.event_type:
            case "step_progress" if payload.step_type == "inference" and payload.delta.type == "text":
                return self._text(payload.step_id, payload.delta.text)
            case "step_complete":
                return self._step(payload.step_details)
            case "turn_awaiting_input":
                return self._paused(payload.turn)
            case "turn_complete":
                return self._completed(payload.turn)
        return []

    # -- event kinds

    def _runtime(self, event: dict[str, Any]) -> list[Move]:
        kind = event.get("kind")
        if kind == "tools_listed":
            label = str(event.get("server_label", ""))
            ordinal = self._listings.get(label, 0)
            self._listings[label] = ordinal + 1
            return self._whole(mcp_list_tools_item(self.response_id, ordinal, event))
        if kind == "mcp_call_started" and self._open is None:
            # (A message is never open here: the inference's step, which closes it, is written first.)
            self.output.append(running_mcp_call_item(self.turn_id, event))
            self._running_calls[str(event.get("step_id", ""))] = len(self.output) - 1
            return [McpCallStarted(len(self.output) - 1)]
        if kind == "file_search_started" and self._open is None:
            self.output.append(running_file_search_item(self.turn_id, event))
            self._running_searches[str(event.get("step_id", ""))] = len(self.output) - 1
            return [FileSearchStarted(len(self.output) - 1)]
        if kind == "web_search_started" and self._open is None:
            self.output.append(running_web_search_item(self.turn_id, event))
            self._running_web_searches[str(event.get("step_id", ""))] = len(self.output) - 1
            return [WebSearchStarted(len(self.output) - 1)]
        if kind == "approval_requested":
            return self._whole(approval_request_item(event))
        if kind == "compaction":  # the turn's compaction step (activities/compaction.py)
            item = CompactionItem(id=ids.compaction_item_id(self.turn_id), encrypted_content=event["encrypted_content"])
            return self._whole(item)
        if kind == "steered":
            self._steered.add(str(event.get("step_id", "")))
        if kind == "usage":
            self._count_usage(int(event.get("input_tokens") or 0), int(event.get("output_tokens") or 0))
        return []  # segment_started: where the segment begins, nothing to show; usage and steered: shown at the end

    def _count_usage(self, input_tokens: int, output_tokens: int) -> None:
        if self.usage is not None:
            input_tokens += self.usage.input_tokens
            output_tokens += self.usage.output_tokens
        total = input_tokens + output_tokens
        self.usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens, total_tokens=total)

    def _text(self, step_id: str, text: str) -> list[Move]:
        if not text:
            return []
        moves = self._open_message(step_id) if self._open is None or self._open.step_id != step_id else []
        assert self._open is not None
        self._open.text += text
        return [*moves, *self._show(final=False)]  # the item itself is brought up to date when read

    def _show(self, final: bool) -> list[Move]:
        """The delta that shows the open message's text so far (all of it when `final`), markers taken out;
        only the text not yet shown is read, so a long message costs no more per delta than a short one."""
        message = self._open
        assert message is not None
        end = len(message.text) if final else showable_end(message.text, message.consumed)
        visible, annotations = cited(message.text[message.consumed : end], self._searched)
        for annotation in annotations:
            annotation["index"] += len(message.shown)
        message.consumed = end
        message.shown += visible
        message.annotations += annotations
        return [TextAdded(message.index, visible)] if visible else []

    def _step(self, step: Any) -> list[Move]:
        if isinstance(step, InferenceStep):
            text = content_as_text(step.model_response.content)
            incomplete = step.model_response.stop_reason == "out_of_tokens" or step.step_id in self._steered
            return self._message(step.step_id, text, incomplete)
        if isinstance(step, ToolExecutionStep):
            moves: list[Move] = []
            running = self._running_calls.pop(step.step_id, None)
            searching = self._running_searches.pop(step.step_id, None)
            web_searching = self._running_web_searches.pop(step.step_id, None)
            for call, response in zip(step.tool_calls, step.tool_responses, strict=False):
                web = web_search_call_item(self.turn_id, step.step_id, call, response)
                if web is not None:
                    self._pages.update(found_pages(response))
                    if web_searching is not None:
                        self.output[web_searching] = web
                        moves.append(WebSearchEnded(web_searching))
                    else:
                        moves += self._whole(web)
                    continue
                shell = shell_items(self.turn_id, step.step_id, call, response)
                if shell is not None:
                    self._written += written_files(response)
                    moves += [move for item in shell for move in self._whole(item)]
                    continue
                code = code_interpreter_call_item(self.turn_id, step.step_id, call, response)
                if code is not None:
                    self._written += written_files(response)
                    moves += self._whole(code)
                    continue
                search = file_search_call_item(self.turn_id, step.step_id, call, response)
                if search is not None:
                    self._searched |= searched_sources(content_as_text(response.content))
                if search is not None and searching is not None:
                    self.output[searching] = search
                    moves.append(FileSearchEnded(searching))
                    continue
                if search is not None:
                    moves += self._whole(search)
                    continue
                item = mcp_call_item(self.turn_id, step.step_id, call, response)
                if item is not None and running is not None:
                    self.output[running] = item
                    moves.append(McpCallEnded(running))
                elif item is not None:
                    moves += self._whole(item)
            return moves
        return []

    def _paused(self, turn: Turn) -> list[Move]:
        calls = turn.output_message.tool_calls if turn.output_message else []
        moves = [move for call in calls for move in self._whole(self._paused_call(call))]
        last = turn.steps[-1].completed_at if turn.steps else None
        if self._steered:  # ended by a steer at the token it arrived: its successor goes on from there
            self.incomplete_details = IncompleteDetails(reason="steered")
            return [*moves, *self._end("incomplete")]
        return [*moves, *self._end("completed", completed_at=_timestamp(last))]

    def _paused_call(self, call: ToolCall) -> OutputItem:
        if self.local_shell and call.tool_name == SHELL:
            return local_shell_call_item(self.turn_id, call)
        return function_call_item(self.turn_id, call)

    def _completed(self, turn: Turn) -> list[Move]:
        moves: list[Move] = []
        last = turn.steps[-1] if turn.steps else None
        refused = isinstance(last, ShieldCallStep) and last.violation and last.violation.violation_level == "error"
        if refused and turn.output_message is not None:  # a shield's refusal is the answer
            assert last is not None
            moves += self._message(last.step_id, content_as_text(turn.output_message.content), incomplete=False)
        out_of_tokens = turn.output_message is not None and turn.output_message.stop_reason == "out_of_tokens"
        if out_of_tokens:
            self.incomplete_details = IncompleteDetails(reason="max_output_tokens")
            return [*moves, *self._end("incomplete")]
        return [*moves, *self._end("completed", completed_at=_timestamp(turn.completed_at))]

    def _fail(self, message: str, cancelled: bool) -> list[Move]:
        if cancelled:
            return self._end("cancelled")
        self.error = ResponseError(code="server_error", message=message)
        return self._end("failed")

    # -- items

    def _message(self, step_id: str, text: str, incomplete: bool) -> list[Move]:
        """An inference's (or refusal's) message, final: closes the streamed one or adds it whole."""
        moves: list[Move] = []
        if self._open is None or self._open.step_id != step_id:
            if not text:
                return []  # calls only: no message item
            moves += self._open_message(step_id)
        message = self._open
        assert message is not None
        if not text.startswith(message.text[: message.consumed]):
            # The recorded answer is not what streamed (not expected): show it afresh; what streamed stays shown.
            before = message.shown
            message.text, message.consumed, message.shown, message.annotations = text, 0, "", []
            self._show(final=True)
            if message.shown.startswith(before) and len(message.shown) > len(before):
                moves.append(TextAdded(message.index, message.shown[len(before) :]))
        message.text = text
        return [*moves, *self._close_open(incomplete)]

    def _open_message(self, step_id: str) -> list[Move]:
        moves = self._close_open(incomplete=True)  # another step's text never ends up in this one
        self._open = _OpenMessage(index=len(self.output), step_id=step_id)
        self.output.append(MessageItem(id=ids.message_id(self.turn_id, step_id), status="in_progress"))
        self._set_open_item("in_progress")
        return [*moves, MessageOpened(self._open.index)]

    def _open_index(self) -> int:
        assert self._open is not None
        return self._open.index

    def _set_open_item(self, status: Literal["in_progress", "completed", "incomplete"]) -> None:
        assert self._open is not None
        item = self.output[self._open.index]
        annotations = list(self._open.annotations)
        if status != "in_progress":  # a URL still arriving is not cited halfway
            annotations += url_citations(self._open.shown, self._pages)
        content = [OutputText(text=self._open.shown, annotations=annotations)]
        self.output[self._open.index] = item.model_copy(update={"status": status, "content": content})

    def _close_open(self, incomplete: bool) -> list[Move]:
        if self._open is None:
            return []
        moves: list[Move] = self._show(final=True)  # a marker that never closed is text after all
        self._open.annotations += file_citations(self._open.shown, self._written)
        self._written = []
        index = self._open.index
        self._set_open_item("incomplete" if incomplete else "completed")
        self._open = None
        moves.append(MessageClosed(index))
        held, self._held = self._held, []
        for item in held:
            moves += self._whole(item)
        return moves

    def _whole(self, item: OutputItem) -> list[Move]:
        if self._open is not None:
            self._held.append(item)
            return []
        self.output.append(item)
        return [ItemWhole(len(self.output) - 1)]

    def _end(self, status: ResponseStatus, completed_at: int | None = None) -> list[Move]:
        moves = self._close_open(incomplete=status != "completed")
        running = [
            *self._running_calls.values(),
            *self._running_searches.values(),
            *self._running_web_searches.values(),
        ]
        for index in running:  # ended while they ran
            self.output[index] = self.output[index].model_copy(update={"status": "incomplete"})
        self._running_calls.clear()
        self._running_searches.clear()
        self._running_web_searches.clear()
        self.status = status
        self.completed_at = completed_at if status == "completed" else None
        self.ended = True
        return [*moves, Ended()]

    @property
    def visible_output(self) -> list[OutputItem]:
        """The output a response shows: none once cancelled, as OpenAI clears a cancelled response's. A message
        still streaming shows its text so far (rebuilt here, once, rather than at each delta)."""
        if self._open is not None:
            self._set_open_item("in_progress")
        return [] if self.status == "cancelled" else list(self.output)


def snapshot(base: Response, fold: SegmentFold, started: bool) -> Response:
    """The response as it stands. `started`: the turn has written an event of this segment (until
    then a background response is still queued)."""
    if fold.ended:
        status = fold.status
    elif base.background and not started:
        status = "queued"
    else:
        status = "in_progress"
    return base.model_copy(
        update={
            "status": status,
            "output": fold.visible_output,
            "error": fold.error,
            "incomplete_details": fold.incomplete_details,
            "completed_at": fold.completed_at,
            "usage": fold.usage if fold.ended else None,
        }
    )


def fold_segment(
    response_id: str,
    turn_id: str,
    bodies: list[dict[str, Any]],
    turn_status: TurnStatus | None = None,
    local_shell: bool = False,
) -> SegmentFold:
    """A response's output and outcome from its segment's stored events (non-streaming reads)."""
    fold = SegmentFold(response_id=response_id, turn_id=turn_id, local_shell=local_shell)
    for body in bodies:
        fold.feed(body, turn_status)
    return fold


def render_response(
    base: Response, turn_id: str, bodies: list[dict[str, Any]], turn_status: TurnStatus | None = None
) -> Response:
    """The response (GET, a blocking create's answer) from its segment's events stored so far."""
    fold = fold_segment(base.id, turn_id, bodies, turn_status, has_local_shell(base.tools))
    return snapshot(base, fold, started=bool(bodies))


def has_local_shell(tools: list[dict[str, Any]]) -> bool:
    """Whether a response's echoed tools hold a shell the caller runs (no environment, or `local`)."""
    for tool in tools:
        environment = tool.get("environment")
        if tool.get("type") == SHELL and (not isinstance(environment, dict) or environment.get("type") == "local"):
            return True
    return False
