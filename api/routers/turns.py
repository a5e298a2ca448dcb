"""Turns: create (start a workflow), resume (deliver tool responses), read, and follow their events."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Header, HTTPException, Query
from fastapi.responses import JSONResponse, StreamingResponse

from api.errors import not_found
from api.event_stream import is_final, sse_frame, tail_events
from api.routers.agents import AgentDep
from api.runtime import Runtime, RuntimeDep
from api.schemas import CreateTurnRequest, ResumeTurnRequest, StepResponse
from api.turn_documents import with_documents
from api.turn_gateway import ResumeRejected, TurnNotRunning
from domain.agents import Agent, toolgroup_name
from domain.events import ErrorChunk, StreamError
from domain.turns import Turn, TurnStatus
from store.repository import StoredEvent, TurnConflict
from workflows.contracts import TurnStart, pause_event_key

router = APIRouter(tags=["turns"])

TURN_PATH = "/agents/{agent_id}/session/{session_id}/turn"
PAUSE_EVENT_POLLS = 3000
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


async def _session_of(
    agent: Agent,
    session_id: str,
    runtime: Runtime,
) -> str:
    if not await runtime.store.session_exists(agent.agent_id, session_id):
        raise not_found("Session", session_id)
    return session_id


async def _start_turn(
    agent: Agent,
    session_id: str,
    body: CreateTurnRequest,
    runtime: Runtime,
) -> str:
    if body.toolgroups:
        names = [toolgroup_name(group) for group in body.toolgroups]
        raise HTTPException(400, f"Unknown toolgroups {names}: this server has no server-side toolgroups")
    messages = with_documents(body.messages, body.documents or [])
    turn_id = str(uuid.uuid4())
    started_at = datetime.now(UTC)
    try:
        await runtime.store.begin_turn(agent.agent_id, session_id, turn_id, messages, started_at)
    except TurnConflict as conflict:
        if await runtime.turns.is_running(conflict.turn_id):
            raise HTTPException(409, str(conflict)) from conflict
        await runtime.store.abandon_turn(conflict.turn_id, "Its workflow ended outside this runtime.")
        await runtime.store.begin_turn(agent.agent_id, session_id, turn_id, messages, started_at)
    start = TurnStart(
        agent_id=agent.agent_id,
        session_id=session_id,
        turn_id=turn_id,
        agent_config=agent.agent_config,
        input_messages=messages,
        started_at=started_at,
        tool_config=body.tool_config,
    )
    try:
        await runtime.turns.start(start)
    except Exception as error:
        await runtime.store.abandon_turn(turn_id, f"Its workflow could not be started: {error}")
        raise HTTPException(503, f"Could not start the turn's workflow: {error}") from error
    return turn_id


def _events(runtime: Runtime, turn_id: str, after: int) -> AsyncIterator[StoredEvent | None]:
    return tail_events(runtime.store, turn_id, after, lambda: runtime.turns.is_running(turn_id))


def _ended_unexpectedly(turn_id: str) -> StoredEvent:
    message = f"Turn {turn_id}'s workflow ended without finishing the turn (was it terminated?)"
    return StoredEvent(0, ErrorChunk(error=StreamError(message=message)).model_dump(mode="json"))


async def _sse(
    events: AsyncIterator[StoredEvent | None],
    turn_id: str,
) -> AsyncIterator[bytes]:
    final = None
    async for event in events:
        final = event or final
        yield sse_frame(event)
    if final is None or not is_final(final.body):
        yield sse_frame(_ended_unexpectedly(turn_id))


async def _respond(
    runtime: Runtime,
    turn_id: str,
    after: int,
    stream: bool,
) -> StreamingResponse | JSONResponse:
    events = _events(runtime, turn_id, after)
    if stream:
        return StreamingResponse(_sse(events, turn_id), media_type="text/event-stream", headers=SSE_HEADERS)
    last: StoredEvent | None = None
    async for event in events:
        last = event or last
    if last is None or not is_final(last.body):
        last = _ended_unexpectedly(turn_id)
    if "error" in last.body:
        # The model provider failed the turn; a retry by the client would start a second turn.
        raise HTTPException(502, last.body["error"]["message"], headers={"x-should-retry": "false"})
    return JSONResponse(last.body["event"]["payload"]["turn"])


@router.post(TURN_PATH, response_model=Turn)
async def create_turn(
    agent: AgentDep,
    runtime: RuntimeDep,
    session_id: str,
    body: CreateTurnRequest,
) -> StreamingResponse | JSONResponse:
    """Start a turn. `stream: true` answers with its events as SSE; otherwise with the Turn once it
    completes or pauses for client tools."""
    await _session_of(agent, session_id, runtime)
    turn_id = await _start_turn(agent, session_id, body, runtime)
    return await _respond(runtime, turn_id, 0, bool(body.stream))


async def _stored_turn(
    agent: Agent,
    session_id: str,
    turn_id: str,
    runtime: Runtime,
) -> Turn:
    await _session_of(agent, session_id, runtime)
    turn = await runtime.store.get_turn(session_id, turn_id)
    if turn is None:
        raise not_found("Turn", turn_id)
    return turn


@router.post(TURN_PATH + "/{turn_id}/resume", response_model=Turn)
async def resume_turn(
    agent: AgentDep,
    runtime: RuntimeDep,
    session_id: str,
    turn_id: str,
    body: ResumeTurnRequest,
) -> StreamingResponse | JSONResponse:
    """Submit the results of the client tool calls a paused turn waits for; the turn continues."""
    turn = await _stored_turn(agent, session_id, turn_id, runtime)
    call_ids = [response.call_id for response in body.tool_responses]
    if len(call_ids) != len(set(call_ids)):
        raise HTTPException(400, f"Each call_id may be answered once; got {call_ids}")
    try:
        pause = await runtime.turns.submit_tool_responses(turn_id, body.tool_responses)
    except ResumeRejected as rejected:
        raise HTTPException(409 if rejected.conflict else 400, str(rejected)) from rejected
    except TurnNotRunning as gone:
        raise HTTPException(409, f"Turn {turn_id} is {turn.status.value}, not awaiting input") from gone
    after = await _pause_event_id(runtime, turn_id, pause)
    return await _respond(runtime, turn_id, after, bool(body.stream))


async def _pause_event_id(
    runtime: Runtime,
    turn_id: str,
    pause: int,
) -> int:
    """The id of the event that announced the pause being ended; the resumed stream starts after it.

    A client that resumed from a query may beat the worker's write of that event by a moment.
    """
    for _ in range(PAUSE_EVENT_POLLS):
        event_id = await runtime.store.event_id(turn_id, pause_event_key(pause))
        if event_id is not None:
            return event_id
        await asyncio.sleep(0.01)
    raise HTTPException(503, f"Turn {turn_id} was resumed, but its pause was not recorded in time; follow its events")


@router.get(TURN_PATH + "/{turn_id}", response_model=Turn)
async def get_turn(
    agent: AgentDep,
    runtime: RuntimeDep,
    session_id: str,
    turn_id: str,
) -> Turn:
    turn = await _stored_turn(agent, session_id, turn_id, runtime)
    if turn.status != TurnStatus.RUNNING:
        return turn
    return await runtime.turns.live_turn(turn_id) or turn


@router.get(TURN_PATH + "/{turn_id}/step/{step_id}", response_model=StepResponse)
async def get_step(
    agent: AgentDep,
    runtime: RuntimeDep,
    session_id: str,
    turn_id: str,
    step_id: str,
) -> StepResponse:
    turn = await get_turn(agent=agent, runtime=runtime, session_id=session_id, turn_id=turn_id)
    for step in turn.steps:
        if step.step_id == step_id:
            return StepResponse(step=step)
    raise not_found("Step", step_id)


@router.get(TURN_PATH + "/{turn_id}/events")
async def turn_events(
    agent: AgentDep,
    runtime: RuntimeDep,
    session_id: str,
    turn_id: str,
    after: Annotated[int | None, Query(ge=0, description="Replay events after this event id")] = None,
    last_event_id: Annotated[int | None, Header(ge=0)] = None,
) -> StreamingResponse:
    """Follow a turn's event stream from after a given event id (the SSE `id:` last seen), up to
    and including its next final event. Works for running and finished turns alike."""
    await _stored_turn(agent, session_id, turn_id, runtime)
    start = after if after is not None else last_event_id or 0
    events = _events(runtime, turn_id, start)
    return StreamingResponse(_sse(events, turn_id), media_type="text/event-stream", headers=SSE_HEADERS)
