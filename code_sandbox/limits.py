"""What one sandboxed call may use, and the names of the limits that can stop it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from configuration.settings import Settings

MB = 1024 * 1024


class Limit(StrEnum):
    """A limit that stopped a call (or cut its output); reported so the model and the operator know why."""

    CPU = "cpu"
    WALL = "wall"
    MEMORY = "memory"
    FILE_SIZE = "file_size"
    WORKSPACE = "workspace"
    PROCESSES = "processes"
    OUTPUT = "output"


@dataclass(frozen=True)
class SandboxLimits:
    """Each limit applies to one call; memory and processes to the container's processes at any moment."""

    cpu_seconds: float = 60.0
    wall_seconds: float = 120.0
    memory_bytes: int = 1024 * MB
    workspace_bytes: int = 1024 * MB
    file_size_bytes: int = 256 * MB
    max_processes: int = 64
    output_bytes: int = 64 * 1024

    @classmethod
    def from_settings(cls, settings: Settings) -> SandboxLimits:
        return cls(
            cpu_seconds=settings.sandbox_cpu_seconds,
            wall_seconds=settings.sandbox_wall_seconds,
            memory_bytes=settings.sandbox_memory_mb * MB,
            workspace_bytes=settings.sandbox_workspace_mb * MB,
            file_size_bytes=settings.sandbox_file_size_mb * MB,
            max_processes=settings.sandbox_max_processes,
            output_bytes=settings.sandbox_output_bytes,
        )


def describe(limit: Limit, limits: SandboxLimits) -> str:
    """What a limit that stopped a call means, in a sentence for the model and the user."""
    sentences = {
        Limit.CPU: f"it used more than {limits.cpu_seconds:g} s of CPU time",
        Limit.WALL: f"it ran for more than {limits.wall_seconds:g} s",
        Limit.MEMORY: f"it used more than {limits.memory_bytes // MB} MB of memory",
        Limit.FILE_SIZE: f"it wrote a file larger than {limits.file_size_bytes // MB} MB",
        Limit.WORKSPACE: f"the workspace grew past {limits.workspace_bytes // MB} MB",
        Limit.PROCESSES: f"it ran more than {limits.max_processes} processes and threads at once",
        Limit.OUTPUT: f"its output passed {limits.output_bytes} bytes; the rest was dropped",
    }
    return sentences[limit]
