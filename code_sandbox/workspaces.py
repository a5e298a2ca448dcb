"""A container's workspace: the directory bound read-write at `/workspace` in its sandbox.

Workspaces live under the data directory (`<data_dir>/containers/<container_id>/workspace`), so a
container's files outlive the processes that wrote them and a worker's restart. The sandboxed code owns
what is inside: the host side only measures, lists and deletes it, never following a link the code made
(a symlink to `/etc/shadow` is listed as a link, not read).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

CONTAINER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")


class InvalidContainerId(ValueError):
    """A container id that could name a path outside the containers' directory."""


@dataclass(frozen=True)
class WorkspaceFile:
    """A regular file in a workspace, by its path inside the sandbox (`/workspace/...`)."""

    path: str
    size: int
    modified_ns: int


@dataclass(frozen=True)
class WorkspaceScan:
    """What a workspace holds at one moment: its regular files and the disk bytes of everything in it."""

    files: dict[str, WorkspaceFile]
    disk_bytes: int

    def written_since(self, before: WorkspaceScan) -> list[WorkspaceFile]:
        """Files that are new or changed (size or modification time) since `before`, by path."""
        return [
            file
            for path, file in sorted(self.files.items())
            if (old := before.files.get(path)) is None or (old.size, old.modified_ns) != (file.size, file.modified_ns)
        ]


SANDBOX_ROOT = "/workspace"


def containers_dir(data_dir: Path) -> Path:
    return data_dir / "containers"


def workspace_path(data_dir: Path, container_id: str) -> Path:
    """The workspace directory of a container; refuses an id that is not a plain name."""
    if not CONTAINER_ID.fullmatch(container_id):
        raise InvalidContainerId(
            f"container id {container_id!r} must be 1 to 128 letters, digits, '_' or '-', "
            "starting with a letter or digit"
        )
    return containers_dir(data_dir) / container_id / "workspace"


def create_workspace(data_dir: Path, container_id: str) -> Path:
    path = workspace_path(data_dir, container_id)
    path.mkdir(parents=True, exist_ok=True)
    return path


def delete_workspace(data_dir: Path, container_id: str) -> None:
    """Removes the container's directory and everything in it (no link inside is followed)."""
    shutil.rmtree(workspace_path(data_dir, container_id).parent, ignore_errors=True)


def scan_workspace(workspace: Path) -> WorkspaceScan:
    """Walks the workspace without following links: its regular files and the disk blocks of all its entries."""
    files: dict[str, WorkspaceFile] = {}
    disk_bytes = 0
    pending = [workspace]
    while pending:
        directory = pending.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue  # removed, or made unreadable by the code: not ours to read
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            disk_bytes += info.st_blocks * 512
            if stat.S_ISDIR(info.st_mode):
                pending.append(Path(entry.path))
            elif stat.S_ISREG(info.st_mode):
                inside = f"{SANDBOX_ROOT}/{Path(entry.path).relative_to(workspace).as_posix()}"
                files[inside] = WorkspaceFile(inside, info.st_size, info.st_mtime_ns)
    return WorkspaceScan(files, disk_bytes)
