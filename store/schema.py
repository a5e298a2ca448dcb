"""What every table of the store is built on: the declarative base, aware UTC datetimes, the event id type and
the tenant of rows written before tenancy existed. Wire models (domain/) are kept in JSON columns, never exposed
as rows."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Dialect,
    Integer,
)
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.types import TypeDecorator

# SQLite only auto-increments a column declared exactly INTEGER PRIMARY KEY.
EventId = BigInteger().with_variant(Integer(), "sqlite")

DEFAULT_TENANT = "default"
"""Owner of rows written before tenancy existed, and the one tenant of no-auth mode (api/guards/tenancy.py)."""


class UtcDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes in and out; SQLite would otherwise hand back naive ones."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return value.astimezone(UTC) if value is not None else None

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {datetime: UtcDateTime(), dict: JSON, list: JSON}
