"""Store size under a long soak with retention on: rows and SQLite file size stay flat; prints JSON lines.

    .venv/bin/python -m bench.retention_soak [--turns 2000] [--ttl-turns 100] [--sweep-every 50]

An hourly-fed agent session and a Responses chain, each given `--turns` turns on a simulated clock (a minute
apart), with retention's own prune functions (store/retention.py, the ones `RetentionSweep` runs) applied
every `--sweep-every` turns with TTLs of `--ttl-turns` minutes for `turns` and `responses`. Each sweep prints
the turns, events and responses kept and the file's size: they level off once the TTL is reached, and a run
without retention (`--ttl-turns 0`) shows the growth they replace.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import Connection, func, select

from domain.agents import Agent, AgentConfig
from domain.content import CompletionMessage, UserMessage
from domain.events import KeyedEvent
from domain.turn_settings import TurnSettings
from domain.turns import InferenceStep, TurnStatus
from knowledge.engines import vector_index
from store.database import Database, open_database
from store.repository import Store
from store.responses.responses import ResponseRecord
from store.responses.tables import ResponseRow
from store.retention import KINDS
from store.turns.tables import EventRow, TurnRow
from store.upgrade import upgrade_store

T0 = datetime(2026, 1, 1, tzinfo=UTC)
TENANT = "default"
ANSWER = "A fixed answer of the soak's model, about as long as a short reply of a real one. " * 4


async def _finish(store: Store, turn_id: str, at: datetime) -> None:
    step = InferenceStep(
        turn_id=turn_id,
        step_id=f"{turn_id}-s",
        started_at=at,
        completed_at=at,
        model_response=CompletionMessage(content=ANSWER),
    )
    events = [KeyedEvent(key=f"{turn_id}:{n}", body={"event": {"payload": {"event_type": "x"}}}) for n in range(4)]
    await store.turns.save_turn_progress(
        turn_id,
        events=events,
        new_steps=[(0, step)],
        status=TurnStatus.COMPLETED,
        output_message=step.model_response,
        completed_at=at,
    )


async def _prune_all(database: Database, kind: str, cutoff: datetime) -> int:
    prune = KINDS[kind].prune
    assert prune is not None

    def batch(tx: Connection) -> int:
        return prune(tx, cutoff, 500)

    pruned = 0
    while (deleted := await database.write(batch)) > 0:
        pruned += deleted
    return pruned


async def soak(path: Path, turns: int, ttl: timedelta | None, sweep_every: int) -> None:
    url = f"sqlite+aiosqlite:///{path}"
    await upgrade_store(url)
    database = open_database(url)
    store = Store(database, vector_index(url))
    responses = store.responses
    await store.turns.create_agent(
        TENANT, Agent(agent_id="a", agent_config=AgentConfig(model="m", instructions="i"), created_at=T0)
    )
    await store.turns.create_session("a", "s", "soak", T0)
    previous = None
    for index in range(1, turns + 1):
        at = T0 + timedelta(minutes=index)
        turn_id = str(uuid.uuid4())
        await store.turns.begin_turn("a", "s", turn_id, [UserMessage(content=f"question {index}")], at)
        await _finish(store, turn_id, at)
        detached, response_id = str(uuid.uuid4()), f"resp_{uuid.uuid4().hex}"
        await store.turns.begin_detached_turn(
            TENANT, detached, [UserMessage(content=f"q {index}")], [], response_id, TurnSettings(model="m"), at
        )
        await responses.add(
            ResponseRecord(
                response_id=response_id,
                tenant_id=TENANT,
                turn_id=detached,
                segment_index=0,
                conversation_id=None,
                previous_response_id=previous,
                model="m",
                request={"input": []},
                background=False,
                store=True,
                created_at=at,
            )
        )
        await _finish(store, detached, at)
        previous = response_id
        if index % sweep_every:
            continue
        pruned = 0
        if ttl is not None:
            for kind in ("turns", "responses"):
                pruned += await _prune_all(database, kind, at - ttl)
        counts = await database.read(
            lambda tx: {
                name: tx.scalar(select(func.count()).select_from(table))
                for name, table in (("turns", TurnRow), ("events", EventRow), ("responses", ResponseRow))
            }
        )
        await database.autocommit(lambda tx: tx.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)").fetchall())
        size = sum(file.stat().st_size for file in path.parent.glob(path.name + "*"))
        print(json.dumps({"turns_done": index, "pruned": pruned, **counts, "store_bytes": size}), flush=True)
    await database.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--ttl-turns", type=int, default=100, help="TTL in simulated minutes (a turn a minute); 0: off")
    parser.add_argument("--sweep-every", type=int, default=50)
    args = parser.parse_args()
    ttl = timedelta(minutes=args.ttl_turns) if args.ttl_turns > 0 else None
    with tempfile.TemporaryDirectory(prefix="da-retention-soak-") as workdir:
        asyncio.run(soak(Path(workdir) / "store.db", args.turns, ttl, args.sweep_every))


if __name__ == "__main__":
    main()
