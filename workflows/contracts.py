"""What crosses the workflow boundary: its input, its messages, its activities' inputs and results.

Kept free of I/O libraries so the workflow sandbox imports it cheaply.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, Field

from domain.agents import AgentConfig, ToolConfig
from domain.content import CompletionMessage, InputMessage, ToolResponse
from domain.events import KeyedEvent
from domain.turns import Step, TurnStatus

TASK_QUEUE_DEFAULT = "durable-agents"
INFER_ACTIVITY = "infer"
SAVE_PROGRESS_ACTIVITY = "save_turn_progress"
INFERENCE_HEARTBEAT_TIMEOUT = timedelta(seconds=5)
"""How soon a model call on a dead worker is retried elsewhere; the activity beats every second."""
PROVIDER_REJECTED = "ProviderRejected"
"""ApplicationError type of an inference failure that retrying cannot fix."""
NOT_AWAITING_INPUT = "NotAwaitingInput"
TOOL_RESPONSES_MISMATCH = "ToolResponsesMismatch"
"""Why the submit_tool_responses update can be rejected."""


def turn_workflow_id(turn_id: str) -> str:
    return f"turn-{turn_id}"


def pause_event_key(pause_number: int) -> str:
    return f"turn:awaiting_input:{pause_number}"


class TurnStart(BaseModel):
    agent_id: str
    session_id: str
    turn_id: str
    agent_config: AgentConfig
    input_messages: list[InputMessage]
    started_at: datetime
    tool_config: ToolConfig | None = None
    """Per-turn tool configuration; replaces the agent's for this turn."""
    inference_max_attempts: int = 8
    """Attempts at one model call before the turn fails; retryable errors are 429, 5xx and timeouts."""
    awaiting_input_timeout: timedelta | None = None
    """How long a paused turn waits for client tool results before it expires; None waits forever."""


class ToolResponsesSubmission(BaseModel):
    tool_responses: list[ToolResponse]


class InferenceRequest(BaseModel):
    turn_id: str
    session_id: str
    step_id: str
    turn_started_at: datetime
    agent_config: AgentConfig
    tool_config: ToolConfig
    input_messages: list[InputMessage]
    steps: list[Step]
    events_before: list[KeyedEvent] = Field(default_factory=list)
    """Events the workflow emitted since its last write; stored before this step's own."""


class InferenceResult(BaseModel):
    message: CompletionMessage


class TurnProgress(BaseModel):
    turn_id: str
    events: list[KeyedEvent] = Field(default_factory=list)
    first_new_step: int = 0
    new_steps: list[Step] = Field(default_factory=list)
    status: TurnStatus | None = None
    output_message: CompletionMessage | None = None
    completed_at: datetime | None = None
    error: str | None = None
