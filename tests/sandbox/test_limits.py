"""Each limit stops a call, says which it was, and leaves no process behind."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from code_sandbox.bubblewrap import Sandbox
from code_sandbox.limits import MB, Limit
from code_sandbox.runner import CommandResult, run_command
from tests.sandbox.conftest import SMALL


async def sh(sandbox: Sandbox, workspace: Path, script: str, **limits: Any) -> CommandResult:
    return await run_command(sandbox, workspace, ["/bin/sh", "-c", script], dataclasses.replace(SMALL, **limits))


def host_processes_with(token: str) -> list[int]:
    """Host pids whose command line holds `token`."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if token.encode() in Path(entry.path, "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


async def test_cpu_time(sandbox: Sandbox, workspace: Path) -> None:
    result = await sh(sandbox, workspace, "while :; do :; done", cpu_seconds=1, wall_seconds=20)
    assert result.limit is Limit.CPU and result.seconds < 10, result


async def test_cpu_time_counts_every_process(sandbox: Sandbox, workspace: Path) -> None:
    """Two busy processes together pass a limit neither passes alone before the wall limit."""
    script = "(while :; do :; done) & (while :; do :; done) & wait"
    result = await sh(sandbox, workspace, script, cpu_seconds=1.5, wall_seconds=20)
    assert result.limit is Limit.CPU, result


async def test_wall_time_kills_every_process(sandbox: Sandbox, workspace: Path) -> None:
    token = f"{uuid.uuid4().int % 10**6}.5"  # a sleep length no other process on the host uses
    script = f"sleep {token} & sleep {token} & sh -c 'sleep {token}' & echo started; wait"
    task = run_command(sandbox, workspace, ["/bin/sh", "-c", script], dataclasses.replace(SMALL, wall_seconds=2))
    running = asyncio.ensure_future(task)
    for _ in range(100):
        if len(host_processes_with(f"sleep {token}")) >= 3:
            break
        await asyncio.sleep(0.05)
    assert len(host_processes_with(f"sleep {token}")) >= 3
    result = await running
    assert result.limit is Limit.WALL and result.stdout == "started\n", result
    assert host_processes_with(f"sleep {token}") == []


async def test_memory(sandbox: Sandbox, workspace: Path) -> None:
    result = await sh(sandbox, workspace, "python -c 'b = bytearray(400 << 20); print(len(b))'")
    assert result.limit is Limit.MEMORY and result.stdout == "", result


async def test_file_size(sandbox: Sandbox, workspace: Path) -> None:
    result = await sh(sandbox, workspace, "head -c 10M /dev/zero > big; echo done")
    assert result.limit is Limit.FILE_SIZE, result
    assert (workspace / "big").stat().st_size == 4 * MB


async def test_workspace_bytes_stop_a_call_that_keeps_writing(sandbox: Sandbox, workspace: Path) -> None:
    script = "i=0; while :; do i=$((i+1)); head -c 1M /dev/zero > part$i; sleep 0.02; done"
    result = await sh(sandbox, workspace, script, wall_seconds=30)
    assert result.limit is Limit.WORKSPACE and result.seconds < 20, result


async def test_workspace_bytes_checked_at_the_end(sandbox: Sandbox, workspace: Path) -> None:
    result = await sh(sandbox, workspace, "for i in 1 2 3; do head -c 3M /dev/zero > part$i; done")
    assert result.exit_code == 0 and result.limit is Limit.WORKSPACE, result
    cleanup = await sh(sandbox, workspace, "rm part1; ls")
    assert cleanup.limit is None and cleanup.stdout.split() == ["part2", "part3"], cleanup


async def test_process_count(sandbox: Sandbox, workspace: Path) -> None:
    if sandbox.cgroups.pids is None and os.geteuid() == 0:
        pytest.skip("no pids cgroup, and root is exempt from RLIMIT_NPROC")
    script = "for i in $(seq 60); do sleep 3 & done 2>/dev/null; wait; echo finished"
    result = await sh(sandbox, workspace, script, max_processes=16)
    assert result.limit is Limit.PROCESSES, result


async def test_output(sandbox: Sandbox, workspace: Path) -> None:
    result = await sh(sandbox, workspace, "yes | head -c 100000; echo oops >&2")
    assert result.limit is Limit.OUTPUT and result.stdout_truncated and not result.stderr_truncated, result
    assert result.stdout == "y\n" * 2048 and result.stderr == "oops\n"


async def test_a_call_within_its_limits(sandbox: Sandbox, workspace: Path) -> None:
    result = await sh(sandbox, workspace, "echo hello > greeting; cat greeting; exit 3")
    assert (result.exit_code, result.stdout, result.limit) == (3, "hello\n", None), result
    assert [file.path for file in result.files] == ["/workspace/greeting"]
