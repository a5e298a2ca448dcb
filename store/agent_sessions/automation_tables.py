"""Rows of Agents API automations: each automation (its Temporal Schedule has the same id) and its invocation log."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from store.schema import Base


class AutomationRow(Base):
    """An automation: what it delivers and when, in `body` (name, expression, timezone, run_at, target,
    metadata, created_by); `status` is the caller's view, which the Schedule's paused state follows."""

    __tablename__ = "beta_automations"
    __table_args__ = (Index("ix_beta_automations_tenant_order", "tenant_id", "created_at"),)

    automation_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(16))
    """`periodic` or `once`."""
    body: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16))
    pause_reason: Mapped[str | None] = mapped_column(String(64))
    target_session_id: Mapped[str | None] = mapped_column(String(64), index=True)
    """The session an `existing_session` target feeds (lists filter by it)."""
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class AutomationInvocationRow(Base):
    """One delivery of an automation, scheduled or manual. `run_key` (the scheduled time, or the manual
    invocation's id) is unique per automation, so a retried or repeated run records and delivers once."""

    __tablename__ = "beta_automation_invocations"
    __table_args__ = (
        UniqueConstraint("automation_id", "run_key", name="uq_beta_automation_invocations_run"),
        Index("ix_beta_automation_invocations_order", "automation_id", "created_at"),
    )

    invocation_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    automation_id: Mapped[str] = mapped_column(ForeignKey("beta_automations.automation_id", ondelete="CASCADE"))
    tenant_id: Mapped[str] = mapped_column(String(64))
    run_key: Mapped[str] = mapped_column(String(64))
    source: Mapped[str] = mapped_column(String(16))
    """`manual` or `automation` (scheduled)."""
    snapshot: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    """A scheduled occurrence's automation as it was then (the wire's `source.automation`)."""
    scheduled_at: Mapped[datetime | None]
    status: Mapped[str] = mapped_column(String(16))
    session_id: Mapped[str | None] = mapped_column(String(64))
    skip_reason: Mapped[str | None] = mapped_column(String(32))
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
