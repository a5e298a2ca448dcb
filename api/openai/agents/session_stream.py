"""A session's events as Server-Sent Events: each turn's stored events, rendered (session_events.py), turn
after turn, from any API process.

A stream starts at a cursor the route computes before it answers (so input posted right after the stream
opens is never missed): a turn's ordinal and the last event number the client has of it. It follows that
turn to its end, then waits for the session's next turn, until the client leaves — or, for the stream of
sessions.create, until its first turn has ended.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from api.openai.agents.session_events import TurnEvents, created_event_id, parse_event_id
from api.openai.agents.session_view import session_object, turn_renderer
from api.services import Services
from api.streams.event_stream import KEEPALIVE_SECONDS, is_final, tail_events
from api.turns.stuck import still_running
from store.agent_sessions.sessions import BetaSessionRecord, SessionTurnRecord

NEXT_TURN_POLL_SECONDS = (0.01, 0.25)
"""Polls for a session's next turn start this often and back off to this: a follower of an idle session costs
a small query four times a second, and input posted just after a stream opens is seen within milliseconds."""
STOPPED_TURN_WAIT_SECONDS = 0.5


@dataclass(frozen=True)
class Cursor:
    ordinal: int
    """The session turn to follow first."""
    skip_through: int = -1
    """Its events numbered up to this the client has."""
    created: bool = False
    """Start with the session's `agent.session.created` event (the stream of sessions.create)."""


async def cursor_for(services: Services, record: BetaSessionRecord, last_event_id: str | None) -> Cursor:
    """Where a stream of the session starts: after `last_event_id` when the client resumes; otherwise at the
    active turn's start (a client following a busy session sees all of its turn), or at the next turn."""
    sessions = services.store.agent_sessions
    if last_event_id == created_event_id(record.session_id):
        return Cursor(0)
    parsed = parse_event_id(last_event_id) if last_event_id else None
    if parsed is not None:
        turn = await sessions.session_turn(parsed[0])
        if turn is not None and turn.session_id == record.session_id:
            return Cursor(turn.ordinal, parsed[1])
    if record.current_turn_id is not None:
        turn = await sessions.session_turn(record.current_turn_id)
        status = await services.store.turns.turn_status(record.current_turn_id)
        if turn is not None and status is not None and not status.is_final:
            return Cursor(turn.ordinal)
    return Cursor(record.turn_count)


def frame(event: dict[str, Any] | None) -> bytes:
    if event is None:
        return b": keepalive\n\n"
    return f"id: {event['event_id']}\ndata: {json.dumps(event, separators=(',', ':'))}\n\n".encode()


async def session_sse(
    services: Services, record: BetaSessionRecord, cursor: Cursor, first_turn_only: bool = False
) -> AsyncIterator[bytes]:
    async for event in session_events(services, record, cursor, first_turn_only):
        yield frame(event)
    if first_turn_only:
        yield b"data: [DONE]\n\n"


async def session_events(
    services: Services, record: BetaSessionRecord, cursor: Cursor, first_turn_only: bool
) -> AsyncIterator[dict[str, Any] | None]:
    """The session's events from `cursor` on; None when a keepalive is due."""
    if cursor.created:
        yield {
            "type": "agent.session.created",
            "event_id": created_event_id(record.session_id),
            "session": session_object(record, "idle", [], None),
        }
    ordinal, skip = cursor.ordinal, cursor.skip_through
    while True:
        turn = None
        async for waited in _next_turn(services, record.session_id, ordinal):
            if waited is None:
                yield None
            else:
                turn = waited
        assert turn is not None
        async for event in _turn_events(services, turn_renderer(record, turn, skip), turn):
            yield event
        if first_turn_only:
            return
        ordinal, skip = ordinal + 1, -1


async def _next_turn(services: Services, session_id: str, ordinal: int) -> AsyncIterator[SessionTurnRecord | None]:
    """Yield the session's turn numbered `ordinal` once it exists, and None whenever a keepalive is due."""
    loop = asyncio.get_running_loop()
    quiet_since = loop.time()
    delay, slowest = NEXT_TURN_POLL_SECONDS
    while True:
        found = await services.store.agent_sessions.session_turns(session_id, ordinal)
        if found:
            yield found[0]
            return
        if loop.time() - quiet_since >= KEEPALIVE_SECONDS:
            quiet_since = loop.time()
            yield None
        await asyncio.sleep(delay)
        delay = min(delay * 2, slowest)


async def _turn_events(
    services: Services, renderer: TurnEvents, turn: SessionTurnRecord
) -> AsyncIterator[dict[str, Any] | None]:
    """One turn's events to its end: tailed from the store across its pauses (a tail ends at each)."""
    for event in renderer.open():
        yield event
    after = 0
    while not renderer.finished:
        ended = False
        tail = tail_events(
            services.events, turn.turn_id, after, lambda: still_running(services, turn.turn_id), include_runtime=True
        )
        async for stored in tail:
            if stored is None:
                yield None
                continue
            after = stored.event_id
            status = await services.store.turns.turn_status(turn.turn_id) if "error" in stored.body else None
            if is_final(stored.body):
                renderer.ends_over_budget = (await services.store.spend.state(renderer.session_id)).reached
            for event in renderer.feed(stored.body, status):
                yield event
            ended = is_final(stored.body)
        if renderer.finished or ended:
            continue
        # The tail stopped without a final event: the workflow is gone. A turn that ended without one (its
        # start was abandoned) ends here as stored; otherwise its last events are on their way.
        status = await services.store.turns.turn_status(turn.turn_id)
        if status is not None and status.is_final:
            stored_turn = await services.store.turns.get_turn(None, turn.turn_id)
            message = (stored_turn.error if stored_turn is not None else None) or "The turn's workflow ended."
            for event in renderer.feed({"error": {"message": message}}, status):
                yield event
        else:
            await asyncio.sleep(STOPPED_TURN_WAIT_SECONDS)
