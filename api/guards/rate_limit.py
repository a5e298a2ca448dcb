"""Requests per API key, as a token bucket: a burst is served at once, a sustained rate no faster than configured.

Only callers with an API key are counted. Without configured keys the server has one tenant, its owner,
and no limit applies: one machine's own clients are never throttled by their own server (the bound on a
keyless server is the loopback-only Host check of api/guards/host_check.py, not a rate).

Over the limit, a request is refused with 429 and `Retry-After` (the seconds until the key's bucket holds
a token again) before any handler runs, so a refused request changes nothing. Where the buckets are is
the application's choice (`app.state.rate_buckets`): in the store when it is PostgreSQL, so that every
API process against it shares each key's budget (store/tenancy/rate_buckets.py), else in this process (SQLite:
one machine, one API process).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

from sqlalchemy.exc import SQLAlchemyError
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from api.guards.auth import OPEN_ROUTES
from api.guards.scopes import GUARDED_SCOPES, method_of, refuse
from api.guards.tenancy import ANONYMOUS, Principal
from api.http.errors import unavailable
from configuration.settings import Settings


class RateBuckets(Protocol):
    async def take(self, key: str, per_second: float, burst: float) -> float | None:
        """Take a token from the key's bucket; None if there was one, else the seconds until there is."""
        ...


@dataclass
class _Bucket:
    tokens: float
    updated: float


class ProcessRateBuckets:
    """Buckets counted in this process: with N processes a key would get up to N times the rate."""

    def __init__(self) -> None:
        # One bucket per configured key (callers without a valid key never get here): the dict stays small.
        self._buckets: dict[str, _Bucket] = {}

    async def take(self, key: str, per_second: float, burst: float) -> float | None:
        now = time.monotonic()
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(tokens=burst, updated=now)
        bucket.tokens = min(burst, bucket.tokens + (now - bucket.updated) * per_second)
        bucket.updated = now
        if bucket.tokens >= 1:
            bucket.tokens -= 1
            return None
        return (1 - bucket.tokens) / per_second


class RateLimit:
    def __init__(self, app: ASGIApp, settings: Callable[[], Settings]) -> None:
        self._app = app
        self._settings = settings

    @cached_property
    def _rate(self) -> tuple[float, float]:
        """(tokens a second, bucket size); a rate of 0 turns the limit off."""
        settings = self._settings()
        return settings.rate_limit_per_minute / 60.0, float(settings.rate_limit_burst)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        per_second, burst = self._rate
        if scope["type"] not in GUARDED_SCOPES or per_second == 0 or (method_of(scope), scope["path"]) in OPEN_ROUTES:
            await self._app(scope, receive, send)
            return
        principal: Principal = scope.get("state", {}).get("principal", ANONYMOUS)
        if principal == ANONYMOUS:  # no API keys configured
            await self._app(scope, receive, send)
            return
        buckets: RateBuckets = scope["app"].state.rate_buckets
        try:
            wait = await buckets.take(principal.key_id, per_second, burst)
        except (SQLAlchemyError, OSError) as failed:  # the store's buckets, out of reach
            await refuse(unavailable("The store", method_of(scope), scope["path"], failed), scope, receive, send)
            return
        if wait is None:
            await self._app(scope, receive, send)
            return
        seconds = max(1, math.ceil(wait))
        minute = self._settings().rate_limit_per_minute
        refusal = JSONResponse(
            {
                "detail": f"Too many requests with this API key: at most {minute} a minute "
                f"(bursts of {int(burst)}); retry after {seconds} s."
            },
            status_code=429,
            headers={"Retry-After": str(seconds)},
        )
        await refuse(refusal, scope, receive, send)
