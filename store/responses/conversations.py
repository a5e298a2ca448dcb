"""Conversations of the Responses dialect in the store: a tenant's conversations and their ordered items.

Items are kept as the Responses items they were written as (JSON); the API gives every item its id before
it gets here. Every operation is scoped to a tenant: another tenant's conversation is as absent as one that
never existed. The `insert_items` function runs inside a caller's transaction too, so whoever appends a
finished response's items can flag that response in the same transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any, Literal

from sqlalchemy import Connection, delete, insert, select, update

from store.database import Database
from store.responses.responses import mark_appended
from store.responses.tables import ConversationItemRow, ConversationRow

Order = Literal["asc", "desc"]


@dataclass(frozen=True)
class Conversation:
    conversation_id: str
    metadata: dict[str, str]
    created_at: datetime


@dataclass(frozen=True)
class ItemPage:
    items: list[dict[str, Any]]
    has_more: bool


@dataclass(frozen=True)
class Item:
    """An item to store: its id and its body (the Responses item, `id` included)."""

    item_id: str
    body: dict[str, Any]


class ConversationNotFound(LookupError):
    """The tenant has no conversation with this id."""

    def __init__(self, conversation_id: str) -> None:
        super().__init__(conversation_id)
        self.conversation_id = conversation_id


class DuplicateItem(ValueError):
    """An item id that the conversation (or the same request) already has."""

    def __init__(self, conversation_id: str, item_id: str) -> None:
        super().__init__(item_id)
        self.conversation_id = conversation_id
        self.item_id = item_id


class UnknownCursor(LookupError):
    """The `after` item of a listing is not in the conversation."""

    def __init__(self, item_id: str) -> None:
        super().__init__(item_id)
        self.item_id = item_id


class ConversationStore:
    def __init__(self, database: Database) -> None:
        self.database = database

    async def append_settled(self, response_id: str, conversation_id: str, items: Sequence[Item]) -> None:
        """Append a finished response's items to its conversation and flag the response as appended, in one
        transaction: two processes settling it at once append it once."""
        await self.database.write(
            partial(_append_settled, response_id=response_id, conversation_id=conversation_id, items=items)
        )

    async def create(
        self, tenant: str, conversation_id: str, metadata: dict[str, str], items: Sequence[Item], created_at: datetime
    ) -> Conversation:
        """A new conversation with its first items, in one transaction; DuplicateItem if two items share an id."""
        row = {"conversation_id": conversation_id, "tenant_id": tenant, "meta": metadata, "created_at": created_at}

        def run(tx: Connection) -> None:
            tx.execute(insert(ConversationRow).values(**row))
            insert_items(tx, conversation_id, items, created_at)

        await self.database.write(run)
        return Conversation(conversation_id, metadata, created_at)

    async def get(self, tenant: str, conversation_id: str) -> Conversation:
        return await self.database.read(lambda tx: _conversation(tx, tenant, conversation_id))

    async def update_metadata(self, tenant: str, conversation_id: str, metadata: dict[str, str]) -> Conversation:
        """Replace the conversation's metadata as a whole."""

        def run(tx: Connection) -> Conversation:
            tx.execute(update(ConversationRow).where(*_owned(tenant, conversation_id)).values(meta=metadata))
            return _conversation(tx, tenant, conversation_id)

        return await self.database.write(run)

    async def delete(self, tenant: str, conversation_id: str) -> None:
        """Delete the conversation and its items."""

        def run(tx: Connection) -> None:
            _conversation(tx, tenant, conversation_id)
            tx.execute(delete(ConversationItemRow).where(ConversationItemRow.conversation_id == conversation_id))
            tx.execute(delete(ConversationRow).where(ConversationRow.conversation_id == conversation_id))

        await self.database.write(run)

    async def append_items(
        self, tenant: str, conversation_id: str, items: Sequence[Item], created_at: datetime
    ) -> list[dict[str, Any]]:
        """Add items at the end of the conversation; their bodies as stored. DuplicateItem for an id it has."""

        def run(tx: Connection) -> list[dict[str, Any]]:
            _conversation(tx, tenant, conversation_id)
            insert_items(tx, conversation_id, items, created_at)
            return [item.body for item in items]

        return await self.database.write(run)

    async def list_items(
        self, tenant: str, conversation_id: str, order: Order, after: str | None, limit: int
    ) -> ItemPage:
        """Up to `limit` items in `order`, starting past the item `after` (UnknownCursor if there is none)."""
        rows = ConversationItemRow
        descending = order == "desc"

        def run(tx: Connection) -> ItemPage:
            _conversation(tx, tenant, conversation_id)
            query = select(rows.body).where(rows.conversation_id == conversation_id)
            if after is not None:
                cursor = tx.scalar(
                    select(rows.position).where(rows.conversation_id == conversation_id, rows.item_id == after)
                )
                if cursor is None:
                    raise UnknownCursor(after)
                query = query.where(rows.position < cursor if descending else rows.position > cursor)
            query = query.order_by(rows.position.desc() if descending else rows.position).limit(limit + 1)
            bodies = list(tx.scalars(query))
            return ItemPage(bodies[:limit], len(bodies) > limit)

        return await self.database.read(run)

    async def get_item(self, tenant: str, conversation_id: str, item_id: str) -> dict[str, Any] | None:
        def run(tx: Connection) -> dict[str, Any] | None:
            _conversation(tx, tenant, conversation_id)
            return tx.scalar(
                select(ConversationItemRow.body).where(
                    ConversationItemRow.conversation_id == conversation_id, ConversationItemRow.item_id == item_id
                )
            )

        return await self.database.read(run)

    async def delete_item(self, tenant: str, conversation_id: str, item_id: str) -> Conversation | None:
        """Remove one item; the conversation afterwards, or None if it has no such item."""

        def run(tx: Connection) -> Conversation | None:
            conversation = _conversation(tx, tenant, conversation_id)
            removed = tx.execute(
                delete(ConversationItemRow).where(
                    ConversationItemRow.conversation_id == conversation_id, ConversationItemRow.item_id == item_id
                )
            )
            return conversation if removed.rowcount else None

        return await self.database.write(run)


def insert_items(tx: Connection, conversation_id: str, items: Sequence[Item], created_at: datetime) -> None:
    """Append `items` to the conversation in their order, inside the caller's transaction (which has made sure
    the conversation exists and is the caller's).

    Raises DuplicateItem when an id is already in the conversation or twice among `items`.
    """
    if not items:
        return
    # A no-op write takes the conversation's row lock (PostgreSQL) or the write lock (SQLite): writers of one
    # conversation take turns, so its items are numbered in the order their transactions commit.
    tx.execute(
        update(ConversationRow)
        .where(ConversationRow.conversation_id == conversation_id)
        .values(created_at=ConversationRow.created_at)
    )
    ids = [item.item_id for item in items]
    repeated = next((item_id for index, item_id in enumerate(ids) if item_id in ids[:index]), None)
    if repeated is None:
        taken = select(ConversationItemRow.item_id).where(
            ConversationItemRow.conversation_id == conversation_id, ConversationItemRow.item_id.in_(ids)
        )
        repeated = tx.scalar(taken.limit(1))
    if repeated is not None:
        raise DuplicateItem(conversation_id, repeated)
    values = [
        {"conversation_id": conversation_id, "item_id": item.item_id, "body": item.body, "created_at": created_at}
        for item in items
    ]
    # One statement per item: positions are allocated in the order the items were given.
    for value in values:
        tx.execute(insert(ConversationItemRow).values(**value))


def _owned(tenant: str, conversation_id: str) -> tuple[Any, ...]:
    return (ConversationRow.conversation_id == conversation_id, ConversationRow.tenant_id == tenant)


def _conversation(tx: Connection, tenant: str, conversation_id: str) -> Conversation:
    row = tx.execute(
        select(ConversationRow.meta, ConversationRow.created_at).where(*_owned(tenant, conversation_id))
    ).first()
    if row is None:
        raise ConversationNotFound(conversation_id)
    metadata, created_at = row
    return Conversation(conversation_id, metadata or {}, created_at)


def _append_settled(tx: Connection, response_id: str, conversation_id: str, items: Sequence[Item]) -> None:
    if not mark_appended(tx, response_id):
        return  # another process settled it first
    present = set(
        tx.scalars(
            select(ConversationItemRow.item_id).where(
                ConversationItemRow.conversation_id == conversation_id,
                ConversationItemRow.item_id.in_([item.item_id for item in items]),
            )
        )
    )
    # An item the conversation has already (a client's own id, replayed) is not added twice.
    fresh = list({item.item_id: item for item in items if item.item_id not in present}.values())
    insert_items(tx, conversation_id, fresh, datetime.now(UTC))
