"""Request budgets per API key kept in PostgreSQL, so that every API process of one store shares them.

A key's budget is a token bucket in one row, taken from by one statement: the row is refilled by the
time since it was last counted (the database's clock, so hosts need not agree on the time) and
decremented only if a whole token is there. PostgreSQL locks the row for the statement, so concurrent
requests of one key, from any process, take turns and never overdraw it.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, func, select
from sqlalchemy.dialects.postgresql import insert

from store.database import Database
from store.tables import RateBucketRow

_bucket = RateBucketRow.__table__.c


def _refilled(per_second: float, burst: float, now: Any) -> Any:
    """The bucket's tokens now: what it had plus what the time since has added, at most `burst`. The
    clock may have gone back between two transactions' starts: that adds nothing."""
    elapsed = func.greatest(0.0, now - _bucket.updated_at)
    return func.least(burst, _bucket.tokens + elapsed * per_second)


class StoreRateBuckets:
    """`api.rate_limit.RateBuckets` in a PostgreSQL store."""

    def __init__(self, database: Database) -> None:
        self._database = database

    async def take(self, key: str, per_second: float, burst: float) -> float | None:
        """Take a token from the key's bucket; None if there was one, else the seconds until there is."""

        def run(tx: Connection) -> float | None:
            now = func.date_part("epoch", func.now())  # the transaction's start, the same in both statements
            available = _refilled(per_second, burst, now)
            taken = tx.execute(
                insert(RateBucketRow)
                .values(key_id=key, tokens=burst - 1, updated_at=now)
                .on_conflict_do_update(
                    index_elements=[_bucket.key_id],
                    set_={"tokens": available - 1, "updated_at": now},
                    where=available >= 1,
                )
                .returning(_bucket.tokens)
            ).first()
            if taken is not None:
                return None
            tokens = tx.execute(select(available).where(_bucket.key_id == key)).scalar_one()
            return (1 - float(tokens)) / per_second

        return await self._database.write(run)
