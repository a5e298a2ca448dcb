"""Spend rows of Agents API sessions (each session's limit, and the ledger of what its model calls cost), and every
tenant's model usage per day."""

from __future__ import annotations

from datetime import date, datetime

from sqlalchemy import BigInteger, Date, Float, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from store.schema import Base


class SessionBudgetRow(Base):
    """A session's spending limit, and the turn waiting for it to be raised.

    Both live in one row so that refusing a model call (which names the waiting turn) and changing the limit
    (which wakes that turn) lock the same row: whichever commits second sees the other's write."""

    __tablename__ = "session_budgets"

    session_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    limit_cents: Mapped[int | None] = mapped_column(BigInteger)
    """None: no limit."""
    waiting_turn_id: Mapped[str | None] = mapped_column(String(64))
    """The turn held at its next model call because the session's spend reached the limit."""
    updated_at: Mapped[datetime]


class SpendEntryRow(Base):
    """What one model call of a session cost: one row per call (an inference step, a turn's compaction summary, a
    `llama_guard` shield call), whatever its retries. `step_id` is the call's key."""

    __tablename__ = "session_spend"

    step_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    session_id: Mapped[str] = mapped_column(String(64), index=True)
    turn_id: Mapped[str] = mapped_column(String(64))
    model: Mapped[str] = mapped_column(String(200))
    input_tokens: Mapped[int] = mapped_column(Integer)
    output_tokens: Mapped[int] = mapped_column(Integer)
    cost_microcents: Mapped[int] = mapped_column(BigInteger)
    """Millionths of a US cent, at the model's price when the call was made."""
    created_at: Mapped[datetime]


class ModelUsageRow(Base):
    """A tenant's model calls of one UTC day and one model, summed: every dialect's inferences and turn compaction
    summaries, counted in the transaction that writes the call's usage event (store/turns/model_usage.py). At most
    one row per tenant, day and model, so it needs no time-to-live: it goes with its tenant only."""

    __tablename__ = "model_usage_daily"

    tenant_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    calls: Mapped[int] = mapped_column(BigInteger)
    input_tokens: Mapped[int] = mapped_column(BigInteger)
    output_tokens: Mapped[int] = mapped_column(BigInteger)
    cost_microcents: Mapped[int] = mapped_column(BigInteger)
    """Millionths of a US cent, each call at its model's price when it was made."""


class RateBucketRow(Base):
    """An API key's request budget (a token bucket, api/guards/rate_limit.py), shared by every API process of
    a PostgreSQL store. One row per key that has made a request."""

    __tablename__ = "rate_buckets"

    key_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tokens: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)
    """When `tokens` was last counted: seconds since the epoch, by the database's clock."""
