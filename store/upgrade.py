"""Bring the store's schema to the code's newest revision; every process does it as it starts.

    python -m store.upgrade      # the same, alone: upgrades the store at DA_STORE_URL and exits

Several processes (API, workers) may start at once against one store. Each upgrades inside one
transaction that first takes a lock — a PostgreSQL advisory lock, or SQLite's exclusive lock —
so exactly one of them migrates and the others find the store already at the newest revision.
PostgreSQL and SQLite both run DDL in transactions: a migration that fails leaves no half-changed
schema behind.

A store made before migrations existed (by `create_all`: the tables, no alembic_version) is taken
to be at the baseline revision. A store at a revision this code does not know was upgraded by newer
code; it is refused, never used.

The usual start finds the store at the newest revision already. That is checked with one query and the
revision files' `revision` and `down_revision` lines, without loading Alembic, which costs every process
started near half a second of CPU; Alembic is loaded only when there is something to migrate, stamp or refuse.
"""

from __future__ import annotations

import ast
import asyncio
import sys
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, create_engine, event, inspect, pool, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from store.database import sqlite_module, switch_to_wal

if TYPE_CHECKING:
    from alembic.config import Config

BASELINE = "0001"
"""The revision whose schema is what `create_all` made before migrations existed."""

_BASELINE_TABLES = frozenset({"agents", "sessions", "turns", "steps", "turn_events", "toolgroups"})

_LOCK_KEY = 0x64612D73746F7265  # "da-store": the advisory lock every upgrading process takes first


class StoreNotUpgradable(RuntimeError):
    """The store's schema is not one this code can upgrade: it is newer than the code, or unknown."""


def migrations_config() -> Config:
    """Alembic's configuration for the store's migrations, wherever the package is installed."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(files("store") / "migrations"))
    return config


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(migrations_config()).get_current_head()
    assert head is not None, "store/migrations/versions has no revision"
    return head


def current_revisions(connection: Connection) -> tuple[str, ...]:
    """The revisions recorded in the store; () for a store that has none (new, or made by `create_all`)."""
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(connection).get_current_heads()


def upgrade_schema(connection: Connection, url: str, target: str = "head") -> None:
    """Migrate the store on `connection` to `target`, in the connection's one transaction."""
    if target == "head" and _at_newest_revision(connection):
        return  # the usual start: nothing to do, and no lock that would hold up the store's writers
    from alembic import command
    from alembic.script import ScriptDirectory

    config = migrations_config()
    config.attributes["connection"] = connection
    script = ScriptDirectory.from_config(config)
    if target == "head" and current_revisions(connection) == (script.get_current_head(),):
        return
    _lock(connection)
    current = current_revisions(connection)
    known = {revision.revision for revision in script.walk_revisions()}
    unknown = [revision for revision in current if revision not in known]
    if unknown:
        raise StoreNotUpgradable(
            f"The store at {_shown(url)} is at schema revision {', '.join(unknown)}, which this version of "
            f"durable-agents does not know (its newest is {script.get_current_head()}): a newer version has "
            "upgraded it. Run that newer version, or restore the store from a backup made before the upgrade; "
            "this version will not use it."
        )
    if not current:
        existing = set(inspect(connection).get_table_names()) & _BASELINE_TABLES
        if existing == _BASELINE_TABLES:
            command.stamp(config, BASELINE)  # made by create_all before migrations existed
        elif existing:
            raise StoreNotUpgradable(
                f"The store at {_shown(url)} has some of the store's tables ({', '.join(sorted(existing))}) but "
                f"not the others ({', '.join(sorted(_BASELINE_TABLES - existing))}) and no schema revision, so "
                "it is not a store this version can adopt. Point DA_STORE_URL at an empty database or at a store "
                "that durable-agents made."
            )
    command.upgrade(config, target)


def _at_newest_revision(connection: Connection) -> bool:
    """Whether the store records exactly the newest revision, read without Alembic. False whenever unsure
    (no version table, several heads): the caller then asks Alembic."""
    if not inspect(connection).has_table("alembic_version"):
        return False
    recorded = [row[0] for row in connection.execute(text("SELECT version_num FROM alembic_version"))]
    newest = _newest_revision()
    return newest is not None and recorded == [newest]


def _newest_revision() -> str | None:
    """The one revision no other revision follows, from the `revision` and `down_revision` assignments of
    store/migrations/versions; None unless exactly one (Alembic, which decides when unsure, agrees)."""
    revisions: set[str] = set()
    followed: set[str] = set()
    for path in (files("store") / "migrations" / "versions").iterdir():
        if not path.name.endswith(".py"):
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                target, value = node.target, node.value
            else:
                continue
            if not isinstance(target, ast.Name) or target.id not in ("revision", "down_revision"):
                continue
            named = ast.literal_eval(value)
            if target.id == "revision":
                revisions.add(named)
            else:
                followed.update([named] if isinstance(named, str) else named or ())
    heads = revisions - followed
    return heads.pop() if len(heads) == 1 else None


async def upgrade_store(url: str, target: str = "head") -> None:
    """Upgrade the store at `url` to `target` (the newest revision unless told), taking the upgrade lock."""
    if make_url(url).get_backend_name() == "sqlite":
        await asyncio.to_thread(_upgrade_sqlite, url, target)
        return
    engine = _migration_engine(url)
    try:
        async with engine.connect() as connection:
            await connection.run_sync(upgrade_schema, url, target)
            await connection.commit()
    finally:
        await engine.dispose()


def _upgrade_sqlite(url: str, target: str) -> None:
    """On the store's own SQLite library (store.database.sqlite_module), like every other connection this
    process makes to the file: two SQLite libraries in one process holding one file lose each other's locks."""
    parsed = make_url(url)
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(parsed.set(drivername="sqlite+pysqlite"), module=sqlite_module(), poolclass=pool.NullPool)
    event.listen(engine, "connect", _wait_for_other_writers)
    try:
        with engine.connect() as connection:
            upgrade_schema(connection, url, target)
            connection.commit()
    finally:
        engine.dispose()


def _lock(connection: Connection) -> None:
    """Wait for any other process upgrading this store; held until our transaction ends."""
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
    elif connection.dialect.name == "sqlite":
        connection.exec_driver_sql("BEGIN EXCLUSIVE")


def _migration_engine(url: str) -> AsyncEngine:
    """An engine of its own: SQLite must run migrations without foreign keys enforced (a table that batch
    mode copies and drops would otherwise cascade-delete the rows that refer to it)."""
    parsed = make_url(url)
    engine = create_async_engine(url, poolclass=pool.NullPool)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        event.listen(engine.sync_engine, "connect", _wait_for_other_writers)
    return engine


def _wait_for_other_writers(dbapi_connection: object, _record: object) -> None:
    cursor = dbapi_connection.cursor()  # type: ignore[attr-defined]
    cursor.execute("PRAGMA busy_timeout=60000")  # another process may be migrating, or writing
    switch_to_wal(cursor)  # as the store's own connections are
    cursor.close()


def _shown(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


def main() -> None:
    from configuration.loading import get_settings

    url = get_settings().store_url
    print(f"Upgrading the store at {_shown(url)} to revision {head_revision()} …", flush=True)
    try:
        asyncio.run(upgrade_store(url))
    except StoreNotUpgradable as refused:
        sys.exit(str(refused))
    print("The store is at the newest revision.")


if __name__ == "__main__":
    main()
