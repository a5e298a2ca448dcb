"""The chunks of a turn's event stream (`AgentTurnResponseStreamChunk`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from domain.content import ToolCall, WireModel
from domain.turns import Step, StepType, Turn


class TextDelta(WireModel):
    type: Literal["text"] = "text"
    text: str


class ToolCallDelta(WireModel):
    type: Literal["tool_call"] = "tool_call"
    tool_call: ToolCall | str
    parse_status: Literal["started", "in_progress", "failed", "succeeded"]


Delta = Annotated[TextDelta | ToolCallDelta, Field(discriminator="type")]


class StepStart(WireModel):
    event_type: Literal["step_start"] = "step_start"
    step_type: StepType
    step_id: str
    metadata: dict[str, Any] = Field(default_factory=dict)


class StepProgress(WireModel):
    event_type: Literal["step_progress"] = "step_progress"
    step_type: StepType
    step_id: str
    delta: Delta


class StepComplete(WireModel):
    event_type: Literal["step_complete"] = "step_complete"
    step_type: StepType
    step_id: str
    step_details: Step


class TurnComplete(WireModel):
    event_type: Literal["turn_complete"] = "turn_complete"
    turn: Turn


class TurnAwaitingInput(WireModel):
    event_type: Literal["turn_awaiting_input"] = "turn_awaiting_input"
    turn: Turn


Payload = Annotated[
    StepStart | StepProgress | StepComplete | TurnComplete | TurnAwaitingInput,
    Field(discriminator="event_type"),
]


class TurnEvent(WireModel):
    payload: Payload


class StreamChunk(WireModel):
    """One SSE `data:` line of a normal event. Never carries an `error` key: clients test for it."""

    event: TurnEvent


class StreamError(WireModel):
    message: str


class ErrorChunk(WireModel):
    """The one final event of a stream whose turn failed."""

    error: StreamError


Chunk = StreamChunk | ErrorChunk


PAUSE_KEY_PREFIX = "turn:awaiting_input:"
"""The key of a pause's stored event is this and the turn's step count when it paused (workflows/contracts.py):
readers of the store find a turn's latest pause by it."""


class KeyedEvent(WireModel):
    """A stream event as stored: its key makes a retried write of the same event a no-op."""

    key: str
    body: dict[str, Any]


def chunk_of(payload: Any) -> StreamChunk:
    return StreamChunk(event=TurnEvent(payload=payload))
