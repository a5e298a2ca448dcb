"""Alembic's environment for the store: migrations run on the app's own async driver (aiosqlite, asyncpg).

`store.upgrade` hands in a connection it has already locked (config.attributes["connection"]);
the `alembic` command line connects by itself, to the store at DA_STORE_URL.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from alembic import context
from alembic.autogenerate.api import AutogenContext
from sqlalchemy import Connection, pool
from sqlalchemy.ext.asyncio import create_async_engine

import store  # noqa: F401  (every aggregate's tables join Base.metadata)
from store.schema import Base, UtcDateTime


def _render_item(kind: str, item: Any, autogen: AutogenContext) -> str | Literal[False]:
    """Revisions are frozen history: they spell our column types in plain SQLAlchemy, not by importing tables.py."""
    if kind == "type" and isinstance(item, UtcDateTime):
        return "sa.DateTime(timezone=True)"
    return False


def run_migrations(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",  # SQLite alters a table by copying it
        render_item=_render_item,
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


async def _run_from_command_line(url: str) -> None:
    engine = create_async_engine(url, poolclass=pool.NullPool)
    try:
        async with engine.connect() as connection:
            await connection.run_sync(run_migrations)
    finally:
        await engine.dispose()


def _url() -> str:
    from configuration.loading import get_settings

    return get_settings().store_url


if context.is_offline_mode():
    raise SystemExit("Offline (--sql) migrations are not supported: run them against the store's database.")
given = context.config.attributes.get("connection")
if given is not None:
    run_migrations(given)
else:
    asyncio.run(_run_from_command_line(_url()))
