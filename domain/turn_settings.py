"""The runtime's own vocabulary for what a turn may use, free of either wire dialect.

The llama-stack adapter maps agent configs onto it, the Responses adapter maps requests onto it;
the workflow and its activities read only these.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from domain.content import CompletionMessage, InterleavedContent, ToolCall, ToolResponseMessage, UserMessage, WireModel


class FunctionTool(BaseModel):
    """A tool the caller runs (llama client_tools, Responses function tools): calling it pauses the turn."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=dict)
    """JSON Schema of the arguments (an object schema)."""
    strict: bool | None = None


class ApprovalPolicy(BaseModel):
    """Which calls of an MCP server need the caller's approval before they run."""

    default: bool = False
    """True: every tool needs approval unless it is in `never`."""
    always: list[str] = Field(default_factory=list)
    never: list[str] = Field(default_factory=list)
    timeout: timedelta | None = None
    """After this long undecided, a pending approval is denied on its own (by `system`); None: it waits. The
    API sets it: DA_APPROVAL_TIMEOUT, or a request's shorter `approval_timeout`."""

    def required(self, tool_name: str) -> bool:
        if tool_name in self.always:
            return True
        if tool_name in self.never:
            return False
        return self.default


class McpServer(BaseModel):
    """An MCP server named in a request (Responses `mcp` tool). Its headers are not here: they travel
    sealed in the turn's credentials, keyed by label (tool_runtime/credential_seal.py)."""

    label: str
    url: str
    allowed_tools: list[str] | None = None
    approval: ApprovalPolicy = Field(default_factory=ApprovalPolicy)


class TurnSettings(BaseModel):
    """What an inference reads. A detached turn's are stored in `turn_settings`, never carried by the
    workflow; a llama-stack turn's are made from its agent's config (domain/agents.py agent_turn_settings)."""

    model: str
    instructions: str = ""
    function_tools: list[FunctionTool] = Field(default_factory=list)
    tool_choice: Literal["auto", "none", "required"] | str = "auto"
    """Any other string: the name of the one tool to call."""
    parallel_tool_calls: bool = True
    temperature: float | None = None
    top_p: float | None = None
    max_output_tokens: int | None = None
    stop: list[str] | None = None
    """Sequences that end the model's reply (llama-stack sampling_params.stop; the Responses API has none)."""
    response_format: dict[str, Any] | None = None
    """{"type": "json_schema", "json_schema": {"name", "schema", "strict"}} or {"type": "json_object"}."""


class ApprovalRequest(BaseModel):
    """An MCP call the turn holds until the caller approves or denies it."""

    approval_request_id: str
    """"mcpr_" + hex, from workflow.uuid4()."""
    server_label: str
    call: ToolCall


SYSTEM_DECIDER = "system"
"""Who decided an approval the turn denied on its own, at its deadline."""
TIMED_OUT = "approval timed out"


class ApprovalDecision(BaseModel):
    """A person's (or, at the deadline, the system's) decision on one approval request, and who made it when."""

    approval_request_id: str
    approve: bool
    reason: str | None = None
    decided_by: str | None = None
    """The API key's id (never the key), or `system`; None in decisions of earlier releases."""
    tenant: str | None = None
    decided_at: datetime | None = None

    def record(self) -> dict[str, Any]:
        """The decision as the turn's step keeps it (the tool response's `metadata.decision`)."""
        return {
            "approval_request_id": self.approval_request_id,
            "decision": "approved" if self.approve else "denied",
            "reason": self.reason,
            "decided_by": self.decided_by,
            "tenant": self.tenant,
            "decided_at": self.decided_at.isoformat() if self.decided_at else None,
        }


class SystemMessage(WireModel):
    role: Literal["system"] = "system"
    content: InterleavedContent


ContextMessage = Annotated[
    UserMessage | SystemMessage | CompletionMessage | ToolResponseMessage, Field(discriminator="role")
]
"""One message of a detached turn's prior context (turns.context_messages): built by the API from a
response chain, a conversation or replayed input."""
