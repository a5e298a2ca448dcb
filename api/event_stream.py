"""A turn's events, tailed from the store and framed as Server-Sent Events.

Events live in the store (written by the worker's activities), so any API process can serve
any turn's stream, a client that lost its connection can pick up after the last `id:` it saw,
and a finished turn's stream can be replayed after Temporal has forgotten the workflow.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from store.repository import Store, StoredEvent

FINAL_EVENT_TYPES = {"turn_complete", "turn_awaiting_input"}
POLL_MIN_SECONDS = 0.002
POLL_MAX_SECONDS = 0.05
KEEPALIVE_SECONDS = 15.0
LIVENESS_CHECK_SECONDS = 5.0


def is_final(body: dict[str, Any]) -> bool:
    """The last event of a stream: the turn completed, paused for input, or failed."""
    if "error" in body:
        return True
    payload = body.get("event", {}).get("payload", {})
    return payload.get("event_type") in FINAL_EVENT_TYPES


async def tail_events(
    store: Store, turn_id: str, after: int, still_running: Callable[[], Awaitable[bool]]
) -> AsyncIterator[StoredEvent | None]:
    """Yield the turn's events after `after` as they are written, up to and including the next final one.

    Yields None when a keepalive is due. Ends early, without a final event, only when
    `still_running` reports that the turn's workflow is gone.
    """
    delay = POLL_MIN_SECONDS
    quiet_since = checked_at = time.monotonic()
    while True:
        events = await store.events_after(turn_id, after)
        for event in events:
            after = event.event_id
            yield event
            if is_final(event.body):
                return
        now = time.monotonic()
        if events:
            delay, quiet_since, checked_at = POLL_MIN_SECONDS, now, now
            continue
        if now - checked_at >= LIVENESS_CHECK_SECONDS:
            checked_at = now
            if not await still_running() and not await store.events_after(turn_id, after, limit=1):
                return
        if now - quiet_since >= KEEPALIVE_SECONDS:
            quiet_since = now
            yield None
        await asyncio.sleep(delay)
        delay = min(delay * 2, POLL_MAX_SECONDS)


def sse_frame(event: StoredEvent | None) -> bytes:
    if event is None:
        return b": keepalive\n\n"
    data = json.dumps(event.body, separators=(",", ":"))
    return f"id: {event.event_id}\ndata: {data}\n\n".encode()
