"""Starting a turn: claim the session, record the turn, start its workflow — at most once per key."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial

from fastapi import HTTPException
from pydantic import BaseModel

from api.http.errors import not_found
from api.llama_stack.schemas import CreateTurnRequest
from api.llama_stack.toolgroup_check import require_toolgroups
from api.llama_stack.turn_documents import url_documents, with_documents
from api.services import Services
from api.turns.agent_turn_start import turn_start, workflow_summary
from api.turns.mcp_headers import keep_mcp_headers
from api.turns.sdk_retries import RETRY_WINDOW, is_sdk_retry, may_repeat
from api.turns.stuck import still_running
from configuration.settings import Settings
from domain.agents import Agent
from domain.content import InputMessage, ToolResponse
from domain.turns import InferenceStep, Turn, TurnStatus
from hosting.fault_points import AFTER_TURN_ROW, crash_point
from observability.logs import log_turn_state
from observability.metrics import TURNS_STARTED
from store.turns.records import LimitReached, TurnConflict, TurnTools
from workflows.contracts import PAYLOAD_BUDGET_BYTES, Continuation, TurnStart

log = logging.getLogger(__name__)

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


async def _refuse_oversized(services: Services, start: TurnStart) -> None:
    """A start too large to carry (the agent's tool names and toolgroups with this turn's options)
    fails the turn with a 413 instead of reaching Temporal."""
    size = len(start.model_dump_json())
    if size > PAYLOAD_BUDGET_BYTES:
        reason = (
            f"Its start ({size:,} bytes: the agent's toolgroups and tool names with this turn's options) is larger "
            f"than a workflow can carry ({PAYLOAD_BUDGET_BYTES:,} bytes)."
        )
        await services.store.turns.abandon_turn(start.turn_id, reason)
        raise HTTPException(413, f"Turn {start.turn_id} could not start. {reason} Use fewer or smaller toolgroups.")


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


def _request_tools(body: CreateTurnRequest) -> TurnTools:
    return TurnTools(toolgroups=body.toolgroups, tool_config=body.tool_config)


async def _finish_start(
    services: Services, tenant: str, agent: Agent, session_id: str, turn_id: str, body: CreateTurnRequest
) -> None:
    """A retried create: start the turn's workflow if the first attempt recorded the turn but died
    before it started it (a crashed API process); a turn that has one is left alone."""
    turn = await services.store.turns.get_turn(session_id, turn_id)
    if turn is None or turn.status != TurnStatus.RUNNING or turn.steps:
        return
    start = turn_start(services, agent, turn, _request_tools(body), url_documents(body.documents or []))
    try:
        if await services.turns.start_once(start, tenant, workflow_summary(turn.input_messages)):
            log.warning("started turn %s's workflow, which the first attempt at creating it did not", turn_id)
    except Exception as error:
        # The turn stays recorded: the next retry or the sweep of unstarted turns starts it.
        log.exception("starting the workflow of turn %s on a retry failed", turn_id)
        raise HTTPException(
            503, "Could not start the turn's workflow (Temporal unavailable); send the request again"
        ) from error


async def _repeated(services: Services, session_id: str, messages: list[InputMessage]) -> str | None:
    """The turn an SDK's own retry of a create without an Idempotency-Key repeats: the session's latest,
    begun lately with the same messages, if it `may_repeat`."""
    latest = await services.store.turns.latest_turn(session_id)
    if latest is None or latest.input_messages != messages or not may_repeat(latest.status):
        return None
    return latest.turn_id if datetime.now(UTC) - latest.started_at <= RETRY_WINDOW else None


async def start_turn(
    services: Services,
    tenant: str,
    agent: Agent,
    session_id: str,
    body: CreateTurnRequest,
    idempotency_key: str | None,
    credentials: str | None = None,
    retry_count: str | None = None,
) -> StartedTurn:
    """`credentials`: the request's MCP headers, sealed (api/turns/mcp_headers.py); kept before the workflow starts.
    `retry_count`: the SDK's numbering of its attempts (api/turns/sdk_retries.py)."""
    await require_toolgroups(services, tenant, body.toolgroups or [])
    messages = with_documents(body.messages, body.documents or [])
    require_input_within_limit(services.settings, "turn's messages", messages)
    if (
        idempotency_key is None
        and is_sdk_retry(retry_count)
        and (earlier := await _repeated(services, session_id, messages))
    ):
        await _finish_start(services, tenant, agent, session_id, earlier, body)
        return StartedTurn(earlier, is_retry=True)
    turn_id = _turn_id(agent.agent_id, session_id, idempotency_key)
    if idempotency_key is not None and await services.store.turns.turn_status(turn_id) is not None:
        await keep_mcp_headers(services, turn_id, credentials)
        await _finish_start(services, tenant, agent, session_id, turn_id, body)
        return StartedTurn(turn_id, is_retry=True)
    started_at = datetime.now(UTC)
    tools = _request_tools(body)
    begin = partial(
        services.store.turns.begin_turn,
        agent.agent_id,
        session_id,
        turn_id,
        messages,
        started_at,
        tools,
        most=services.settings.max_turns_per_session,
    )
    try:
        await _begun(begin(), session_id)
    except TurnConflict as conflict:
        if conflict.turn_id == turn_id:
            await keep_mcp_headers(services, turn_id, credentials)
            await _finish_start(services, tenant, agent, session_id, turn_id, body)
            return StartedTurn(turn_id, is_retry=True)
        if await still_running(services, conflict.turn_id):
            raise HTTPException(409, str(conflict)) from conflict
        if await services.store.turns.turn_status(conflict.turn_id) in (TurnStatus.RUNNING, TurnStatus.AWAITING_INPUT):
            await services.store.turns.abandon_turn(conflict.turn_id, "Its workflow ended outside this runtime.")
            log_turn_state(conflict.turn_id, session_id, agent.agent_id, TurnStatus.FAILED)
        await _begun(begin(), session_id)
    await keep_mcp_headers(services, turn_id, credentials)
    crash_point(AFTER_TURN_ROW)
    turn = Turn(turn_id=turn_id, session_id=session_id, input_messages=messages, started_at=started_at)
    start = turn_start(services, agent, turn, tools, url_documents(body.documents or []))
    await _refuse_oversized(services, start)
    try:
        # Not started only if a retry or the sweep of unstarted turns was quicker: same turn, same id.
        await services.turns.start_once(start, tenant, workflow_summary(messages))
    except Exception as error:
        # What went wrong inside Temporal is for the operator's log; the turn and the caller get what they can act on.
        log.exception("starting the workflow of turn %s failed", turn_id)
        await services.store.turns.abandon_turn(turn_id, "Its workflow could not be started.")
        log_turn_state(turn_id, session_id, agent.agent_id, TurnStatus.FAILED)
        raise HTTPException(503, "Could not start the turn's workflow (Temporal unavailable); retry shortly") from error
    TURNS_STARTED.inc()
    log_turn_state(turn_id, session_id, agent.agent_id, TurnStatus.RUNNING)
    return StartedTurn(turn_id, is_retry=False)


async def reopen_turn(
    services: Services,
    tenant: str,
    agent: Agent,
    turn: Turn,
    responses: list[ToolResponse],
    credentials: str | None = None,
) -> int | None:
    """Resume a completed turn with results a client parsed and ran itself (ReAct-style clients).

    Returns the id of the turn's last event so far (the resumed stream follows it), or None when
    the turn is no longer completed. Raises TurnConflict if another turn of the session is active.
    """
    if not await services.turns.wait_closed(turn.turn_id):
        raise HTTPException(503, f"Turn {turn.turn_id} is still recording its end; retry shortly")
    tools = await services.store.turns.reopen_turn(turn.session_id, turn.turn_id)
    if tools is None:
        return None
    await keep_mcp_headers(services, turn.turn_id, credentials)
    after = await services.store.turns.last_event_id(turn.turn_id)
    times = [step.completed_at for step in turn.steps if step.completed_at] or [turn.started_at]
    continuation = Continuation(
        inferences=sum(isinstance(step, InferenceStep) for step in turn.steps),
        last_time=max(times),
        server_tools=[],
    )
    start = turn_start(services, agent, turn, tools, []).model_copy(
        update={"continuation": continuation, "reopened_with": responses}
    )
    await _refuse_oversized(services, start)
    try:
        await services.turns.start(start, tenant, workflow_summary(turn.input_messages), reopening=True)
    except Exception as error:
        log.exception("restarting the workflow of turn %s failed", turn.turn_id)
        await services.store.turns.abandon_turn(turn.turn_id, "Its workflow could not be restarted.")
        log_turn_state(turn.turn_id, turn.session_id, agent.agent_id, TurnStatus.FAILED)
        raise HTTPException(
            503, "Could not restart the turn's workflow (Temporal unavailable); retry shortly"
        ) from error
    log_turn_state(turn.turn_id, turn.session_id, agent.agent_id, TurnStatus.RUNNING)
    return after
