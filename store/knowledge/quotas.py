"""Per-tenant quotas of knowledge (files, their bytes, vector stores), counted and enforced in the transaction
that adds to them, so concurrent requests cannot pass a quota together."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, func, select


@dataclass(frozen=True)
class FileQuota:
    max_files: int
    max_bytes: int


def serialise_tenant(tx: Connection, kind: str, tenant: str) -> None:
    """Make the tenant's additions of one kind one at a time until the transaction ends: on PostgreSQL by a
    transaction-scoped advisory lock (SQLite runs one write at a time anyway)."""
    if tx.dialect.name == "postgresql":
        tx.execute(select(func.pg_advisory_xact_lock(func.hashtext(f"{kind}:{tenant}"))))
