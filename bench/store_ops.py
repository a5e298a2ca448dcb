"""CPU per turn of the store's operations alone, on SQLite, per way of running them; prints one JSON line.

    .venv/bin/python -m bench.store_ops [--turns 200] [--rounds 3]

Replays, against a fresh SQLite file, what the API and the worker ask of the store during a simple
streamed turn: the API's checks and `begin_turn`, the worker's conversation read, the event writes
of one inference (step_start, two delta batches), the final save with its step and turn_complete,
and the event hub's reads of the new events. Measures this process's CPU (all threads) per turn,
which, unlike latency, a busy shared machine hardly disturbs. The ways alternate round by round:

- `threads`: store.database as it runs SQLite (a synchronous engine on threads of ours);
- `aiosqlite`: the same operations through SQLAlchemy's async engine on aiosqlite (the design before).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import event
from sqlalchemy.ext.asyncio import create_async_engine

from domain.agents import Agent, AgentConfig
from domain.content import CompletionMessage, UserMessage
from domain.events import KeyedEvent
from domain.turns import InferenceStep, TurnStatus
from knowledge.engines import vector_index
from store import database
from store.repository import Store
from store.upgrade import upgrade_store

T0 = datetime(2026, 1, 1, tzinfo=UTC)
TENANT = "default"
HISTORY_BYTES = 1024 * 1024


def open_way(way: str, url: str) -> database.Database:
    if way == "threads":
        return database.open_database(url)
    engine = create_async_engine(url)
    event.listen(engine.sync_engine, "connect", database._tune_sqlite)
    return database.AsyncEngineDatabase(engine)


def _event(turn_id: str, key: str, kind: str, text: str = "") -> KeyedEvent:
    return KeyedEvent(key=f"{turn_id}:{key}", body={"event": {"payload": {"event_type": kind, "text": text}}})


async def one_turn(store: Store, agent_id: str, index: int) -> None:
    """A simple streamed turn's store operations, in the order the API and the worker make them."""
    session_id, turn_id = f"s-{uuid.uuid4().hex[:12]}", f"t-{uuid.uuid4().hex[:12]}"
    started = T0 + timedelta(seconds=index)
    await store.turns.create_session(agent_id, session_id, "bench", started)
    await store.turns.get_agent(TENANT, agent_id)
    await store.turns.begin_turn(agent_id, session_id, turn_id, [UserMessage(content="Say something short.")], started)
    cursor = await store.turns.last_event_id(turn_id)
    await store.turns.conversation_window(session_id, turn_id, HISTORY_BYTES)
    await store.turns.events_with_key_prefix(turn_id, "step-1:attempt")
    await store.turns.save_turn_progress(turn_id, events=[_event(turn_id, "step-1:start", "step_start")])
    for batch in range(2):
        await store.turns.events_after([(turn_id, cursor)])
        await store.turns.save_turn_progress(
            turn_id, events=[_event(turn_id, f"step-1:d{batch}", "step_progress", "hi")]
        )
    step = InferenceStep(
        turn_id=turn_id,
        step_id="step-1",
        started_at=started,
        completed_at=started,
        model_response=CompletionMessage(content="This is a short fixed answer from the benchmark model."),
    )
    await store.turns.save_turn_progress(
        turn_id,
        events=[_event(turn_id, "step-1:complete", "step_complete")],
        new_steps=[(0, step)],
        status=TurnStatus.COMPLETED,
        output_message=step.model_response,
        completed_at=started,
        closing_event=lambda turn: _event(turn.turn_id, "complete", "turn_complete"),
    )
    for _ in range(2):
        found = await store.turns.events_after([(turn_id, cursor)])
        cursor = max([cursor, *(e.event_id for e in found.get((turn_id, cursor), []))])


async def cpu_per_turn(way: str, workdir: Path, turns: int) -> float:
    url = f"sqlite+aiosqlite:///{workdir / f'{way}-{uuid.uuid4().hex[:6]}.db'}"
    await upgrade_store(url)
    db = open_way(way, url)
    try:
        store = Store(db, vector_index(url))
        agent_id = "bench-agent"
        await store.turns.create_agent(
            TENANT, Agent(agent_id=agent_id, agent_config=AgentConfig(model="m", instructions="i"), created_at=T0)
        )
        for index in range(10):  # warm caches (compiled statements, connections)
            await one_turn(store, agent_id, index)
        before = time.process_time()
        for index in range(turns):
            await one_turn(store, agent_id, 10 + index)
        return 1000 * (time.process_time() - before) / turns
    finally:
        await db.dispose()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, list[float]] = {"aiosqlite": [], "threads": []}
    with tempfile.TemporaryDirectory(prefix="da-store-ops-") as workdir:
        for _ in range(args.rounds):
            for way in results:
                results[way].append(round(await cpu_per_turn(way, Path(workdir), args.turns), 2))
                print(f"{way}: {results[way][-1]} ms of CPU per turn", file=sys.stderr, flush=True)
    summary = {way: {"median_ms": round(statistics.median(v), 2), "runs_ms": v} for way, v in results.items()}
    print(json.dumps({"benchmark": "store_ops", "turns": args.turns, "cpu_ms_per_turn": summary}))


if __name__ == "__main__":
    asyncio.run(main())
