"""The webhook tables' reads and writes: endpoints, the outbox of events, deliveries and their attempts.

`record_turn_status` runs inside the transaction that writes a turn's end or pause
(Store.save_turn_progress): an event and its deliveries exist exactly when the cause does, so no
crash between the two can lose a notification. Workflows then deliver them (webhooks/dispatch.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Row, bindparam, delete, func, insert, select, update

from domain.events import PAUSE_KEY_PREFIX
from domain.turns import TurnStatus
from domain.webhook_events import (
    agent_session_data,
    agent_session_event_type,
    event_body,
    response_event_type,
    turn_event_type,
)
from store.agent_sessions.tables import BetaSessionTurnRow
from store.database import Database
from store.responses.tables import ResponseRow
from store.tenancy.quotas import within_quota
from store.turns.tables import AgentRow, EventRow, TurnRow
from store.webhooks.tables import WebhookAttemptRow, WebhookDeliveryRow, WebhookEndpointRow, WebhookEventRow

PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"


class StillDelivering(Exception):
    """A redelivery was asked for while the delivery's current round is still pending."""


@dataclass(frozen=True)
class EndpointRecord:
    endpoint_id: str
    tenant_id: str
    name: str
    url: str
    event_types: list[str]
    secret_hint: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class Attempt:
    attempted_at: datetime
    status_code: int | None
    error: str | None
    duration_ms: int


@dataclass(frozen=True)
class DeliveryRecord:
    delivery_id: str
    endpoint_id: str
    event_id: str
    event_type: str
    status: str
    round: int
    created_at: datetime
    attempts: list[Attempt]


@dataclass(frozen=True)
class DeliveryToStart:
    """A delivery round whose workflow may not have been started."""

    delivery_id: str
    endpoint_id: str
    event_id: str
    event_type: str
    round: int


@dataclass(frozen=True)
class AttemptTarget:
    """What one attempt needs: where to, the sealed secrets that sign it now, and the event."""

    url: str
    sealed_secrets: list[str]
    event_id: str
    event_type: str
    body: dict[str, Any]


def _new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


_ENDPOINT_COLUMNS = (
    WebhookEndpointRow.endpoint_id,
    WebhookEndpointRow.tenant_id,
    WebhookEndpointRow.name,
    WebhookEndpointRow.url,
    WebhookEndpointRow.event_types,
    WebhookEndpointRow.secret_hint,
    WebhookEndpointRow.created_at,
    WebhookEndpointRow.updated_at,
)


def _endpoint(row: Row[Any]) -> EndpointRecord:
    return EndpointRecord(
        endpoint_id=row.endpoint_id,
        tenant_id=row.tenant_id,
        name=row.name,
        url=row.url,
        event_types=list(row.event_types),
        secret_hint=row.secret_hint,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


# The outbox

_ANY_ENDPOINT = select(WebhookEndpointRow.endpoint_id).limit(1)


def record_turn_status(tx: Connection, turn_id: str, status: TurnStatus, cause: str) -> bool:
    """Inside the transaction that gives the turn `status`: record the event it means, with a delivery to
    each of the tenant's endpoints that subscribe to it. `cause` (the key of the stored event that ends or
    pauses the turn) makes a retried write record nothing more. A turn's Responses events name its latest
    stored response; turns of the llama-stack dialect have turn events. True when the status has
    deliveries, recorded now or by an earlier attempt of this write (start them: `unstarted(turn_id=…)`)."""
    if status == TurnStatus.RUNNING:
        return _record_session_resumed(tx, turn_id)
    if not status.is_final and status != TurnStatus.AWAITING_INPUT:
        return False
    if tx.scalar(_ANY_ENDPOINT) is None:
        return False  # a deployment without webhooks pays one read of an empty table
    turn = tx.execute(
        select(
            TurnRow.session_id,
            TurnRow.agent_id,
            TurnRow.output_message,
            func.coalesce(TurnRow.tenant_id, AgentRow.tenant_id).label("tenant"),
        )
        .outerjoin(AgentRow, AgentRow.agent_id == TurnRow.agent_id)
        .where(TurnRow.turn_id == turn_id)
    ).first()
    if turn is None or turn.tenant is None:
        return False
    endpoints = tx.execute(
        select(WebhookEndpointRow.endpoint_id, WebhookEndpointRow.event_types).where(
            WebhookEndpointRow.tenant_id == turn.tenant
        )
    ).all()
    if not endpoints:
        return False
    output = turn.output_message or {}
    data: dict[str, Any]
    beta_session = _beta_session(tx, turn_id) if turn.session_id is None else None
    if beta_session is not None:
        event_type = agent_session_event_type(status)
        calls = output.get("tool_calls") or []
        data = agent_session_data(event_type or "", beta_session, "function_call" if calls else "mcp_approval_request")
    elif turn.session_id is None:
        response = tx.execute(
            select(ResponseRow.response_id, ResponseRow.store)
            .where(ResponseRow.turn_id == turn_id)
            .order_by(ResponseRow.segment_index.desc())
            .limit(1)
        ).first()
        if response is None or not response.store:
            return False
        event_type = response_event_type(status, output.get("stop_reason") == "out_of_tokens")
        data = {"id": response.response_id}
    else:
        event_type = turn_event_type(status)
        data = {"id": turn_id, "session_id": turn.session_id, "agent_id": turn.agent_id}
        if status == TurnStatus.AWAITING_INPUT:
            calls = output.get("tool_calls") or []
            data["tool_calls"] = [{"call_id": c.get("call_id"), "tool_name": c.get("tool_name")} for c in calls]
    subscribed = [row.endpoint_id for row in endpoints if event_type in row.event_types]
    if event_type is None or not subscribed:
        return False
    cause_key = f"{turn_id}:{cause}"[:300]
    seen = select(WebhookEventRow.event_id).where(
        WebhookEventRow.tenant_id == turn.tenant, WebhookEventRow.cause == cause_key
    )
    if tx.scalar(seen) is not None:
        return True
    now = datetime.now(UTC)
    event_id = _new_id("evt")
    tx.execute(
        insert(WebhookEventRow).values(
            event_id=event_id,
            tenant_id=turn.tenant,
            event_type=event_type,
            turn_id=turn_id,
            cause=cause_key,
            body=event_body(event_id, event_type, int(now.timestamp()), data),
            created_at=now,
        )
    )
    _add_deliveries(tx, turn.tenant, event_id, subscribed, now)
    return True


_LAST_PAUSE = (
    select(EventRow.key)
    .where(EventRow.turn_id == bindparam("turn_id"), EventRow.key.like(PAUSE_KEY_PREFIX + "%"))
    .order_by(EventRow.event_id.desc())
    .limit(1)
)


def _record_session_resumed(tx: Connection, turn_id: str) -> bool:
    """An Agents API session's turn working again after a pause: `agent.session.in_progress`, in the write that
    says so. Its cause names the pause it ends, as the API's own record after the resume does
    (agent_sessions/announce.py), so whichever comes first records it and the other records nothing."""
    if tx.scalar(_ANY_ENDPOINT) is None:
        return False
    session = _beta_session(tx, turn_id)
    pause = tx.scalar(_LAST_PAUSE, {"turn_id": turn_id}) if session is not None else None
    tenant = tx.scalar(select(TurnRow.tenant_id).where(TurnRow.turn_id == turn_id)) if pause is not None else None
    if session is None or pause is None or tenant is None:
        return False
    event_type = "agent.session.in_progress"
    cause = f"{turn_id}:pause{pause.removeprefix(PAUSE_KEY_PREFIX)}:{event_type}"
    return record_event(tx, tenant, event_type, agent_session_data(event_type, session), cause, turn_id)


def _beta_session(tx: Connection, turn_id: str) -> str | None:
    """The Agents API session a detached turn belongs to, if it does."""
    return tx.scalar(select(BetaSessionTurnRow.session_id).where(BetaSessionTurnRow.turn_id == turn_id))


def record_event(tx: Connection, tenant: str, event_type: str, data: dict[str, Any], cause: str, turn_id: str) -> bool:
    """Record an event the API itself causes (not a turn's status change), with a delivery to each of the
    tenant's endpoints subscribed to it; `cause` makes a repeat record nothing. True if deliveries were added
    (start them: `unstarted(turn_id=turn_id)`)."""
    endpoints = tx.execute(
        select(WebhookEndpointRow.endpoint_id, WebhookEndpointRow.event_types).where(
            WebhookEndpointRow.tenant_id == tenant
        )
    ).all()
    subscribed = [row.endpoint_id for row in endpoints if event_type in row.event_types]
    cause_key = cause[:300]
    seen = select(WebhookEventRow.event_id).where(
        WebhookEventRow.tenant_id == tenant, WebhookEventRow.cause == cause_key
    )
    if not subscribed or tx.scalar(seen) is not None:
        return False
    now = datetime.now(UTC)
    event_id = _new_id("evt")
    body = event_body(event_id, event_type, int(now.timestamp()), data)
    values = {"event_type": event_type, "turn_id": turn_id, "cause": cause_key, "body": body, "created_at": now}
    tx.execute(insert(WebhookEventRow).values(event_id=event_id, tenant_id=tenant, **values))
    _add_deliveries(tx, tenant, event_id, subscribed, now)
    return True


def _add_deliveries(tx: Connection, tenant: str, event_id: str, endpoint_ids: Sequence[str], now: datetime) -> None:
    rows = [
        {
            "delivery_id": _new_id("whd"),
            "endpoint_id": endpoint_id,
            "event_id": event_id,
            "tenant_id": tenant,
            "status": PENDING,
            "round": 0,
            "workflow_started": False,
            "created_at": now,
            "pending_since": now,
        }
        for endpoint_id in endpoint_ids
    ]
    tx.execute(insert(WebhookDeliveryRow), rows)


_DELIVERY_KEYS = select(
    WebhookDeliveryRow.delivery_id,
    WebhookDeliveryRow.endpoint_id,
    WebhookDeliveryRow.event_id,
    WebhookEventRow.event_type,
    WebhookDeliveryRow.round,
).join(WebhookEventRow, WebhookEventRow.event_id == WebhookDeliveryRow.event_id)
_TO_START = _DELIVERY_KEYS.where(WebhookDeliveryRow.workflow_started.is_(False))


class WebhookStore:
    """Every statement on the webhook tables; each method is one transaction of the given database."""

    def __init__(self, database: Database) -> None:
        self.database = database

    # Endpoints

    async def create_endpoint(
        self, tenant: str, name: str, url: str, event_types: list[str], sealed: str, hint: str, most: int
    ) -> EndpointRecord:
        now = datetime.now(UTC)
        record = EndpointRecord(_new_id("we"), tenant, name, url, event_types, hint, now, now)

        def run(tx: Connection) -> None:
            tenant_column = WebhookEndpointRow.tenant_id
            within_quota(tx, tenant_column, tenant, most, "DA_MAX_WEBHOOK_ENDPOINTS_PER_TENANT", "webhook endpoints")
            tx.execute(insert(WebhookEndpointRow).values(**record.__dict__, secret_sealed=sealed))

        await self.database.write(run)
        return record

    async def endpoint(self, tenant: str, endpoint_id: str) -> EndpointRecord | None:
        query = select(*_ENDPOINT_COLUMNS).where(
            WebhookEndpointRow.endpoint_id == endpoint_id, WebhookEndpointRow.tenant_id == tenant
        )
        row = await self.database.read(lambda tx: tx.execute(query).first())
        return _endpoint(row) if row else None

    async def endpoints(self, tenant: str, after: str | None, limit: int) -> tuple[list[EndpointRecord], bool]:
        """The tenant's endpoints, newest first, after the one with id `after` (LookupError if unknown)."""

        def run(tx: Connection) -> tuple[list[EndpointRecord], bool]:
            query = select(*_ENDPOINT_COLUMNS).where(WebhookEndpointRow.tenant_id == tenant)
            if after is not None:
                cursor = tx.execute(
                    select(WebhookEndpointRow.created_at).where(
                        WebhookEndpointRow.endpoint_id == after, WebhookEndpointRow.tenant_id == tenant
                    )
                ).first()
                if cursor is None:
                    raise LookupError(after)
                query = query.where(
                    (WebhookEndpointRow.created_at < cursor.created_at)
                    | ((WebhookEndpointRow.created_at == cursor.created_at) & (WebhookEndpointRow.endpoint_id < after))
                )
            order = (WebhookEndpointRow.created_at.desc(), WebhookEndpointRow.endpoint_id.desc())
            rows = tx.execute(query.order_by(*order).limit(limit + 1)).all()
            return [_endpoint(row) for row in rows[:limit]], len(rows) > limit

        return await self.database.read(run)

    async def update_endpoint(self, tenant: str, endpoint_id: str, changes: dict[str, Any]) -> EndpointRecord | None:
        """Apply `changes` (name, url, event_types); `updated_at` moves only when something changed."""
        which = (WebhookEndpointRow.endpoint_id == endpoint_id) & (WebhookEndpointRow.tenant_id == tenant)

        def run(tx: Connection) -> EndpointRecord | None:
            row = tx.execute(select(*_ENDPOINT_COLUMNS).where(which)).first()
            if row is None:
                return None
            current = _endpoint(row)
            changed = {key: value for key, value in changes.items() if getattr(current, key) != value}
            if not changed:
                return current
            changed["updated_at"] = datetime.now(UTC)
            tx.execute(update(WebhookEndpointRow).where(which).values(**changed))
            return EndpointRecord(**{**current.__dict__, **changed})

        return await self.database.write(run)

    async def rotate_secret(
        self, tenant: str, endpoint_id: str, sealed: str, hint: str, keep_old_until: datetime | None
    ) -> EndpointRecord | None:
        """Sign with a new secret from now on; with `keep_old_until`, also with the old one until then."""
        which = (WebhookEndpointRow.endpoint_id == endpoint_id) & (WebhookEndpointRow.tenant_id == tenant)

        def run(tx: Connection) -> EndpointRecord | None:
            now = datetime.now(UTC)
            values: dict[str, Any] = {"secret_sealed": sealed, "secret_hint": hint, "updated_at": now}
            if keep_old_until is not None:
                values |= {"previous_secret_sealed": WebhookEndpointRow.secret_sealed}
                values |= {"previous_secret_until": keep_old_until}
            else:
                values |= {"previous_secret_sealed": None, "previous_secret_until": None}
            if tx.execute(update(WebhookEndpointRow).where(which).values(**values)).rowcount == 0:
                return None
            return _endpoint(tx.execute(select(*_ENDPOINT_COLUMNS).where(which)).one())

        return await self.database.write(run)

    async def signing_secrets(self, tenant: str, endpoint_id: str) -> list[str] | None:
        """The sealed secrets that sign the endpoint's deliveries now: the current one, and the one before
        while a rotation keeps it."""
        query = select(
            WebhookEndpointRow.secret_sealed,
            WebhookEndpointRow.previous_secret_sealed,
            WebhookEndpointRow.previous_secret_until,
        ).where(WebhookEndpointRow.endpoint_id == endpoint_id, WebhookEndpointRow.tenant_id == tenant)
        row = await self.database.read(lambda tx: tx.execute(query).first())
        return _signing(row.secret_sealed, row.previous_secret_sealed, row.previous_secret_until) if row else None

    async def delete_endpoint(self, tenant: str, endpoint_id: str) -> list[DeliveryToStart] | None:
        """Delete the endpoint with its deliveries and their log; returns the deliveries that were pending
        (their workflows are to be stopped), None if the tenant has no such endpoint."""
        which = (WebhookEndpointRow.endpoint_id == endpoint_id) & (WebhookEndpointRow.tenant_id == tenant)

        def run(tx: Connection) -> list[DeliveryToStart] | None:
            if tx.scalar(select(WebhookEndpointRow.endpoint_id).where(which)) is None:
                return None
            pending = tx.execute(
                _DELIVERY_KEYS.where(
                    WebhookDeliveryRow.endpoint_id == endpoint_id, WebhookDeliveryRow.status == PENDING
                )
            ).all()
            deliveries = select(WebhookDeliveryRow.delivery_id).where(WebhookDeliveryRow.endpoint_id == endpoint_id)
            tx.execute(delete(WebhookAttemptRow).where(WebhookAttemptRow.delivery_id.in_(deliveries)))
            tx.execute(delete(WebhookDeliveryRow).where(WebhookDeliveryRow.endpoint_id == endpoint_id))
            tx.execute(delete(WebhookEndpointRow).where(which))
            return [DeliveryToStart(*row) for row in pending]

        return await self.database.write(run)

    # Deliveries

    async def deliveries(
        self, tenant: str, endpoint_id: str, after: str | None, limit: int, only: str | None = None
    ) -> tuple[list[DeliveryRecord], bool]:
        """The endpoint's deliveries (or the one with id `only`), newest first, each with its attempts oldest
        first."""

        def run(tx: Connection) -> tuple[list[DeliveryRecord], bool]:
            query = (
                select(
                    WebhookDeliveryRow.delivery_id,
                    WebhookDeliveryRow.endpoint_id,
                    WebhookDeliveryRow.event_id,
                    WebhookEventRow.event_type,
                    WebhookDeliveryRow.status,
                    WebhookDeliveryRow.round,
                    WebhookDeliveryRow.created_at,
                )
                .join(WebhookEventRow, WebhookEventRow.event_id == WebhookDeliveryRow.event_id)
                .where(WebhookDeliveryRow.endpoint_id == endpoint_id, WebhookDeliveryRow.tenant_id == tenant)
            )
            if only is not None:
                query = query.where(WebhookDeliveryRow.delivery_id == only)
            if after is not None:
                cursor = tx.scalar(
                    select(WebhookDeliveryRow.created_at).where(
                        WebhookDeliveryRow.delivery_id == after, WebhookDeliveryRow.endpoint_id == endpoint_id
                    )
                )
                if cursor is None:
                    raise LookupError(after)
                query = query.where(
                    (WebhookDeliveryRow.created_at < cursor)
                    | ((WebhookDeliveryRow.created_at == cursor) & (WebhookDeliveryRow.delivery_id < after))
                )
            order = (WebhookDeliveryRow.created_at.desc(), WebhookDeliveryRow.delivery_id.desc())
            rows = tx.execute(query.order_by(*order).limit(limit + 1)).all()
            ids = [row.delivery_id for row in rows[:limit]]
            attempts: dict[str, list[Attempt]] = {delivery_id: [] for delivery_id in ids}
            if ids:
                for row in tx.execute(
                    select(
                        WebhookAttemptRow.delivery_id,
                        WebhookAttemptRow.attempted_at,
                        WebhookAttemptRow.status_code,
                        WebhookAttemptRow.error,
                        WebhookAttemptRow.duration_ms,
                    )
                    .where(WebhookAttemptRow.delivery_id.in_(ids))
                    .order_by(WebhookAttemptRow.attempt_id)
                ):
                    attempts[row.delivery_id].append(Attempt(*row[1:]))
            records = [DeliveryRecord(*row, attempts=attempts[row.delivery_id]) for row in rows[:limit]]
            return records, len(rows) > limit

        return await self.database.read(run)

    async def redeliver(self, tenant: str, endpoint_id: str, delivery_id: str) -> DeliveryToStart | None:
        """Begin a new round of a delivery that ended (delivered or failed); None if there is no such
        delivery; StillDelivering while its round is pending."""

        def run(tx: Connection) -> DeliveryToStart | None:
            found = tx.execute(
                _DELIVERY_KEYS.add_columns(WebhookDeliveryRow.status).where(
                    WebhookDeliveryRow.delivery_id == delivery_id,
                    WebhookDeliveryRow.endpoint_id == endpoint_id,
                    WebhookDeliveryRow.tenant_id == tenant,
                )
            ).first()
            if found is None:
                return None
            if found.status == PENDING:
                raise StillDelivering(
                    f"Delivery {delivery_id} is still being attempted; redeliver it once it has been delivered or "
                    "has failed"
                )
            next_round = found.round + 1
            tx.execute(
                update(WebhookDeliveryRow)
                .where(WebhookDeliveryRow.delivery_id == delivery_id)
                .values(status=PENDING, round=next_round, workflow_started=False, pending_since=datetime.now(UTC))
            )
            return DeliveryToStart(delivery_id, endpoint_id, found.event_id, found.event_type, next_round)

        return await self.database.write(run)

    async def record(self, tenant: str, event_type: str, data: dict[str, Any], cause: str, turn_id: str) -> bool:
        """`record_event` in a transaction of its own, for an event the API causes outside any other write."""
        return await self.database.write(lambda tx: record_event(tx, tenant, event_type, data, cause, turn_id))

    async def unstarted(self, limit: int, turn_id: str | None = None) -> list[DeliveryToStart]:
        """Delivery rounds whose workflows may not have been started, oldest first (of one turn's events)."""
        query = _TO_START.order_by(WebhookDeliveryRow.created_at).limit(limit)
        if turn_id is not None:
            query = query.where(WebhookEventRow.turn_id == turn_id)
        rows = await self.database.read(lambda tx: tx.execute(query).all())
        return [DeliveryToStart(*row) for row in rows]

    async def mark_started(self, delivery_id: str, round_: int) -> None:
        await self.database.autocommit(
            lambda tx: tx.execute(
                update(WebhookDeliveryRow)
                .where(WebhookDeliveryRow.delivery_id == delivery_id, WebhookDeliveryRow.round == round_)
                .values(workflow_started=True)
            )
        )

    async def started_pending(self, after: str | None, limit: int) -> list[DeliveryToStart]:
        """Pending delivery rounds whose workflow was started, by delivery id after `after`: the sweep pages
        through them to find one whose workflow ended without recording an outcome."""
        query = _DELIVERY_KEYS.where(
            WebhookDeliveryRow.status == PENDING, WebhookDeliveryRow.workflow_started.is_(True)
        ).order_by(WebhookDeliveryRow.delivery_id)
        if after is not None:
            query = query.where(WebhookDeliveryRow.delivery_id > after)
        rows = await self.database.read(lambda tx: tx.execute(query.limit(limit)).all())
        return [DeliveryToStart(*row) for row in rows]

    async def fail_ended(self, delivery_id: str, round_: int, error: str) -> bool:
        """Mark the round failed, logging `error` as its last attempt, if it is still the delivery's pending
        one: its workflow ended (terminated, cancelled, timed out) without recording an outcome. True if it was."""
        return await self.record_attempt(delivery_id, round_, Attempt(datetime.now(UTC), None, error, 0), FAILED)

    async def attempt_target(self, delivery_id: str, round_: int) -> AttemptTarget | None:
        """What the next attempt of this round sends; None when there is nothing to send any more (the
        endpoint or the delivery is gone, the round has ended or another began)."""

        def run(tx: Connection) -> AttemptTarget | None:
            row = tx.execute(
                select(
                    WebhookEndpointRow.url,
                    WebhookEndpointRow.secret_sealed,
                    WebhookEndpointRow.previous_secret_sealed,
                    WebhookEndpointRow.previous_secret_until,
                    WebhookEventRow.event_id,
                    WebhookEventRow.event_type,
                    WebhookEventRow.body,
                )
                .select_from(WebhookDeliveryRow)
                .join(WebhookEndpointRow, WebhookEndpointRow.endpoint_id == WebhookDeliveryRow.endpoint_id)
                .join(WebhookEventRow, WebhookEventRow.event_id == WebhookDeliveryRow.event_id)
                .where(
                    WebhookDeliveryRow.delivery_id == delivery_id,
                    WebhookDeliveryRow.round == round_,
                    WebhookDeliveryRow.status == PENDING,
                )
            ).first()
            if row is None:
                return None
            sealed = _signing(row.secret_sealed, row.previous_secret_sealed, row.previous_secret_until)
            return AttemptTarget(row.url, sealed, row.event_id, row.event_type, row.body)

        return await self.database.read(run)

    async def record_attempt(self, delivery_id: str, round_: int, attempt: Attempt, status: str) -> bool:
        """Log an attempt of the round and leave the delivery `status`; nothing (false) if the round is no longer
        the delivery's pending one (its endpoint was deleted meanwhile, say)."""

        def run(tx: Connection) -> bool:
            current = (
                (WebhookDeliveryRow.delivery_id == delivery_id)
                & (WebhookDeliveryRow.round == round_)
                & (WebhookDeliveryRow.status == PENDING)
            )
            if tx.execute(update(WebhookDeliveryRow).where(current).values(status=status)).rowcount == 0:
                return False
            tx.execute(insert(WebhookAttemptRow).values(delivery_id=delivery_id, **attempt.__dict__))
            return True

        return await self.database.write(run)

    async def oldest_pending(self) -> datetime | None:
        query = select(func.min(WebhookDeliveryRow.pending_since)).where(WebhookDeliveryRow.status == PENDING)
        return await self.database.read(lambda tx: tx.scalar(query))


def _delete_events(tx: Connection, events: list[str]) -> int:
    """These events with their deliveries and those deliveries' attempts (the delivery log)."""
    if events:
        deliveries = select(WebhookDeliveryRow.delivery_id).where(WebhookDeliveryRow.event_id.in_(events))
        tx.execute(delete(WebhookAttemptRow).where(WebhookAttemptRow.delivery_id.in_(deliveries)))
        tx.execute(delete(WebhookDeliveryRow).where(WebhookDeliveryRow.event_id.in_(events)))
        tx.execute(delete(WebhookEventRow).where(WebhookEventRow.event_id.in_(events)))
    return len(events)


def prune_delivery_log(tx: Connection, recorded_before: datetime, limit: int) -> int:
    """Up to `limit` events recorded before then whose deliveries have all ended, with their delivery log."""
    pending = select(WebhookDeliveryRow.event_id).where(
        WebhookDeliveryRow.event_id == WebhookEventRow.event_id, WebhookDeliveryRow.status == PENDING
    )
    old = select(WebhookEventRow.event_id).where(WebhookEventRow.created_at < recorded_before, ~pending.exists())
    return _delete_events(tx, list(tx.scalars(old.order_by(WebhookEventRow.created_at).limit(limit))))


def erase_tenant_events(tx: Connection, tenant: str, limit: int) -> int:
    """Up to `limit` of the tenant's events (the outbox), with their delivery log, pending or not: an erasure
    deletes the tenant's endpoints first, which stops the workflows of its pending deliveries."""
    events = select(WebhookEventRow.event_id).where(WebhookEventRow.tenant_id == tenant).limit(limit)
    return _delete_events(tx, list(tx.scalars(events)))


def oldest_event(tx: Connection) -> datetime | None:
    return tx.scalar(select(func.min(WebhookEventRow.created_at)))


def tenant_endpoints(tx: Connection, tenant: str, limit: int) -> list[str]:
    query = select(WebhookEndpointRow.endpoint_id).where(WebhookEndpointRow.tenant_id == tenant).limit(limit)
    return list(tx.scalars(query))


def _signing(current: str, previous: str | None, previous_until: datetime | None) -> list[str]:
    kept = previous is not None and previous_until is not None and previous_until > datetime.now(UTC)
    return [current, previous] if kept and previous is not None else [current]


KEEP_OLD_SECRET = timedelta(hours=24)
