"""Answering a turn request: its events as SSE, or the Turn once it completes or pauses."""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import HTTPException
from fastapi.responses import JSONResponse, StreamingResponse

from api.services import Services
from api.streams.event_stream import is_final, sse_frame, tail_events
from api.turns.stuck import still_running
from domain.events import ErrorChunk, StreamError
from domain.turns import TurnStatus
from store.turns.records import StoredEvent

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

# Status of a turn that ended without an answer → the HTTP status of a non-streamed request for it.
_ENDED_WITHOUT_ANSWER = {TurnStatus.FAILED: 502, TurnStatus.CANCELLED: 409, TurnStatus.EXPIRED: 410}


def _events(services: Services, turn_id: str, after: int, new_turn: bool) -> AsyncIterator[StoredEvent | None]:
    return tail_events(services.events, turn_id, after, lambda: still_running(services, turn_id), new_turn=new_turn)


def _ended_unexpectedly(turn_id: str) -> StoredEvent:
    message = f"Turn {turn_id}'s workflow ended without finishing the turn (was it terminated?)"
    return StoredEvent(0, ErrorChunk(error=StreamError(message=message)).model_dump(mode="json"))


async def _sse(events: AsyncIterator[StoredEvent | None], turn_id: str) -> AsyncIterator[bytes]:
    final = None
    async for event in events:
        final = event or final
        yield sse_frame(event)
    if final is None or not is_final(final.body):
        yield sse_frame(_ended_unexpectedly(turn_id))


def stream_events(services: Services, turn_id: str, after: int, new_turn: bool = False) -> StreamingResponse:
    """The turn's events after event `after`, up to and including the next final one; `new_turn`: this
    request has just begun the turn."""
    events = _sse(_events(services, turn_id, after, new_turn), turn_id)
    return StreamingResponse(events, media_type="text/event-stream", headers=SSE_HEADERS)


async def respond(
    services: Services, turn_id: str, after: int, stream: bool, new_turn: bool = False
) -> StreamingResponse | JSONResponse:
    if stream:
        return stream_events(services, turn_id, after, new_turn)
    last: StoredEvent | None = None
    async for event in _events(services, turn_id, after, new_turn):
        last = event or last
    if last is None or not is_final(last.body):
        last = _ended_unexpectedly(turn_id)
    if "error" in last.body:
        status = await services.store.turns.turn_status(turn_id)
        code = _ENDED_WITHOUT_ANSWER.get(status, 502) if status else 502
        # A client retry would start a second turn; the reason is final.
        raise HTTPException(code, last.body["error"]["message"], headers={"x-should-retry": "false"})
    return JSONResponse(last.body["event"]["payload"]["turn"])
