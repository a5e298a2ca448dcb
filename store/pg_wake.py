"""Wake-ups across hosts through PostgreSQL: every write of events notifies, every API process listens.

store/wake.py wakes the API processes of one host. An API on another host found a worker's events only
by polling, up to 20 ms after they were written (the hub's slowest tick). With a PostgreSQL store each
write of events also runs `pg_notify` in its transaction (delivered when it commits), and each API
holds one connection that LISTENs and wakes its event hub. The payload is the writing process's token,
so an API ignores its own writes: its hub has them already. As with the sockets, a notification carries
no events and the store stays their one source: a lost one leaves the poll to its timer.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, func, select
from sqlalchemy.engine import make_url

if TYPE_CHECKING:
    import asyncpg

log = logging.getLogger(__name__)

CHANNEL = "da_turn_events"
PROCESS_TOKEN = uuid.uuid4().hex
"""This process's writes, in the payload of their notifications."""
CHECK_SECONDS = 30.0
"""How often an idle listening connection is checked (a peer gone without closing it sends nothing)."""
RECONNECT_MAX_SECONDS = 30.0

_NOTIFY = select(func.pg_notify(CHANNEL, PROCESS_TOKEN))


def notify_events_written(tx: Connection) -> None:
    """In the transaction that wrote events: tell the listening API processes when it commits."""
    if tx.dialect.name == "postgresql":
        tx.execute(_NOTIFY)


class PostgresWakeReceiver:
    """Listens on the store's database for other processes' writes; calls `on_wake` on the running loop.

    Reconnects with backoff while the database is out of reach, and wakes the hub on each (re)connect
    for what was written while nobody listened."""

    def __init__(self, store_url: str, on_wake: Callable[[], None], own: str = PROCESS_TOKEN) -> None:
        """`own`: the token of the writes to ignore, this process's."""
        url = make_url(store_url)
        # The store engine's own translation of the URL (host, port, user, TLS options) into asyncpg's.
        self._connect_args, self._connect_kwargs = url.get_dialect()().create_connect_args(url)
        self._on_wake = on_wake
        self._own = own
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._listen_forever())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with suppress(asyncio.CancelledError):
                await self._task

    def _notified(self, _connection: Any, _pid: int, _channel: str, payload: str) -> None:
        if payload != self._own:
            self._on_wake()

    async def _listen_forever(self) -> None:
        import asyncpg  # here: a store on SQLite never needs it (76 ms to import)

        delay = 0.5
        while True:
            try:
                connection = await asyncpg.connect(*self._connect_args, **self._connect_kwargs)
            except (OSError, asyncpg.PostgresError) as error:
                log.warning("event wake-ups across hosts paused: cannot listen on the store (%s)", error)
                await asyncio.sleep(delay)
                delay = min(delay * 2, RECONNECT_MAX_SECONDS)
                continue
            delay = 0.5
            try:
                await self._listen(connection)
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as error:
                log.warning("event wake-ups across hosts: the listening connection failed (%s); reconnecting", error)
            finally:
                with suppress(Exception):
                    await asyncio.wait_for(connection.close(), 5)

    async def _listen(self, connection: asyncpg.Connection) -> None:
        lost = asyncio.Event()
        connection.add_termination_listener(lambda _connection: lost.set())
        await connection.add_listener(CHANNEL, self._notified)
        self._on_wake()  # whatever was written while nobody listened
        while not connection.is_closed():
            with suppress(TimeoutError):
                await asyncio.wait_for(lost.wait(), CHECK_SECONDS)
            if lost.is_set():
                return
            await connection.execute("SELECT 1", timeout=5)
