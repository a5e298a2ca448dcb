"""Running one command in a container's sandbox (what the shell tool runs): it starts, is watched, and ends
with its output, its exit code, the files it wrote and the limit that stopped it, if one did."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from code_sandbox.bubblewrap import Sandbox
from code_sandbox.capture import CappedOutput, read_all
from code_sandbox.limits import Limit, SandboxLimits
from code_sandbox.process import SandboxProcess
from code_sandbox.watchdog import Watchdog, limit_seen_after
from code_sandbox.workspaces import WorkspaceFile, scan_workspace

SIGNALLED = 128
"""bwrap exits with 128 + the signal's number when its command was killed by one."""


@dataclass(frozen=True)
class CommandResult:
    exit_code: int
    """The command's exit code (128 + N: killed by signal N, as a shell reports it)."""
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    limit: Limit | None
    """The limit that stopped the command or cut its output; None when none did."""
    files: list[WorkspaceFile]
    """Files in /workspace the command created or changed."""
    seconds: float


async def run_command(sandbox: Sandbox, workspace: Path, argv: Sequence[str], limits: SandboxLimits) -> CommandResult:
    """Runs `argv` (e.g. `["/bin/sh", "-c", "ls"]`) in the sandbox with `workspace` at /workspace."""
    started = time.monotonic()
    before = await asyncio.to_thread(scan_workspace, workspace)
    process = await SandboxProcess.start(sandbox, workspace, argv, limits, per_process_cpu=True)
    stdout, stderr = CappedOutput(limits.output_bytes), CappedOutput(limits.output_bytes)
    try:
        watchdog = Watchdog(process, workspace, limits, before.disk_bytes)
        assert process.process.stdout is not None and process.process.stderr is not None
        finished = asyncio.gather(read_all(process.process.stdout, stdout), read_all(process.process.stderr, stderr))
        watch = asyncio.ensure_future(watchdog.watch())
        either: list[asyncio.Future[Any]] = [finished, watch]
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        fired = watch.result() if watch.done() else None
        watch.cancel()
        await finished  # after a kill every process is gone, so every pipe ends
        returncode = await process.process.wait()
        exit_code = SIGNALLED - returncode if returncode < 0 else returncode  # killed by the watchdog
        oom_kills = process.cgroup.oom_kills() if process.cgroup else 0
        forks_refused = process.cgroup.forks_refused() if process.cgroup else 0
    finally:
        await process.close()
    after = await asyncio.to_thread(scan_workspace, workspace)
    written = after.written_since(before)
    limit = fired or _signalled_limit(exit_code)
    limit = limit or limit_seen_after(
        limits,
        memory=oom_kills > 0,
        forks_refused=forks_refused > 0,
        written=written,
        grew_past_workspace=watchdog.grew_past_workspace_limit(after.disk_bytes),
        truncated=stdout.truncated or stderr.truncated,
    )
    return CommandResult(
        exit_code=exit_code,
        stdout=stdout.text(),
        stderr=stderr.text(),
        stdout_truncated=stdout.truncated,
        stderr_truncated=stderr.truncated,
        limit=limit,
        files=written,
        seconds=time.monotonic() - started,
    )


def _signalled_limit(exit_code: int) -> Limit | None:
    """The limit whose signal killed the command: a write past the file size, or the CPU rlimit's backstop."""
    if exit_code == SIGNALLED + signal.SIGXFSZ:
        return Limit.FILE_SIZE
    if exit_code == SIGNALLED + signal.SIGXCPU:
        return Limit.CPU
    return None
