"""Where the store's transactions run: SQLAlchemy 2 async, aiosqlite or asyncpg.

Store operations are plain synchronous SQLAlchemy Core functions of a connection, and `Database`
runs each as one transaction through `AsyncConnection.run_sync`: the operation reads as straight
code, and no ORM unit of work sits on the path (it cost several times the statements themselves).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection, event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

T = TypeVar("T")


def _tune_sqlite(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")  # readers never wait for the writer
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=10000")  # writers in other processes (the API and the worker)
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


class Database:
    """Runs store functions as transactions; `open_database(url)` makes one."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        # SQLite lets one transaction write at a time. Left to its busy handler, this process's
        # writers poll for the lock and a busy one can starve past the timeout ("database is
        # locked"); queued here they take turns in order, and the handler only waits on other processes.
        self._write_turns = asyncio.Lock() if engine.dialect.name == "sqlite" else None

    async def read(self, operation: Callable[[Connection], T]) -> T:
        """Run `operation` on a connection, without committing anything."""
        async with self._engine.connect() as connection:
            return await connection.run_sync(operation)

    async def write(self, operation: Callable[[Connection], T]) -> T:
        """Run `operation` in a transaction, committed if it returns and rolled back if it raises."""
        async with self._write_turns or nullcontext(), self._engine.begin() as connection:
            return await connection.run_sync(operation)

    async def dispose(self) -> None:
        await self._engine.dispose()


def open_database(url: str) -> Database:
    """`sqlite+aiosqlite:///path` or `postgresql+asyncpg://…`."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return Database(create_async_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20))
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_async_engine(url)
    event.listen(engine.sync_engine, "connect", _tune_sqlite)
    return Database(engine)
