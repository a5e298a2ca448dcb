"""The Temporal workers of one worker process, run and shut down as one.

A worker process polls the shared task queue (turns and most activities) and its host's own queue (the code
calls of the containers whose workspaces and kernels are on this host: workflows/code_tools.py)."""

from __future__ import annotations

import asyncio
from types import TracebackType

from temporalio.worker import Worker


class Workers:
    def __init__(self, *workers: Worker) -> None:
        self.workers = workers

    async def run(self) -> None:
        """Runs every worker until all have shut down; one that fails shuts the others down."""
        runs = [asyncio.create_task(worker.run()) for worker in self.workers]
        try:
            await asyncio.gather(*runs)
        except BaseException:
            await self.shutdown()
            await asyncio.gather(*runs, return_exceptions=True)
            raise

    async def shutdown(self) -> None:
        await asyncio.gather(*(worker.shutdown() for worker in self.workers))

    async def __aenter__(self) -> Workers:
        for worker in self.workers:
            await worker.__aenter__()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await asyncio.gather(*(worker.__aexit__(kind, error, trace) for worker in self.workers))
