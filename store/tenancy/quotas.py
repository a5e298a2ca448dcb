"""Per-tenant quotas on what a tenant keeps (agents, sessions, automations, webhook endpoints): counted and
enforced inside the transaction that adds one.

Counting then inserting is a race under PostgreSQL's READ COMMITTED: two concurrent creations both count
`most - 1` and both insert. `within_quota` first takes a transaction-scoped advisory lock on (quota, tenant), so
the creations of one tenant's kind count one after another and the lock goes with the commit; other tenants
and other kinds are not held up. SQLite runs one write transaction at a time, which serializes them already.
"""

from __future__ import annotations

from sqlalchemy import Connection, func, select, text
from sqlalchemy.orm import InstrumentedAttribute

_LOCK = text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))")


def serialise_tenant(tx: Connection, kind: str, tenant: str) -> None:
    """Make the tenant's additions of one kind count one at a time until the transaction ends: on PostgreSQL by a
    transaction-scoped advisory lock on (kind, tenant); SQLite runs one write transaction at a time anyway."""
    if tx.dialect.name == "postgresql":
        tx.execute(_LOCK, {"key": f"quota:{kind}:{tenant}"})


class QuotaReached(Exception):
    """The tenant has as many of a kind as its quota allows; the message names the setting."""

    def __init__(self, setting: str, most: int, what: str) -> None:
        super().__init__(f"This project has {most} {what}, the most allowed ({setting}); delete one first")
        self.setting = setting


def within_quota(
    tx: Connection, tenant_column: InstrumentedAttribute[str], tenant: str, most: int | None, setting: str, what: str
) -> None:
    """Raise QuotaReached if the tenant already has `most` rows of `tenant_column`'s table; else hold the
    (quota, tenant) lock until the transaction ends, so the insert that follows is counted by the next one.
    `most` None: no quota (the store's own tools and benchmarks, which set up data directly)."""
    if most is None:
        return
    serialise_tenant(tx, setting, tenant)
    owned = tx.scalar(select(func.count()).where(tenant_column == tenant)) or 0
    if owned >= most:
        raise QuotaReached(setting, most, what)
