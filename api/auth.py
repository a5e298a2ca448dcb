"""Optional bearer-token auth: with `DA_API_KEYS` set, every request but the probes and the scrape needs a key.

A pure ASGI middleware rather than a FastAPI dependency, so it guards every path alike (/openapi.json, /docs,
unknown paths) and refuses a caller before any request body is read or validated. The official
llama-stack-client sends `Authorization: Bearer <api_key>` when constructed with `api_key=`.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from functools import cached_property

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from settings import Settings

OPEN_ROUTES = frozenset({("GET", "/v1/health"), ("GET", "/readyz"), ("GET", "/metrics")})
"""Load balancers and orchestrators probe liveness and readiness, and Prometheus scrapes, without credentials."""


def _digest(token: str) -> bytes:
    # Comparing fixed-length digests keeps even a key's length out of the response time.
    return hashlib.sha256(token.encode()).digest()


class BearerAuth:
    def __init__(self, app: ASGIApp, settings: Callable[[], Settings]) -> None:
        self._app = app
        self._settings = settings
        """Read at the first request: the app is built before its settings are (see api.app)."""

    @cached_property
    def _key_digests(self) -> tuple[bytes, ...]:
        return tuple(_digest(key) for key in self._settings().api_keys)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self._key_digests or (scope["method"], scope["path"]) in OPEN_ROUTES:
            await self._app(scope, receive, send)
            return
        refusal = self._refusal(Headers(scope=scope).get("authorization"))
        if refusal is None:
            await self._app(scope, receive, send)
            return
        await refusal(scope, receive, send)

    def _refusal(self, authorization: str | None) -> JSONResponse | None:
        """None when the header carries an accepted key; otherwise the 401 that says what to send instead."""
        if authorization is None:
            return _unauthorized("This server requires an API key: send the header 'Authorization: Bearer <key>'.")
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return _unauthorized("The Authorization header must be 'Bearer <key>' with one of this server's API keys.")
        if not self._accepts(token.strip()):
            return _unauthorized(
                "The API key in the Authorization header is not accepted by this server.", error="invalid_token"
            )
        return None

    def _accepts(self, token: str) -> bool:
        # Every key is compared, in constant time, so timing tells neither whether nor which key matched.
        presented = _digest(token)
        matched = False
        for key in self._key_digests:
            matched |= hmac.compare_digest(presented, key)
        return matched


def _unauthorized(detail: str, error: str | None = None) -> JSONResponse:
    challenge = f'Bearer error="{error}"' if error else "Bearer"
    return JSONResponse({"detail": detail}, status_code=401, headers={"WWW-Authenticate": challenge})
