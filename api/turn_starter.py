"""Starting a turn: claim the session, record the turn, start its workflow — at most once per key."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial

from fastapi import HTTPException

from api.errors import not_found
from api.fault_points import AFTER_TURN_ROW, crash_point
from api.runtime import Runtime
from api.schemas import CreateTurnRequest
from api.toolgroup_check import require_toolgroups
from api.turn_documents import url_documents, with_documents
from domain.agents import Agent
from domain.content import ToolResponse
from domain.turns import InferenceStep, Turn, TurnStatus
from observability.logs import log_turn_state
from observability.metrics import TURNS_STARTED
from store.repository import LimitReached, TurnConflict, TurnTools
from workflows.contracts import Continuation, TurnStart

log = logging.getLogger(__name__)

_IDEMPOTENCY_NAMESPACE = uuid.UUID("6f1b7e0e-8c57-4c1e-9a43-2f0c5d8b1a77")


@dataclass(frozen=True)
class StartedTurn:
    turn_id: str
    is_retry: bool
    """True when an earlier request with the same Idempotency-Key already started this turn."""


def _turn_id(agent_id: str, session_id: str, idempotency_key: str | None) -> str:
    if idempotency_key is None:
        return str(uuid.uuid4())
    return str(uuid.uuid5(_IDEMPOTENCY_NAMESPACE, f"{agent_id}/{session_id}/{idempotency_key}"))


async def _begun(beginning: Awaitable[None], session_id: str) -> None:
    """Await the store's start of a turn; a session deleted a moment ago is 404, one at its cap 409."""
    try:
        await beginning
    except LookupError as gone:
        raise not_found("Session", session_id) from gone
    except LimitReached as limit:
        raise HTTPException(409, str(limit)) from limit


def turn_start(runtime: Runtime, agent: Agent, turn: Turn, tools: TurnTools, document_urls: list[str]) -> TurnStart:
    """The workflow input of a new turn: its stored row, its own tools, and its URL documents."""
    return TurnStart(
        agent_id=agent.agent_id,
        session_id=turn.session_id,
        turn_id=turn.turn_id,
        agent_config=agent.agent_config,
        input_messages=turn.input_messages,
        started_at=turn.started_at,
        tool_config=tools.tool_config,
        toolgroups=tools.toolgroups,
        document_urls=document_urls,
        awaiting_input_timeout=runtime.settings.awaiting_input_timeout,
        continue_as_new_after_events=runtime.settings.continue_as_new_after_events,
    )


def _request_tools(body: CreateTurnRequest) -> TurnTools:
    return TurnTools(toolgroups=body.toolgroups, tool_config=body.tool_config)


async def _finish_start(
    runtime: Runtime, tenant: str, agent: Agent, session_id: str, turn_id: str, body: CreateTurnRequest
) -> None:
    """A retried create: start the turn's workflow if the first attempt recorded the turn but died
    before it started it (a crashed API process); a turn that has one is left alone."""
    turn = await runtime.store.get_turn(session_id, turn_id)
    if turn is None or turn.status != TurnStatus.RUNNING or turn.steps:
        return
    start = turn_start(runtime, agent, turn, _request_tools(body), url_documents(body.documents or []))
    try:
        if await runtime.turns.start_once(start, tenant):
            log.warning("started turn %s's workflow, which the first attempt at creating it did not", turn_id)
    except Exception as error:
        # The turn stays recorded: the next retry or the sweep of unstarted turns starts it.
        log.exception("starting the workflow of turn %s on a retry failed", turn_id)
        raise HTTPException(
            503, "Could not start the turn's workflow (Temporal unavailable); send the request again"
        ) from error


async def start_turn(
    runtime: Runtime,
    tenant: str,
    agent: Agent,
    session_id: str,
    body: CreateTurnRequest,
    idempotency_key: str | None,
) -> StartedTurn:
    await require_toolgroups(runtime, tenant, body.toolgroups or [])
    messages = with_documents(body.messages, body.documents or [])
    turn_id = _turn_id(agent.agent_id, session_id, idempotency_key)
    if idempotency_key is not None and await runtime.store.turn_status(turn_id) is not None:
        await _finish_start(runtime, tenant, agent, session_id, turn_id, body)
        return StartedTurn(turn_id, is_retry=True)
    started_at = datetime.now(UTC)
    tools = _request_tools(body)
    begin = partial(
        runtime.store.begin_turn,
        agent.agent_id,
        session_id,
        turn_id,
        messages,
        started_at,
        tools,
        most=runtime.settings.max_turns_per_session,
    )
    try:
        await _begun(begin(), session_id)
    except TurnConflict as conflict:
        if conflict.turn_id == turn_id:
            await _finish_start(runtime, tenant, agent, session_id, turn_id, body)
            return StartedTurn(turn_id, is_retry=True)
        if await runtime.turns.is_running(conflict.turn_id):
            raise HTTPException(409, str(conflict)) from conflict
        await runtime.store.abandon_turn(conflict.turn_id, "Its workflow ended outside this runtime.")
        log_turn_state(conflict.turn_id, session_id, agent.agent_id, TurnStatus.FAILED)
        await _begun(begin(), session_id)
    crash_point(AFTER_TURN_ROW)
    turn = Turn(turn_id=turn_id, session_id=session_id, input_messages=messages, started_at=started_at)
    start = turn_start(runtime, agent, turn, tools, url_documents(body.documents or []))
    try:
        # Not started only if a retry or the sweep of unstarted turns was quicker: same turn, same id.
        await runtime.turns.start_once(start, tenant)
    except Exception as error:
        # What went wrong inside Temporal is for the operator's log; the turn and the caller get what they can act on.
        log.exception("starting the workflow of turn %s failed", turn_id)
        await runtime.store.abandon_turn(turn_id, "Its workflow could not be started.")
        log_turn_state(turn_id, session_id, agent.agent_id, TurnStatus.FAILED)
        raise HTTPException(503, "Could not start the turn's workflow (Temporal unavailable); retry shortly") from error
    TURNS_STARTED.inc()
    log_turn_state(turn_id, session_id, agent.agent_id, TurnStatus.RUNNING)
    return StartedTurn(turn_id, is_retry=False)


async def reopen_turn(
    runtime: Runtime, tenant: str, agent: Agent, turn: Turn, responses: list[ToolResponse]
) -> int | None:
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
        agent_config=agent.agent_config,
        input_messages=turn.input_messages,
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
    try:
        await runtime.turns.start(start, tenant, reopening=True)
    except Exception as error:
        log.exception("restarting the workflow of turn %s failed", turn.turn_id)
        await runtime.store.abandon_turn(turn.turn_id, "Its workflow could not be restarted.")
        log_turn_state(turn.turn_id, turn.session_id, agent.agent_id, TurnStatus.FAILED)
        raise HTTPException(
            503, "Could not restart the turn's workflow (Temporal unavailable); retry shortly"
        ) from error
    log_turn_state(turn.turn_id, turn.session_id, agent.agent_id, TurnStatus.RUNNING)
    return after
