"""Turns: create (start a workflow), resume (deliver tool responses), read, and follow their events."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import APIRouter, Header, HTTPException, Query
from fastapi.responses import JSONResponse, StreamingResponse

from api.guards.tenancy import Principal, PrincipalDep
from api.http.errors import not_found
from api.llama_stack.agent_routes import AgentDep
from api.llama_stack.provider_data import McpHeadersDep, seal_mcp_headers
from api.llama_stack.schemas import CreateTurnRequest, ResumeTurnRequest, StepResponse
from api.llama_stack.turn_creation import reopen_turn, require_input_within_limit, start_turn
from api.llama_stack.turn_responses import respond, stream_events
from api.services import Services, ServicesDep
from api.turn_gateway import ResumeRejected, TurnNotRunning, TurnUnavailable
from api.turns.mcp_headers import keep_mcp_headers
from api.turns.sdk_retries import RETRY_COUNT_HEADER
from domain.agents import Agent
from domain.content import ToolResponse
from domain.turns import ToolExecutionStep, Turn, TurnStatus
from observability.tracing import turn_context
from store.turns.records import TurnConflict
from tool_runtime.output_limit import truncate_content
from workflows.contracts import pause_event_key

router = APIRouter(tags=["turns"])

TURN_PATH = "/agents/{agent_id}/session/{session_id}/turn"
PAUSE_EVENT_POLLS = 3000
CANCEL_WAIT_POLLS = 600
RACE_RETRIES = 10


async def _answer(
    services: Services,
    principal: Principal,
    stream: bool,
    answer: Callable[[], Awaitable[StreamingResponse | JSONResponse]],
) -> StreamingResponse | JSONResponse:
    """Run `answer`, holding one of the key's stream slots first when it streams: a caller with too many
    open streams is refused before anything starts or resumes."""
    if not stream:
        return await answer()
    slot = services.streams.take(principal.key_id)
    try:
        response = await answer()
    except BaseException:
        slot.release()
        raise
    return slot.hold_for(response)


async def _session_of(
    agent: Agent,
    session_id: str,
    services: Services,
) -> str:
    if not await services.store.turns.session_exists(agent.agent_id, session_id):
        raise not_found("Session", session_id)
    return session_id


@router.post(TURN_PATH, response_model=Turn)
async def create_turn(
    agent: AgentDep,
    services: ServicesDep,
    principal: PrincipalDep,
    session_id: str,
    body: CreateTurnRequest,
    mcp_headers: McpHeadersDep,
    idempotency_key: Annotated[str | None, Header(max_length=200)] = None,
    retry_count: Annotated[str | None, Header(alias=RETRY_COUNT_HEADER, max_length=20)] = None,
) -> StreamingResponse | JSONResponse:
    """Start a turn. `stream: true` answers with its events as SSE; otherwise with the Turn once it
    completes or pauses for client tools. Retried with the same `Idempotency-Key`, or by the SDK
    on its own (api/turns/sdk_retries.py), it starts nothing new and answers with the same turn's events.
    MCP headers in `X-LlamaStack-Provider-Data` go with the turn's tool calls (api/turns/mcp_headers.py)."""
    credentials = seal_mcp_headers(services, mcp_headers)

    async def answer() -> StreamingResponse | JSONResponse:
        # The store checks that the session is the agent's as it records the turn (404 if not).
        started = await start_turn(
            services, principal.tenant, agent, session_id, body, idempotency_key, credentials, retry_count
        )
        return await respond(services, started.turn_id, 0, bool(body.stream), new_turn=not started.is_retry)

    return await _answer(services, principal, bool(body.stream), answer)


async def _stored_turn(
    agent: Agent,
    session_id: str,
    turn_id: str,
    services: Services,
) -> Turn:
    await _session_of(agent, session_id, services)
    turn = await services.store.turns.get_turn(session_id, turn_id)
    if turn is None:
        raise not_found("Turn", turn_id)
    return turn


@router.post(TURN_PATH + "/{turn_id}/resume", response_model=Turn)
async def resume_turn(
    agent: AgentDep,
    services: ServicesDep,
    principal: PrincipalDep,
    session_id: str,
    turn_id: str,
    body: ResumeTurnRequest,
    mcp_headers: McpHeadersDep,
) -> StreamingResponse | JSONResponse:
    """Submit the results of the client tool calls a paused turn waits for; the turn continues.
    MCP headers in `X-LlamaStack-Provider-Data` replace those the turn was given before."""
    credentials = seal_mcp_headers(services, mcp_headers)
    return await _answer(
        services,
        principal,
        bool(body.stream),
        lambda: _resume(services, principal.tenant, agent, session_id, turn_id, body, credentials),
    )


async def _resume(
    services: Services,
    tenant: str,
    agent: Agent,
    session_id: str,
    turn_id: str,
    body: ResumeTurnRequest,
    credentials: str | None,
) -> StreamingResponse | JSONResponse:
    turn = await _stored_turn(agent, session_id, turn_id, services)
    call_ids = [response.call_id for response in body.tool_responses]
    if len(call_ids) != len(set(call_ids)):
        raise HTTPException(400, f"Each call_id may be answered once; got {call_ids}")
    limit = services.settings.max_tool_output_chars
    responses = [r.model_copy(update={"content": truncate_content(r.content, limit)}) for r in body.tool_responses]
    require_input_within_limit(services.settings, "tool results", responses)
    await keep_mcp_headers(services, turn_id, credentials)
    try:
        with turn_context(turn_id, session_id, agent.agent_id):
            pause = await _deliver(services, turn_id, responses)
    except TurnUnavailable as unavailable:
        raise HTTPException(503, str(unavailable)) from unavailable
    except (ResumeRejected, TurnNotRunning) as refused:
        if isinstance(refused, ResumeRejected) and not refused.conflict:
            raise HTTPException(400, str(refused)) from refused
        reopened_after = await _reopen_completed(services, tenant, agent, session_id, turn_id, responses, credentials)
        if reopened_after is None:
            current = await services.store.turns.turn_status(turn_id) or turn.status
            code = 410 if current == TurnStatus.EXPIRED else 409
            raise HTTPException(code, f"Turn {turn_id} is {current.value}, not awaiting input") from refused
        return await respond(services, turn_id, reopened_after, bool(body.stream))
    after = await _pause_event_id(services, turn_id, pause)
    return await respond(services, turn_id, after, bool(body.stream))


async def _deliver(services: Services, turn_id: str, responses: list[ToolResponse]) -> int:
    """Submit the results; a refusal while the store already records the pause is a race, not an answer.

    The pause is stored before it is announced, but a worker that dies right then leaves the
    workflow to reach it again on replay — an update arriving meanwhile meets a turn that, for a
    moment, is still running. Wait for the replay rather than turn the caller away.
    """
    attempt = 0
    while True:
        attempt += 1
        try:
            return await services.turns.submit_tool_responses(turn_id, responses)
        except ResumeRejected as refused:
            stored = await services.store.turns.turn_status(turn_id)
            if not refused.conflict or stored != TurnStatus.AWAITING_INPUT or attempt == RACE_RETRIES:
                raise
            await asyncio.sleep(0.25 * attempt)


async def _reopen_completed(
    services: Services,
    tenant: str,
    agent: Agent,
    session_id: str,
    turn_id: str,
    responses: list[ToolResponse],
    credentials: str | None,
) -> int | None:
    """Resume a completed turn for a ReAct-style client, unless these results were already given
    (a retried resume must not run the turn again). None when the turn cannot be reopened."""
    turn = await services.store.turns.get_turn(session_id, turn_id)
    if turn is None or turn.status != TurnStatus.COMPLETED:
        return None
    answered = {r.call_id for s in turn.steps if isinstance(s, ToolExecutionStep) for r in s.tool_responses}
    if answered & {r.call_id for r in responses}:
        return None
    try:
        return await reopen_turn(services, tenant, agent, turn, responses, credentials)
    except TurnConflict as conflict:
        raise HTTPException(409, str(conflict)) from conflict


async def _pause_event_id(
    services: Services,
    turn_id: str,
    pause: int,
) -> int:
    """The id of the event that announced the pause being ended; the resumed stream starts after it.

    A client that resumed from a query may beat the worker's write of that event by a moment.
    """
    for _ in range(PAUSE_EVENT_POLLS):
        event_id = await services.store.turns.event_id(turn_id, pause_event_key(pause))
        if event_id is not None:
            return event_id
        await asyncio.sleep(0.01)
    raise HTTPException(503, f"Turn {turn_id} was resumed, but its pause was not recorded in time; follow its events")


@router.get(TURN_PATH + "/{turn_id}", response_model=Turn)
async def get_turn(
    agent: AgentDep,
    services: ServicesDep,
    session_id: str,
    turn_id: str,
) -> Turn:
    turn = await _stored_turn(agent, session_id, turn_id, services)
    if turn.status != TurnStatus.RUNNING:
        return turn
    return await services.turns.live_turn(turn)


@router.get(TURN_PATH + "/{turn_id}/step/{step_id}", response_model=StepResponse)
async def get_step(
    agent: AgentDep,
    services: ServicesDep,
    session_id: str,
    turn_id: str,
    step_id: str,
) -> StepResponse:
    turn = await get_turn(agent=agent, services=services, session_id=session_id, turn_id=turn_id)
    for step in turn.steps:
        if step.step_id == step_id:
            return StepResponse(step=step)
    raise not_found("Step", step_id)


@router.get(TURN_PATH + "/{turn_id}/events")
async def turn_events(
    agent: AgentDep,
    services: ServicesDep,
    principal: PrincipalDep,
    session_id: str,
    turn_id: str,
    after: Annotated[int | None, Query(ge=0, description="Replay events after this event id")] = None,
    last_event_id: Annotated[int | None, Header(ge=0)] = None,
) -> StreamingResponse:
    """Follow a turn's event stream from after a given event id (the SSE `id:` last seen), up to
    and including its next final event. Works for running and finished turns alike."""
    turn = await _stored_turn(agent, session_id, turn_id, services)
    start = after if after is not None else last_event_id or 0
    if turn.status.is_final and await services.store.turns.last_event_id(turn_id) <= start:
        # Nothing will follow the end of a finished turn's log: an empty stream, at once.
        return StreamingResponse(iter(()), media_type="text/event-stream")

    async def answer() -> StreamingResponse:
        return stream_events(services, turn_id, start)

    response = await _answer(services, principal, True, answer)
    assert isinstance(response, StreamingResponse)  # a stream keeps its type while it holds a slot
    return response


@router.post(TURN_PATH + "/{turn_id}/cancel", response_model=Turn)
async def cancel_turn(agent: AgentDep, services: ServicesDep, session_id: str, turn_id: str) -> Turn:
    """Stop a running or paused turn. Its model call is interrupted, its steps so far are kept, it
    ends `cancelled`, and the session accepts a new turn. Answers with the cancelled turn."""
    turn = await _stored_turn(agent, session_id, turn_id, services)
    if turn.status.is_final:
        raise HTTPException(409, f"Turn {turn_id} is already {turn.status.value}")
    await services.turns.cancel(turn_id)
    for _ in range(CANCEL_WAIT_POLLS):
        turn = await _stored_turn(agent, session_id, turn_id, services)
        if turn.status.is_final:
            return turn
        await asyncio.sleep(0.05)
    raise HTTPException(503, f"Turn {turn_id} was asked to cancel but has not stopped yet; read it again shortly")
