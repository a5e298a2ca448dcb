"""A response's stream: its segment's stored events → Responses SSE events, numbered from 0.

The renderer is fed the stored events one at a time, as they are tailed from the store, and
answers each with the Responses events it makes. Numbering depends only on the stored events, so
a stream resumed with `starting_after=N` — by any API process, after a crash — or replayed from 0
numbers every event exactly as the first stream did: the renderer replays the segment from its
start and drops what the client already has.
"""

from __future__ import annotations

from typing import Any

from api.openai.responses.items import (
    Ended,
    FileSearchEnded,
    FileSearchStarted,
    ItemWhole,
    McpCallEnded,
    McpCallStarted,
    MessageClosed,
    MessageOpened,
    Move,
    SegmentFold,
    TextAdded,
    WebSearchEnded,
    WebSearchStarted,
    has_local_shell,
    snapshot,
)
from api.openai.responses.stream_events import (
    CodeInterpreterCallCodeDelta,
    CodeInterpreterCallCodeDone,
    CodeInterpreterCallCompleted,
    CodeInterpreterCallInProgress,
    CodeInterpreterCallInterpreting,
    CompactionCompacting,
    ContentPartAdded,
    ContentPartDone,
    EventBase,
    FileSearchCallCompleted,
    FileSearchCallInProgress,
    FileSearchCallSearching,
    FunctionCallArgumentsDelta,
    FunctionCallArgumentsDone,
    McpCallArgumentsDelta,
    McpCallArgumentsDone,
    McpCallCompleted,
    McpCallFailed,
    McpCallInProgress,
    McpListToolsCompleted,
    McpListToolsFailed,
    McpListToolsInProgress,
    OutputItemAdded,
    OutputItemDone,
    OutputTextAnnotationAdded,
    OutputTextDelta,
    OutputTextDone,
    ResponseCompleted,
    ResponseCreated,
    ResponseFailed,
    ResponseIncomplete,
    ResponseInProgress,
    ResponseQueued,
    ShellCallCommandAdded,
    ShellCallCommandDelta,
    ShellCallCommandDone,
    ShellCallOutputContentDelta,
    ShellCallOutputContentDone,
    WebSearchCallCompleted,
    WebSearchCallInProgress,
    WebSearchCallSearching,
)
from api.openai.responses.wire import (
    CodeInterpreterCallItem,
    CompactionItem,
    FileSearchCallItem,
    FunctionCallItem,
    McpApprovalRequestItem,
    McpCallItem,
    McpListToolsItem,
    MessageItem,
    OutputItem,
    OutputText,
    Response,
    ShellCallItem,
    ShellCallOutputItem,
    WebSearchCallItem,
)
from domain.turns import TurnStatus


class ResponseStream:
    """The Responses events of one response, rendered incrementally from its segment's stored events.

    `base` is the response as created (id, created_at, model and the request's echoed fields); its
    status, output and outcome are the renderer's. Events numbered up to `starting_after` are made
    but not returned: the client has them.
    """

    def __init__(self, base: Response, turn_id: str, starting_after: int | None = None) -> None:
        self._base = base
        self._fold = SegmentFold(response_id=base.id, turn_id=turn_id, local_shell=has_local_shell(base.tools))
        self._skip_through = -1 if starting_after is None else starting_after
        self._next = 0
        self._opened = False
        self._running = False
        self._out: list[EventBase] = []

    @property
    def finished(self) -> bool:
        """True once the terminal event has been made."""
        return self._fold.ended

    @property
    def response(self) -> Response:
        """The response as it stands: what a GET shows, and what the terminal event carries."""
        return snapshot(self._base, self._fold, started=self._running)

    def open(self) -> list[EventBase]:
        """The stream's first events: created and in_progress, or for a background response created
        (queued) and queued — its in_progress comes with the turn's first stored event."""
        if self._opened:
            return []
        self._opened = True
        if self._base.background:
            self._emit(ResponseCreated, response=self.response)
            self._emit(ResponseQueued, response=self.response)
        else:
            self._running = True
            self._emit(ResponseCreated, response=self.response)
            self._emit(ResponseInProgress, response=self.response)
        return self._flush()

    def feed(self, body: dict[str, Any], turn_status: TurnStatus | None = None) -> list[EventBase]:
        """The events one stored event makes. `turn_status`: the turn's stored status, needed when
        `body` is an error (failed and cancelled turns end with the same kind of event)."""
        self.open()
        if self._fold.ended:
            return []
        if not self._running:
            self._running = True
            self._emit(ResponseInProgress, response=self.response)
        for move in self._fold.feed(body, turn_status):
            self._render(move)
        return self._flush()

    # -- rendering

    def _render(self, move: Move) -> None:
        output = self._fold.output
        match move:
            case MessageOpened(index):
                item = output[index]
                self._item_added(index, MessageItem(id=item.id, status="in_progress", content=[]))
                self._emit(
                    ContentPartAdded,
                    response_id=self._base.id,
                    item_id=item.id,
                    output_index=index,
                    content_index=0,
                    part=OutputText(),
                )
            case TextAdded(index, delta):
                item = output[index]
                self._emit(OutputTextDelta, item_id=item.id, output_index=index, content_index=0, delta=delta)
            case MessageClosed(index):
                item = output[index]
                assert isinstance(item, MessageItem)
                part = item.content[0] if item.content else OutputText()
                assert isinstance(part, OutputText)
                for number, annotation in enumerate(part.annotations):
                    self._emit(
                        OutputTextAnnotationAdded,
                        item_id=item.id,
                        output_index=index,
                        content_index=0,
                        annotation_index=number,
                        annotation=annotation,
                    )
                self._emit(OutputTextDone, item_id=item.id, output_index=index, content_index=0, text=part.text)
                self._emit(
                    ContentPartDone,
                    response_id=self._base.id,
                    item_id=item.id,
                    output_index=index,
                    content_index=0,
                    part=part,
                )
                self._item_done(index, item)
            case ItemWhole(index):
                self._whole(index, output[index])
            case McpCallStarted(index):
                self._mcp_call_started(index, output[index])
            case McpCallEnded(index):
                self._mcp_call_ended(index, output[index])
            case FileSearchStarted(index):
                self._file_search_started(index, output[index])
            case FileSearchEnded(index):
                self._file_search_ended(index, output[index])
            case WebSearchStarted(index):
                self._web_search_started(index, output[index])
            case WebSearchEnded(index):
                self._web_search_ended(index, output[index])
            case Ended():
                self._terminal()

    def _whole(self, index: int, item: OutputItem) -> None:
        if isinstance(item, McpCallItem):  # a call whose start was not shown: both halves at once
            self._mcp_call_started(index, item)
            self._mcp_call_ended(index, item)
            return
        if isinstance(item, FileSearchCallItem):
            self._file_search_started(index, item)
            self._file_search_ended(index, item)
            return
        if isinstance(item, WebSearchCallItem):
            self._web_search_started(index, item)
            self._web_search_ended(index, item)
            return
        if isinstance(item, CodeInterpreterCallItem):
            self._code_interpreter_call(index, item)
            return
        if isinstance(item, ShellCallItem | ShellCallOutputItem):
            self._shell(index, item)
            return
        at = {"item_id": item.id, "output_index": index}
        if isinstance(item, FunctionCallItem):
            self._item_added(index, item.model_copy(update={"arguments": "", "status": "in_progress"}))
            if item.arguments:
                self._emit(FunctionCallArgumentsDelta, **at, delta=item.arguments)
            self._emit(FunctionCallArgumentsDone, **at, arguments=item.arguments)
        elif isinstance(item, CompactionItem):
            self._item_added(index, item)
            self._emit(CompactionCompacting, **at)
        elif isinstance(item, McpListToolsItem):
            self._item_added(index, item.model_copy(update={"tools": [], "error": None}))
            self._emit(McpListToolsInProgress, **at)
            self._emit(McpListToolsFailed if item.error else McpListToolsCompleted, **at)
        else:
            assert isinstance(item, McpApprovalRequestItem)
            self._item_added(index, item)
        self._item_done(index, item)

    def _mcp_call_started(self, index: int, item: OutputItem) -> None:
        assert isinstance(item, McpCallItem)
        at = {"item_id": item.id, "output_index": index}
        started = {"arguments": "", "output": None, "error": None, "status": "in_progress"}
        self._item_added(index, item.model_copy(update=started))
        self._emit(McpCallInProgress, **at)
        if item.arguments:
            self._emit(McpCallArgumentsDelta, **at, delta=item.arguments)
        self._emit(McpCallArgumentsDone, **at, arguments=item.arguments)

    def _mcp_call_ended(self, index: int, item: OutputItem) -> None:
        assert isinstance(item, McpCallItem)
        self._emit(McpCallFailed if item.error else McpCallCompleted, item_id=item.id, output_index=index)
        self._item_done(index, item)

    def _file_search_started(self, index: int, item: OutputItem) -> None:
        """As OpenAI streams a search: the item added in progress, then in_progress and searching."""
        assert isinstance(item, FileSearchCallItem)
        at = {"item_id": item.id, "output_index": index}
        self._item_added(index, item.model_copy(update={"status": "in_progress", "results": None}))
        self._emit(FileSearchCallInProgress, **at)
        self._emit(FileSearchCallSearching, **at)

    def _file_search_ended(self, index: int, item: OutputItem) -> None:
        assert isinstance(item, FileSearchCallItem)
        self._emit(FileSearchCallCompleted, item_id=item.id, output_index=index)
        self._item_done(index, item)

    def _web_search_started(self, index: int, item: OutputItem) -> None:
        """As OpenAI streams a web search: the item added in progress (no sources yet), then in_progress and
        searching."""
        assert isinstance(item, WebSearchCallItem)
        at = {"item_id": item.id, "output_index": index}
        action = item.action.model_copy(update={"sources": None})
        self._item_added(index, item.model_copy(update={"status": "in_progress", "action": action}))
        self._emit(WebSearchCallInProgress, **at)
        self._emit(WebSearchCallSearching, **at)

    def _web_search_ended(self, index: int, item: OutputItem) -> None:
        assert isinstance(item, WebSearchCallItem)
        self._emit(WebSearchCallCompleted, item_id=item.id, output_index=index)
        self._item_done(index, item)

    def _code_interpreter_call(self, index: int, item: CodeInterpreterCallItem) -> None:
        """As OpenAI streams a call: added in progress, its code, interpreting, completed, done."""
        at = {"item_id": item.id, "output_index": index}
        self._item_added(index, item.model_copy(update={"status": "in_progress", "outputs": None}))
        self._emit(CodeInterpreterCallInProgress, **at)
        if item.code:
            self._emit(CodeInterpreterCallCodeDelta, **at, delta=item.code)
        self._emit(CodeInterpreterCallCodeDone, **at, code=item.code or "")
        self._emit(CodeInterpreterCallInterpreting, **at)
        self._emit(CodeInterpreterCallCompleted, **at)
        self._item_done(index, item)

    def _shell(self, index: int, item: ShellCallItem | ShellCallOutputItem) -> None:
        """A shell call: its commands, then (its output item) what each printed and how it ended."""
        if isinstance(item, ShellCallItem):
            self._item_added(index, item.model_copy(update={"status": "in_progress"}))
            for number, command in enumerate(item.action.get("commands") or []):
                at = {"output_index": index, "command_index": number}
                self._emit(ShellCallCommandAdded, **at, command="")
                self._emit(ShellCallCommandDelta, **at, delta=command)
                self._emit(ShellCallCommandDone, **at, command=command)
        else:
            self._item_added(index, item.model_copy(update={"status": "in_progress", "output": []}))
            for number, output in enumerate(item.output):
                where: dict[str, Any] = {"item_id": item.id, "output_index": index, "command_index": number}
                delta = {"stdout": str(output.get("stdout", "")), "stderr": str(output.get("stderr", ""))}
                self._emit(ShellCallOutputContentDelta, **where, delta=delta)
                self._emit(ShellCallOutputContentDone, **where, output=[output])
        self._item_done(index, item)

    def _item_added(self, index: int, item: OutputItem) -> None:
        self._emit(OutputItemAdded, response_id=self._base.id, output_index=index, item=item)

    def _item_done(self, index: int, item: OutputItem) -> None:
        self._emit(OutputItemDone, response_id=self._base.id, output_index=index, item=item)

    def _terminal(self) -> None:
        response = self.response
        if response.status == "completed":
            self._emit(ResponseCompleted, response=response)
        elif response.status == "incomplete":
            self._emit(ResponseIncomplete, response=response)
        else:  # failed, or cancelled: the SDK knows no cancelled stream event
            self._emit(ResponseFailed, response=response)

    def _emit(self, kind: type[EventBase], **fields: Any) -> None:
        self._out.append(kind(sequence_number=self._next, **fields))
        self._next += 1

    def _flush(self) -> list[EventBase]:
        out, self._out = self._out, []
        return [event for event in out if event.sequence_number > self._skip_through]


def render_stream(
    base: Response,
    turn_id: str,
    bodies: list[dict[str, Any]],
    turn_status: TurnStatus | None = None,
    starting_after: int | None = None,
) -> list[EventBase]:
    """Every event a finished (or so far stored) segment makes: a replay."""
    stream = ResponseStream(base, turn_id, starting_after)
    events = stream.open()
    for body in bodies:
        events += stream.feed(body, turn_status)
    return events
