"""Starting a turn: claim the session, record the turn, start its workflow — at most once per key."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from fastapi import HTTPException
from pydantic import BaseModel

from api.errors import not_found
from api.runtime import Runtime
from api.schemas import CreateTurnRequest
from api.stuck_turns import still_running
from api.toolgroup_check import require_toolgroups
from api.turn_documents import url_documents, with_documents
from domain.agents import Agent
from domain.content import InputMessage, ToolResponse, content_as_text
from domain.turns import InferenceStep, Turn, TurnStatus
from settings import Settings
from store.repository import TurnConflict, TurnTools
from workflows.contracts import PAYLOAD_BUDGET_BYTES, AgentOutline, Continuation, TurnStart

_IDEMPOTENCY_NAMESPACE = uuid.UUID("6f1b7e0e-8c57-4c1e-9a43-2f0c5d8b1a77")


@dataclass(frozen=True)
class StartedTurn:
    turn_id: str
    is_retry: bool
    """True when an earlier request with the same Idempotency-Key already started this turn."""


def require_input_within_limit(settings: Settings, what: str, items: Sequence[BaseModel]) -> None:
    """Refuse (413) a turn's input larger than DA_MAX_MESSAGE_BYTES: a model cannot take it, and
    tool results travel in a Temporal update, whose payloads are limited to 2 MB."""
    size = sum(len(item.model_dump_json()) for item in items)
    if size > settings.max_message_bytes:
        raise HTTPException(
            413,
            f"The {what} are {size:,} bytes, more than this server's limit of {settings.max_message_bytes:,} "
            "bytes for one turn (DA_MAX_MESSAGE_BYTES); send less, or a document by URL.",
        )


def _summary(messages: Sequence[InputMessage]) -> str:
    return " ".join(content_as_text(m.content) for m in messages)[:1000]


async def _start_workflow(runtime: Runtime, start: TurnStart, summary: str, reopening: bool = False) -> None:
    """Start the turn's workflow; a start too large to carry (the agent's tool names and toolgroups
    with this turn's options) fails the turn with a 413 instead of reaching Temporal."""
    size = len(start.model_dump_json())
    if size > PAYLOAD_BUDGET_BYTES:
        reason = (
            f"Its start ({size:,} bytes: the agent's toolgroups and tool names with this turn's options) is larger "
            f"than a workflow can carry ({PAYLOAD_BUDGET_BYTES:,} bytes)."
        )
        await runtime.store.abandon_turn(start.turn_id, reason)
        raise HTTPException(413, f"Turn {start.turn_id} could not start. {reason} Use fewer or smaller toolgroups.")
    try:
        await runtime.turns.start(start, summary, reopening=reopening)
    except Exception as error:
        verb = "restarted" if reopening else "started"
        await runtime.store.abandon_turn(start.turn_id, f"Its workflow could not be {verb}: {error}")
        raise HTTPException(503, f"Could not {verb.removesuffix('ed')} the turn's workflow: {error}") from error


def _turn_id(agent_id: str, session_id: str, idempotency_key: str | None) -> str:
    if idempotency_key is None:
        return str(uuid.uuid4())
    return str(uuid.uuid5(_IDEMPOTENCY_NAMESPACE, f"{agent_id}/{session_id}/{idempotency_key}"))


async def start_turn(
    runtime: Runtime, agent: Agent, session_id: str, body: CreateTurnRequest, idempotency_key: str | None
) -> StartedTurn:
    await require_toolgroups(runtime, body.toolgroups or [])
    messages = with_documents(body.messages, body.documents or [])
    require_input_within_limit(runtime.settings, "turn's messages", messages)
    document_urls = url_documents(body.documents or [])
    turn_id = _turn_id(agent.agent_id, session_id, idempotency_key)
    if idempotency_key is not None and await runtime.store.turn_status(turn_id) is not None:
        return StartedTurn(turn_id, is_retry=True)
    started_at = datetime.now(UTC)
    tools = TurnTools(toolgroups=body.toolgroups, tool_config=body.tool_config)
    try:
        await runtime.store.begin_turn(agent.agent_id, session_id, turn_id, messages, started_at, tools)
    except LookupError as gone:  # the session was deleted a moment ago
        raise not_found("Session", session_id) from gone
    except TurnConflict as conflict:
        if conflict.turn_id == turn_id:
            return StartedTurn(turn_id, is_retry=True)
        if await still_running(runtime, conflict.turn_id):
            raise HTTPException(409, str(conflict)) from conflict
        if await runtime.store.turn_status(conflict.turn_id) in (TurnStatus.RUNNING, TurnStatus.AWAITING_INPUT):
            await runtime.store.abandon_turn(conflict.turn_id, "Its workflow ended outside this runtime.")
        await runtime.store.begin_turn(agent.agent_id, session_id, turn_id, messages, started_at, tools)
    start = TurnStart(
        agent_id=agent.agent_id,
        session_id=session_id,
        turn_id=turn_id,
        agent=AgentOutline.of(agent.agent_config),
        started_at=started_at,
        tool_config=body.tool_config,
        toolgroups=body.toolgroups,
        document_urls=document_urls,
        awaiting_input_timeout=runtime.settings.awaiting_input_timeout,
        continue_as_new_after_events=runtime.settings.continue_as_new_after_events,
    )
    await _start_workflow(runtime, start, _summary(messages))
    return StartedTurn(turn_id, is_retry=False)


async def reopen_turn(runtime: Runtime, agent: Agent, turn: Turn, responses: list[ToolResponse]) -> int | None:
    """Resume a completed turn with results a client parsed and ran itself (ReAct-style clients).

    Returns the id of the turn's last event so far (the resumed stream follows it), or None when
    the turn is no longer completed. Raises TurnConflict if another turn of the session is active.
    """
    tools = await runtime.store.reopen_turn(turn.session_id, turn.turn_id)
    if tools is None:
        return None
    after = await runtime.store.last_event_id(turn.turn_id)
    times = [step.completed_at for step in turn.steps if step.completed_at] or [turn.started_at]
    start = TurnStart(
        agent_id=agent.agent_id,
        session_id=turn.session_id,
        turn_id=turn.turn_id,
        agent=AgentOutline.of(agent.agent_config),
        started_at=turn.started_at,
        tool_config=tools.tool_config,
        toolgroups=tools.toolgroups,
        awaiting_input_timeout=runtime.settings.awaiting_input_timeout,
        continue_as_new_after_events=runtime.settings.continue_as_new_after_events,
        continuation=Continuation(
            inferences=sum(isinstance(step, InferenceStep) for step in turn.steps),
            last_time=max(times),
            server_tools=[],
        ),
        reopened_with=responses,
    )
    await _start_workflow(runtime, start, _summary(turn.input_messages), reopening=True)
    return after
