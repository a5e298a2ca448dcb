"""What crosses the workflow boundary: its input, its messages, its activities' inputs and results.

Kept free of I/O libraries so the workflow sandbox imports it cheaply.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, Field

from domain.agents import AgentConfig, AgentToolGroup, ToolConfig
from domain.content import CompletionMessage, InputMessage, ToolCall, ToolResponse, UserMessage
from domain.events import PAUSE_KEY_PREFIX, KeyedEvent, StepComplete, chunk_of
from domain.turn_settings import ApprovalDecision, McpServer
from domain.turns import SafetyViolation, Step, TurnStatus

INFER_ACTIVITY = "infer"
RESOLVE_TOOLS_ACTIVITY = "resolve_tools"
LIST_MCP_SERVER_ACTIVITY = "list_mcp_server"
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
REPLY_TOO_LARGE = "ReplyTooLarge"
"""ApplicationError type of a model reply larger than a turn can carry."""
PAYLOAD_BUDGET_BYTES = 1_500_000
"""The most one workflow input, activity input or activity result may carry: Temporal refuses
payloads over 2 MB (and retries the workflow task that sent one forever), so large data travels
as references to stored rows and what must travel is held under this."""
NOT_AWAITING_INPUT = "NotAwaitingInput"
STEER_UPDATE = "steer"
TOOL_RESPONSES_MISMATCH = "ToolResponsesMismatch"
"""Why the submit_tool_responses update can be rejected."""
TOOL_RESPONSES_SIGNAL = "submit_tool_responses_signal"
"""The signal an operator sends (Temporal UI, `temporal workflow signal`) to resume a paused turn
with the same JSON as the update; one that does not fit is ignored and the reason shown."""
CHECK_SPEND_ACTIVITY = "check_session_spend"
SPEND_LIMIT_SIGNAL = "spend_limit_changed"
"""Sent to a turn when its session's spending limit changes: a turn held at its next model call checks again."""


TURN_WORKFLOW_PREFIX = "turn-"


def turn_workflow_id(turn_id: str) -> str:
    return f"{TURN_WORKFLOW_PREFIX}{turn_id}"


def pause_event_key(pause_mark: int) -> str:
    """The key of a pause's event; `pause_mark` is the turn's step count when it paused."""
    return f"{PAUSE_KEY_PREFIX}{pause_mark}"


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
    step_events: bool = False
    """True: each new step's step_complete event is made from the step by the writer, so a step
    travels once; earlier releases carried those events in `events` too."""

    @property
    def no_steps_yet(self) -> bool:
        """The turn has no step, written or carried here: the call these writes go with is its first model call."""
        return self.first_new_step == 0 and not self.new_steps

    def all_events(self) -> list[KeyedEvent]:
        """The events to write, in order: the new steps' step_complete events, then the others."""
        derived = [step_complete_event(step) for step in self.new_steps] if self.step_events else []
        return [*derived, *self.events]


def runtime_event(key: str, kind: str, **fields: Any) -> KeyedEvent:
    """An event of the runtime's own (not a llama-stack stream chunk): a top-level "runtime" key,
    which the llama-stack stream skips."""
    return KeyedEvent(key=key, body={"runtime": {"kind": kind, **fields}})


def steer_cut_key(response_id: str) -> str:
    """The key of the runtime event the API writes to mark a steer of the response, before sending it: the
    response's model call in flight stops reading its reply at the next token (activities/inference.py)."""
    return f"steer-cut:{response_id}"


def step_complete_event(step: Step) -> KeyedEvent:
    payload = StepComplete(step_type=step.step_type, step_id=step.step_id, step_details=step)
    return KeyedEvent(key=f"{step.step_id}:complete", body=chunk_of(payload).model_dump(mode="json"))


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
    server_label: str | None = None
    """Set for a tool of an MCP server named in the turn's request (TurnPlan.mcp_servers): its
    headers are the turn's sealed ones for this label, and its results say which server answered."""


class FileSearchConfig(BaseModel):
    """A Responses `file_search` tool as the turn runs it: which of the tenant's vector stores to search, and how."""

    vector_store_ids: list[str]
    max_num_results: int = 10
    filters: dict[str, Any] | None = None
    score_threshold: float = 0.0
    embedding_weight: float | None = None
    text_weight: float | None = None
    """Both set: hybrid search with these weights (ranking_options.hybrid_search); else vector search."""
    include_results: bool = False
    """The request asked `include: ["file_search_call.results"]`: the call's item shows its results."""


class WebSearchConfig(BaseModel):
    """A Responses `web_search` tool as the turn runs it: what the request narrowed (tool_runtime/web_search.py)."""

    allowed_domains: list[str] | None = None
    max_results: int | None = None
    """None: the operator's DA_WEB_SEARCH_MAX_RESULTS."""


class CodeToolConfig(BaseModel):
    """A sandboxed code tool of the turn's request (workflows/code_tools.py): a Responses `code_interpreter`
    or `shell` in a container, or llama-stack's `builtin::code_interpreter`; the container was made or
    checked to be the tenant's when the request came in."""

    kind: Literal["code_interpreter", "shell"]
    container_id: str


class Continuation(BaseModel):
    """What a turn carries into its next run after continue-as-new; its steps are in the store."""

    inferences: int
    last_time: datetime
    server_tools: list[ServerTool]
    listed_servers: list[str] = Field(default_factory=list)
    """Labels of the request-named MCP servers already listed (successfully or not) in this turn."""
    segment_server_calls: int = 0
    """Server calls run in the current segment so far (TurnPlan.max_tool_calls)."""


class AgentOutline(BaseModel):
    """What the workflow decides with, taken from the agent's config when the turn starts. The rest
    (instructions, tool definitions, sampling) is read by the activities from the agent's stored row,
    which never changes: agents have no update, and deleting one stops its turns first."""

    model: str
    client_tool_names: list[str] = Field(default_factory=list)
    toolgroups: list[AgentToolGroup] | None = None
    tool_config: ToolConfig | None = None
    max_infer_iters: int | None = None
    input_shields: list[str] = Field(default_factory=list)
    output_shields: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, config: AgentConfig) -> AgentOutline:
        return cls(
            model=config.model,
            client_tool_names=sorted(tool.name for tool in config.client_tools or []),
            toolgroups=config.toolgroups,
            tool_config=config.tool_config,
            max_infer_iters=config.max_infer_iters,
            input_shields=config.input_shields or [],
            output_shields=config.output_shields or [],
        )


class TurnPlan(BaseModel):
    """What the workflow decides with, whatever dialect started the turn. The rest (instructions,
    tool definitions, sampling) is read by the activities: from the agent's row for llama-stack
    turns, from the `turn_settings` row named by `settings_id` for detached (Responses) turns."""

    model: str
    client_tool_names: list[str] = Field(default_factory=list)
    toolgroups: list[AgentToolGroup] | None = None
    """llama-stack registered or built-in toolgroups."""
    mcp_servers: list[McpServer] = Field(default_factory=list)
    """MCP servers named in the request itself (Responses `mcp` tools)."""
    tool_config: ToolConfig | None = None
    max_infer_iters: int | None = None
    max_tool_calls: int | None = None
    """The most server (MCP, built-in) calls one segment runs; further calls are answered unexecuted."""
    input_shields: list[str] = Field(default_factory=list)
    output_shields: list[str] = Field(default_factory=list)
    settings_id: str | None = None
    """None: activities read the agent's row (llama-stack turns); else this turn_settings row."""
    compact_threshold: int | None = None
    """Estimated tokens above which the turn compacts its prior context before its first model call
    (workflows/compaction.py); None: never."""
    file_search: FileSearchConfig | None = None
    """The request's `file_search` tool: offered to the model as a server tool while this segment runs."""
    web_search: WebSearchConfig | None = None
    """The request's `web_search` tool: offered to the model as a server tool while this segment runs."""
    code_tools: list[CodeToolConfig] = Field(default_factory=list)
    """The request's sandboxed code tools (code_interpreter, shell), each bound to its container."""

    @classmethod
    def of(cls, outline: AgentOutline) -> TurnPlan:
        return cls(
            model=outline.model,
            client_tool_names=outline.client_tool_names,
            toolgroups=outline.toolgroups,
            tool_config=outline.tool_config,
            max_infer_iters=outline.max_infer_iters,
            input_shields=outline.input_shields,
            output_shields=outline.output_shields,
        )


class TurnStart(BaseModel):
    """The workflow's input. It carries references, not data: the user's messages are in the turn's
    row and the agent's config in the agent's row (or the turn's settings row), so its size does not
    depend on what the caller sent."""

    agent_id: str | None = None
    session_id: str | None = None
    """Both None for a detached turn (a Responses turn), which belongs to no agent or session."""
    turn_id: str
    plan: TurnPlan | None = None
    segment_id: str | None = None
    """The id of the turn's first segment (the first response's id), for search attributes."""
    agent: AgentOutline | None = None
    """Turns started by earlier releases carry this instead of `plan`."""
    agent_config: AgentConfig | None = None
    """Turns started by earlier releases carry the whole config instead of `agent`."""
    input_messages: list[InputMessage] = Field(default_factory=list)
    """Turns started by earlier releases carry their messages; now they are read from the turn's row."""
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
    spend_session_id: str | None = None
    """The Agents API session whose spend the turn's model calls count (a session turn is otherwise detached):
    each call is first checked against that session's spending limit, and the turn waits at the call while the
    limit is reached. None: not counted."""
    inference_writes_end: bool = False
    """The inference activity may write an answer that ends the turn as its end (InferenceRequest.ending);
    turns started by earlier releases replay with the workflow writing every end. Said here rather than
    by a `workflow.patched` marker, whose first use in a run also upserts Temporal's
    TemporalChangeVersion search attribute: two history events and a visibility write in every turn."""
    cut_steering: bool = False
    """The turn may be steered although its model calls are local and may write its end: the API marks the cut
    (InferenceRequest.steer_cut_key) before it sends the `steer` update, which the workflow takes once the
    local call has let go of its workflow task; a call that sees the mark writes no end, and the workflow
    waits for the steer (workflows/turn_steps/steering.py). A response made over a WebSocket; False for turns
    of earlier releases, steered through a regular activity's call."""
    local_inference: bool = False
    """Model calls run as local activities (workflows/turn_steps/inference.py): no activity task and its
    events, no workflow task to take the result, a marker instead. For segments nobody is expected to
    cancel or query while a model call runs (a foreground response): a cancel or a query then waits for
    the workflow task the call holds open, up to 80% of its timeout. False for turns of earlier releases."""

    def turn_plan(self) -> TurnPlan:
        if self.plan is not None:
            return self.plan
        if self.agent is not None:
            return TurnPlan.of(self.agent)
        if self.agent_config is None:
            raise ValueError(f"Turn {self.turn_id}'s start carries no plan")
        return TurnPlan.of(AgentOutline.of(self.agent_config))


class TurnOutcome(BaseModel):
    """The workflow's result: how the turn ended. The turn itself is in the store."""

    turn_id: str
    status: TurnStatus
    steps: int
    error: str | None = None


class ToolResponsesSubmission(BaseModel):
    """What resumes a paused turn (update `submit_tool_responses`, or its signal). Outputs must answer
    exactly the pending client calls, decisions exactly the pending approval requests."""

    tool_responses: list[ToolResponse]
    """Required (empty when the pause holds only approvals): a signal of another shape is refused."""
    approvals: list[ApprovalDecision] = Field(default_factory=list)
    followup_messages: list[InputMessage] = Field(default_factory=list)
    """Further input (a new user message) the model reads right after the tool results."""
    plan: TurnPlan | None = None
    """The new segment's tools and settings; None keeps the current ones."""
    segment_id: str | None = None
    """The id of the segment (response) this resumption starts."""
    local_inference: bool | None = None
    """The new segment's model calls as local activities (TurnStart.local_inference); None keeps the current."""


class TurnEnding(BaseModel):
    """Given to an inference when an answer ending the turn needs nothing more (no output shields): the
    activity then writes the turn's end itself, sparing the workflow a task and a store write."""

    step_index: int
    """The inference step's position in the turn."""
    started_at: datetime
    """The inference step's start, as the workflow recorded it."""
    last_inference: bool
    """The turn's max_infer_iters-th model call: an answer with tool calls ends the turn too."""
    event_key: str
    """The key of the turn_complete event."""
    agent_id: str | None = None
    """For the state change's log line."""


class InferenceRequest(BaseModel):
    turn_id: str
    session_id: str | None = None
    step_id: str
    agent_config: AgentConfig | None = None
    """None: the activity reads the turn's agent from the store (earlier releases carried it here)."""
    tool_config: ToolConfig
    server_tools: list[ServerTool] = Field(default_factory=list)
    settings_id: str | None = None
    """None: the activity reads the turn's agent (llama-stack turns); else this turn_settings row."""
    pending: PendingWrites = Field(default_factory=PendingWrites)
    ending: TurnEnding | None = None
    """None: the workflow writes the turn's end, whatever the answer."""
    spend_session_id: str | None = None
    """Record what the call cost in this session's spend ledger (TurnStart.spend_session_id)."""
    compaction: bool = False
    """The turn's plan compacts: its context may have been summarised (its own compaction step, or for a
    llama-stack turn its session's latest one), and the model reads the summary (activities/conversation.py)."""
    steer_cut_key: str | None = None
    """Set for a steerable response's model call: the key of the event (`steer_cut_key`) that says a steer of the
    response was accepted. Seen while the reply streams, the call stops at that token and returns its text so far."""


class FetchDocumentsRequest(BaseModel):
    session_id: str | None = None
    turn_id: str
    urls: list[str]


class FetchDocumentsResult(BaseModel):
    input_messages: list[InputMessage] = Field(default_factory=list)
    """Empty: the messages with their documents are in the turn's row (earlier releases returned them)."""


class LoadStepsRequest(BaseModel):
    session_id: str | None = None
    turn_id: str


class LoadStepsResult(BaseModel):
    steps: list[Step]
    contents_left_out: bool = False
    """True when the steps were too large to carry whole: texts and results are empty (they are in
    the store). The workflow needs only their kinds and calls."""


class ResolveToolsRequest(BaseModel):
    toolgroups: list[AgentToolGroup]
    client_tool_names: list[str]


class ResolveToolsResult(BaseModel):
    tools: list[ServerTool]


class ListMcpServerRequest(BaseModel):
    turn_id: str
    server: McpServer


class ListMcpServerResult(BaseModel):
    tools: list[ServerTool] = Field(default_factory=list)
    error: str | None = None
    """Why the server could not be listed; the turn goes on without its tools."""


class ToolRunRequest(BaseModel):
    turn_id: str
    session_id: str | None = None
    step_id: str
    tool: ServerTool
    call: ToolCall
    approval_request_id: str | None = None
    """The approval this call runs under (an MCP server's call the caller approved)."""
    pending: PendingWrites = Field(default_factory=PendingWrites)


Touchpoint = Literal["user-input", "assistant-output"]


class ShieldRequest(BaseModel):
    turn_id: str
    session_id: str | None = None
    step_id: str
    touchpoint: Touchpoint
    shield_ids: list[str]
    texts: list[str] = Field(default_factory=list)
    """What is new at this touchpoint: the user's input or tool results, or the model's message."""
    texts_are_input: bool = False
    """True: the texts are the turn's input messages, read from its row by the activity."""
    instructions: str = ""
    """Empty: the activity reads the agent's instructions from the store (earlier releases carried them)."""
    pending: PendingWrites = Field(default_factory=PendingWrites)
    spend_session_id: str | None = None
    """Record what its `llama_guard` calls cost in this session's spend ledger (TurnStart.spend_session_id)."""
    settings_id: str | None = None
    """A detached turn's settings (TurnPlan.settings_id): `llama_guard` reads its conversation as its model
    calls do; None for a llama-stack turn, whose session's conversation it reads."""


class ShieldResult(BaseModel):
    violation: SafetyViolation | None = None


class SpendCheck(BaseModel):
    session_id: str
    turn_id: str


class SpendVerdict(BaseModel):
    """Whether a tracked turn may make its next model call, and the session's spend it was decided on."""

    allowed: bool
    limit_cents: int | None = None
    consumed_cents: int = 0


class TurnFinished(BaseModel):
    """The times an inference activity that wrote the turn's end gave its step and the turn."""

    step_completed_at: datetime
    completed_at: datetime


class InferenceResult(BaseModel):
    message: CompletionMessage
    finished: TurnFinished | None = None
    """Set when the activity wrote the turn's end (its step, status, output and turn_complete event)."""
    cut_by_steer: bool = False
    """The reply was cut short by a steer (InferenceRequest.steer_cut_key): `message` is what streamed until then."""
    steer_marked: bool = False
    """The steer cut key was set when the call ended, so the activity left the turn's end unwritten: a steer is on
    its way to the workflow, if not there already (TurnStart.cut_steering)."""


class TurnProgress(BaseModel):
    """A status change: the pending writes, the turn's new status and output, and its final event —
    `turn_awaiting_input` / `turn_complete` (built from the stored turn) or an error message."""

    turn_id: str
    session_id: str | None = None
    pending: PendingWrites = Field(default_factory=PendingWrites)
    status: TurnStatus
    output_message: CompletionMessage | None = None
    completed_at: datetime | None = None
    error: str | None = None
    event_key: str | None = None
    event: Literal["turn_awaiting_input", "turn_complete", "error"] | None = None
    agent_id: str | None = None
    """For the state change's log line; absent in turns started before it was added."""
    awaiting: list[str] = Field(default_factory=list)
    """With the awaiting_input status: the approval request ids the turn waits for besides the
    output message's client calls (Store.pending_calls finds a paused detached turn by either)."""


class SteerSubmission(BaseModel):
    """User input for a running turn (update `steer`): taken at the turn's next safe boundary, where the current
    segment (response) ends and `segment_id` begins with `messages` as its input."""

    steer_id: str
    segment_id: str | None
    """None: the turn has no segments to end (an Agents API session's turn): the input joins it where it stands,
    and steers that arrive before the boundary are taken together, in order."""
    messages: list[UserMessage]
