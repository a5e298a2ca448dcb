"""Where uploaded files' bytes live: a directory beside a SQLite store, or a table of a PostgreSQL store.

Bytes move in pieces both ways: an upload is written as it arrives and a reader gets it back piece by piece,
so no process ever holds a whole file. A SQLite store's blobs are plain files named by file id (written under
a temporary name and renamed when complete, so a crash never leaves half a file under a real name); a
PostgreSQL store's are rows of `file_blob_parts` of at most 1 MiB, which every API process and worker
reaches without a shared disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Protocol

from sqlalchemy.engine import make_url

from store.database import Database
from store.knowledge.blob_parts import BlobParts

PART_BYTES = 1024 * 1024
READ_BYTES = 256 * 1024


class BlobWriter(Protocol):
    async def write(self, data: bytes) -> None: ...

    async def commit(self) -> None: ...

    async def abort(self) -> None: ...


class BlobStore(Protocol):
    def writer(self, file_id: str) -> BlobWriter: ...

    def read(self, file_id: str) -> AsyncIterator[bytes]: ...

    def local_copy(self, file_id: str) -> contextlib.AbstractAsyncContextManager[Path]:
        """A path to the file's bytes on this machine for as long as the context lasts (extraction reads a
        PDF by seeking, so it needs a file)."""
        ...

    async def delete(self, file_id: str) -> None: ...

    async def unowned(self, owned: Owned, cutoff: datetime, limit: int) -> list[str]:
        """Ids of bytes written before the cutoff that no file row owns (`owned` says which ids have one): an
        upload a crash cut short. The blob sweep (knowledge/blob_sweep.py) deletes them."""
        ...


Owned = Callable[[list[str]], Awaitable[set[str]]]


class DirectoryBlobs:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, file_id: str) -> Path:
        return self.root / file_id

    def writer(self, file_id: str) -> BlobWriter:
        return _FileWriter(self.root, file_id)

    async def read(self, file_id: str) -> AsyncIterator[bytes]:
        with self.path(file_id).open("rb") as source:
            while data := await asyncio.to_thread(source.read, READ_BYTES):
                yield data

    @contextlib.asynccontextmanager
    async def local_copy(self, file_id: str) -> AsyncIterator[Path]:
        yield self.path(file_id)

    async def delete(self, file_id: str) -> None:
        await asyncio.to_thread(self.path(file_id).unlink, missing_ok=True)
        await asyncio.to_thread(self.root.joinpath(f".{file_id}.partial").unlink, missing_ok=True)

    async def unowned(self, owned: Owned, cutoff: datetime, limit: int) -> list[str]:
        def old_enough() -> list[str]:
            if not self.root.is_dir():
                return []
            with os.scandir(self.root) as entries:
                return [
                    entry.name.removeprefix(".").removesuffix(".partial")
                    for entry in entries
                    if entry.stat().st_mtime < cutoff.timestamp()
                ]

        # Every old file is looked at (most are owned), the rows asked for a page of ids at a time.
        candidates = await asyncio.to_thread(old_enough)
        found: list[str] = []
        for start in range(0, len(candidates), 500):
            page = candidates[start : start + 500]
            present = await owned(page)
            found += [file_id for file_id in page if file_id not in present]
            if len(found) >= limit:
                break
        return found[:limit]


class _FileWriter:
    def __init__(self, root: Path, file_id: str) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self._final = root / file_id
        self._partial = root / f".{file_id}.partial"
        self._file = self._partial.open("wb")

    async def write(self, data: bytes) -> None:
        await asyncio.to_thread(self._file.write, data)

    async def commit(self) -> None:
        def finish() -> None:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._partial.replace(self._final)

        await asyncio.to_thread(finish)

    async def abort(self) -> None:
        self._file.close()
        self._partial.unlink(missing_ok=True)


class DatabaseBlobs:
    def __init__(self, database: Database) -> None:
        self._parts = BlobParts(database)

    def writer(self, file_id: str) -> BlobWriter:
        return _PartWriter(self._parts, file_id)

    async def read(self, file_id: str) -> AsyncIterator[bytes]:
        part = 0
        while True:
            data = await self._parts.part(file_id, part)
            if data is None:
                return
            yield data
            part += 1

    @contextlib.asynccontextmanager
    async def local_copy(self, file_id: str) -> AsyncIterator[Path]:
        """The parts copied to a temporary file one at a time."""
        with tempfile.TemporaryDirectory(prefix="da-blob-") as scratch:
            path = Path(scratch) / file_id
            with path.open("wb") as target:
                async for data in self.read(file_id):
                    await asyncio.to_thread(target.write, data)
            yield path

    async def delete(self, file_id: str) -> None:
        await self._parts.delete(file_id)

    async def unowned(self, owned: Owned, cutoff: datetime, limit: int) -> list[str]:
        return await self._parts.unowned(cutoff, limit)


class _PartWriter:
    def __init__(self, parts: BlobParts, file_id: str) -> None:
        self._parts = parts
        self._file_id = file_id
        self._pending = bytearray()
        self._part = 0

    async def _flush(self, size: int) -> None:
        data, self._pending = bytes(self._pending[:size]), self._pending[size:]
        await self._parts.add(self._file_id, self._part, data)
        self._part += 1

    async def write(self, data: bytes) -> None:
        self._pending += data
        while len(self._pending) >= PART_BYTES:
            await self._flush(PART_BYTES)

    async def commit(self) -> None:
        if self._pending or self._part == 0:
            await self._flush(len(self._pending))

    async def abort(self) -> None:
        await self._parts.delete(self._file_id)


def blob_store(store_url: str, database: Database, blob_dir: Path | None) -> BlobStore:
    """Directory blobs beside a SQLite store's file (or in `blob_dir`), table blobs in a PostgreSQL store."""
    parsed = make_url(store_url)
    if parsed.get_backend_name() != "sqlite":
        return DatabaseBlobs(database)
    if blob_dir is None:
        database_path = parsed.database if parsed.database and parsed.database != ":memory:" else None
        blob_dir = Path(database_path).parent / "files" if database_path else Path(tempfile.mkdtemp(prefix="da-files-"))
    return DirectoryBlobs(blob_dir)
