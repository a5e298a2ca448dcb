"""A session turn's stored events → Agents API session events, each with a stable `event_id`.

The Responses dialect's fold (api/openai/responses/items.py) reads the turn's events one segment at a time (a
segment ends where the turn pauses for the caller's function results); this renderer turns its moves into
session events and adds what only sessions have: the turn's lifecycle, `requires_action` while calls pend,
the calls' outputs as items, and the session's `idle` or `failed` at the end.

Numbering depends only on the stored events, so a stream resumed after event `<turn>:<n>` — by any API
process, after a crash — or replayed from the start numbers every event exactly as the first did: the
renderer replays the turn and drops what the client already has.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from api.openai.responses.items import (
    Ended,
    ItemWhole,
    McpCallEnded,
    McpCallStarted,
    MessageClosed,
    MessageOpened,
    Move,
    SegmentFold,
    TextAdded,
)
from api.openai.responses.wire import FunctionCallItem, McpApprovalRequestItem, McpCallItem, MessageItem, OutputText
from domain.content import ToolResponse, content_as_text
from domain.turns import ToolExecutionStep, TurnStatus

SessionObject = Callable[[str, list[dict[str, Any]], str | None], dict[str, Any]]
"""(status, required_actions, error) → the session object a session event carries."""


def event_id(turn_id: str, number: int) -> str:
    return f"{turn_id}:{number:06d}"


def parse_event_id(value: str) -> tuple[str, int] | None:
    turn_id, _, number = value.rpartition(":")
    return (turn_id, int(number)) if turn_id and number.isdigit() else None


def created_event_id(session_id: str) -> str:
    return f"{session_id}:created"


def _ts(moment: datetime | None) -> int | None:
    return int(moment.timestamp()) if moment is not None else None


def usage_object(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + output_tokens,
    }


def tool_output_of(response: ToolResponse) -> dict[str, Any]:
    """A function_call_output item's `status` and its `output` or `error`, from the result the caller posted: a
    tool that failed (its handler raised) is `failed` beside its error."""
    if (response.metadata or {}).get("is_error"):
        return {"status": "failed", "error": content_as_text(response.content), "output": None}
    content = response.content
    if isinstance(content, str):
        return {"status": "completed", "output": content}
    return {"status": "completed", "output": [{"type": "input_text", "text": content_as_text(content)}]}


_BUDGET_EVENTS = {"budget_reached": "agent.session.budget_reached", "budget_resumed": "agent.session.in_progress"}
"""The spend-control runtime events of a turn (workflows/turn_steps/spend.py) and the session events they make."""


@dataclass
class TurnEvents:
    """The session events of one turn: `open()` first, then `feed()` each stored event in order."""

    session_id: str
    turn_id: str
    agent_id: str
    created_at: datetime
    session: SessionObject
    skip_through: int = -1
    """Events numbered up to this are made but not returned: the client has them."""
    status: str = "queued"
    error: dict[str, str] | None = None
    completed_at: int | None = None
    finished: bool = False
    ends_over_budget: bool = False
    """Set by the stream before the turn's final event when the session's spend is at its limit then: the stream
    ends with `agent.session.budget_reached` (our event; the SDK's stream helpers end on it) instead of idle."""
    items: dict[str, tuple[int, dict[str, Any]]] = field(default_factory=dict)
    """Every item of the turn as it stands, by id: (output index, item)."""
    _fold: SegmentFold | None = None
    _base: int = 0
    _next: int = 0
    _pending: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The function calls waiting for the caller's results, by call id."""
    _approvals: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The MCP calls waiting for the caller's decision: their required actions, by request id."""
    _usage: tuple[int, int] = (0, 0)
    _out: list[dict[str, Any]] = field(default_factory=list)

    def turn_object(self) -> dict[str, Any]:
        return {
            "id": self.turn_id,
            "object": "agent.session.turn",
            "session_id": self.session_id,
            "agent_id": self.agent_id,
            "subagent_id": None,
            "status": self.status,
            "created_at": _ts(self.created_at),
            "started_at": _ts(self.created_at) if self.status != "queued" else None,
            "completed_at": self.completed_at,
            "error": self.error,
            "usage": self.usage(),
        }

    def usage(self) -> dict[str, Any] | None:
        input_tokens, output_tokens = self._usage
        if self._fold is not None and self._fold.usage is not None:
            input_tokens += self._fold.usage.input_tokens
            output_tokens += self._fold.usage.output_tokens
        return usage_object(input_tokens, output_tokens) if input_tokens or output_tokens else None

    def required_actions(self) -> list[dict[str, Any]]:
        calls = [
            {
                "type": "function_call",
                "call_id": c["call_id"],
                "name": c["name"],
                "arguments": c["arguments"],
                "turn_id": self.turn_id,
            }
            for c in self._pending.values()
        ]
        return calls + list(self._approvals.values())

    def open(self) -> list[dict[str, Any]]:
        self._turn_event("agent.session.turn.created")
        self.status = "in_progress"
        self._session_event("agent.session.in_progress", "in_progress")
        self._turn_event("agent.session.turn.in_progress")
        return self._flush()

    def feed(self, body: dict[str, Any], turn_status: TurnStatus | None = None) -> list[dict[str, Any]]:
        """The events one stored event makes; `turn_status`: the stored status, read when `body` is an error."""
        if self.finished:
            return []
        if self._fold is None:
            self._fold = SegmentFold(response_id=self.turn_id, turn_id=self.turn_id)
        runtime = (body.get("runtime") or {}).get("kind")
        if runtime in _BUDGET_EVENTS:
            # Held at its next model call for the limit to be raised (spend_control), or going on: either way the
            # turn is still the session's active one.
            self._session_event(_BUDGET_EVENTS[runtime], "in_progress")
            return self._flush()
        payload = (body.get("event") or {}).get("payload") or {}
        resuming = payload.get("event_type") == "step_complete" or runtime == "mcp_call_started"
        if self.status == "waiting" and self._approvals and resuming:
            self._decided()
        if payload.get("event_type") == "step_complete":
            self._results(payload.get("step_details") or {})
            self._steered(payload.get("step_details") or {})
        pausing = payload.get("event_type") == "turn_awaiting_input"
        for move in self._fold.feed(body, turn_status):
            self._render(move, pausing)
        return self._flush()

    # -- rendering

    def _render(self, move: Move, pausing: bool) -> None:
        assert self._fold is not None
        output = self._fold.output
        match move:
            case MessageOpened(index):
                item = self._message(output[index], "in_progress", "")
                self._item("agent.session.turn.item.added", self._base + index, item)
                self._part("agent.session.turn.content_part.added", self._base + index, item["id"], "")
            case TextAdded(index, delta):
                at = self._base + index
                self._emit(
                    "agent.session.turn.output_text.delta",
                    item_id=output[index].id,
                    output_index=at,
                    content_index=0,
                    delta=delta,
                )
            case MessageClosed(index):
                found = output[index]
                assert isinstance(found, MessageItem)
                part = found.content[0] if found.content else OutputText()
                text = part.text if isinstance(part, OutputText) else ""
                at = self._base + index
                status = "completed" if found.status == "completed" else "incomplete"
                self._emit(
                    "agent.session.turn.output_text.done", item_id=found.id, output_index=at, content_index=0, text=text
                )
                self._part("agent.session.turn.content_part.done", at, found.id, text)
                self._item("agent.session.turn.item.done", at, self._message(found, status, text))
            case McpCallStarted(index):
                self._item("agent.session.turn.item.added", self._base + index, self._mcp_call(output[index]))
            case McpCallEnded(index):
                self._item("agent.session.turn.item.done", self._base + index, self._mcp_call(output[index]))
            case ItemWhole(index) if isinstance(output[index], McpCallItem):
                item = self._mcp_call(output[index])
                self._item("agent.session.turn.item.added", self._base + index, item)
                self._item("agent.session.turn.item.done", self._base + index, item)
            case ItemWhole(index) if isinstance(output[index], McpApprovalRequestItem):
                self._approval(output[index])
            case ItemWhole(index):
                found = output[index]
                if isinstance(found, FunctionCallItem):
                    call = {
                        "id": found.id,
                        "type": "function_call",
                        "call_id": found.call_id,
                        "name": found.name,
                        "arguments": found.arguments,
                        "status": "in_progress",
                        "turn_id": self.turn_id,
                    }
                    self._pending[found.call_id] = call
                    self._item("agent.session.turn.item.added", self._base + index, call)
            case Ended():
                if pausing:
                    self._pause()
                else:
                    self._end()
            case _:
                pass

    def _pause(self) -> None:
        assert self._fold is not None
        self._base += len(self._fold.output)
        if self._fold.usage is not None:
            self._usage = (
                self._usage[0] + self._fold.usage.input_tokens,
                self._usage[1] + self._fold.usage.output_tokens,
            )
        self._fold = None
        self.status = "waiting"
        self._session_event("agent.session.requires_action", "requires_action")

    def _mcp_call(self, found: Any) -> dict[str, Any]:
        """An MCP call as the session's `mcp_call` item shows it."""
        assert isinstance(found, McpCallItem)
        status = {"calling": "in_progress", "failed": "failed"}.get(found.status, found.status)
        return {
            "id": found.id,
            "type": "mcp_call",
            "server_label": found.server_label,
            "name": found.name,
            "arguments": found.arguments,
            "output": found.output,
            "error": found.error.model_dump() if found.error is not None else None,
            "status": "failed" if found.error is not None else status,
            "turn_id": self.turn_id,
        }

    def _approval(self, found: Any) -> None:
        """An MCP call held for the caller's decision: a required action until the turn resumes."""
        assert isinstance(found, McpApprovalRequestItem)
        arguments: Any = found.arguments
        with contextlib.suppress(ValueError):
            arguments = json.loads(found.arguments)
        self._approvals[found.id] = {
            "type": "mcp_approval_request",
            "request_id": found.id,
            "turn_id": self.turn_id,
            "request": {
                "type": "mcp_tool_call",
                "server_label": found.server_label,
                "name": found.name,
                "arguments": arguments,
                "message": f"Allow {found.name} on the MCP server {found.server_label}?",
            },
        }

    def _decided(self) -> None:
        """The turn resumed after a pause with approval requests: the caller decided every one (the workflow
        takes the decisions and any function results together)."""
        self._approvals.clear()
        if not self._pending:
            self.status = "in_progress"
            self._session_event("agent.session.in_progress", "in_progress")

    def _results(self, step: dict[str, Any]) -> None:
        """A tool step that answers pending calls: the calls are done and their outputs are items."""
        if step.get("step_type") != "tool_execution" or not self._pending:
            return
        parsed = ToolExecutionStep.model_validate(step)
        answered = [r for r in parsed.tool_responses if r.call_id in self._pending]
        if not answered:
            return
        for response in answered:
            call = self._pending.pop(response.call_id) | {"status": "completed"}
            index, _ = self.items[call["id"]]
            self._item("agent.session.turn.item.done", index, call)
            output = {
                "id": f"fco_{call['id']}",
                "type": "function_call_output",
                "call_id": response.call_id,
                "turn_id": self.turn_id,
                **tool_output_of(response),
            }
            # An item of the session (its items list shows it) but not the turn's output: the caller supplied it,
            # and the stream's item events carry only what the agent produced (the SDK types them so).
            self.items[output["id"]] = (self._base, output)
            self._base += 1
        if not self._pending:
            self.status = "in_progress"
            self._session_event("agent.session.in_progress", "in_progress")

    def _steered(self, step: dict[str, Any]) -> None:
        """A tool step that carries user input: messages posted while the turn ran (api/openai/agents/
        session_steering.py), which it took at a boundary. Each is a user message item, added complete; no
        `item.done` follows, which the SDK's result collector would take for an answer of the turn."""
        if step.get("step_type") != "tool_execution" or not step.get("followup_messages"):
            return
        parsed = ToolExecutionStep.model_validate(step)
        # After everything the turn has shown; the turn's later output comes after it (a steer taken where the
        # turn would have ended has no pause before it, so its segment's output goes on).
        position = self._base + (len(self._fold.output) if self._fold is not None else 0)
        for number, message in enumerate(parsed.followup_messages):
            item_id = f"msg_{parsed.step_id}_{number}"
            item: dict[str, Any] = {
                "id": item_id,
                "type": "message",
                "role": "user",
                "phase": None,
                "status": "completed",
                "content": [{"type": "input_text", "text": content_as_text(message.content)}],
                "turn_id": self.turn_id,
            }
            self.items[item_id] = (position + number, item)
            self._base += 1
            self._emit("agent.session.turn.item.added", item=item, output_index=None)

    def _end(self) -> None:
        assert self._fold is not None
        fold = self._fold
        self.finished = True
        self._pending.clear()  # an ended turn (cancelled or expired while it waited) waits for nothing
        self._approvals.clear()
        self.completed_at = fold.completed_at
        if fold.status in ("completed", "incomplete"):
            self.status = "completed"
            self._turn_event("agent.session.turn.completed", usage=self.usage())
            ending = "agent.session.budget_reached" if self.ends_over_budget else "agent.session.idle"
            self._session_event(ending, "idle")
        elif fold.status == "cancelled":
            self.status = "cancelled"
            self._turn_event("agent.session.turn.cancelled", usage=self.usage())
            self._session_event("agent.session.idle", "idle")
        else:
            self.status = "failed"
            message = fold.error.message if fold.error is not None else "The turn failed."
            self.error = {"code": "server_error", "message": message}
            self._turn_event("agent.session.turn.failed", usage=self.usage())
            self._session_event("agent.session.failed", "failed", message)

    # -- events

    def _message(self, item: Any, status: str, text: str) -> dict[str, Any]:
        return {
            "id": item.id,
            "type": "message",
            "role": "assistant",
            "phase": "final_answer",
            "status": status,
            "content": [{"type": "output_text", "text": text}] if status != "in_progress" else [],
            "turn_id": self.turn_id,
        }

    def _item(self, kind: str, index: int, item: dict[str, Any]) -> None:
        self.items[item["id"]] = (index, item)
        self._emit(kind, item=item, output_index=index)

    def _part(self, kind: str, index: int, item_id: str, text: str) -> None:
        part = {"type": "output_text", "text": text}
        self._emit(kind, item_id=item_id, output_index=index, content_index=0, part=part)

    def _turn_event(self, kind: str, **fields: Any) -> None:
        self._emit(kind, turn=self.turn_object(), **fields)

    def _session_event(self, kind: str, status: str, error: str | None = None) -> None:
        self._out.append(
            {
                "type": kind,
                "event_id": event_id(self.turn_id, self._next),
                "session": self.session(status, self.required_actions(), error),
            }
        )
        self._next += 1

    def _emit(self, kind: str, **fields: Any) -> None:
        self._out.append(
            {
                "type": kind,
                "event_id": event_id(self.turn_id, self._next),
                "session_id": self.session_id,
                "turn_id": self.turn_id,
                **fields,
            }
        )
        self._next += 1

    def _flush(self) -> list[dict[str, Any]]:
        out, self._out = self._out, []
        return [event for event in out if parse_event_id(event["event_id"])[1] > self.skip_through]  # type: ignore[index]
