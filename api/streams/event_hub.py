"""One poller per API process for every turn being followed.

Streams do not each poll the store: they subscribe here, and a single loop asks the store for
the new events of all followed turns at once, then hands each subscriber its own. Fifty open
streams cost one small query per tick, not fifty. Events written through this process's Store (a
worker running inside the API) are handed, as written, to every subscriber that has seen all the
turn's events before them, without being read back; other processes' writes on this host wake the
loop at once through store/wake.py; writes that bring no wake-up are found by polling. While
writers announce their events, polling is only the fallback, at its slowest rate; events a timer's
poll finds (their writer did not wake us: another host) bring it back to its fastest.

Each distinct cursor (turn, last event delivered) gets its own window of events, so a stream
replaying a long turn from the start, or one whose turn writes nothing yet, never holds back
another. The loop is supervised: a poll that fails (the store is unreachable, a statement
times out) is logged and retried with backoff, and `problem()` says so until a poll succeeds
again — streams resume where they were instead of going silent for good.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict, defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field

from store.repository import Store
from store.turns.records import EventsWritten, StoredEvent

log = logging.getLogger(__name__)

POLL_MIN_SECONDS = 0.002
POLL_MAX_SECONDS = 0.02
RETRY_MIN_SECONDS = 0.05
RETRY_MAX_SECONDS = 2.0
EVENTS_PER_CURSOR = 500
"""Events handed to one cursor per poll; a longer backlog takes further polls, 2 ms apart."""
TURNS_WRITTEN_REMEMBERED = 10_000
"""How many of the turns this process wrote events for, the latest, the hub remembers (EventHub.subscribe)."""


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
        self._woken = False
        """A write announced itself (this process's or a wake-up) since the last poll began."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._running = False
        self._failing_since: float | None = None
        self._last_error = ""
        self._turns_written: OrderedDict[str, None] = OrderedDict()
        """The latest turns this process wrote events for, oldest first."""
        store.turns.on_events_written(self._written)

    def _written(self, written: EventsWritten) -> None:
        """Called by the Store on the writer's loop, after its write."""
        if self._loop is None:
            return
        if asyncio.get_running_loop() is self._loop:
            self._hand_over(written)
        else:  # a worker on another thread's loop
            self._loop.call_soon_threadsafe(self._hand_over, written)

    def _hand_over(self, written: EventsWritten) -> None:
        """Give the written events to each subscriber whose last event is the one before them; a
        subscriber behind that (still catching up, or after a write it missed) gets them from a poll."""
        self._woken = True  # writers here announce themselves: the timer only covers what they do not
        self._turns_written[written.turn_id] = None
        self._turns_written.move_to_end(written.turn_id)
        if len(self._turns_written) > TURNS_WRITTEN_REMEMBERED:
            self._turns_written.popitem(last=False)
        last = written.events[-1].event_id
        behind = False
        for subscription in self._subscriptions.get(written.turn_id, ()):
            if subscription.after == written.after:
                for event in written.events:
                    subscription.events.put_nowait(event)
                subscription.after = last
            elif subscription.after < last:
                behind = True
        if behind:
            self.wake()

    def wake(self) -> None:
        """Events were written (store/wake.py, or this process's Store): poll now. On the hub's own loop."""
        self._woken = True
        self._news.set()

    def problem(self) -> str | None:
        """Why streams may not be getting their events right now; None when the hub is polling fine."""
        if not self._running:
            return "the event hub is not running"
        if self._failing_since is not None:
            seconds = time.monotonic() - self._failing_since
            return f"the event hub's store polls have failed for {seconds:.1f} s: {self._last_error}"
        return None

    @asynccontextmanager
    async def subscribe(self, turn_id: str, after: int, new_turn: bool = False) -> AsyncIterator[Subscription]:
        """Follow the turn from event `after`. A subscription is caught up by a poll at once, except for a
        `new_turn` (one its request has just begun) this process has written nothing for yet: its first
        events come as written (this process's writes, other processes' wake-ups) or from a timer's
        poll, and a read of nothing no longer competes with the turn's first workflow task. (The
        subscription may come after the turn's first writes: the API running the turn starts it eagerly,
        and the stream subscribes once its response starts.)"""
        subscription = Subscription(turn_id, after)
        self._subscriptions[turn_id].add(subscription)
        if new_turn and self._loop is not None and turn_id not in self._turns_written:
            self._loop.call_later(POLL_MAX_SECONDS, self._news.set)
        else:
            self._news.set()
        try:
            yield subscription
        finally:
            self._subscriptions[turn_id].discard(subscription)
            if not self._subscriptions[turn_id]:
                del self._subscriptions[turn_id]

    async def run(self) -> None:
        """Poll while anyone follows a turn: on news, else every 2 ms after events no wake-up announced,
        backing off to 20 ms; after a failed poll, retry from 50 ms backing off to 2 s."""
        self._loop = asyncio.get_running_loop()
        self._running = True
        delay = POLL_MIN_SECONDS
        retry = RETRY_MIN_SECONDS
        try:
            while True:
                self._news.clear()  # a write from here on brings another poll
                announced, self._woken = self._woken, False
                if not self._subscriptions:
                    await self._news.wait()
                    delay = POLL_MIN_SECONDS
                    continue
                try:
                    delivered, backlog = await self._poll()
                except Exception as error:  # any failure of one poll is logged and retried
                    self._failed(error)
                    await asyncio.sleep(retry)
                    retry = min(retry * 2, RETRY_MAX_SECONDS)
                    continue
                if self._failing_since is not None:
                    failed_for = time.monotonic() - self._failing_since
                    log.warning("event hub: store polls work again after %.1f s", failed_for)
                    self._failing_since = None
                retry = RETRY_MIN_SECONDS
                if backlog or (delivered and not announced):
                    delay = POLL_MIN_SECONDS
                elif announced:  # the writers wake us: the timer only covers a lost wake-up
                    delay = POLL_MAX_SECONDS
                else:
                    delay = min(delay * 2, POLL_MAX_SECONDS)
                with suppress(TimeoutError):
                    await asyncio.wait_for(self._news.wait(), delay)
        finally:
            self._running = False

    async def _poll(self) -> tuple[bool, bool]:
        """One query for every followed cursor: whether any subscriber got events, and whether a cursor
        has more waiting than one poll hands over."""
        followers: dict[tuple[str, int], list[Subscription]] = defaultdict(list)
        for turn_id, subscriptions in self._subscriptions.items():
            for subscription in subscriptions:
                followers[(turn_id, subscription.after)].append(subscription)
        found = await self._store.turns.events_after(list(followers), limit=EVENTS_PER_CURSOR)
        delivered = False
        backlog = any(len(events) >= EVENTS_PER_CURSOR for events in found.values())
        for cursor, events in found.items():
            for subscription in followers[cursor]:
                for event in events:
                    # Subscriptions that shared a cursor share its events; none gets one twice.
                    if event.event_id > subscription.after:
                        subscription.after = event.event_id
                        subscription.events.put_nowait(event)
                        delivered = True
        return delivered, backlog

    def _failed(self, error: Exception) -> None:
        self._last_error = f"{type(error).__name__}: {error}"
        if self._failing_since is None:
            self._failing_since = time.monotonic()
            log.error("event hub: a store poll failed; retrying with backoff: %s", self._last_error)
        else:
            log.debug("event hub: store poll failed again: %s", self._last_error)
