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
    cancellation (delivered on a heartbeat's response) reaches the activity promptly."""

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(HEARTBEAT_SECONDS)

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
