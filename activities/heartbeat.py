"""Heartbeating while an activity waits on something slow (a model, a tool)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from temporalio import activity

HEARTBEAT_SECONDS = 1.0


@asynccontextmanager
async def heartbeating() -> AsyncIterator[None]:
    """Heartbeat every second: a dead worker is noticed within the heartbeat timeout, and a
    cancellation (delivered on a heartbeat's response) reaches the activity promptly.

    The first beat comes a second in, not at the start: a call that ends sooner sends none. An
    immediate beat is a server round trip and a write of the workflow's state while the turn's
    latency is being made, and it told the server nothing a start within the timeout does not.

    A local activity does not beat: the server knows nothing of it, and it is cancelled in-process.
    """
    if activity.info().is_local:
        yield
        return

    async def beat() -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            activity.heartbeat()

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
