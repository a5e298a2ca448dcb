"""Conversations in the store, on SQLite and on PostgreSQL: order, pages, duplicates, tenancy and deletion."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Connection, select

from store.database import open_database
from store.responses.conversations import (
    ConversationNotFound,
    ConversationStore,
    DuplicateItem,
    Item,
    Order,
    UnknownCursor,
)
from store.responses.tables import ConversationItemRow
from store.upgrade import upgrade_store
from tests.support.databases import store_url

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgresql"])
async def conversations(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ConversationStore]:
    with store_url(request.param, tmp_path) as url:
        await upgrade_store(url)
        database = open_database(url)
        try:
            yield ConversationStore(database)
        finally:
            await database.dispose()


def _items(*ids: str) -> list[Item]:
    return [Item(item_id, {"id": item_id, "type": "message"}) for item_id in ids]


async def test_items_are_listed_in_order_and_by_pages(conversations: ConversationStore) -> None:
    await conversations.create("t", "conv_1", {"k": "v"}, _items("a", "b"), T0)
    assert await conversations.append_items("t", "conv_1", _items("c", "d", "e"), T0) == [
        {"id": i, "type": "message"} for i in "cde"
    ]

    async def ids(order: Order, after: str | None, limit: int) -> tuple[str, bool]:
        page = await conversations.list_items("t", "conv_1", order, after, limit)
        return "".join(item["id"] for item in page.items), page.has_more

    assert await ids("asc", None, 10) == ("abcde", False)
    assert await ids("desc", None, 10) == ("edcba", False)
    assert await ids("asc", "b", 2) == ("cd", True)
    assert await ids("desc", "b", 2) == ("a", False)
    assert await ids("desc", None, 5) == ("edcba", False)
    with pytest.raises(UnknownCursor):
        await ids("asc", "zz", 2)


async def test_concurrent_appends_keep_each_batch_whole_and_in_commit_order(conversations: ConversationStore) -> None:
    await conversations.create("t", "conv_1", {}, [], T0)
    batches = [[f"{writer}-{n}" for n in range(5)] for writer in range(6)]

    await asyncio.gather(*(conversations.append_items("t", "conv_1", _items(*batch), T0) for batch in batches))

    page = await conversations.list_items("t", "conv_1", "asc", None, 100)
    listed = [item["id"] for item in page.items]
    assert sorted(listed) == sorted(i for batch in batches for i in batch)
    starts = [listed.index(batch[0]) for batch in batches]
    for batch, start in zip(batches, starts, strict=True):
        assert listed[start : start + 5] == batch


async def test_an_item_id_is_taken_once_per_conversation(conversations: ConversationStore) -> None:
    await conversations.create("t", "conv_1", {}, _items("a"), T0)
    await conversations.create("t", "conv_2", {}, _items("a"), T0)  # another conversation may have it

    with pytest.raises(DuplicateItem) as again:
        await conversations.append_items("t", "conv_1", _items("b", "a"), T0)
    assert again.value.item_id == "a"
    with pytest.raises(DuplicateItem):
        await conversations.append_items("t", "conv_1", _items("c", "c"), T0)
    with pytest.raises(DuplicateItem):
        await conversations.create("t", "conv_3", {}, _items("x", "x"), T0)

    page = await conversations.list_items("t", "conv_1", "asc", None, 10)
    assert [item["id"] for item in page.items] == ["a"]  # nothing of a refused write stays
    with pytest.raises(ConversationNotFound):
        await conversations.get("t", "conv_3")


async def test_another_tenants_conversation_is_absent(conversations: ConversationStore) -> None:
    await conversations.create("t", "conv_1", {"k": "v"}, _items("a"), T0)

    refused = [
        conversations.get("u", "conv_1"),
        conversations.update_metadata("u", "conv_1", {}),
        conversations.append_items("u", "conv_1", _items("b"), T0),
        conversations.list_items("u", "conv_1", "asc", None, 10),
        conversations.get_item("u", "conv_1", "a"),
        conversations.delete_item("u", "conv_1", "a"),
        conversations.delete("u", "conv_1"),
    ]
    for operation in refused:
        with pytest.raises(ConversationNotFound):
            await operation

    assert (await conversations.get("t", "conv_1")).metadata == {"k": "v"}
    assert await conversations.get_item("t", "conv_1", "a") == {"id": "a", "type": "message"}


async def test_deleting_removes_the_items(conversations: ConversationStore) -> None:
    await conversations.create("t", "conv_1", {}, _items("a", "b"), T0)
    await conversations.create("t", "conv_2", {}, _items("a"), T0)

    assert await conversations.delete_item("t", "conv_1", "a") is not None
    assert await conversations.delete_item("t", "conv_1", "a") is None
    await conversations.delete("t", "conv_1")

    def left(tx: Connection) -> list[str]:
        return list(tx.scalars(select(ConversationItemRow.conversation_id)))

    assert await conversations.database.read(left) == ["conv_2"]
