"""The `responses` table's reads and writes (revision 0007): Responses-API responses and their turns."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any, Literal

from sqlalchemy import Connection, Row, delete, false, func, insert, literal, select, update

from domain.turns import TurnStatus
from store.database import Database
from store.responses.tables import ResponseRow
from store.turns.records import FINAL_STATUSES, Page
from store.turns.rows import delete_turns
from store.turns.tables import PendingCallRow, TurnRow


@dataclass(frozen=True)
class ResponseRecord:
    response_id: str
    tenant_id: str
    turn_id: str
    segment_index: int
    conversation_id: str | None
    previous_response_id: str | None
    model: str
    request: dict[str, Any]
    background: bool
    store: bool
    created_at: datetime
    appended_to_conversation: bool = False
    request_hash: str | None = None
    """An unkeyed create's request body, hashed with its tenant: what the SDK's retries of it find it by."""

    def input_items(self) -> list[dict[str, Any]]:
        return list(self.request.get("input", []))


@dataclass(frozen=True)
class Unstored:
    """A `store: false` response whose turn has ended (see ResponseStore.unstored_ended)."""

    tenant_id: str
    turn_id: str
    conversation_id: str | None
    appended_to_conversation: bool


_COLUMNS = ResponseRow.__table__


def _record(row: Row[Any]) -> ResponseRecord:
    return ResponseRecord(
        response_id=row.response_id,
        tenant_id=row.tenant_id,
        turn_id=row.turn_id,
        segment_index=row.segment_index,
        conversation_id=row.conversation_id,
        previous_response_id=row.previous_response_id,
        model=row.model,
        request=row.request,
        background=row.background,
        store=row.store,
        created_at=row.created_at,
        appended_to_conversation=row.appended_to_conversation,
        request_hash=row.request_hash,
    )


def add_response(record: ResponseRecord, tx: Connection) -> bool:
    """`ResponseStore.add` as a statement of the caller's transaction (a new turn's, TurnStore.begin_detached_turn)."""
    if tx.scalar(select(ResponseRow.response_id).where(ResponseRow.response_id == record.response_id)):
        return False
    tx.execute(insert(ResponseRow).values(**record.__dict__))
    return True


class ResponseStore:
    """Every statement on `responses`; each method is one transaction of the given database."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def add(self, record: ResponseRecord) -> bool:
        """Record a response; False when its id exists already (a retried create with the same key)."""
        return await self.database.write(partial(add_response, record))

    async def get(self, tenant: str, response_id: str) -> ResponseRecord | None:
        """The tenant's response, stored or not; another tenant's is None as an unknown id is."""
        query = select(_COLUMNS).where(ResponseRow.response_id == response_id, ResponseRow.tenant_id == tenant)
        row = await self.database.read(lambda tx: tx.execute(query).first())
        return _record(row) if row else None

    async def latest_with_request(self, tenant: str, request_hash: str, since: datetime) -> ResponseRecord | None:
        """The tenant's latest response created since then from a request with this hash."""
        query = (
            select(_COLUMNS)
            .where(
                ResponseRow.tenant_id == tenant,
                ResponseRow.request_hash == request_hash,
                ResponseRow.created_at >= since,
            )
            .order_by(ResponseRow.created_at.desc())
            .limit(1)
        )
        row = await self.database.read(lambda tx: tx.execute(query).first())
        return _record(row) if row else None

    async def of_turn(self, turn_id: str) -> list[ResponseRecord]:
        """The turn's responses, in segment order."""
        query = select(_COLUMNS).where(ResponseRow.turn_id == turn_id).order_by(ResponseRow.segment_index)
        rows = await self.database.read(lambda tx: tx.execute(query).all())
        return [_record(row) for row in rows]

    async def waiting_for(
        self, tenant: str, call_ids: Sequence[str], turn_ids: Collection[str] | None = None
    ) -> dict[str, str]:
        """Which of these client call ids (or approval request ids) a paused turn of the tenant's responses waits
        for: call id -> turn id; only among `turn_ids` when given. The pending calls of other turns (an Agents API
        session's) are not a response's to answer, even when their ids coincide; of two responses' turns waiting
        on one id, the latest created wins."""
        if not call_ids or (turn_ids is not None and not turn_ids):
            return {}
        query = (
            select(PendingCallRow.call_id, PendingCallRow.turn_id)
            .join(ResponseRow, ResponseRow.turn_id == PendingCallRow.turn_id)
            .where(
                PendingCallRow.tenant_id == tenant,
                ResponseRow.tenant_id == tenant,
                PendingCallRow.call_id.in_(list(call_ids)),
            )
            .order_by(ResponseRow.created_at)
        )
        if turn_ids is not None:
            query = query.where(PendingCallRow.turn_id.in_(list(turn_ids)))
        rows = await self.database.read(lambda tx: tx.execute(query).all())
        return {call_id: turn_id for call_id, turn_id in rows}

    async def chain(self, tenant: str, response_id: str, most: int = 10_000) -> list[ResponseRecord]:
        """The response and its predecessors by previous_response_id, oldest first, in one statement."""
        walk = (
            select(_COLUMNS.c.response_id, _COLUMNS.c.previous_response_id, literal(0).label("depth"))
            .where(_COLUMNS.c.response_id == response_id, _COLUMNS.c.tenant_id == tenant)
            .cte("walk", recursive=True)
        )
        earlier = _COLUMNS.alias("earlier")
        walk = walk.union_all(
            select(earlier.c.response_id, earlier.c.previous_response_id, walk.c.depth + 1).where(
                earlier.c.response_id == walk.c.previous_response_id,
                earlier.c.tenant_id == tenant,
                walk.c.depth + 1 < most,
            )
        )
        query = select(_COLUMNS).join(walk, walk.c.response_id == _COLUMNS.c.response_id).order_by(walk.c.depth.desc())
        rows = await self.database.read(lambda tx: tx.execute(query).all())
        return [_record(row) for row in rows]

    async def of_conversation(self, conversation_id: str, unappended_only: bool = False) -> list[ResponseRecord]:
        query = select(_COLUMNS).where(ResponseRow.conversation_id == conversation_id)
        if unappended_only:
            query = query.where(ResponseRow.appended_to_conversation.is_(False))
        query = query.order_by(ResponseRow.created_at, ResponseRow.response_id)
        rows = await self.database.read(lambda tx: tx.execute(query).all())
        return [_record(row) for row in rows]

    async def page(
        self,
        tenant: str,
        after: str | None,
        limit: int,
        order: Literal["asc", "desc"],
        model: str | None = None,
    ) -> Page[ResponseRecord]:
        """Stored responses of the tenant by creation time; `after` is the id the previous page ended with
        (LookupError when the tenant has no such response)."""

        def run(tx: Connection) -> Page[ResponseRecord]:
            query = select(_COLUMNS).where(ResponseRow.tenant_id == tenant, ResponseRow.store.is_(True))
            if model is not None:
                query = query.where(ResponseRow.model == model)
            key = (ResponseRow.created_at, ResponseRow.response_id)
            if after is not None:
                cursor = tx.execute(
                    select(*key).where(ResponseRow.response_id == after, ResponseRow.tenant_id == tenant)
                ).first()
                if cursor is None:
                    raise LookupError(after)
                same_time = ResponseRow.created_at == cursor.created_at
                if order == "asc":
                    query = query.where(
                        (ResponseRow.created_at > cursor.created_at) | (same_time & (ResponseRow.response_id > after))
                    )
                else:
                    query = query.where(
                        (ResponseRow.created_at < cursor.created_at) | (same_time & (ResponseRow.response_id < after))
                    )
            ordering = key if order == "asc" else tuple(column.desc() for column in key)
            rows = tx.execute(query.order_by(*ordering).limit(limit + 1)).all()
            return Page([_record(row) for row in rows[:limit]], len(rows) > limit)

        return await self.database.read(run)

    async def forget(self, response_id: str) -> None:
        """Remove a response whose segment never began (its turn refused the resumption)."""
        await self.database.write(
            lambda tx: tx.execute(delete(ResponseRow).where(ResponseRow.response_id == response_id))
        )

    async def delete(self, tenant: str, response_id: str) -> str | None:
        """Delete the response; when it was its turn's last, the finished turn goes with it.
        Returns the turn id, or None if the tenant has no such response."""

        def run(tx: Connection) -> str | None:
            which = (ResponseRow.response_id == response_id) & (ResponseRow.tenant_id == tenant)
            turn_id = tx.scalar(select(ResponseRow.turn_id).where(which))
            if turn_id is None:
                return None
            tx.execute(delete(ResponseRow).where(which))
            others = tx.scalar(select(func.count()).select_from(ResponseRow).where(ResponseRow.turn_id == turn_id))
            status = tx.scalar(select(TurnRow.status).where(TurnRow.turn_id == turn_id))
            if not others and status is not None and TurnStatus(status).is_final:
                delete_turns(tx, TurnRow.turn_id == turn_id)
            return turn_id

        return await self.database.write(run)

    async def unstored_ended(self, ended_before: datetime, limit: int) -> list[Unstored]:
        """`store: false` responses whose turn ended for good (not paused) before `ended_before`, oldest first."""
        ended = func.coalesce(TurnRow.completed_at, TurnRow.started_at)
        query = (
            select(
                ResponseRow.tenant_id,
                ResponseRow.turn_id,
                ResponseRow.conversation_id,
                ResponseRow.appended_to_conversation,
            )
            .join(TurnRow, TurnRow.turn_id == ResponseRow.turn_id)
            .where(ResponseRow.store == false(), TurnRow.status.in_(FINAL_STATUSES), ended < ended_before)
            .order_by(ended)
            .limit(limit)
        )
        rows = await self.database.read(lambda tx: tx.execute(query).all())
        return [Unstored(row.tenant_id, row.turn_id, row.conversation_id, row.appended_to_conversation) for row in rows]

    async def forget_unstored(self, turn_id: str) -> bool | None:
        """Delete the `store: false` responses of an ended turn once their conversations have their items.
        True when the turn has no stored response (the caller deletes it, and its responses go with it:
        Store.delete_detached_turn); False when stored ones keep it; None when it has not ended or a
        conversation is still to be settled."""

        def run(tx: Connection) -> bool | None:
            status = tx.scalar(select(TurnRow.status).where(TurnRow.turn_id == turn_id))
            if status is None or status not in FINAL_STATUSES:
                return None
            rows = tx.execute(
                select(ResponseRow.store, ResponseRow.conversation_id, ResponseRow.appended_to_conversation).where(
                    ResponseRow.turn_id == turn_id
                )
            ).all()
            if any(_unsettled(row) for row in rows if not row.store):
                return None
            if not any(row.store for row in rows):
                return True
            tx.execute(delete(ResponseRow).where(ResponseRow.turn_id == turn_id, ResponseRow.store == false()))
            return False

        return await self.database.write(run)


def _unsettled(row: Row[bool, str | None, bool]) -> bool:
    """Its items are still to be appended to its conversation (they come from its turn's events)."""
    return row.conversation_id is not None and not row.appended_to_conversation


def mark_appended(tx: Connection, response_id: str) -> bool:
    """Inside a caller's transaction: flag the response's items appended to its conversation; False when
    another writer did first (its items are there already)."""
    done = tx.execute(
        update(ResponseRow)
        .where(ResponseRow.response_id == response_id, ResponseRow.appended_to_conversation.is_(False))
        .values(appended_to_conversation=True)
    )
    return done.rowcount == 1
