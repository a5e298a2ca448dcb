"""The watchdog of one call: it kills the sandbox when the call passes its wall time, its CPU time or grows
the workspace past its bytes, and says which limit that was."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from code_sandbox.limits import Limit, SandboxLimits
from code_sandbox.process import SandboxProcess
from code_sandbox.workspaces import WorkspaceFile, scan_workspace

POLL_SECONDS = 0.05
POLL_SECONDS_WITHOUT_CGROUP = 0.25
"""Without a cgroup, CPU time is summed over /proc, which costs more per look."""
IDLE_POLL_SECONDS = 1.0
"""Between a kernel's calls nobody waits on the answer: a looser look costs little and bounds the same."""
WORKSPACE_EVERY_SECONDS = 0.5
"""Walking the workspace costs more than reading a counter; a burst of writes between two walks is bounded by
the file-size limit per file."""


class Watchdog:
    """Watches one sandbox from now on. `wall=False` watches a kernel between calls: whatever the code left
    running is held to the CPU and workspace limits of a call, with no end in time."""

    def __init__(
        self,
        process: SandboxProcess,
        workspace: Path,
        limits: SandboxLimits,
        workspace_bytes: int,
        *,
        wall: bool = True,
    ) -> None:
        self.process = process
        self.wall = wall
        self.workspace = workspace
        self.limits = limits
        self.workspace_bytes_at_start = workspace_bytes
        self.started = time.monotonic()
        self.cpu_at_start = process.cpu_seconds()

    async def watch(self) -> Limit:
        """Returns, with the sandbox killed, the first limit passed; runs until then or until cancelled."""
        poll = POLL_SECONDS if self.process.cgroup is not None else POLL_SECONDS_WITHOUT_CGROUP
        if not self.wall:
            poll = IDLE_POLL_SECONDS
        next_walk = self.started + WORKSPACE_EVERY_SECONDS
        while True:
            await asyncio.sleep(poll)
            now = time.monotonic()
            fired = None
            if self.wall and now - self.started > self.limits.wall_seconds:
                fired = Limit.WALL
            elif self.process.cpu_seconds() - self.cpu_at_start > self.limits.cpu_seconds:
                fired = Limit.CPU
            elif now >= next_walk:
                next_walk = now + WORKSPACE_EVERY_SECONDS
                if self.grew_past_workspace_limit(await asyncio.to_thread(self.workspace_bytes)):
                    fired = Limit.WORKSPACE
            if fired is not None:
                self.process.kill()
                return fired

    def workspace_bytes(self) -> int:
        return scan_workspace(self.workspace).disk_bytes

    def grew_past_workspace_limit(self, disk_bytes: int) -> bool:
        """Over the limit and larger than at the call's start: a call that only cleans up is never stopped."""
        return disk_bytes > self.limits.workspace_bytes and disk_bytes > self.workspace_bytes_at_start


def limit_seen_after(
    limits: SandboxLimits,
    *,
    memory: bool,
    forks_refused: bool,
    written: list[WorkspaceFile],
    grew_past_workspace: bool,
    truncated: bool,
) -> Limit | None:
    """The limit a finished call ran into, from what the host sees afterwards, most telling first: a kill for
    memory, a file cut at the size limit (the code may have gone on), refused forks, the workspace, the output."""
    if memory:
        return Limit.MEMORY
    if any(file.size >= limits.file_size_bytes for file in written):
        return Limit.FILE_SIZE
    if forks_refused:
        return Limit.PROCESSES
    if grew_past_workspace:
        return Limit.WORKSPACE
    if truncated:
        return Limit.OUTPUT
    return None
