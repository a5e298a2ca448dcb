"""One poller per API process for every turn being followed.

Streams do not each poll the store: they subscribe here, and a single loop asks the store for
the new events of all followed turns at once, then hands each subscriber its own. Fifty open
streams cost one small query per tick, not fifty. Writes made through this process's Store (a
worker running inside the API) wake the loop at once; other processes' writes are found by polling.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field

from store.repository import Store, StoredEvent

POLL_MIN_SECONDS = 0.002
POLL_MAX_SECONDS = 0.02


@dataclass(eq=False)
class Subscription:
    turn_id: str
    after: int
    events: asyncio.Queue[StoredEvent] = field(default_factory=asyncio.Queue)


class EventHub:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._subscriptions: dict[str, set[Subscription]] = defaultdict(set)
        self._news = asyncio.Event()
        """Set by a new subscription or a write in this process: poll now."""
        self._loop: asyncio.AbstractEventLoop | None = None
        store.on_events_written(self._written)

    def _written(self) -> None:
        if self._loop is not None:  # the writer may be a worker on another thread's loop
            self._loop.call_soon_threadsafe(self._news.set)

    @asynccontextmanager
    async def subscribe(self, turn_id: str, after: int) -> AsyncIterator[Subscription]:
        subscription = Subscription(turn_id, after)
        self._subscriptions[turn_id].add(subscription)
        self._news.set()
        try:
            yield subscription
        finally:
            self._subscriptions[turn_id].discard(subscription)
            if not self._subscriptions[turn_id]:
                del self._subscriptions[turn_id]

    async def run(self) -> None:
        """Poll while anyone follows a turn: on news, else every 2 ms after events, backing off to 20 ms."""
        self._loop = asyncio.get_running_loop()
        delay = POLL_MIN_SECONDS
        while True:
            self._news.clear()  # a write from here on brings another poll
            if not self._subscriptions:
                await self._news.wait()
                delay = POLL_MIN_SECONDS
                continue
            cursors = {turn_id: min(s.after for s in subs) for turn_id, subs in self._subscriptions.items()}
            events = await self._store.events_of_turns(cursors)
            for turn_id, event in events:
                for subscription in self._subscriptions.get(turn_id, ()):
                    if event.event_id > subscription.after:
                        subscription.after = event.event_id
                        subscription.events.put_nowait(event)
            delay = POLL_MIN_SECONDS if events else min(delay * 2, POLL_MAX_SECONDS)
            with suppress(TimeoutError):
                await asyncio.wait_for(self._news.wait(), delay)
