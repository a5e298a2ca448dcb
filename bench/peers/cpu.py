"""CPU a system's processes use: the steady figure when the machine is shared and latencies drift.

A system is measured as the tree of processes under the one the benchmark started (serve.py's children, or a
peer's server and whatever it spawns); the model servers are shared by every side and left out.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def _stat(pid: int) -> list[str]:
    """/proc/<pid>/stat after the command name (which may contain spaces): field 3 is first."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def tree_cpu_seconds(root: int) -> float:
    """User + system CPU seconds of `root` and every live descendant (Linux /proc; 0 elsewhere)."""
    children: dict[int, list[int]] = {}
    used: dict[int, float] = {}
    ticks = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = _stat(int(entry.name))
        except (OSError, ValueError):
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
        used[int(entry.name)] = (int(fields[11]) + int(fields[12])) / ticks
    total, pending = 0.0, [root]
    while pending:
        pid = pending.pop()
        total += used.get(pid, 0.0)
        pending += children.get(pid, [])
    return total


async def with_cpu_ms(root: int, count: Callable[[T], int], phase: Awaitable[T]) -> tuple[T, float | None]:
    """The phase's result and the tree's CPU milliseconds per item it did (`count` of its result)."""
    before = tree_cpu_seconds(root)
    result = await phase
    done = count(result)
    return result, round(1000 * (tree_cpu_seconds(root) - before) / done, 1) if done else None
