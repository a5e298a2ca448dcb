"""A turn's events, tailed from the store and framed as Server-Sent Events.

Events live in the store (written by the worker's activities), so any API process can serve
any turn's stream, a client that lost its connection can pick up after the last `id:` it saw,
and a finished turn's stream can be replayed after Temporal has forgotten the workflow.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from temporalio.service import RPCError

from api.streams.event_hub import POLL_MAX_SECONDS, EventHub
from store.turns.records import StoredEvent

log = logging.getLogger(__name__)

FINAL_EVENT_TYPES = {"turn_complete", "turn_awaiting_input"}
KEEPALIVE_SECONDS = 15.0
LIVENESS_CHECK_SECONDS = 5.0


def is_runtime_event(body: dict[str, Any]) -> bool:
    """An event of the runtime's own vocabulary (segment_started, tools_listed, approval_requested):
    the Responses dialect renders them; the llama-stack stream has no such events and skips them."""
    return "runtime" in body


def is_final(body: dict[str, Any]) -> bool:
    """The last event of a stream: the turn completed, paused for input, or failed."""
    if "error" in body:
        return True
    payload = body.get("event", {}).get("payload", {})
    return payload.get("event_type") in FINAL_EVENT_TYPES


async def tail_events(
    hub: EventHub,
    turn_id: str,
    after: int,
    still_running: Callable[[], Awaitable[bool]],
    include_runtime: bool = False,
    new_turn: bool = False,
) -> AsyncIterator[StoredEvent | None]:
    """Yield the turn's events after `after` as they are written, up to and including the next final one.

    Yields None when a keepalive is due. Ends early, without a final event, only when
    `still_running` reports that the turn's workflow is gone (and nothing more was written).
    Runtime events (is_runtime_event) only with `include_runtime`: the llama-stack stream has none.
    `new_turn`: the caller has just begun the turn (EventHub.subscribe).
    """
    async with hub.subscribe(turn_id, after, new_turn) as subscription:
        quiet_for = 0.0
        while True:
            try:
                event = await _next_event(subscription.events)
            except TimeoutError:
                quiet_for += LIVENESS_CHECK_SECONDS
                if not await _still_running(still_running, turn_id):
                    await asyncio.sleep(POLL_MAX_SECONDS * 2)  # let the hub deliver a last write
                    if subscription.events.empty():
                        return
                if quiet_for >= KEEPALIVE_SECONDS:
                    quiet_for = 0.0
                    yield None
                continue
            quiet_for = 0.0
            if include_runtime or not is_runtime_event(event.body):
                yield event
            if is_final(event.body):
                return


async def _next_event(events: asyncio.Queue[StoredEvent]) -> StoredEvent:
    """The next event, or TimeoutError after LIVENESS_CHECK_SECONDS: one handed over already is taken
    at once, and a wait is a timer on this task rather than a task of its own (`asyncio.wait_for`)."""
    if not events.empty():
        return events.get_nowait()
    async with asyncio.timeout(LIVENESS_CHECK_SECONDS):
        return await events.get()


async def _still_running(still_running: Callable[[], Awaitable[bool]], turn_id: str) -> bool:
    """The liveness check, answered "yes" when Temporal cannot be asked (a restart of its server outlasting
    its client's retries): the turn's events are in the store and keep the stream going once it is back."""
    try:
        return await still_running()
    except RPCError as error:
        log.warning("turn %s: cannot ask Temporal whether its workflow runs (%s); still following", turn_id, error)
        return True


def sse_frame(event: StoredEvent | None) -> bytes:
    if event is None:
        return b": keepalive\n\n"
    data = json.dumps(event.body, separators=(",", ":"))
    return f"id: {event.event_id}\ndata: {data}\n\n".encode()
