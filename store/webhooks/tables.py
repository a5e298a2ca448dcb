"""Webhook rows: tenants' endpoints, the events recorded for them (the outbox), each event's delivery to
each endpoint, and every attempt of a delivery (the delivery log)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from store.schema import Base, EventId


class WebhookEndpointRow(Base):
    """Where a tenant wants events sent. The signing secrets are sealed (webhooks/secrets.py), never plain."""

    __tablename__ = "webhook_endpoints"
    __table_args__ = (Index("ix_webhook_endpoints_tenant_order", "tenant_id", "created_at"),)

    endpoint_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(Text)
    url: Mapped[str] = mapped_column(Text)
    event_types: Mapped[list[Any]] = mapped_column(JSON)
    secret_sealed: Mapped[str] = mapped_column(Text)
    secret_hint: Mapped[str] = mapped_column(String(64))
    previous_secret_sealed: Mapped[str | None] = mapped_column(Text)
    """The secret before the last rotation, still signing (beside the current one) until `previous_secret_until`."""
    previous_secret_until: Mapped[datetime | None]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class WebhookEventRow(Base):
    """An event as it is sent (its JSON body), recorded in the transaction that records its cause.

    `cause` names that cause (the turn and the key of the stored event that ended or paused it), so a
    retried write records the event once."""

    __tablename__ = "webhook_events"
    __table_args__ = (
        UniqueConstraint("tenant_id", "cause", name="uq_webhook_events_cause"),
        Index("ix_webhook_events_turn", "turn_id"),
        Index("ix_webhook_events_created", "created_at"),  # the pruning of old events
    )

    event_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64))
    event_type: Mapped[str] = mapped_column(String(64))
    turn_id: Mapped[str | None] = mapped_column(String(64))
    cause: Mapped[str] = mapped_column(String(300))
    body: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime]


class WebhookDeliveryRow(Base):
    """One event's delivery to one endpoint, run by a workflow (workflows/webhook_delivery.py).

    `workflow_started` is false until a workflow for the delivery's current `round` was started: what the
    sweep looks for after a crash. A redelivery starts another round."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        UniqueConstraint("endpoint_id", "event_id", name="uq_webhook_deliveries_endpoint_event"),
        Index("ix_webhook_deliveries_endpoint_order", "endpoint_id", "created_at"),
        Index("ix_webhook_deliveries_unstarted", "workflow_started", "created_at"),
        Index("ix_webhook_deliveries_status", "status", "created_at"),
    )

    delivery_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    endpoint_id: Mapped[str] = mapped_column(ForeignKey("webhook_endpoints.endpoint_id", ondelete="CASCADE"))
    event_id: Mapped[str] = mapped_column(ForeignKey("webhook_events.event_id", ondelete="CASCADE"), index=True)
    tenant_id: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16))
    """pending, delivered or failed (every attempt of the round failed)."""
    round: Mapped[int] = mapped_column(Integer, server_default="0")
    workflow_started: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime]
    pending_since: Mapped[datetime]
    """When the current round began: the age of the oldest pending delivery is measured from it."""


class WebhookAttemptRow(Base):
    """One try at sending a delivery: the receiver's status code, or why there was none."""

    __tablename__ = "webhook_attempts"
    __table_args__ = (Index("ix_webhook_attempts_delivery", "delivery_id", "attempt_id"),)

    attempt_id: Mapped[int] = mapped_column(EventId, primary_key=True, autoincrement=True)
    delivery_id: Mapped[str] = mapped_column(ForeignKey("webhook_deliveries.delivery_id", ondelete="CASCADE"))
    attempted_at: Mapped[datetime]
    status_code: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    duration_ms: Mapped[int] = mapped_column(Integer)
