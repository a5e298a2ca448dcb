"""Reading and writing one file of a workspace from the host side, never through a link the code made.

Each component of the path is opened relative to the one before with O_NOFOLLOW, so a symlink anywhere on
the way (`/workspace/out -> /etc`) fails the call instead of leading outside the workspace; only regular
files are read. Paths are the ones the sandbox sees (`/workspace/...`)."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from code_sandbox.workspaces import SANDBOX_ROOT

CHUNK = 64 * 1024


class NotAWorkspaceFile(LookupError):
    """The path is outside the workspace, crosses a link, or is not a regular file there."""


def inside_path(name: str) -> str:
    """`/workspace/<name>` for a plain file name or a relative path; refuses `..` and empty parts."""
    relative = PurePosixPath(name.removeprefix(SANDBOX_ROOT + "/").lstrip("/"))
    if not relative.parts or any(part in ("", ".", "..") for part in relative.parts):
        raise NotAWorkspaceFile(f"{name!r} is not a path inside /workspace")
    return f"{SANDBOX_ROOT}/{relative.as_posix()}"


def _parts(path: str) -> list[str]:
    relative = PurePosixPath(inside_path(path)).relative_to(SANDBOX_ROOT)
    return list(relative.parts)


@contextlib.contextmanager
def _parent(workspace: Path, parts: list[str], create: bool) -> Iterator[int]:
    """A descriptor of the directory holding the last part, reached without following any link."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    descriptor = os.open(workspace, flags)
    try:
        for part in parts[:-1]:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=descriptor)
            try:
                following = os.open(part, flags, dir_fd=descriptor)
            except OSError as failure:
                raise NotAWorkspaceFile(f"no directory {part!r} on the way (or it is a link)") from failure
            os.close(descriptor)
            descriptor = following
        yield descriptor
    finally:
        os.close(descriptor)


def open_regular(workspace: Path, path: str) -> tuple[int, int]:
    """An open descriptor of the regular file at `path` and its size; NotAWorkspaceFile otherwise."""
    parts = _parts(path)
    with _parent(workspace, parts, create=False) as directory:
        try:
            descriptor = os.open(
                parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=directory
            )
        except OSError as failure:
            raise NotAWorkspaceFile(f"{path} is not a regular file of the workspace") from failure
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode):
        os.close(descriptor)
        raise NotAWorkspaceFile(f"{path} is not a regular file of the workspace")
    return descriptor, info.st_size


def read_chunks(descriptor: int) -> Iterator[bytes]:
    """The file's bytes in chunks; closes the descriptor at the end."""
    try:
        while chunk := os.read(descriptor, CHUNK):
            yield chunk
    finally:
        os.close(descriptor)


def write_file(workspace: Path, path: str, chunks: Iterator[bytes] | list[bytes]) -> int:
    """Writes (or replaces) the file at `path`, making its directories; returns its size."""
    parts = _parts(path)
    with _parent(workspace, parts, create=True) as directory:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(parts[-1], dir_fd=directory)  # a link the code left there is replaced, not followed
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        descriptor = os.open(parts[-1], flags, 0o644, dir_fd=directory)
        size = 0
        try:
            for chunk in chunks:
                os.write(descriptor, chunk)
                size += len(chunk)
        finally:
            os.close(descriptor)
    return size


def remove_file(workspace: Path, path: str) -> None:
    """Removes the entry at `path` (a link itself, not what it points to); nothing when it is gone."""
    parts = _parts(path)
    gone = (NotAWorkspaceFile, FileNotFoundError, IsADirectoryError, PermissionError)
    with contextlib.suppress(*gone), _parent(workspace, parts, create=False) as directory:
        os.unlink(parts[-1], dir_fd=directory)
