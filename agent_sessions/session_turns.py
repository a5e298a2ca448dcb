"""Starting a session's turn: `agent.session.input.message` from the API, or an automation feeding the session.
A session turn is a detached turn workflow whose settings come from the session's agent snapshot and whose prior
context is the session's earlier turns.

Every check runs before anything is written: a refused request leaves the session as it was.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from temporalio.common import SearchAttributePair

from agent_sessions.announce import session_event, start_deliveries
from agent_sessions.mcp_tools import mcp_servers, turn_credentials
from agent_sessions.refusals import SessionRefused, invalid, not_found
from agent_sessions.services import SessionServices
from domain.content import (
    ImageContentItem,
    ImageData,
    InputMessage,
    TextContentItem,
    ToolResponseMessage,
    UserMessage,
    content_as_text,
)
from domain.context_budget import oldest_dropped
from domain.turn_settings import ContextMessage, FunctionTool, TurnSettings
from domain.turns import InferenceStep, ToolExecutionStep, TurnStatus
from store.agent_sessions.sessions import BetaSessionRecord
from workflows.contracts import TurnPlan, TurnStart
from workflows.search_attributes import AGENT_ID, SESSION_ID

log = logging.getLogger(__name__)

ACTIVE = (TurnStatus.RUNNING, TurnStatus.AWAITING_INPUT)


@dataclass(frozen=True)
class SessionTurn:
    """A turn started on a session (or found started, for a retried Idempotency-Key)."""

    session_id: str
    turn_id: str
    ordinal: int
    """0 for the session's first turn."""
    created: bool
    """False when this call found the turn already there (a retry) and started nothing new."""


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def now() -> datetime:
    return datetime.now(UTC)


def input_messages(value: str | list[dict[str, Any]] | None, param: str = "input") -> list[InputMessage]:
    """The caller's input as the runtime's user messages: a string, or `[{role: "user", content: [...]}]`."""
    if value is None or value == "" or value == []:
        raise invalid(f"{param} is required: give the user's message.", param)
    if isinstance(value, str):
        return [UserMessage(content=value)]
    messages: list[InputMessage] = []
    for index, message in enumerate(value):
        if not isinstance(message, dict) or message.get("role", "user") != "user":
            raise invalid(f"{param}[{index}]: input messages have role 'user'.", param)
        content = message.get("content")
        if isinstance(content, str):
            messages.append(UserMessage(content=content))
            continue
        if not isinstance(content, list) or not content:
            raise invalid(f"{param}[{index}].content: give a string or a list of input_text/input_image parts.", param)
        parts: list[TextContentItem | ImageContentItem] = []
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "input_text" and isinstance(part.get("text"), str):
                parts.append(TextContentItem(text=part["text"]))
            elif kind == "input_image" and isinstance(part.get("image_url"), str):
                parts.append(ImageContentItem(image=ImageData.model_validate({"url": {"uri": part["image_url"]}})))
            else:
                raise invalid(
                    f"{param}[{index}].content: unsupported part {kind!r}; use input_text or input_image.", param
                )
        messages.append(UserMessage(content=parts))
    return messages


def summary(messages: list[InputMessage]) -> str:
    return content_as_text(messages[-1].content)[:1000] if messages else ""


async def start_turn(
    services: SessionServices,
    tenant: str,
    session_id: str,
    input: str | list[dict[str, Any]],
    idempotency_key: str | None = None,
) -> SessionTurn:
    """Start a turn on an idle (or failed) session with this input: `agent.session.input.message`.

    A busy session (a turn running or waiting for results) is refused with SessionBusy (the Agents API then steers
    the active turn with the input); with an `idempotency_key`, a retry finds the turn its first attempt started
    and starts nothing new."""
    record = await services.store.agent_sessions.session(tenant, session_id)
    if record is None:
        raise not_found("Session", session_id)
    return await start_turn_on(services, tenant, record, input_messages(input), idempotency_key)


def _turn_id(tenant: str, session_id: str, idempotency_key: str | None) -> str:
    if idempotency_key is None:
        return new_id("turn")
    return "turn_" + hashlib.sha256(f"{tenant}\0{session_id}\0{idempotency_key}".encode()).hexdigest()[:32]


async def start_turn_on(
    services: SessionServices,
    tenant: str,
    record: BetaSessionRecord,
    messages: list[InputMessage],
    idempotency_key: str | None,
) -> SessionTurn:
    """Start a turn with these messages on the session `record` (its first, for create_session)."""
    sessions = services.store.agent_sessions
    turn_id = _turn_id(tenant, record.session_id, idempotency_key)
    found = await sessions.session_turn(turn_id)
    if found is not None:  # a retry: the first attempt claimed it; make sure its workflow runs
        if await services.store.turns.turn_status(turn_id) == TurnStatus.RUNNING:
            await _start_workflow(services, tenant, record, turn_id, messages, now())
        return SessionTurn(record.session_id, turn_id, found.ordinal, created=False)
    previous = record.current_turn_id
    if previous is not None and await services.store.turns.turn_status(previous) in ACTIVE:
        raise busy(record.session_id, previous)
    settings = turn_settings(record.body["agent"])
    credentials = turn_credentials(record.body["agent"], services.settings.credentials_key)
    context = await _context_after(services, previous)
    started_at = now()
    await services.store.turns.begin_detached_turn(tenant, turn_id, messages, context, turn_id, settings, started_at)
    in_progress = session_event("agent.session.in_progress", record.session_id, turn_id)
    claimed = await sessions.claim_turn(tenant, record.session_id, turn_id, previous, started_at, in_progress)
    if claimed is None:  # another input got there first
        await services.store.turns.delete_detached_turn(tenant, turn_id)
        raise busy(record.session_id, None)
    ordinal, deliveries = claimed
    if credentials is not None:  # kept before its workflow can call a tool
        await services.store.turns.keep_turn_credentials(turn_id, credentials)
    if deliveries:
        await start_deliveries(services, turn_id)
    await _start_workflow(services, tenant, record, turn_id, messages, started_at)
    return SessionTurn(record.session_id, turn_id, ordinal, created=True)


class SessionBusy(SessionRefused):
    """The session has an active turn, so no new one starts: the Agents API steers that turn with the input
    instead (api/openai/agents/session_steering.py); an automation's delivery to the session is refused."""


def busy(session_id: str, turn_id: str | None) -> SessionBusy:
    which = f"turn {turn_id}" if turn_id else "another turn"
    return SessionBusy(
        409,
        f"Session {session_id} is busy with {which}: send input once it is idle (or cancel the turn with an "
        "agent.session.input.cancel event).",
        "events",
        "session_busy",
    )


def turn_settings(agent: dict[str, Any]) -> TurnSettings:
    text_format = (agent.get("text") or {}).get("format") or {}
    response_format = None
    if text_format.get("type") == "json_schema":
        schema = {"name": text_format.get("name", "output"), "schema": text_format.get("schema", {})}
        if text_format.get("strict") is not None:
            schema["strict"] = text_format["strict"]
        response_format = {"type": "json_schema", "json_schema": schema}
    elif text_format.get("type") == "json_object":
        response_format = {"type": "json_object"}
    return TurnSettings(
        model=agent["model"],
        instructions=agent.get("instructions") or "",
        function_tools=[
            FunctionTool(
                name=tool["name"],
                description=tool.get("description") or "",
                parameters=tool.get("parameters") or {"type": "object", "properties": {}},
                strict=tool.get("strict"),
            )
            for tool in agent.get("tools") or []
            if tool.get("type") == "function"
        ],
        response_format=response_format,
    )


async def _context_after(services: SessionServices, previous: str | None) -> list[ContextMessage]:
    """The prior context of the session's next turn: the previous turn's context, input and steps, within
    DA_MAX_HISTORY_BYTES (the oldest dropped first)."""
    if previous is None:
        return []
    found = await services.store.turns.detached_context(previous)
    if found is None:
        return []
    turn, context = found
    messages: list[ContextMessage] = list(context)
    messages += [message for message in turn.input_messages if isinstance(message, UserMessage)]
    for step in turn.steps:
        if isinstance(step, InferenceStep):
            messages.append(step.model_response)
        elif isinstance(step, ToolExecutionStep):
            messages += [ToolResponseMessage(call_id=r.call_id, content=r.content) for r in step.tool_responses]
            messages += step.followup_messages
    return oldest_dropped(messages, services.settings.max_history_bytes)


async def _start_workflow(
    services: SessionServices,
    tenant: str,
    record: BetaSessionRecord,
    turn_id: str,
    messages: list[InputMessage],
    started_at: datetime,
) -> None:
    agent = record.body["agent"]
    start = TurnStart(
        turn_id=turn_id,
        plan=TurnPlan(
            model=agent["model"],
            client_tool_names=sorted(
                tool["name"] for tool in agent.get("tools") or [] if tool.get("type") == "function"
            ),
            mcp_servers=mcp_servers(agent, services.settings.approval_timeout),
            max_infer_iters=services.settings.max_infer_iters,
            settings_id=turn_id,
        ),
        started_at=started_at,
        awaiting_input_timeout=services.settings.awaiting_input_timeout,
        continue_as_new_after_events=services.settings.continue_as_new_after_events,
        # The workflow writes the turn's end, so that input posted while the last model call runs can still steer
        # the turn (workflows/turn_steps/steering.py) rather than find it ended by that call's activity.
        inference_writes_end=False,
        spend_session_id=record.session_id,
    )
    owners = [SearchAttributePair(SESSION_ID, record.session_id), SearchAttributePair(AGENT_ID, agent["id"])]
    try:
        await services.turns.start_once(start, tenant, summary(messages), extra_attributes=owners)
    except Exception as error:
        log.exception("starting the workflow of session %s's turn %s failed", record.session_id, turn_id)
        await services.store.turns.abandon_turn(turn_id, "Its workflow could not be started.")
        raise SessionRefused(
            503, "Could not start the session's turn (Temporal unavailable); retry shortly."
        ) from error
