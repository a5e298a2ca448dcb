"""The webhook event catalogue: the events an endpoint can subscribe to, and the JSON each is sent as.

Responses events have the `openai` SDK's shape (`client.webhooks.unwrap` parses them). Turn events are
ours, for the llama-stack dialect, in the same envelope: `id`, `type`, `created_at`, `object: "event"`
and `data`, whose `id` is the turn's id.
"""

from __future__ import annotations

from typing import Any

from domain.turns import TurnStatus

RESPONSE_EVENTS: dict[str, str] = {
    "response.completed": "A response completed, including one paused on function calls the caller is to run.",
    "response.failed": "A response failed (or waited for tool output longer than allowed).",
    "response.cancelled": "A response was cancelled.",
    "response.incomplete": "A response ended early: the model ran out of output tokens.",
}
TURN_EVENTS: dict[str, str] = {
    "turn.completed": "A llama-stack agent turn completed.",
    "turn.failed": "A llama-stack agent turn failed (or waited for tool output longer than allowed).",
    "turn.cancelled": "A llama-stack agent turn was cancelled.",
    "turn.awaiting_input": "A llama-stack agent turn paused for client tool results: resume it with them.",
}
AGENT_SESSION_EVENTS: dict[str, str] = {
    "agent.session.created": "An Agents API session was created.",
    "agent.session.in_progress": "An Agents API session started working on a turn.",
    "agent.session.action_required": "An Agents API session waits for function results (or approvals).",
    "agent.session.idle": "An Agents API session finished its turn and is ready for input.",
    "agent.session.failed": "An Agents API session's turn failed.",
}
EVENT_TYPES: dict[str, str] = {**RESPONSE_EVENTS, **TURN_EVENTS, **AGENT_SESSION_EVENTS}


def response_event_type(status: TurnStatus, out_of_tokens: bool) -> str | None:
    """The event a Responses turn's new status means for its latest response; None for running."""
    if status == TurnStatus.AWAITING_INPUT:
        return "response.completed"  # the caller is to run its function calls: done, from its view
    if status == TurnStatus.COMPLETED:
        return "response.incomplete" if out_of_tokens else "response.completed"
    if status == TurnStatus.CANCELLED:
        return "response.cancelled"
    if status in (TurnStatus.FAILED, TurnStatus.EXPIRED):
        return "response.failed"
    return None


def turn_event_type(status: TurnStatus) -> str | None:
    """The event a llama-stack turn's new status means; None for running."""
    return {
        TurnStatus.AWAITING_INPUT: "turn.awaiting_input",
        TurnStatus.COMPLETED: "turn.completed",
        TurnStatus.CANCELLED: "turn.cancelled",
        TurnStatus.FAILED: "turn.failed",
        TurnStatus.EXPIRED: "turn.failed",
    }.get(status)


def agent_session_event_type(status: TurnStatus) -> str | None:
    """The event a session turn's new status means for its session; None for running (the API records it)."""
    return {
        TurnStatus.AWAITING_INPUT: "agent.session.action_required",
        TurnStatus.COMPLETED: "agent.session.idle",
        TurnStatus.CANCELLED: "agent.session.idle",
        TurnStatus.FAILED: "agent.session.failed",
        TurnStatus.EXPIRED: "agent.session.failed",
    }.get(status)


def agent_session_data(event_type: str, session_id: str, action: str | None = None) -> dict[str, Any]:
    """The `data` of an agent.session.* event (the openai SDK's `types/webhooks/agent_session_*`)."""
    if event_type == "agent.session.action_required":
        return {"id": session_id, "required_action": {"type": action or "function_call"}}
    return {"id": session_id, "environment_type": "none"}


def event_body(event_id: str, event_type: str, created_at: int, data: dict[str, Any]) -> dict[str, Any]:
    return {"id": event_id, "type": event_type, "created_at": created_at, "data": data, "object": "event"}


def sample_data(event_type: str) -> dict[str, Any]:
    """What a test delivery of `event_type` carries: the event's fields, naming nothing that exists."""
    if event_type in TURN_EVENTS:
        data: dict[str, Any] = {"id": "turn_test", "session_id": "session_test", "agent_id": "agent_test"}
        if event_type == "turn.awaiting_input":
            data["tool_calls"] = [{"call_id": "call_test", "tool_name": "get_weather"}]
        return data
    if event_type in AGENT_SESSION_EVENTS:
        return agent_session_data(event_type, "sess_test")
    return {"id": "resp_test"}
