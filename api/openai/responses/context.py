"""A response's effective context: what came before its input, checked and turned into neutral messages.

Context comes from one of three places (spec §2.4): the `previous_response_id` chain (each response's input
items, then its output items), the conversation's items, or nothing (stateless: the input carries the whole
history). Either way the checks of spec §6.1 run on prior items + new input as one sequence: every
`function_call_output` must answer a `function_call` before it, once; every `function_call` must be answered;
every `mcp_approval_response` must name an `mcp_approval_request` before it. Only then is anything resumed or
started, so a refused request leaves a waiting workflow untouched.

The runtime reads neutral messages (domain/turn_settings.py `ContextMessage`), not items: a detached turn's
`context_messages` are the prior items and the new input up to its trailing user messages and tool results,
which become the turn's own input.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError

from api.openai.errors import invalid
from api.openai.responses.input_items import (
    FunctionCallItem,
    FunctionCallOutputItem,
    InputItem,
    ItemReference,
    McpApprovalRequestItem,
    McpApprovalResponseItem,
    McpCallItem,
    MessageItem,
)
from domain.content import CompletionMessage, InputMessage, ToolCall, ToolResponseMessage, UserMessage
from domain.context_budget import context_bytes, oldest_dropped
from domain.turn_settings import ContextMessage, SystemMessage

_items = TypeAdapter(list[InputItem])


def parse_items(stored: Sequence[dict[str, Any]]) -> list[InputItem]:
    """Stored or rendered items (a chain's, a conversation's) as request items; kinds the runtime does not
    read (reasoning, mcp_list_tools) parse too and are skipped when messages are built."""
    try:
        return _items.validate_python(list(stored))
    except ValidationError as error:  # a stored item we cannot read is our bug, not the caller's
        raise ValueError(f"stored items do not parse: {error}") from error


def resolve_references(items: Sequence[InputItem], known: Sequence[InputItem]) -> list[InputItem]:
    """`item_reference`s replaced by the items they name, looked up in `known` (the prior context and the
    input's own items); an unknown id is a 400."""
    by_id = {
        item.id: item for item in [*known, *items] if getattr(item, "id", None) and not isinstance(item, ItemReference)
    }
    resolved: list[InputItem] = []
    for index, item in enumerate(items):
        if isinstance(item, ItemReference):
            if item.id not in by_id:
                raise invalid(
                    f"Item with id '{item.id}' not found (input[{index}] is an item_reference to it).", "input"
                )
            resolved.append(by_id[item.id])
        else:
            resolved.append(item)
    return resolved


def check_tool_outputs(prior: Sequence[InputItem], new: Sequence[InputItem]) -> None:
    """Spec §6.1 on prior + new as one sequence; raises the 400 (param `input`) for the first violation."""
    calls: dict[str, FunctionCallItem] = {}
    answered: set[str] = set()
    approvals: set[str] = set()
    decided: set[str] = set()
    for item in [*prior, *new]:
        if isinstance(item, FunctionCallItem):
            calls.setdefault(item.call_id, item)
        elif isinstance(item, FunctionCallOutputItem):
            if item.call_id not in calls:
                raise invalid(f"No tool call found for function call output with call_id {item.call_id}.", "input")
            if item.call_id in answered:
                raise invalid(f"Duplicate function call output for call_id {item.call_id}.", "input")
            answered.add(item.call_id)
        elif isinstance(item, McpApprovalRequestItem):
            approvals.add(item.id)
        elif isinstance(item, McpApprovalResponseItem):
            if item.approval_request_id not in approvals:
                raise invalid(
                    f"No MCP approval request found for approval_request_id {item.approval_request_id}.", "input"
                )
            if item.approval_request_id in decided:
                raise invalid(f"Duplicate mcp_approval_response for {item.approval_request_id}.", "input")
            decided.add(item.approval_request_id)
    for call_id in calls:
        if call_id not in answered:
            raise invalid(f"No tool output found for function call {call_id}.", "input")


def _arguments(raw: str) -> dict[str, Any] | str:
    try:
        parsed = json.loads(raw) if raw else {}
    except ValueError:
        return raw
    return parsed if isinstance(parsed, dict) else raw


def to_messages(items: Sequence[InputItem]) -> list[ContextMessage]:
    """Items as the model reads them. Consecutive assistant text and calls form one assistant message;
    an `mcp_call` that ran is its call and its result; listings, approvals and reasoning are left out."""
    messages: list[ContextMessage] = []

    def assistant() -> CompletionMessage:
        last = messages[-1] if messages else None
        if isinstance(last, CompletionMessage):
            return last
        opened = CompletionMessage(content="", stop_reason="end_of_message")
        messages.append(opened)
        return opened

    for item in items:
        if isinstance(item, MessageItem):
            text = item.text()
            if item.role == "user":
                messages.append(UserMessage(content=text))
            elif item.role in ("system", "developer"):
                messages.append(SystemMessage(content=text))
            else:
                current = assistant()
                current.content = f"{current.content}{text}" if isinstance(current.content, str) else text
        elif isinstance(item, FunctionCallItem):
            assistant().tool_calls.append(
                ToolCall(call_id=item.call_id, tool_name=item.name, arguments=_arguments(item.arguments))
            )
        elif isinstance(item, FunctionCallOutputItem):
            messages.append(ToolResponseMessage(call_id=item.call_id, content=item.text()))
        elif isinstance(item, McpCallItem) and (item.output is not None or item.error is not None):
            call_id = item.id or f"mcp_{len(messages)}"
            assistant().tool_calls.append(
                ToolCall(call_id=call_id, tool_name=item.name, arguments=_arguments(item.arguments))
            )
            result = item.output if item.output is not None else f"Error: {_error_text(item.error)}"
            messages.append(ToolResponseMessage(call_id=call_id, content=result))
    return messages


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error.get("content") or error)
    return str(error)


@dataclass(frozen=True)
class TurnInput:
    """A new turn's prior context and its own input (the trailing user messages)."""

    context: list[ContextMessage]
    input: list[InputMessage]


def split_input(messages: Sequence[ContextMessage]) -> TurnInput:
    """The trailing user messages are the turn's input; what precedes them, its context. Tool results stay in
    the context with the calls they answer (a replayed history may end with them: the input is then empty)."""
    start = len(messages)
    while start > 0 and isinstance(messages[start - 1], UserMessage):
        start -= 1
    return TurnInput(context=list(messages[:start]), input=list(messages[start:]))  # type: ignore[arg-type]


def fit_context(context: list[ContextMessage], budget: int, truncation: str) -> list[ContextMessage]:
    """The context within `budget` bytes: `auto` drops the oldest messages (never leaving a tool result
    without its call), `disabled` refuses a context over it with a 400."""
    total = context_bytes(context)
    if total <= budget or truncation == "auto":
        return oldest_dropped(context, budget)
    raise invalid(
        f"The input and its context are {total:,} bytes, more than this server's history limit of "
        f"{budget:,} bytes (DA_MAX_HISTORY_BYTES). Send less, or set 'truncation': 'auto' to drop the oldest "
        "context.",
        "input",
        "context_length_exceeded",
    )
