"""How fast the inbox answers with many waiting turns; prints one JSON line.

    .venv/bin/python -m bench.inbox [--waiting 10000] [--others 10000] [--samples 30] [--store-url URL]

Fills a fresh store (a temporary SQLite file, or `--store-url`, e.g. an empty PostgreSQL database) through the
store's own operations with `--waiting` turns paused for a client tool's output, half llama-stack turns (an agent
with sessions) and half detached (Responses) turns with their pending call, all of one tenant, and `--others`
paused turns of another tenant beside them. Then times `GET /v1/inbox`'s store read (store/inbox.py):

- `first_page_ms`: the first page of 20, oldest first (the console's landing page);
- `deep_page_ms`: a page from a cursor halfway through;
- `kind_page_ms`: the first page of `kind=tool_output` (the filter that looks at pending calls).

The target is a first page in ≤ 100 ms at 10,000 waiting turns.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.common import percentiles_ms
from domain.agents import Agent, AgentConfig
from domain.content import CompletionMessage, ToolCall, UserMessage
from domain.turn_settings import TurnSettings
from domain.turns import TurnStatus
from knowledge.engines import vector_index
from store import database
from store.inbox import InboxCursor, InboxQuery
from store.repository import Store
from store.upgrade import upgrade_store

T0 = datetime(2026, 1, 1, tzinfo=UTC)
TENANT, OTHER = "bench-tenant", "bench-other"
SESSIONS_PER_AGENT = 1000


async def pause(store: Store, turn_id: str) -> None:
    call = ToolCall(call_id=f"call-{turn_id}", tool_name="lookup", arguments={"q": "weather"})
    await store.turns.save_turn_progress(
        turn_id,
        status=TurnStatus.AWAITING_INPUT,
        output_message=CompletionMessage(content="", stop_reason="end_of_message", tool_calls=[call]),
        awaiting=[call.call_id],
    )


async def fill(store: Store, tenant: str, count: int, offset: int) -> None:
    agent_id = ""
    for index in range(count):
        started = T0 + timedelta(seconds=offset + index)
        turn_id = f"{tenant}-t{index:06d}"
        if index % 2:
            settings = TurnSettings(model="m")
            message = [UserMessage(content="weather?")]
            await store.turns.begin_detached_turn(tenant, turn_id, message, [], f"s{turn_id}", settings, started)
        else:
            if index % (2 * SESSIONS_PER_AGENT) == 0:
                agent_id = f"{tenant}-a{index}"
                config = AgentConfig(model="m", instructions="i")
                await store.turns.create_agent(tenant, Agent(agent_id=agent_id, agent_config=config, created_at=T0))
            session_id = f"{tenant}-s{index}"
            await store.turns.create_session(agent_id, session_id, "bench", started)
            await store.turns.begin_turn(agent_id, session_id, turn_id, [UserMessage(content="weather?")], started)
        await pause(store, turn_id)


async def timed(store: Store, query: InboxQuery, samples: int) -> tuple[dict[str, float | int | None], int]:
    await store.inbox.waiting(query)  # compiled statements and connections warm
    durations: list[float] = []
    found = 0
    for _ in range(samples):
        started = time.perf_counter()
        items, _ = await store.inbox.waiting(query)
        durations.append(time.perf_counter() - started)
        found = len(items)
    return percentiles_ms(durations), found


async def run(url: str, waiting: int, others: int, samples: int) -> dict[str, object]:
    await upgrade_store(url)
    db = database.open_database(url)
    try:
        store = Store(db, vector_index(url))
        began = time.perf_counter()
        await fill(store, OTHER, others, 0)
        await fill(store, TENANT, waiting, others // 2)  # the two tenants' turns interleave in time
        filled_s = time.perf_counter() - began
        middle = InboxCursor(started_at=T0 + timedelta(seconds=others // 2 + waiting // 2), turn_id="")
        first, first_found = await timed(store, InboxQuery(tenant=TENANT), samples)
        deep, _ = await timed(store, InboxQuery(tenant=TENANT, after=middle), samples)
        kind, _ = await timed(store, InboxQuery(tenant=TENANT, kind="tool_output"), samples)
        return {
            "store": url.split(":", 1)[0],
            "waiting": waiting,
            "others": others,
            "fill_s": round(filled_s, 1),
            "page_items": first_found,
            "first_page_ms": first,
            "deep_page_ms": deep,
            "kind_page_ms": kind,
        }
    finally:
        await db.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--waiting", type=int, default=10_000)
    parser.add_argument("--others", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--store-url", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="da-inbox-") as workdir:
        url = args.store_url or f"sqlite+aiosqlite:///{Path(workdir) / 'inbox.db'}"
        print(json.dumps(asyncio.run(run(url, args.waiting, args.others, args.samples))))


if __name__ == "__main__":
    main()
