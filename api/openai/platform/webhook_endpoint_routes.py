"""`/v1/webhook_endpoints` and `/v1/webhook_event_types` as the `openai` SDK's `client.webhooks` calls them,
plus our delivery log: `GET /v1/webhook_endpoints/{id}/deliveries` and
`POST /v1/webhook_endpoints/{id}/deliveries/{delivery_id}/redeliver` (docs/webhooks.md)."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field, WithJsonSchema

from api.guards.tenancy import TenantDep
from api.openai.errors import ERROR_RESPONSES, OpenAIError, invalid, not_found
from api.openai.pages import list_page
from configuration.settings import Settings
from domain.webhook_events import EVENT_TYPES, event_body, sample_data
from outbound.http import Outbound
from store.tenancy.quotas import QuotaReached
from store.webhooks.webhook_store import (
    KEEP_OLD_SECRET,
    DeliveryRecord,
    EndpointRecord,
    StillDelivering,
    WebhookStore,
)
from webhooks.dispatch import DeliveryStarter
from webhooks.secrets import NO_KEY, SecretSeal, SecretUnreadable
from webhooks.sender import EndpointUrlRefused, check_endpoint_url, send
from webhooks.signing import new_secret, secret_hint, signed_headers

router = APIRouter(tags=["webhooks"], responses=ERROR_RESPONSES)


@dataclass(frozen=True)
class Webhooks:
    """What these routes use, made once by the app's lifespan."""

    settings: Settings
    store: WebhookStore
    starter: DeliveryStarter
    outbound: Outbound

    def seal(self) -> SecretSeal:
        if self.settings.credentials_key is None:
            raise invalid(NO_KEY, code="webhook_secrets_unavailable")
        return SecretSeal(self.settings.credentials_key)


async def _webhooks(request: Request) -> Webhooks:
    webhooks: Webhooks = request.app.state.webhooks
    return webhooks


WebhooksDep = Annotated[Webhooks, Depends(_webhooks)]


EventType = Annotated[str, WithJsonSchema({"type": "string", "enum": list(EVENT_TYPES)})]
"""A str to the model, so that an unknown type gets this server's own message; an enum in the schema."""


class CreateEndpoint(BaseModel):
    name: str = Field(min_length=1, max_length=256)
    url: str = Field(max_length=2048, description="https:// (http:// only to hosts the operator allows)")
    event_types: list[EventType] = Field(min_length=1)


class UpdateEndpoint(BaseModel):
    name: str | None = Field(default=None, min_length=1, max_length=256)
    url: str | None = Field(default=None, max_length=2048)
    event_types: list[EventType] | None = Field(default=None, min_length=1)


class RotateSecret(BaseModel):
    keep_old_secret_active_for_24_hours: bool = False


class TestDelivery(BaseModel):
    event_type: EventType


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp())


def _endpoint(record: EndpointRecord, secret: str | None = None) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "id": record.endpoint_id,
        "object": "webhook_endpoint",
        "name": record.name,
        "url": record.url,
        "event_types": record.event_types,
        "signing_secret_hint": record.secret_hint,
        "created_at": _epoch(record.created_at),
        "updated_at": _epoch(record.updated_at),
    }
    return shown | {"signing_secret": secret} if secret is not None else shown


def _delivery(record: DeliveryRecord) -> dict[str, Any]:
    return {
        "id": record.delivery_id,
        "object": "webhook_endpoint.delivery",
        "webhook_endpoint_id": record.endpoint_id,
        "event_id": record.event_id,
        "event_type": record.event_type,
        "status": record.status,
        "redeliveries": record.round,
        "created_at": _epoch(record.created_at),
        "attempts": [
            {
                "attempted_at": _epoch(attempt.attempted_at),
                "status_code": attempt.status_code,
                "error": attempt.error,
                "duration_ms": attempt.duration_ms,
            }
            for attempt in record.attempts
        ],
    }


def _known_types(event_types: list[str]) -> list[str]:
    if not event_types:
        raise invalid("event_types must name at least one event type (GET /v1/webhook_event_types)", "event_types")
    for event_type in event_types:
        if event_type not in EVENT_TYPES:
            raise invalid(
                f"Unknown event type {event_type!r}; this server sends: {', '.join(EVENT_TYPES)}",
                "event_types",
                "invalid_event_type",
            )
    return list(dict.fromkeys(event_types))


async def _checked_url(webhooks: Webhooks, url: str) -> str:
    try:
        await check_endpoint_url(webhooks.outbound, url)
    except EndpointUrlRefused as refused:
        raise invalid(str(refused), "url", "invalid_url") from None
    return url


async def _found(webhooks: Webhooks, tenant: str, endpoint_id: str) -> EndpointRecord:
    record = await webhooks.store.endpoint(tenant, endpoint_id)
    if record is None:
        raise not_found("Webhook endpoint", endpoint_id)
    return record


@router.get("/webhook_event_types")
async def list_event_types() -> dict[str, Any]:
    return {"object": "list", "data": list(EVENT_TYPES)}


@router.post("/webhook_endpoints")
async def create_endpoint(body: CreateEndpoint, tenant: TenantDep, webhooks: WebhooksDep) -> dict[str, Any]:
    event_types = _known_types(body.event_types)
    url = await _checked_url(webhooks, body.url)
    secret = new_secret()
    sealed = webhooks.seal().seal(secret)
    most = webhooks.settings.max_webhook_endpoints_per_tenant
    try:
        record = await webhooks.store.create_endpoint(
            tenant, body.name, url, event_types, sealed, secret_hint(secret), most
        )
    except QuotaReached as limit:
        raise OpenAIError(409, str(limit), code="limit_reached") from None
    return _endpoint(record, secret)


@router.get("/webhook_endpoints")
async def list_endpoints(
    tenant: TenantDep,
    webhooks: WebhooksDep,
    after: str | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> dict[str, Any]:
    try:
        records, has_more = await webhooks.store.endpoints(tenant, after or None, limit)
    except LookupError:
        raise OpenAIError(
            404, f"Webhook endpoint with id '{after}' not found; `after` takes a listed one's id.", "after"
        ) from None
    return list_page([_endpoint(record) for record in records], has_more)


@router.get("/webhook_endpoints/{endpoint_id}")
async def retrieve_endpoint(endpoint_id: str, tenant: TenantDep, webhooks: WebhooksDep) -> dict[str, Any]:
    return _endpoint(await _found(webhooks, tenant, endpoint_id))


@router.post("/webhook_endpoints/{endpoint_id}")
async def update_endpoint(
    endpoint_id: str, body: UpdateEndpoint, tenant: TenantDep, webhooks: WebhooksDep
) -> dict[str, Any]:
    await _found(webhooks, tenant, endpoint_id)
    changes: dict[str, Any] = {}
    if body.name is not None:
        changes["name"] = body.name
    if body.url is not None:
        changes["url"] = await _checked_url(webhooks, body.url)
    if body.event_types is not None:
        changes["event_types"] = _known_types(body.event_types)
    record = await webhooks.store.update_endpoint(tenant, endpoint_id, changes)
    if record is None:
        raise not_found("Webhook endpoint", endpoint_id)
    return _endpoint(record)


@router.delete("/webhook_endpoints/{endpoint_id}")
async def delete_endpoint(endpoint_id: str, tenant: TenantDep, webhooks: WebhooksDep) -> dict[str, Any]:
    pending = await webhooks.store.delete_endpoint(tenant, endpoint_id)
    if pending is None:
        raise not_found("Webhook endpoint", endpoint_id)
    await webhooks.starter.stop(pending)
    return {"id": endpoint_id, "object": "webhook_endpoint.deleted", "deleted": True}


@router.post("/webhook_endpoints/{endpoint_id}/rotate_secret")
async def rotate_secret(
    endpoint_id: str, tenant: TenantDep, webhooks: WebhooksDep, body: RotateSecret | None = None
) -> dict[str, Any]:
    await _found(webhooks, tenant, endpoint_id)
    keep = body is not None and body.keep_old_secret_active_for_24_hours
    secret = new_secret()
    sealed = webhooks.seal().seal(secret)
    until = datetime.now(UTC) + KEEP_OLD_SECRET if keep else None
    record = await webhooks.store.rotate_secret(tenant, endpoint_id, sealed, secret_hint(secret), until)
    if record is None:
        raise not_found("Webhook endpoint", endpoint_id)
    return _endpoint(record, secret)


@router.post("/webhook_endpoints/{endpoint_id}/test")
async def test_endpoint(
    endpoint_id: str, body: TestDelivery, tenant: TenantDep, webhooks: WebhooksDep
) -> dict[str, Any]:
    """Send a signed sample of the event type now (not durably: a test is for a person watching) and
    answer with the receiver's status code."""
    record = await _found(webhooks, tenant, endpoint_id)
    _known_types([body.event_type])
    target = await webhooks.store.signing_secrets(tenant, endpoint_id)
    if target is None:
        raise not_found("Webhook endpoint", endpoint_id)
    seal = webhooks.seal()
    try:
        secrets = [seal.open(sealed) for sealed in target]
    except SecretUnreadable as unreadable:
        raise OpenAIError(503, str(unreadable), code="webhook_secret_unreadable") from None
    event_id = f"evt_test_{uuid.uuid4().hex}"
    event = event_body(event_id, body.event_type, int(time.time()), sample_data(body.event_type))
    payload = json.dumps(event, separators=(",", ":")).encode()
    headers = signed_headers(secrets, event_id, int(time.time()), payload)
    sent = await send(webhooks.outbound, record.url, headers, payload, webhooks.settings.webhook_timeout)
    if sent.status_code is None:
        raise invalid(f"The test delivery to {record.url} got no answer: {sent.error}", code="webhook_test_failed")
    return {
        "object": "webhook_endpoint.test",
        "webhook_endpoint_id": endpoint_id,
        "event_type": body.event_type,
        "status_code": sent.status_code,
        "success": True,
    }


@router.get("/webhook_endpoints/{endpoint_id}/deliveries")
async def list_deliveries(
    endpoint_id: str,
    tenant: TenantDep,
    webhooks: WebhooksDep,
    after: str | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> dict[str, Any]:
    """The endpoint's deliveries, newest first, each with its attempts (time, status code, error)."""
    await _found(webhooks, tenant, endpoint_id)
    try:
        records, has_more = await webhooks.store.deliveries(tenant, endpoint_id, after or None, limit)
    except LookupError:
        raise invalid(
            f"No delivery '{after}' of this endpoint; `after` takes a listed delivery's id.", "after"
        ) from None
    return list_page([_delivery(record) for record in records], has_more)


@router.post("/webhook_endpoints/{endpoint_id}/deliveries/{delivery_id}/redeliver")
async def redeliver(endpoint_id: str, delivery_id: str, tenant: TenantDep, webhooks: WebhooksDep) -> dict[str, Any]:
    """Send a delivered or failed event again, with the same webhook-id, on a fresh retry schedule."""
    await _found(webhooks, tenant, endpoint_id)
    try:
        started = await webhooks.store.redeliver(tenant, endpoint_id, delivery_id)
    except StillDelivering as pending:
        raise OpenAIError(409, str(pending), code="delivery_pending") from None
    if started is None:
        raise not_found("Webhook delivery", delivery_id)
    await webhooks.starter.start([started])
    records, _ = await webhooks.store.deliveries(tenant, endpoint_id, None, 1, only=delivery_id)
    return _delivery(records[0])
