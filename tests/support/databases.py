"""Store URLs for tests: a fresh SQLite file, or a fresh PostgreSQL database when one answers."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import asyncpg
import pytest

from knowledge.engines import vector_index
from store.database import open_database
from store.repository import Store
from store.upgrade import upgrade_store

POSTGRES_ADMIN_URL = os.environ.get("DA_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


async def _execute(statement: str) -> None:
    connection = await asyncpg.connect(POSTGRES_ADMIN_URL, timeout=3)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


def _admin(statement: str) -> None:
    """Run one statement on its own thread and loop, so sync and async callers alike can use it."""
    with ThreadPoolExecutor(max_workers=1) as thread:
        thread.submit(asyncio.run, _execute(statement)).result()


@contextmanager
def postgres_database() -> Iterator[str]:
    """A new empty database for the duration, as an SQLAlchemy URL; skips the test if PostgreSQL is not reachable."""
    name = f"durable_agents_{uuid.uuid4().hex[:12]}"
    try:
        _admin(f'CREATE DATABASE "{name}"')
    except (OSError, asyncpg.PostgresError, TimeoutError) as unreachable:
        if os.environ.get("DA_REQUIRE_POSTGRES"):
            raise
        pytest.skip(f"PostgreSQL at {POSTGRES_ADMIN_URL} is not reachable ({unreachable}); PostgreSQL path not tested")
    base = POSTGRES_ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://", 1)
    try:
        yield f"{base}/{name}"
    finally:
        _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def store_url(backend: str, tmp_path: Path) -> Iterator[str]:
    if backend == "postgresql":
        with postgres_database() as url:
            yield url
    else:
        yield f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"


@asynccontextmanager
async def opened_store(backend: str, tmp_path: Path) -> AsyncIterator[Store]:
    """A fresh store of `backend` at the newest revision, as the composition roots build it; disposed after."""
    with store_url(backend, tmp_path) as url:
        await upgrade_store(url)
        database = open_database(url)
        try:
            yield Store(database, vector_index(url))
        finally:
            await database.dispose()
