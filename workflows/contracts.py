"""What crosses the workflow boundary: its input, its messages, its activities' inputs and results.

Kept free of I/O libraries so the workflow sandbox imports it cheaply.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, Field

from domain.agents import AgentConfig, AgentToolGroup, ToolConfig
from domain.content import CompletionMessage, InputMessage, ToolCall, ToolResponse
from domain.events import KeyedEvent
from domain.turns import SafetyViolation, Step, TurnStatus

INFER_ACTIVITY = "infer"
RESOLVE_TOOLS_ACTIVITY = "resolve_tools"
RUN_TOOL_ACTIVITY = "run_tool"
RUN_SHIELDS_ACTIVITY = "run_shields"
TOOLS_UNAVAILABLE = "ToolsUnavailable"
"""ApplicationError type when a turn's toolgroups cannot be resolved (unknown group, name clash)."""
SAVE_PROGRESS_ACTIVITY = "save_turn_progress"
LOAD_STEPS_ACTIVITY = "load_turn_steps"
FETCH_DOCUMENTS_ACTIVITY = "fetch_documents"
DOCUMENT_UNAVAILABLE = "DocumentUnavailable"
INFERENCE_HEARTBEAT_TIMEOUT = timedelta(seconds=5)
"""How soon a model call on a dead worker is retried elsewhere; the activity beats every second."""
TOOL_HEARTBEAT_TIMEOUT = timedelta(seconds=10)
PROVIDER_REJECTED = "ProviderRejected"
"""ApplicationError type of an inference failure that retrying cannot fix."""
NOT_AWAITING_INPUT = "NotAwaitingInput"
TOOL_RESPONSES_MISMATCH = "ToolResponsesMismatch"
"""Why the submit_tool_responses update can be rejected."""
TOOL_RESPONSES_SIGNAL = "submit_tool_responses_signal"
"""The signal an operator sends (Temporal UI, `temporal workflow signal`) to resume a paused turn
with the same JSON as the update; one that does not fit is ignored and the reason shown."""


TURN_WORKFLOW_PREFIX = "turn-"


def turn_workflow_id(turn_id: str) -> str:
    return f"{TURN_WORKFLOW_PREFIX}{turn_id}"


def pause_event_key(pause_mark: int) -> str:
    """The key of a pause's event; `pause_mark` is the turn's step count when it paused."""
    return f"turn:awaiting_input:{pause_mark}"


class PendingWrites(BaseModel):
    """What the workflow decided since its last write: steps and events, written by the next activity
    before its own, so each is recorded once and in order."""

    events: list[KeyedEvent] = Field(default_factory=list)
    first_new_step: int = 0
    new_steps: list[Step] = Field(default_factory=list)
    status: TurnStatus | None = None
    """Set when the turn's stored status is out of date (running again after a pause)."""
    session_id: str | None = None
    agent_id: str | None = None
    """With `status`: the turn's ids, for the state change's log line."""


class ServerTool(BaseModel):
    """A tool the runtime runs itself, resolved from a toolgroup when the turn starts."""

    toolgroup_id: str
    provider_id: str
    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=dict)
    args: dict[str, Any] = Field(default_factory=dict)
    """The toolgroup's arguments, merged into every call (e.g. a vector DB id)."""
    mcp_uri: str | None = None


class Continuation(BaseModel):
    """What a turn carries into its next run after continue-as-new; its steps are in the store."""

    inferences: int
    last_time: datetime
    server_tools: list[ServerTool]


class TurnStart(BaseModel):
    agent_id: str
    session_id: str
    turn_id: str
    agent_config: AgentConfig
    input_messages: list[InputMessage]
    started_at: datetime
    tool_config: ToolConfig | None = None
    """Per-turn tool configuration; replaces the agent's for this turn."""
    toolgroups: list[AgentToolGroup] | None = None
    """Per-turn toolgroups; replace the agent's for this turn, as in the reference."""
    document_urls: list[str] = Field(default_factory=list)
    """text/* documents to fetch and append to the last input message before the first inference."""
    inference_max_attempts: int = 8
    """Attempts at one model call before the turn fails; retryable errors are 429, 5xx and timeouts."""
    awaiting_input_timeout: timedelta | None = None
    """How long a paused turn waits for client tool results before it expires; None waits forever."""
    continue_as_new_after_events: int = 4000
    """History length at which a long turn continues as a new run, well before Temporal's limits."""
    continuation: Continuation | None = None
    reopened_with: list[ToolResponse] | None = None
    """Results a client submitted for a completed turn (ReAct-style clients parse calls themselves)."""


class ToolResponsesSubmission(BaseModel):
    tool_responses: list[ToolResponse]


class InferenceRequest(BaseModel):
    turn_id: str
    session_id: str
    step_id: str
    agent_config: AgentConfig
    tool_config: ToolConfig
    server_tools: list[ServerTool] = Field(default_factory=list)
    pending: PendingWrites = Field(default_factory=PendingWrites)


class FetchDocumentsRequest(BaseModel):
    session_id: str
    turn_id: str
    urls: list[str]


class FetchDocumentsResult(BaseModel):
    input_messages: list[InputMessage]


class LoadStepsRequest(BaseModel):
    session_id: str
    turn_id: str


class LoadStepsResult(BaseModel):
    steps: list[Step]


class ResolveToolsRequest(BaseModel):
    toolgroups: list[AgentToolGroup]
    client_tool_names: list[str]


class ResolveToolsResult(BaseModel):
    tools: list[ServerTool]


class ToolRunRequest(BaseModel):
    turn_id: str
    session_id: str
    step_id: str
    tool: ServerTool
    call: ToolCall
    pending: PendingWrites = Field(default_factory=PendingWrites)


Touchpoint = Literal["user-input", "assistant-output"]


class ShieldRequest(BaseModel):
    turn_id: str
    session_id: str
    step_id: str
    touchpoint: Touchpoint
    shield_ids: list[str]
    texts: list[str]
    """What is new at this touchpoint: the user's input or tool results, or the model's message."""
    instructions: str
    pending: PendingWrites = Field(default_factory=PendingWrites)


class ShieldResult(BaseModel):
    violation: SafetyViolation | None = None


class InferenceResult(BaseModel):
    message: CompletionMessage


class TurnProgress(BaseModel):
    """A status change: the pending writes, the turn's new status and output, and its final event —
    `turn_awaiting_input` / `turn_complete` (built from the stored turn) or an error message."""

    turn_id: str
    session_id: str
    pending: PendingWrites = Field(default_factory=PendingWrites)
    status: TurnStatus
    output_message: CompletionMessage | None = None
    completed_at: datetime | None = None
    error: str | None = None
    event_key: str | None = None
    event: Literal["turn_awaiting_input", "turn_complete", "error"] | None = None
    agent_id: str | None = None
    """For the state change's log line; absent in turns started before it was added."""
