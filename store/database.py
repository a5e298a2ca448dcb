"""Where the store's transactions run: SQLite on threads of our own, PostgreSQL on asyncpg.

Store operations are plain synchronous SQLAlchemy Core functions of a connection, and a `Database`
runs each as one transaction: the operation reads as straight code, and no ORM unit of work sits
on the path (it cost several times the statements themselves).

- PostgreSQL: SQLAlchemy's async engine on asyncpg, each operation through `AsyncConnection.run_sync`.
- SQLite: a synchronous engine (pysqlite3, see `sqlite_module`) whose operations run whole on a
  few threads of ours. aiosqlite crosses from the event loop to its thread and back for every DBAPI
  call (cursor, execute, fetch, commit...); here an operation crosses once. A simple turn's store
  operations replayed alone took 49 ms of CPU on aiosqlite and 27 ms this way. Whatever driver a
  `sqlite+…` URL names, it runs this way.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event, pool
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

T = TypeVar("T")

SQLITE_READERS = 4
"""Threads reading SQLite at once: under WAL readers never wait for the writer, and on a few cores
more would only queue for the GIL."""


class Database(Protocol):
    """Runs store functions as transactions; `open_database(url)` makes one."""

    async def read(self, operation: Callable[[Connection], T]) -> T:
        """Run `operation` on a connection, without committing anything."""
        ...

    async def write(self, operation: Callable[[Connection], T]) -> T:
        """Run `operation` in a transaction, committed if it returns and rolled back if it raises."""
        ...

    async def autocommit(self, operation: Callable[[Connection], T]) -> T:
        """Run `operation` with each statement committed on its own: for an operation that is one atomic
        statement, one round trip to PostgreSQL instead of three (BEGIN, the statement, COMMIT)."""
        ...

    async def dispose(self) -> None:
        """Close the connections it holds; the next operation opens new ones."""
        ...


class AsyncEngineDatabase:
    """A database behind SQLAlchemy's async engine (asyncpg): operations through `run_sync`."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    async def read(self, operation: Callable[[Connection], T]) -> T:
        async with self._engine.connect() as connection:
            return await connection.run_sync(operation)

    async def write(self, operation: Callable[[Connection], T]) -> T:
        async with self._engine.begin() as connection:
            return await connection.run_sync(operation)

    async def autocommit(self, operation: Callable[[Connection], T]) -> T:
        async with self._engine.connect() as connection:
            autocommitting = await connection.execution_options(isolation_level="AUTOCOMMIT")
            return await autocommitting.run_sync(operation)

    async def dispose(self) -> None:
        await self._engine.dispose()


class ThreadedSQLite:
    """SQLite on a synchronous engine, each operation run whole on one of our threads.

    Reads share a few threads. Writes all run on one thread, in the order they were asked for:
    SQLite lets one transaction write at a time, and left to its busy handler this process's writers
    would poll for the lock and a busy one could starve past the timeout ("database is locked");
    queued here they take turns, and the busy handler only waits on other processes.
    """

    def __init__(self, engine: Engine, readers: int) -> None:
        self._engine = engine
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="store-write")
        self._readers = ThreadPoolExecutor(readers, thread_name_prefix="store-read") if readers else self._writer

    async def read(self, operation: Callable[[Connection], T]) -> T:
        return await _on(self._readers, self._read, operation)

    async def write(self, operation: Callable[[Connection], T]) -> T:
        return await _on(self._writer, self._write, operation)

    async def autocommit(self, operation: Callable[[Connection], T]) -> T:
        return await self.write(operation)  # a transaction costs SQLite no round trip

    def _read(self, operation: Callable[[Connection], T]) -> T:
        with self._engine.connect() as connection:
            return operation(connection)

    def _write(self, operation: Callable[[Connection], T]) -> T:
        with self._engine.begin() as connection:
            return operation(connection)

    async def dispose(self) -> None:
        # After the writes already queued. Like AsyncEngine.dispose, this leaves the database usable:
        # the next operation opens a new connection (tests close connections as a restart would).
        await asyncio.get_running_loop().run_in_executor(self._writer, self._engine.dispose)


async def _on(executor: ThreadPoolExecutor, run: Callable[[Callable[[Connection], T]], T], operation: Any) -> T:
    """`run(operation)` on the executor, in the caller's context (tracing reads context variables).

    If the caller is cancelled before the operation starts, it never runs; once started it finishes
    (committed or rolled back whole) and its result is dropped."""
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(executor, functools.partial(context.run, run, operation))


WAL_SWITCH_SECONDS = 60.0
SQLITE_MMAP_BYTES = 1 << 30
"""How much of the store file SQLite reads through a memory map instead of `read` calls into its page cache. A
vector search scans every vector of a store (100,000 of 256 dimensions are 100 MB): through the page cache,
copying it dominated the search; mapped, the scan reads the OS's cached pages in place."""


def sqlite_module() -> Any:
    """The DB-API module of the store's SQLite connections: pysqlite3 where installed, else the standard library's.

    pysqlite3 brings a newer SQLite that can load extensions, which this machine's standard-library build cannot:
    the knowledge index (knowledge/sqlite_index.py) needs sqlite-vec in the store's own connections, so that a
    batch's chunks, vectors and keywords commit in one transaction on the store's one writer thread. Every
    connection a process keeps open to the store is then of this one SQLite library: two copies of SQLite in one
    process holding the same file can drop each other's POSIX locks (sqlite.org, "How To Corrupt").
    """
    try:
        from pysqlite3 import dbapi2
    except ImportError:
        return sqlite3
    return dbapi2


def _load_vector_extension(dbapi_connection: Any) -> None:
    if not hasattr(dbapi_connection, "enable_load_extension"):
        return
    import sqlite_vec

    dbapi_connection.enable_load_extension(True)
    sqlite_vec.load(dbapi_connection)
    dbapi_connection.enable_load_extension(False)


def switch_to_wal(cursor: Any) -> None:
    """WAL: readers never wait for the writer. While another process switches a new store to WAL or
    migrates it, SQLite may refuse the switch at once, without waiting in its busy handler ("database
    is locked"; seen with the API and the worker starting on a new store): it is tried again."""
    deadline = time.monotonic() + WAL_SWITCH_SECONDS
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except (sqlite3.OperationalError, sqlite_module().OperationalError) as refused:
            if "locked" not in str(refused) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _tune_sqlite(dbapi_connection: Any, _record: Any) -> None:
    _load_vector_extension(dbapi_connection)
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA busy_timeout=10000")  # writers in other processes (the API and the worker)
    switch_to_wal(cursor)
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute(f"PRAGMA mmap_size={SQLITE_MMAP_BYTES}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def open_database(url: str) -> Database:
    """`sqlite:///path` (also `sqlite+aiosqlite:///path`) or `postgresql+asyncpg://…`."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return AsyncEngineDatabase(create_async_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20))
    sync_url = parsed.set(drivername="sqlite+pysqlite")
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        # One connection per thread that may hold one at a time; the threads are the bound.
        engine = create_engine(
            sync_url,
            module=sqlite_module(),
            poolclass=pool.QueuePool,
            pool_size=SQLITE_READERS + 1,
            max_overflow=0,
        )
        readers = SQLITE_READERS
    else:
        # An in-memory database lives in its one connection: every operation runs on the writer's thread.
        engine = create_engine(
            sync_url, module=sqlite_module(), poolclass=pool.StaticPool, connect_args={"check_same_thread": False}
        )
        readers = 0
    event.listen(engine, "connect", _tune_sqlite)
    return ThreadedSQLite(engine, readers)
