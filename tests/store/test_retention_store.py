"""Retention's deletes on the store itself, SQLite and PostgreSQL: each kind prunes what expired and nothing
it must keep (a paused turn, a response its conversation has not taken in, anything younger), and a tenant's
erasure takes all of that tenant and nothing of another."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Connection, func, select

from domain.agents import Agent, AgentConfig
from domain.content import CompletionMessage, UserMessage
from domain.turn_settings import TurnSettings
from domain.turns import TurnStatus
from store.repository import Store
from store.responses.conversations import Item
from store.responses.responses import ResponseRecord
from store.responses.tables import CompactionRow, ConversationRow, ResponseRow
from store.retention import KINDS, Erase, unfinished_turns_of
from store.turns.tables import SessionRow, TurnRow
from tests.support.databases import opened_store

OLD = datetime(2026, 1, 1, tzinfo=UTC)
NOW = OLD + timedelta(days=10)
CUTOFF = OLD + timedelta(days=5)


@pytest.fixture(params=["sqlite", "postgresql"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    async with opened_store(request.param, tmp_path) as store:
        yield store


async def _session_turn(store: Store, session: str, turn: str, at: datetime, status: TurnStatus) -> None:
    await store.turns.begin_turn("agent", session, turn, [UserMessage(content="hi")], at)
    answer = CompletionMessage(content="ok")
    final = status.is_final
    await store.turns.save_turn_progress(
        turn, status=status, output_message=answer if final else None, completed_at=at if final else None
    )


async def _response(
    store: Store, tenant: str, name: str, at: datetime, status: TurnStatus, conversation: str | None = None
) -> None:
    await store.turns.begin_detached_turn(
        tenant, f"t-{name}", [UserMessage(content="q")], [], f"s-{name}", TurnSettings(model="m"), at
    )
    record = ResponseRecord(
        response_id=f"resp-{name}",
        tenant_id=tenant,
        turn_id=f"t-{name}",
        segment_index=0,
        conversation_id=conversation,
        previous_response_id=None,
        model="m",
        request={"input": []},
        background=False,
        store=True,
        created_at=at,
    )
    await store.responses.add(record)
    await store.turns.save_turn_progress(f"t-{name}", status=status, completed_at=at if status.is_final else None)


async def _seed(store: Store, tenant: str) -> None:
    await store.turns.create_agent(
        tenant, Agent(agent_id="agent", agent_config=AgentConfig(model="m", instructions="i"), created_at=OLD)
    )
    await store.turns.create_session("agent", "idle", "old session", OLD)
    await _session_turn(store, "idle", "idle-1", OLD, TurnStatus.COMPLETED)
    await store.turns.create_session("agent", "busy", "a session with a paused turn", OLD)
    await _session_turn(store, "busy", "busy-old", OLD, TurnStatus.COMPLETED)
    await _session_turn(store, "busy", "busy-paused", OLD + timedelta(seconds=1), TurnStatus.AWAITING_INPUT)
    await _response(store, tenant, "old", OLD, TurnStatus.COMPLETED)
    await _response(store, tenant, "paused", OLD, TurnStatus.AWAITING_INPUT)
    await _response(store, tenant, "young", NOW, TurnStatus.COMPLETED)
    await store.conversations.create(tenant, "conv-old", {}, [Item("i1", {"id": "i1", "type": "message"})], OLD)
    await store.conversations.create(tenant, "conv-waiting", {}, [], OLD)
    await _response(store, tenant, "unsettled", OLD, TurnStatus.COMPLETED, conversation="conv-waiting")
    await store.compactions.add("cmpr-old", tenant, "m", [], OLD)


async def _ids(store: Store, column: object) -> set[str]:
    return set(await store.database.read(lambda tx: list(tx.scalars(select(column)))))  # type: ignore[call-overload]


async def _prune(store: Store, kind: str) -> int:
    prune = KINDS[kind].prune
    assert prune is not None
    return await store.database.write(lambda tx: prune(tx, CUTOFF, 1))  # a batch of one: batches add up


async def _prune_all(store: Store, kind: str) -> int:
    total = 0
    while deleted := await _prune(store, kind):
        total += deleted
    return total


async def test_each_kind_prunes_what_expired_and_keeps_what_it_must(store: Store) -> None:
    await _seed(store, "acme")

    assert await _prune_all(store, "responses") == 1  # not the paused, the young, nor the unsettled one
    assert await _ids(store, ResponseRow.response_id) == {"resp-paused", "resp-young", "resp-unsettled"}
    assert "t-old" not in await _ids(store, TurnRow.turn_id)  # the turn went with its last response

    assert await _prune_all(store, "conversations") == 1  # conv-waiting has a response still to take in
    assert await _ids(store, ConversationRow.conversation_id) == {"conv-waiting"}

    assert await _prune_all(store, "turns") == 2  # the ended session turns; the paused one stays
    assert {"busy-paused"} == {t for t in await _ids(store, TurnRow.turn_id) if not t.startswith("t-")}

    assert await _prune_all(store, "sessions") == 1  # "busy" has its paused turn
    assert await _ids(store, SessionRow.session_id) == {"busy"}

    assert await _prune_all(store, "compactions") == 1
    oldest = KINDS["responses"].oldest
    assert oldest is not None and await store.database.read(oldest) == OLD  # the paused one's


def _erase_batch(erase: Erase) -> Callable[[Connection], int]:
    def run(tx: Connection) -> int:
        return erase(tx, "acme", 2)

    return run


async def test_an_erasure_takes_one_tenant_whole_and_nothing_else(store: Store) -> None:
    await _seed(store, "acme")
    other = Store(store.database, store.vector_stores.index)
    await other.turns.create_agent(
        "other", Agent(agent_id="theirs", agent_config=AgentConfig(model="m", instructions="i"), created_at=OLD)
    )
    await _response(other, "other", "theirs", OLD, TurnStatus.COMPLETED)

    unfinished = await store.database.read(lambda tx: unfinished_turns_of(tx, "acme", 100))
    assert set(unfinished) == {"busy-paused", "t-paused"}
    erased: dict[str, int] = {}
    while True:
        for name, kind in KINDS.items():
            deleted = await store.database.write(_erase_batch(kind.erase))
            if deleted:
                erased[name] = erased.get(name, 0) + deleted
                break
        else:
            break
    assert set(erased) == {"responses", "conversations", "sessions", "compactions"}
    count = await store.database.read(lambda tx: tx.scalar(select(func.count()).select_from(CompactionRow)))
    assert count == 0
    assert await _ids(store, ResponseRow.response_id) == {"resp-theirs"}
    assert await _ids(store, ConversationRow.conversation_id) == set()
    assert await _ids(store, TurnRow.turn_id) == {"t-theirs"}
    assert (
        await store.turns.get_agent("other", "theirs") is not None
        and await store.turns.get_agent("acme", "agent") is None
    )
