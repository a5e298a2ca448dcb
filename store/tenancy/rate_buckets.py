"""Request budgets per API key kept in PostgreSQL, so that every API process of one store shares them.

A key's budget is a token bucket in one row, taken from by one statement: the row is refilled by the
time since it was last counted (the database's clock, so hosts need not agree on the time) and
decremented only if a whole token is there. PostgreSQL locks the row for the statement, so concurrent
requests of one key, from any process, take turns and never overdraw it.
"""

from __future__ import annotations

from sqlalchemy import Connection, Float, bindparam, func, select
from sqlalchemy.dialects.postgresql import insert

from store.database import Database
from store.tenancy.tables import RateBucketRow

_bucket = RateBucketRow.__table__.c
_NOW = func.date_part("epoch", func.now())  # the statement's start, by the database's clock
# What the bucket holds now: its tokens plus what the time since has added, at most the burst. The
# clock may have gone back between two transactions' starts: that adds nothing.
_AVAILABLE = func.least(
    bindparam("burst", type_=Float),
    _bucket.tokens + func.greatest(0.0, _NOW - _bucket.updated_at) * bindparam("per_second", type_=Float),
)
_TAKE = (
    insert(RateBucketRow)
    .values(key_id=bindparam("key"), tokens=bindparam("burst", type_=Float) - 1, updated_at=_NOW)
    .on_conflict_do_update(
        index_elements=[_bucket.key_id], set_={"tokens": _AVAILABLE - 1, "updated_at": _NOW}, where=_AVAILABLE >= 1
    )
    .returning(_bucket.tokens)
)
"""Takes a token, or changes nothing and returns no row when the bucket holds less than one."""
_LEFT = select(_AVAILABLE).where(_bucket.key_id == bindparam("key"))


class StoreRateBuckets:
    """`api.rate_limit.RateBuckets` in a PostgreSQL store."""

    def __init__(self, database: Database) -> None:
        self._database = database

    async def take(self, key: str, per_second: float, burst: float) -> float | None:
        """Take a token from the key's bucket; None if there was one, else the seconds until there is."""
        values = {"key": key, "per_second": per_second, "burst": burst}

        def run(tx: Connection) -> float | None:
            if tx.execute(_TAKE, values).first() is not None:
                return None
            return (1 - float(tx.execute(_LEFT, values).scalar_one())) / per_second

        return await self._database.autocommit(run)  # one statement when there is a token
