"""Steps, turns and sessions."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from domain.content import (
    CompletionMessage,
    InputMessage,
    ToolCall,
    ToolResponse,
    UserMessage,
    WireModel,
)


class SafetyViolation(WireModel):
    violation_level: Literal["info", "warn", "error"]
    user_message: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class StepBase(WireModel):
    turn_id: str
    step_id: str
    started_at: datetime | None = None
    completed_at: datetime | None = None


class InferenceStep(StepBase):
    step_type: Literal["inference"] = "inference"
    model_response: CompletionMessage


class ToolExecutionStep(StepBase):
    step_type: Literal["tool_execution"] = "tool_execution"
    tool_calls: list[ToolCall]
    tool_responses: list[ToolResponse]
    followup_messages: SkipJsonSchema[list[UserMessage]] = Field(
        default_factory=list, exclude_if=lambda messages: not messages
    )
    """Input that came with these results when a paused detached turn was resumed: the model reads it
    right after them. Left out of the JSON when empty and out of the llama-stack schema, so llama-stack
    turns look as they always did."""


class ShieldCallStep(StepBase):
    step_type: Literal["shield_call"] = "shield_call"
    violation: SafetyViolation | None = None


Step = Annotated[InferenceStep | ToolExecutionStep | ShieldCallStep, Field(discriminator="step_type")]
StepType = Literal["inference", "tool_execution", "shield_call"]


class TurnStatus(StrEnum):
    """Where a turn is in its life. Not in the reference wire format; clients ignore extra keys."""

    RUNNING = "running"
    AWAITING_INPUT = "awaiting_input"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    """Paused longer than the configured awaiting-input timeout."""

    @property
    def is_final(self) -> bool:
        return self not in (TurnStatus.RUNNING, TurnStatus.AWAITING_INPUT)


class Turn(WireModel):
    turn_id: str
    session_id: str
    input_messages: list[InputMessage]
    steps: list[Step] = Field(default_factory=list)
    output_message: CompletionMessage | None = None
    output_attachments: list[dict[str, Any]] = Field(default_factory=list)
    started_at: datetime
    completed_at: datetime | None = None
    status: TurnStatus = TurnStatus.RUNNING
    error: str | None = None
    """Why a turn ended without an answer (failed, cancelled, expired); null otherwise."""


class Session(WireModel):
    session_id: str
    session_name: str
    turns: list[Turn] = Field(default_factory=list)
    started_at: datetime
