"""Event delivery from another host's writer on a PostgreSQL store, with and without LISTEN/NOTIFY;
prints one JSON line.

    .venv/bin/python -m bench.pg_wake [--events 60] [--rounds 3] [--admin-url postgresql://postgres@127.0.0.1:5432/test]

A writer Store and an API's event hub on separate engines share only the database, as on two hosts
(no wake directory in common). The writer writes one event every 50 to 150 ms, like a turn's deltas
and steps; each figure is the time from the write's call to the hub handing the event to a stream.
Rounds alternate: the hub polling alone (its timer, backing off to 20 ms), and the hub also woken by
store/pg_wake.py. Also the cost of `pg_notify` in each write: save_turn_progress with and without it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
import uuid
from datetime import UTC, datetime

import asyncpg
from sqlalchemy import Connection

import store.pg_wake
from api.streams.event_hub import EventHub
from domain.agents import Agent, AgentConfig
from domain.content import UserMessage
from domain.events import KeyedEvent
from knowledge.engines import vector_index
from store.database import open_database
from store.pg_wake import PostgresWakeReceiver, notify_events_written
from store.repository import Store
from store.upgrade import upgrade_store

TURN = "turn-1"


async def _new_store(admin_url: str) -> tuple[str, str]:
    """A new database with a running turn: (its SQLAlchemy URL, its name)."""
    name = f"bench_pg_wake_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(admin_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    url = admin_url.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://", 1) + f"/{name}"
    await upgrade_store(url)
    database = open_database(url)
    writer = Store(database, vector_index(url))
    now = datetime.now(UTC)
    await writer.turns.create_agent(
        "t", Agent(agent_id="a1", agent_config=AgentConfig(model="m", instructions="i"), created_at=now)
    )
    await writer.turns.create_session("a1", "s1", "bench", now)
    await writer.turns.begin_turn("a1", "s1", TURN, [UserMessage(content="hi")], now)
    await database.dispose()
    return url, name


async def delivery_ms(url: str, listen: bool, events: int, tag: str) -> list[float]:
    reader_db, writer_db = open_database(url), open_database(url)
    reader, writer = Store(reader_db, vector_index(url)), Store(writer_db, vector_index(url))
    hub = EventHub(reader)
    receiver = PostgresWakeReceiver(url, hub.wake, own="the API's process") if listen else None
    if receiver is not None:
        receiver.start()
    poller = asyncio.create_task(hub.run())
    took = []
    try:
        async with hub.subscribe(TURN, await reader.turns.last_event_id(TURN)) as subscription:
            await asyncio.sleep(0.3)
            for n in range(events):
                await asyncio.sleep(random.uniform(0.05, 0.15))
                started = time.monotonic()
                await writer.turns.save_turn_progress(TURN, events=[KeyedEvent(key=f"{tag}-{n}", body={"n": n})])
                await subscription.events.get()
                took.append((time.monotonic() - started) * 1000)
    finally:
        poller.cancel()
        if receiver is not None:
            await receiver.close()
        await reader_db.dispose()
        await writer_db.dispose()
    return took


def _no_notification(tx: Connection) -> None:
    """Writes that wake no other process (the polling baseline)."""


async def write_ms(url: str, notify: bool, writes: int, tag: str) -> list[float]:
    store.pg_wake.notify_events_written = notify_events_written if notify else _no_notification
    database = open_database(url)
    writer = Store(database, vector_index(url))
    took = []
    try:
        for n in range(writes):
            started = time.perf_counter()
            await writer.turns.save_turn_progress(TURN, events=[KeyedEvent(key=f"{tag}-{n}", body={"delta": "word "})])
            took.append((time.perf_counter() - started) * 1000)
    finally:
        store.pg_wake.notify_events_written = notify_events_written
        await database.dispose()
    return took


async def main(admin_url: str, events: int, rounds: int) -> dict[str, object]:
    url, name = await _new_store(admin_url)
    figures: dict[str, list[float]] = {"polling": [], "notify": [], "write_without_notify": [], "write_with_notify": []}
    try:
        for index in range(rounds):
            for listen in (False, True):
                took = await delivery_ms(url, listen, events, f"d{index}{listen}")
                figures["notify" if listen else "polling"].append(round(statistics.median(took), 2))
            for notify in (False, True):
                took = await write_ms(url, notify, 5 * events, f"w{index}{notify}")
                figures["write_with_notify" if notify else "write_without_notify"].append(
                    round(statistics.median(took), 3)
                )
    finally:
        admin = await asyncpg.connect(admin_url)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()
    return {
        "benchmark": "pg_wake",
        "write_to_stream_p50_ms": {"polling_only": figures["polling"], "listen_notify": figures["notify"]},
        "save_turn_progress_p50_ms": {
            "without_notify": figures["write_without_notify"],
            "with_notify": figures["write_with_notify"],
        },
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=60, help="events written per round and way")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--admin-url", default="postgresql://postgres@127.0.0.1:5432/test")
    arguments = parser.parse_args()
    print(json.dumps(asyncio.run(main(arguments.admin_url, arguments.events, arguments.rounds))))
