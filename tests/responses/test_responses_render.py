"""The Responses rendering of a turn's stored events (api/openai/responses/items.py, stream.py), proven
against the openai SDK's own models. Pure code: the stored events are built with the domain models
and helpers the worker writes them with; no Temporal, store or HTTP is involved."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from openai import omit
from openai.lib.streaming.responses._responses import ResponseStreamState
from openai.types.responses import Response as SdkResponse
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from activities.inference import InferenceActivities, _DeltaWriter
from activities.tools import tool_run_started
from api.openai.responses import ids
from api.openai.responses.items import render_response
from api.openai.responses.stream import ResponseStream, render_stream
from api.openai.responses.stream_events import EventBase, sse_frame
from api.openai.responses.wire import Response
from domain.content import CompletionMessage, ToolCall, ToolResponse, UserMessage
from domain.events import (
    ErrorChunk,
    KeyedEvent,
    StepProgress,
    StepStart,
    StreamError,
    TextDelta,
    ToolCallDelta,
    TurnAwaitingInput,
    TurnComplete,
    chunk_of,
)
from domain.turns import InferenceStep, SafetyViolation, ShieldCallStep, Step, ToolExecutionStep, Turn, TurnStatus
from workflows.contracts import InferenceRequest, ServerTool, ToolRunRequest, runtime_event, step_complete_event
from workflows.steps import mcp_metadata

TURN = "turn-1"
T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
sdk_events: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
rendered: list[list[dict[str, Any]]] = []
"""Every stream `checked` rendered, for the llama-stack-client check."""
LSC_PYTHON = Path(__file__).resolve().parents[2] / ".venv-lsc" / "bin" / "python"


# --- stored events, as the worker writes them --------------------------------------------------------


class Turnlog:
    """A turn's event log being written: bodies in store order, and its steps so far."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.steps: list[Step] = []
        self.clock = T0

    def _now(self) -> datetime:
        self.clock += timedelta(seconds=1)
        return self.clock

    def add(self, *payloads: Any) -> None:
        self.bodies += [chunk_of(payload).model_dump(mode="json") for payload in payloads]

    def runtime(self, kind: str, **fields: Any) -> None:
        self.bodies.append(runtime_event(f"{kind}:{len(self.bodies)}", kind, **fields).body)

    def inference_start(self, step_id: str) -> None:
        self.add(StepStart(step_type="inference", step_id=step_id))

    def text(self, step_id: str, *chunks: str) -> None:
        self.add(*(StepProgress(step_type="inference", step_id=step_id, delta=TextDelta(text=c)) for c in chunks))

    def call_delta(self, step_id: str, call: ToolCall) -> None:
        delta = ToolCallDelta(tool_call=call, parse_status="succeeded")
        self.add(StepProgress(step_type="inference", step_id=step_id, delta=delta))

    def step(self, step: Step) -> None:
        """The step's step_complete, written (as PendingWrites.all_events does) by the next activity."""
        self.steps.append(step)
        self.bodies.append(step_complete_event(step).body)

    def inference(self, step_id: str, text: str, calls: Sequence[ToolCall] = (), stop: str = "end_of_turn") -> None:
        message = CompletionMessage(content=text, stop_reason=stop, tool_calls=list(calls))
        started = self._now()
        self.step(
            InferenceStep(
                turn_id=TURN, step_id=step_id, started_at=started, completed_at=self._now(), model_response=message
            )
        )

    def tool_run(
        self, step_id: str, call: ToolCall, server_label: str = "deepwiki", approval: str | None = None
    ) -> None:
        """An MCP server tool's activity as it begins the call (activities/tools.py)."""
        tool = ServerTool(toolgroup_id="mcp", provider_id="mcp", name=call.tool_name, server_label=server_label)
        request = ToolRunRequest(turn_id=TURN, step_id=step_id, tool=tool, call=call, approval_request_id=approval)
        self.bodies += [event.body for event in tool_run_started(request)]

    def tool_step(self, step_id: str, calls: list[ToolCall], responses: list[ToolResponse]) -> None:
        self.step(
            ToolExecutionStep(
                turn_id=TURN,
                step_id=step_id,
                started_at=self._now(),
                completed_at=self._now(),
                tool_calls=calls,
                tool_responses=responses,
            )
        )

    def _turn(self, status: TurnStatus, output: CompletionMessage | None, completed: bool) -> Turn:
        return Turn(
            turn_id=TURN,
            session_id="",
            input_messages=[UserMessage(content="What is the weather in Paris?")],
            steps=list(self.steps),
            output_message=output,
            started_at=T0,
            completed_at=self._now() if completed else None,
            status=status,
        )

    def pause(self, calls: list[ToolCall]) -> None:
        output = CompletionMessage(content="", stop_reason="end_of_message", tool_calls=calls)
        self.add(TurnAwaitingInput(turn=self._turn(TurnStatus.AWAITING_INPUT, output, completed=False)))

    def complete(self, output: CompletionMessage) -> None:
        self.add(TurnComplete(turn=self._turn(TurnStatus.COMPLETED, output, completed=True)))

    def fail(self, message: str) -> None:
        self.bodies.append(ErrorChunk(error=StreamError(message=message)).model_dump(mode="json"))


def base(response_id: str = "resp_" + "a" * 48, background: bool = False, **fields: Any) -> Response:
    return Response(
        id=response_id, created_at=int(T0.timestamp()), status="in_progress", model="m", background=background, **fields
    )


WEATHER = ToolCall(call_id="call_w1", tool_name="get_weather", arguments={"city": "Paris"})
TIME = ToolCall(call_id="call_t1", tool_name="get_time", arguments={"city": "Paris"})
WIKI = ToolCall(call_id="call_m1", tool_name="read_wiki_structure", arguments={"repoName": "x/y"})
LISTED = {
    "server_label": "deepwiki",
    "tools": [{"name": "read_wiki_structure", "description": "Pages of a repo", "input_schema": {"type": "object"}}],
    "error": None,
}


# --- the checks every stream passes ---------------------------------------------------------------------


def frames(events: list[EventBase]) -> list[dict[str, Any]]:
    """The events as a client reads them: SSE bytes, framed and parsed back."""
    raw = b"".join(sse_frame(event) for event in events).decode()
    parsed = []
    for frame in raw.split("\n\n")[:-1]:
        event_line, data_line = frame.split("\n")
        data = json.loads(data_line.removeprefix("data: "))
        assert event_line == f"event: {data['type']}"
        assert data["type"] == "error" or "error" not in data
        parsed.append(data)
    return parsed


def checked(response: Response, bodies: list[dict[str, Any]], status: TurnStatus | None = None) -> list[dict[str, Any]]:
    """Render the segment's stream and check what holds for every stream; returns its frames."""
    events = render_stream(response, TURN, bodies, status)
    data = frames(events)
    assert [d["sequence_number"] for d in data] == list(range(len(data)))
    assert data[0]["type"] == "response.created"
    terminal = [d for d in data if d["type"] in ("response.completed", "response.incomplete", "response.failed")]
    assert len(terminal) == 1 and terminal[0] is data[-1]
    for d in data:
        if d["type"].startswith(("response.output_item.", "response.content_part.")):
            assert d["response_id"] == response.id
    # Fed one stored event at a time (as tailed live) and resumed after any N: the same events.
    live = ResponseStream(response, TURN)
    fed = live.open()
    for body in bodies:
        fed += live.feed(body, status)
    assert frames(fed) == data and live.finished
    for after in range(len(data)):
        assert frames(render_stream(response, TURN, bodies, status, starting_after=after)) == data[after + 1 :]
    # The SDK's own models accept every event and the final response, and its stream helper
    # (what `client.responses.stream` runs) accumulates the same output as the terminal event's.
    state = ResponseStreamState(input_tools=omit, text_format=omit)
    for d in data:
        state.handle_event(sdk_events.validate_python(d))
    if data[-1]["type"] == "response.completed":
        accumulated = state._completed_response
        assert accumulated is not None
        expected = SdkResponse.model_validate(data[-1]["response"])
        assert [item.id for item in accumulated.output] == [item.id for item in expected.output]
        assert accumulated.output_text == expected.output_text
    final = SdkResponse.model_validate(data[-1]["response"])
    assert final.model_dump(mode="json", exclude_unset=True) == data[-1]["response"]
    # What a GET shows is what the stream ended with.
    got = render_response(response, TURN, bodies, status)
    assert got.model_dump(mode="json") == data[-1]["response"]
    rendered.append(data)
    return data


def kinds(data: list[dict[str, Any]]) -> list[str]:
    return [d["type"].removeprefix("response.") for d in data]


# --- the orders of spec §5.4 ------------------------------------------------------------------------------


def test_plain_text_order_a() -> None:
    log = Turnlog()
    log.inference_start("s1")
    log.text("s1", "It is ", "sunny ", "in Paris.")
    log.inference("s1", "It is sunny in Paris.")
    log.complete(CompletionMessage(content="It is sunny in Paris."))
    data = checked(base(), log.bodies)
    assert kinds(data) == [
        "created",
        "in_progress",
        "output_item.added",
        "content_part.added",
        "output_text.delta",
        "output_text.delta",
        "output_text.delta",
        "output_text.done",
        "content_part.done",
        "output_item.done",
        "completed",
    ]
    assert [d["response"]["status"] for d in data[:2]] == ["in_progress", "in_progress"]
    added, done = data[2]["item"], data[9]["item"]
    assert added == {
        "type": "message",
        "id": ids.message_id(TURN, "s1"),
        "role": "assistant",
        "status": "in_progress",
        "content": [],
    }
    assert done["status"] == "completed" and done["content"][0]["text"] == "It is sunny in Paris."
    assert data[7]["text"] == "It is sunny in Paris."
    response = data[-1]["response"]
    assert response["status"] == "completed" and response["output"] == [done]
    assert response["completed_at"] == int(log.clock.timestamp())
    assert SdkResponse.model_validate(response).output_text == "It is sunny in Paris."


def test_function_calls_order_b_end_the_response_completed() -> None:
    log = Turnlog()
    log.inference_start("s1")
    log.text("s1", "Let me check.")
    log.call_delta("s1", WEATHER)
    log.call_delta("s1", TIME)
    log.inference("s1", "Let me check.", [WEATHER, TIME])
    # What this renderer does not know is skipped.
    log.bodies += [{"unknown": "kind"}, {"event": {"payload": {"event_type": "turn_paused_differently"}}}]
    log.runtime("a_later_kind", anything=1)
    log.pause([WEATHER, TIME])
    data = checked(base(), log.bodies)
    call_events = [
        "output_item.added",
        "function_call_arguments.delta",
        "function_call_arguments.done",
        "output_item.done",
    ]
    assert kinds(data)[2:] == [
        "output_item.added",
        "content_part.added",
        "output_text.delta",
        "output_text.done",
        "content_part.done",
        "output_item.done",
        *call_events,
        *call_events,
        "completed",
    ]
    added = data[8]["item"]
    assert added["call_id"] == "call_w1" and added["name"] == "get_weather" and added["arguments"] == ""
    assert data[8]["output_index"] == 1 and data[12]["output_index"] == 2
    output = data[-1]["response"]["output"]
    assert [item["type"] for item in output] == ["message", "function_call", "function_call"]
    assert output[1] == {
        "type": "function_call",
        "id": ids.function_call_id(TURN, "call_w1"),
        "call_id": "call_w1",
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
        "status": "completed",
    }
    assert data[-1]["response"]["status"] == "completed"


def mcp_segment(log: Turnlog) -> None:
    log.runtime("tools_listed", **LISTED)
    log.inference_start("s1")
    log.call_delta("s1", WIKI)
    log.inference("s1", "", [WIKI])
    log.tool_run("t1", WIKI)
    meta = mcp_metadata("deepwiki", None)
    log.tool_step(
        "t1",
        [WIKI],
        [ToolResponse(call_id="call_m1", tool_name=WIKI.tool_name, content="Available pages", metadata=meta)],
    )


def test_mcp_listing_and_call_order_c() -> None:
    log = Turnlog()
    mcp_segment(log)
    log.inference_start("s2")
    log.text("s2", "It has pages.")
    log.inference("s2", "It has pages.")
    log.complete(CompletionMessage(content="It has pages."))
    data = checked(base(), log.bodies)
    assert kinds(data) == [
        "created",
        "in_progress",
        "output_item.added",
        "mcp_list_tools.in_progress",
        "mcp_list_tools.completed",
        "output_item.done",
        "output_item.added",
        "mcp_call.in_progress",
        "mcp_call_arguments.delta",
        "mcp_call_arguments.done",
        "mcp_call.completed",
        "output_item.done",
        "output_item.added",
        "content_part.added",
        "output_text.delta",
        "output_text.done",
        "content_part.done",
        "output_item.done",
        "completed",
    ]
    assert data[2]["item"]["tools"] == [] and data[5]["item"]["tools"][0]["name"] == "read_wiki_structure"
    call = data[11]["item"]
    assert call["output"] == "Available pages" and call["error"] is None and call["approval_request_id"] is None
    assert data[8]["delta"] == '{"repoName": "x/y"}'
    assert [item["type"] for item in data[-1]["response"]["output"]] == ["mcp_list_tools", "mcp_call", "message"]


def test_an_mcp_call_is_shown_in_progress_while_it_runs() -> None:
    log = Turnlog()
    log.runtime("tools_listed", **LISTED)
    log.inference_start("s1")
    log.inference("s1", "", [WIKI])
    log.tool_run("t1", WIKI)
    live = ResponseStream(base(), TURN)
    running = frames([event for body in log.bodies for event in live.feed(body)])
    assert kinds(running)[-4:] == [
        "output_item.added",
        "mcp_call.in_progress",
        "mcp_call_arguments.delta",
        "mcp_call_arguments.done",
    ]
    call_id = ids.mcp_call_id(TURN, "t1", "call_m1")
    assert running[-4]["item"] == {
        "type": "mcp_call",
        "id": call_id,
        "server_label": "deepwiki",
        "name": "read_wiki_structure",
        "arguments": "",
        "output": None,
        "error": None,
        "approval_request_id": None,
        "status": "in_progress",
    }
    shown = live.response.output[1]  # what a GET shows meanwhile
    assert (shown.id, shown.status, shown.arguments) == (call_id, "in_progress", '{"repoName": "x/y"}')

    meta = mcp_metadata("deepwiki", None)
    answer = ToolResponse(call_id="call_m1", tool_name=WIKI.tool_name, content="Available pages", metadata=meta)
    log.tool_step("t1", [WIKI], [answer])
    answered = frames(live.feed(log.bodies[-1]))
    assert [(d["type"], d["output_index"], d["item_id"] if "item_id" in d else d["item"]["id"]) for d in answered] == [
        ("response.mcp_call.completed", 1, call_id),
        ("response.output_item.done", 1, call_id),
    ]
    assert answered[1]["item"]["output"] == "Available pages" and answered[1]["item"]["status"] == "completed"


def test_parallel_mcp_calls_end_in_any_order() -> None:
    other = ToolCall(call_id="call_m2", tool_name="read_wiki_structure", arguments={"repoName": "a/b"})
    log = Turnlog()
    log.inference_start("s1")
    log.inference("s1", "", [WIKI, other])
    log.tool_run("t1", WIKI)
    log.tool_run("t2", other)
    meta = mcp_metadata("deepwiki", None)
    log.tool_step(
        "t2", [other], [ToolResponse(call_id="call_m2", tool_name=other.tool_name, content="B", metadata=meta)]
    )
    log.tool_step("t1", [WIKI], [ToolResponse(call_id="call_m1", tool_name=WIKI.tool_name, content="A", metadata=meta)])
    log.inference_start("s2")
    log.inference("s2", "Both.")
    log.complete(CompletionMessage(content="Both."))
    data = checked(base(), log.bodies)
    ended = [(d["type"], d["output_index"]) for d in data if d["type"].startswith("response.mcp_call.")]
    assert ended == [
        ("response.mcp_call.in_progress", 0),
        ("response.mcp_call.in_progress", 1),
        ("response.mcp_call.completed", 1),
        ("response.mcp_call.completed", 0),
    ]
    output = data[-1]["response"]["output"]
    assert [(item["type"], item.get("output")) for item in output] == [
        ("mcp_call", "A"),
        ("mcp_call", "B"),
        ("message", None),
    ]


def test_a_call_still_running_when_the_turn_fails_ends_incomplete() -> None:
    log = Turnlog()
    log.inference_start("s1")
    log.inference("s1", "", [WIKI])
    log.tool_run("t1", WIKI)
    log.fail("The worker gave up.")
    data = checked(base(), log.bodies, TurnStatus.FAILED)
    assert data[-1]["type"] == "response.failed"
    [call] = data[-1]["response"]["output"]
    assert call["type"] == "mcp_call" and call["status"] == "incomplete" and call["output"] is None


def test_failed_mcp_listing_and_call() -> None:
    log = Turnlog()
    log.runtime("tools_listed", server_label="deepwiki", tools=[], error="connection refused")
    log.inference_start("s1")
    log.inference("s1", "", [WIKI])
    log.tool_run("t1", WIKI)
    meta = mcp_metadata("deepwiki", None, error=True)
    log.tool_step(
        "t1", [WIKI], [ToolResponse(call_id="call_m1", tool_name=WIKI.tool_name, content="no such repo", metadata=meta)]
    )
    log.inference_start("s2")
    log.inference("s2", "Sorry.")
    log.complete(CompletionMessage(content="Sorry."))
    data = checked(base(), log.bodies)
    assert "mcp_list_tools.failed" in kinds(data) and "mcp_call.failed" in kinds(data)
    listing, call = data[-1]["response"]["output"][:2]
    assert listing["error"] == "connection refused"
    assert call["status"] == "failed" and call["output"] is None
    assert call["error"] == {"type": "mcp_tool_execution_error", "content": [{"type": "text", "text": "no such repo"}]}


def test_approval_request_order_d_and_the_approved_call_in_the_next_response() -> None:
    log = Turnlog()
    log.runtime("tools_listed", **LISTED)
    log.inference_start("s1")
    log.call_delta("s1", WIKI)
    log.inference("s1", "", [WIKI])
    log.runtime(
        "approval_requested", approval_request_id="mcpr_1", server_label="deepwiki", call=WIKI.model_dump(mode="json")
    )
    log.pause([])
    first = checked(base(), log.bodies)
    assert kinds(first) == [
        "created",
        "in_progress",
        "output_item.added",
        "mcp_list_tools.in_progress",
        "mcp_list_tools.completed",
        "output_item.done",
        "output_item.added",
        "output_item.done",
        "completed",
    ]
    request = {
        "type": "mcp_approval_request",
        "id": "mcpr_1",
        "server_label": "deepwiki",
        "name": WIKI.tool_name,
        "arguments": '{"repoName": "x/y"}',
    }
    assert first[6]["item"] == first[7]["item"] == request
    assert first[-1]["response"]["status"] == "completed"

    # The next response is the turn's next segment: it starts at its segment_started event.
    resumed = Turnlog()
    resumed.steps = list(log.steps)
    resumed.runtime("segment_started", segment_id="resp_" + "b" * 48)
    meta = mcp_metadata("deepwiki", "mcpr_1")
    resumed.tool_run("t1", WIKI, approval="mcpr_1")
    resumed.tool_step(
        "t1", [WIKI], [ToolResponse(call_id="call_m1", tool_name=WIKI.tool_name, content="pages", metadata=meta)]
    )
    resumed.inference_start("s2")
    resumed.text("s2", "Done.")
    resumed.inference("s2", "Done.")
    resumed.complete(CompletionMessage(content="Done."))
    second = checked(base("resp_" + "b" * 48), resumed.bodies)
    output = second[-1]["response"]["output"]
    assert [item["type"] for item in output] == ["mcp_call", "message"]
    assert output[0]["approval_request_id"] == "mcpr_1"


def test_one_pause_holds_a_client_call_and_an_approval_request() -> None:
    log = Turnlog()
    log.inference_start("s1")
    log.call_delta("s1", WEATHER)
    log.call_delta("s1", WIKI)
    log.inference("s1", "", [WEATHER, WIKI])
    log.runtime(
        "approval_requested", approval_request_id="mcpr_1", server_label="deepwiki", call=WIKI.model_dump(mode="json")
    )
    log.pause([WEATHER])
    response = checked(base(), log.bodies)[-1]["response"]
    assert response["status"] == "completed"
    assert [(item["type"], item["id"]) for item in response["output"]] == [
        ("mcp_approval_request", "mcpr_1"),
        ("function_call", ids.function_call_id(TURN, "call_w1")),
    ]


def test_a_denied_call_is_no_mcp_call() -> None:
    log = Turnlog()
    log.runtime("segment_started", segment_id="resp_" + "b" * 48)
    meta = {**mcp_metadata("deepwiki", "mcpr_1"), "denied": True}  # as the workflow answers a denial
    answer = ToolResponse(call_id="call_m1", tool_name=WIKI.tool_name, content="denied by the user", metadata=meta)
    log.tool_step("d1", [WIKI], [answer])
    log.inference_start("s2")
    log.text("s2", "As you wish.")
    log.inference("s2", "As you wish.")
    log.complete(CompletionMessage(content="As you wish."))
    data = checked(base("resp_" + "b" * 48), log.bodies)
    assert [item["type"] for item in data[-1]["response"]["output"]] == ["message"]


def test_a_response_resumed_with_function_outputs_shows_only_its_own_items() -> None:
    log = Turnlog()
    log.runtime("segment_started", segment_id="resp_" + "b" * 48)
    # The client's results: a tool step without an MCP server's metadata (it is the response's input).
    log.tool_step("c1", [WEATHER], [ToolResponse(call_id="call_w1", tool_name="get_weather", content="sunny")])
    log.inference_start("s2")
    log.text("s2", "Sunny.")
    log.inference("s2", "Sunny.")
    log.complete(CompletionMessage(content="Sunny."))
    data = checked(base("resp_" + "b" * 48), log.bodies)
    assert [item["type"] for item in data[-1]["response"]["output"]] == ["message"]


# --- order (e): failure, incomplete, cancellation ------------------------------------------------------------


def test_failure_after_some_text_closes_the_message_and_fails_the_response() -> None:
    log = Turnlog()
    log.inference_start("s1")
    log.text("s1", "It is ")
    log.fail("Inference failed: the model is down")
    data = checked(base(), log.bodies, TurnStatus.FAILED)
    assert kinds(data)[-5:] == [
        "output_text.delta",
        "output_text.done",
        "content_part.done",
        "output_item.done",
        "failed",
    ]
    response = data[-1]["response"]
    assert response["status"] == "failed"
    assert response["error"] == {"code": "server_error", "message": "Inference failed: the model is down"}
    assert response["output"][0]["status"] == "incomplete" and response["output"][0]["content"][0]["text"] == "It is "
    assert response["completed_at"] is None


def test_running_out_of_tokens_is_incomplete() -> None:
    log = Turnlog()
    log.inference_start("s1")
    log.text("s1", "It is sun")
    log.inference("s1", "It is sun", stop="out_of_tokens")
    log.complete(CompletionMessage(content="It is sun", stop_reason="out_of_tokens"))
    data = checked(base(max_output_tokens=16), log.bodies)
    assert kinds(data)[-2:] == ["output_item.done", "incomplete"]
    assert data[-2]["item"]["status"] == "incomplete"
    response = data[-1]["response"]
    assert response["status"] == "incomplete" and response["incomplete_details"] == {"reason": "max_output_tokens"}
    assert response["max_output_tokens"] == 16 and response["completed_at"] is None


def test_cancelled_background_stream_ends_failed_with_status_cancelled_and_no_output() -> None:
    log = Turnlog()
    log.inference_start("s1")
    log.text("s1", "It is ")
    log.fail(f"Turn {TURN} was cancelled.")
    data = checked(base(background=True), log.bodies, TurnStatus.CANCELLED)
    assert kinds(data)[:4] == ["created", "queued", "in_progress", "output_item.added"]
    assert [d["response"]["status"] for d in data[:3]] == ["queued", "queued", "in_progress"]
    assert kinds(data)[-1] == "failed"
    assert data[-1]["response"]["status"] == "cancelled" and data[-1]["response"]["output"] == []
    assert data[-1]["response"]["error"] is None


def test_a_response_read_while_it_streams_shows_the_text_so_far() -> None:
    log = Turnlog()
    log.inference_start("s1")
    log.text("s1", "It is ", "sunny")
    response = render_response(base(), TURN, log.bodies)
    assert response.status == "in_progress" and response.completed_at is None
    [message] = response.output
    assert message.status == "in_progress" and message.content[0].text == "It is sunny"
    stream = ResponseStream(base(), TURN, starting_after=3)  # a client that has the item's opening events
    stream.open()
    assert [event.sequence_number for body in log.bodies for event in stream.feed(body)] == [4, 5]
    assert not stream.finished


def test_a_background_response_nothing_has_run_for_is_queued() -> None:
    stream = ResponseStream(base(background=True), TURN)
    assert kinds(frames(stream.open())) == ["created", "queued"]
    assert stream.response.status == "queued" and not stream.finished
    assert render_response(base(background=True), TURN, []).status == "queued"
    assert render_response(base(), TURN, []).status == "in_progress"


def test_a_shield_refusal_is_the_answer() -> None:
    log = Turnlog()
    log.inference_start("s1")
    log.inference("s1", "Here is how to pick a lock")
    log.step(
        ShieldCallStep(
            turn_id=TURN,
            step_id="sh1",
            started_at=T0,
            completed_at=T0,
            violation=SafetyViolation(violation_level="error", user_message="I can't help with that."),
        )
    )
    log.complete(CompletionMessage(content="I can't help with that."))
    output = checked(base(), log.bodies)[-1]["response"]["output"]
    assert [item["content"][0]["text"] for item in output] == ["Here is how to pick a lock", "I can't help with that."]


# --- retried model calls ------------------------------------------------------------------------------------


class _Recorder:
    """Where the inference activity's delta writer puts its batches: the store's turns (save_turn_progress)."""

    spend = None
    """What the activity's spend ledger would write through; these attempts price nothing."""

    def __init__(self) -> None:
        self.events: list[KeyedEvent] = []
        self.turns = self

    async def save_turn_progress(self, turn_id: str, events: list[KeyedEvent]) -> None:
        self.events += events

    async def events_with_key_prefix(self, turn_id: str, prefix: str) -> list[KeyedEvent]:
        return [event for event in self.events if event.key.startswith(prefix)]


async def _attempt(recorder: _Recorder, attempt: int, chunks: list[str], calls: Sequence[ToolCall] = ()) -> None:
    """One attempt of the step's model call streaming `chunks`, then `calls`, written as activities/inference.py
    does: a later attempt streams only what earlier attempts did not (see _DeltaWriter.add_text, add_call)."""
    request = InferenceRequest.model_construct(turn_id=TURN, step_id="s1")  # type: ignore[call-arg]
    already, calls_already = await InferenceActivities(recorder, None, 0)._streamed_before(request)  # type: ignore[arg-type]
    writer = _DeltaWriter(recorder, request, attempt, 0.0, already, calls_streamed=calls_already)  # type: ignore[arg-type]
    for chunk in chunks:
        await writer.add_text(chunk)
    for call in calls:
        await writer.add_call(call)
    await writer.flush()


def _streamed_calls(recorder: _Recorder) -> list[str]:
    deltas = [e.body["event"]["payload"]["delta"] for e in recorder.events]
    return [delta["tool_call"]["call_id"] for delta in deltas if delta["type"] == "tool_call"]


async def test_a_retried_model_call_streams_a_tool_call_an_earlier_attempt_streamed_once() -> None:
    recorder = _Recorder()
    await _attempt(recorder, 1, [], [WEATHER])  # the worker died after the call was streamed
    await _attempt(recorder, 2, [], [WEATHER, TIME])  # the same call again, and one more
    assert _streamed_calls(recorder) == ["call_w1", "call_t1"]
    other_id = WEATHER.model_copy(update={"call_id": "call_w2"})  # a model that names its calls anew each time
    await _attempt(recorder, 3, [], [other_id])
    assert _streamed_calls(recorder) == ["call_w1", "call_t1", "call_w2"]


@pytest.mark.parametrize(
    ("second_attempt", "final"),
    [
        (["It is ", "sunny ", "in Paris."], "It is sunny in Paris."),  # the same reply again
        (["Paris: ", "sunny."], "Paris: sunny."),  # another reply: streamed as it comes
    ],
)
async def test_a_retried_model_call_streams_its_stored_deltas_and_ends_with_the_final_text(
    second_attempt: list[str], final: str
) -> None:
    recorder = _Recorder()
    await _attempt(recorder, 1, ["It is ", "sun"])  # the worker died here
    await _attempt(recorder, 2, second_attempt)
    log = Turnlog()
    log.inference_start("s1")
    log.bodies += [event.body for event in recorder.events]
    log.inference("s1", final)
    log.complete(CompletionMessage(content=final))
    data = checked(base(), log.bodies)
    deltas = [d["delta"] for d in data if d["type"] == "response.output_text.delta"]
    stored = [e.body["event"]["payload"]["delta"]["text"] for e in recorder.events]
    assert deltas == stored
    if final.startswith("It is sun"):
        assert "".join(deltas) == final  # one uninterrupted answer, no repeats
    assert [d["text"] for d in data if d["type"] == "response.output_text.done"] == [final]
    assert data[-1]["response"]["output"][0]["content"][0]["text"] == final


async def test_streamed_deltas_are_stored_as_their_events_dump() -> None:
    recorder = _Recorder()
    await _attempt(recorder, 1, ["Grüße ", "😀", ""], [WEATHER])
    payloads = [
        StepProgress(step_type="inference", step_id="s1", delta=TextDelta(text=text)) for text in ["Grüße ", "😀", ""]
    ]
    payloads.append(
        StepProgress(
            step_type="inference", step_id="s1", delta=ToolCallDelta(tool_call=WEATHER, parse_status="succeeded")
        )
    )
    assert [e.body for e in recorder.events] == [chunk_of(p).model_dump(mode="json") for p in payloads]
    assert [e.key for e in recorder.events] == [f"s1:attempt1:delta:{n}" for n in range(4)]


# --- ids, echo, framing ---------------------------------------------------------------------------------------


def test_ids() -> None:
    assert ids.new_response_id().startswith("resp_") and len(ids.new_response_id()) == 5 + 48
    conversation = ids.new_conversation_id()
    assert conversation.startswith("conv_") and len(conversation) == 53 and conversation[5:] == conversation[5:].lower()
    assert ids.new_response_id() != ids.new_response_id()
    assert ids.message_id(TURN, "s1") == ids.message_id(TURN, "s1") != ids.message_id(TURN, "s2")
    assert ids.message_id("turn-2", "s1") != ids.message_id(TURN, "s1")
    assert len(ids.function_call_id(TURN, "call_w1")) == 3 + 48


def test_the_echoed_mcp_tool_carries_no_credentials() -> None:
    tool = {
        "type": "mcp",
        "server_label": "d",
        "server_url": "https://x",
        "headers": {"X-Key": "s3cret"},
        "authorization": "tok",
    }
    function = {"type": "function", "name": "f", "parameters": {"type": "object"}, "headers": "kept: not an mcp tool"}
    response = base(tools=[tool, function])
    assert response.tools == [{"type": "mcp", "server_label": "d", "server_url": "https://x"}, function]
    assert "s3cret" not in sse_frame(ResponseStream(response, TURN).open()[0]).decode()
    assert SdkResponse.model_validate(response.model_dump(mode="json")).tools[0].server_label == "d"


def test_a_full_response_object_has_every_field_the_clients_require() -> None:
    body = base(instructions="Be brief.", metadata={"k": "v"}).model_dump(mode="json")
    for key in (
        "id",
        "object",
        "created_at",
        "status",
        "model",
        "output",
        "store",
        "parallel_tool_calls",
        "tool_choice",
        "tools",
    ):
        assert key in body
    for key in ("error", "incomplete_details", "usage", "previous_response_id", "conversation", "user"):
        assert body[key] is None
    sampling = [body[key] for key in ("temperature", "top_p", "presence_penalty", "frequency_penalty")]
    assert sampling == [1.0, 1.0, 0.0, 0.0]
    SdkResponse.model_validate(body)


_LSC_READS = """
import json, sys
from pydantic import BaseModel, TypeAdapter
from llama_stack_client._models import construct_type
from llama_stack_client.types.response_object import ResponseObject
from llama_stack_client.types.response_object_stream import ResponseObjectStream

strict = TypeAdapter(ResponseObjectStream)
# It names a few events as OGX does (response.mcp_call.arguments.*), lacks response.queued, and
# types mcp_call.error as OGX's string where SDK 3.51 has an object: those it parses leniently.
# Everything else must validate strictly.
events = ResponseObjectStream.__origin__.__args__
known = {event.model_fields["type"].annotation.__args__[0].__args__[0] for event in events}
for data in json.load(sys.stdin):
    mcp_error = '"type": "mcp_tool_execution_error"' in json.dumps(data)
    if data["type"] in known and not mcp_error:
        strict.validate_python(data)
    event = construct_type(type_=ResponseObjectStream, value=data)  # how its Stream parses an event
    assert event.type == data["type"], data["type"]
    if "item" in data and not mcp_error:  # a failed mcp_call's item stays a dict: its step is left open
        assert isinstance(event.item, BaseModel), f"{data}: item left a dict"
    if "response" in data and not mcp_error:
        ResponseObject.model_validate(data["response"])
    if "response" in data:
        construct_type(type_=ResponseObject, value=data["response"]).output_text  # what the Agent reads
"""


@pytest.mark.skipif(
    not LSC_PYTHON.exists(), reason="no .venv-lsc with llama-stack-client 0.7.5 (`make test` builds it)"
)
def test_llama_stack_client_reads_every_event_typed() -> None:
    """Its typed union needs `response_id` on item events, else an item stays a dict and the agent
    drops the function call (spec §9b)."""
    rendered.clear()
    for scenario in (
        test_plain_text_order_a,
        test_function_calls_order_b_end_the_response_completed,
        test_mcp_listing_and_call_order_c,
        test_failed_mcp_listing_and_call,
        test_approval_request_order_d_and_the_approved_call_in_the_next_response,
        test_failure_after_some_text_closes_the_message_and_fails_the_response,
        test_running_out_of_tokens_is_incomplete,
        test_cancelled_background_stream_ends_failed_with_status_cancelled_and_no_output,
    ):
        scenario()
    events = [data for stream in rendered for data in stream]
    result = subprocess.run(
        [str(LSC_PYTHON), "-c", _LSC_READS], input=json.dumps(events), capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
