"""Each kind of step a turn records, built in one place.

The workflow decides what happened; these say how it is recorded, so a tool step looks the same
whether its calls ran on a server, were answered by the client, refused, or denied by the caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from domain.content import CompletionMessage, ToolCall, ToolResponse, UserMessage
from domain.turns import InferenceStep, SafetyViolation, ShieldCallStep, ToolExecutionStep


def inference(
    turn_id: str, step_id: str, started_at: datetime, completed_at: datetime, message: CompletionMessage
) -> InferenceStep:
    return InferenceStep(
        turn_id=turn_id, step_id=step_id, started_at=started_at, completed_at=completed_at, model_response=message
    )


def shield_call(
    turn_id: str, step_id: str, started_at: datetime, completed_at: datetime, violation: SafetyViolation | None
) -> ShieldCallStep:
    return ShieldCallStep(
        turn_id=turn_id, step_id=step_id, started_at=started_at, completed_at=completed_at, violation=violation
    )


def tool_execution(
    turn_id: str,
    step_id: str,
    started_at: datetime,
    completed_at: datetime,
    calls: Sequence[ToolCall],
    responses: Sequence[ToolResponse],
    followups: Sequence[UserMessage] = (),
) -> ToolExecutionStep:
    """Calls with their responses; `followups`: input the model reads right after these results."""
    return ToolExecutionStep(
        turn_id=turn_id,
        step_id=step_id,
        started_at=started_at,
        completed_at=completed_at,
        tool_calls=list(calls),
        tool_responses=list(responses),
        followup_messages=list(followups),
    )


def answer(call: ToolCall, content: str, metadata: dict[str, Any] | None = None) -> ToolResponse:
    """A response the runtime gives in the tool's place (an error, a refusal, a denial)."""
    return ToolResponse(call_id=call.call_id, tool_name=call.tool_name, content=content, metadata=metadata)


def mcp_metadata(server_label: str, approval_request_id: str | None, error: bool = False) -> dict[str, Any]:
    """What a response to a call of a request-named MCP server says of it (the Responses `mcp_call` item)."""
    metadata: dict[str, Any] = {"server_label": server_label, "approval_request_id": approval_request_id}
    if error:
        metadata["error"] = True
    return metadata
