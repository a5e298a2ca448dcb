"""The store's schema under migrations, on SQLite and on PostgreSQL: the tables and the revisions agree,
a store made before migrations is adopted, a store newer than the code is refused, concurrent upgrades
are safe, and `python -m store.upgrade` is the one command that upgrades."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, TypeVar

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, MetaData, create_engine, pool, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from store.database import sqlite_module
from store.schema import Base
from store.upgrade import BASELINE, StoreNotUpgradable, head_revision, migrations_config, upgrade_store
from tests.support.databases import postgres_database, store_url

T = TypeVar("T")

LEGACY = Path(__file__).parent / "legacy_store"
"""The DDL that `create_all` ran before migrations existed, per dialect: what existing stores have."""

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with store_url(request.param, tmp_path) as made:
        yield made


async def on(url: str, operation: Callable[[Connection], T]) -> T:
    """Run `operation` on a connection to `url` and commit; to SQLite on the store's own SQLite library, as a
    test process holds the store open with it (two SQLite libraries on one file in one process break its locks)."""
    if make_url(url).get_backend_name() == "sqlite":
        sync = create_engine(
            make_url(url).set(drivername="sqlite+pysqlite"), module=sqlite_module(), poolclass=pool.NullPool
        )

        def run() -> T:
            try:
                with sync.begin() as connection:
                    return operation(connection)
            finally:
                sync.dispose()

        return await asyncio.to_thread(run)
    engine = create_async_engine(url, poolclass=pool.NullPool)
    try:
        async with engine.begin() as connection:
            return await connection.run_sync(operation)
    finally:
        await engine.dispose()


def drift(connection: Connection, metadata: MetaData = Base.metadata) -> list[Any]:
    """What autogenerate would put in a new revision: the tables' differences from the database."""
    context = MigrationContext.configure(connection, opts={"compare_type": True})
    return compare_metadata(context, metadata)


def revisions(connection: Connection) -> tuple[str, ...]:
    return MigrationContext.configure(connection).get_current_heads()


def make_legacy_store(connection: Connection) -> None:
    """The store as `create_all` made it before migrations existed: the tables, no alembic_version."""
    for statement in (LEGACY / f"{connection.dialect.name}.sql").read_text().split(";"):
        if statement.strip():
            connection.exec_driver_sql(statement)


def insert_legacy_rows(connection: Connection) -> None:
    connection.execute(
        text(
            "INSERT INTO agents (agent_id, config, created_at) VALUES "
            """('a1', '{"model": "m", "instructions": "x"}', '2026-01-01 00:00:00+00:00')"""
        )
    )
    connection.execute(
        text("INSERT INTO sessions (session_id, agent_id, name, started_at) VALUES ('s1', 'a1', 'n', '2026-01-01')")
    )
    connection.execute(
        text(
            "INSERT INTO turns (turn_id, session_id, agent_id, status, input_messages, started_at) VALUES "
            """('t1', 's1', 'a1', 'completed', '[{"role": "user", "content": "hi"}]', '2026-01-01')"""
        )
    )
    connection.execute(text("""INSERT INTO turn_events (turn_id, key, body) VALUES ('t1', 'k', '{"e": 1}')"""))


def test_the_tables_and_the_migrations_agree(url: str) -> None:
    """Fails when a table of the store (a `tables` module) changes without a revision that makes the same change."""
    asyncio.run(upgrade_store(url))

    differences = asyncio.run(on(url, drift))

    assert differences == [], (
        "The store's tables and store/migrations disagree; add a revision (docs/operations.md):\n"
        + "\n".join(map(str, differences))
    )


def test_the_migrations_form_one_line_of_revisions() -> None:
    script = ScriptDirectory.from_config(migrations_config())
    files = sorted(path.name for path in Path(script.versions).glob("*.py") if path.name != "__init__.py")
    assert len(files) == len(list(script.walk_revisions())), f"two of {files} have the same revision id"
    assert script.get_heads() == [head_revision()], "two revisions share a parent: put one after the other"
    assert script.get_base() == BASELINE


def test_a_start_on_a_store_at_the_newest_revision_does_not_load_alembic(url: str) -> None:
    """Every process upgrades as it starts; the usual start, with nothing to migrate, must not pay for Alembic."""
    asyncio.run(upgrade_store(url))
    check = (
        "import asyncio, sys; from store.upgrade import upgrade_store; "
        f"asyncio.run(upgrade_store({url!r})); print(sorted(m for m in sys.modules if m.split('.')[0] == 'alembic'))"
    )

    loaded = subprocess.run([sys.executable, "-c", check], cwd=ROOT, capture_output=True, text=True, check=True)

    assert loaded.stdout.strip() == "[]"
    assert asyncio.run(on(url, revisions)) == (head_revision(),)


def test_the_baseline_revision_is_the_schema_create_all_made(url: str, tmp_path: Path) -> None:
    asyncio.run(on(url, make_legacy_store))
    legacy = MetaData()
    asyncio.run(on(url, legacy.reflect))

    with _another_database(url, tmp_path) as baseline_url:
        asyncio.run(upgrade_store(baseline_url, BASELINE))
        differences = asyncio.run(on(baseline_url, lambda connection: drift(connection, legacy)))

    assert [d for d in differences if not _is_version_table(d)] == []


def test_a_store_made_before_migrations_is_adopted_and_upgraded_with_its_rows(url: str) -> None:
    asyncio.run(on(url, make_legacy_store))
    asyncio.run(on(url, insert_legacy_rows))

    asyncio.run(upgrade_store(url))

    assert asyncio.run(on(url, revisions)) == (head_revision(),)
    assert asyncio.run(on(url, drift)) == []
    counts = asyncio.run(
        on(
            url,
            lambda c: [
                c.scalar(text(f"SELECT count(*) FROM {t}")) for t in ("agents", "sessions", "turns", "turn_events")
            ],
        )
    )
    assert counts == [1, 1, 1, 1]


def test_a_store_newer_than_the_code_is_refused_naming_both_revisions(url: str) -> None:
    asyncio.run(upgrade_store(url))
    asyncio.run(on(url, lambda c: c.execute(text("UPDATE alembic_version SET version_num = '9999_from_the_future'"))))

    with pytest.raises(StoreNotUpgradable) as refused:
        asyncio.run(upgrade_store(url))

    message = str(refused.value)
    assert "9999_from_the_future" in message and head_revision() in message
    assert "newer version" in message
    assert asyncio.run(on(url, revisions)) == ("9999_from_the_future",)  # left as it was


def test_tables_of_something_else_are_not_taken_for_a_store(url: str) -> None:
    asyncio.run(on(url, lambda c: c.execute(text("CREATE TABLE agents (id INTEGER PRIMARY KEY)"))))

    with pytest.raises(StoreNotUpgradable, match="not a store this version can adopt"):
        asyncio.run(upgrade_store(url))


def test_processes_starting_together_upgrade_a_new_store_once(url: str) -> None:
    """Three processes upgrade one new store at the same moment: each one starts, none fails."""
    starters = [_upgrade_process(url) for _ in range(3)]
    results = [(*process.communicate(timeout=60), process.returncode) for process in starters]

    assert [code for _, _, code in results] == [0, 0, 0], results
    assert asyncio.run(on(url, revisions)) == (head_revision(),)
    assert asyncio.run(on(url, drift)) == []
    said = [out for out, _, _ in results]
    assert all(f"Upgrading the store at {_shown(url)} to revision {head_revision()}" in out for out in said), said


def _env(url: str) -> dict[str, str]:
    return {**os.environ, "DA_STORE_URL": url}


def _upgrade_process(url: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "store.upgrade"],
        env=_env(url),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _shown(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


def _is_version_table(difference: Any) -> bool:
    return difference[0] == "add_table" and difference[1].name == "alembic_version"


def _another_database(url: str, tmp_path: Path) -> AbstractContextManager[str]:
    if url.startswith("postgresql"):
        return postgres_database()
    return nullcontext(f"sqlite+aiosqlite:///{tmp_path / 'baseline.db'}")


@pytest.mark.parametrize(
    "command",
    [["serve.py"], ["worker.py"], ["-m", "uvicorn", "api.app:app", "--port", "0"], ["-m", "store.upgrade"]],
    ids=["make run", "worker", "api", "upgrade command"],
)
def test_every_process_refuses_to_start_on_a_store_newer_than_the_code(command: list[str], tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    asyncio.run(upgrade_store(url))
    asyncio.run(on(url, lambda c: c.execute(text("UPDATE alembic_version SET version_num = '9999_newer'"))))
    env = {**_env(url), "DA_DATA_DIR": str(tmp_path), "TEMPORAL_ADDRESS": "127.0.0.1:1"}

    started = subprocess.run([sys.executable, *command], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)

    assert started.returncode != 0
    assert (
        f"revision 9999_newer, which this version of durable-agents does not know (its newest is {head_revision()})"
        in (started.stderr)
    )
    assert asyncio.run(on(url, revisions)) == ("9999_newer",)
