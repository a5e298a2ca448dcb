"""Optional bearer-token auth: with `DA_API_KEYS` set, every request but the probes and the scrape needs a key.

A pure ASGI middleware rather than a FastAPI dependency, so it guards every path alike (/openapi.json, /docs,
unknown paths) and refuses a caller before any request body is read or validated. The official
llama-stack-client sends `Authorization: Bearer <api_key>` when constructed with `api_key=`.
The accepted key decides the request's tenant (api/guards/tenancy.py), left in the ASGI scope's state.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Iterable
from functools import cached_property

from starlette.datastructures import Headers
from starlette.requests import cookie_parser
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from api.guards.scopes import GUARDED_SCOPES, method_of, refuse
from api.guards.tenancy import ANONYMOUS, Principal, key_digest, principals
from configuration.settings import Settings

OPEN_ROUTES = frozenset({("GET", "/v1/health"), ("GET", "/readyz"), ("GET", "/metrics")})
"""Load balancers and orchestrators probe liveness and readiness, and Prometheus scrapes, without credentials."""
OPERATOR_PREFIX = "/v1/operator/"
"""Routes that check DA_OPERATOR_KEY themselves (api/operations/tenants.py): an operator is no tenant."""
CONSOLE_PATH = "/console"
CONSOLE_KEY_COOKIE = "da_console_key"
"""The console's pages are signed in by this cookie (HttpOnly, SameSite=Strict) instead of the header: a browser
cannot send the header on a page load. Without a valid one they are served with no principal, and the console
sends the visitor to its sign-in page (api/console/routes.py)."""


class BearerAuth:
    def __init__(self, app: ASGIApp, settings: Callable[[], Settings]) -> None:
        self._app = app
        self._settings = settings
        """Read at the first request: the app is built before its settings are (see api.app)."""

    @cached_property
    def _principals(self) -> tuple[tuple[bytes, Principal], ...]:
        return tuple(principals(self._settings().key_entries()).items())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in GUARDED_SCOPES:
            await self._app(scope, receive, send)
            return
        if (
            not self._principals
            or (method_of(scope), scope["path"]) in OPEN_ROUTES
            or scope["path"].startswith(OPERATOR_PREFIX)
        ):
            scope.setdefault("state", {})["principal"] = ANONYMOUS
            await self._app(scope, receive, send)
            return
        if scope["path"] == CONSOLE_PATH or scope["path"].startswith(CONSOLE_PATH + "/"):
            key = cookie_parser(Headers(scope=scope).get("cookie", "")).get(CONSOLE_KEY_COOKIE)
            principal = self.match(key) if key else None
            if principal is not None:
                scope.setdefault("state", {})["principal"] = principal
            await self._app(scope, receive, send)
            return
        outcome = self._authenticate(Headers(scope=scope).get("authorization"))
        if isinstance(outcome, Principal):
            scope.setdefault("state", {})["principal"] = outcome
            await self._app(scope, receive, send)
            return
        await refuse(outcome, scope, receive, send)

    def _authenticate(self, authorization: str | None) -> Principal | JSONResponse:
        """Who the header's key belongs to; otherwise the 401 that says what to send instead."""
        if authorization is None:
            return _unauthorized("This server requires an API key: send the header 'Authorization: Bearer <key>'.")
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return _unauthorized("The Authorization header must be 'Bearer <key>' with one of this server's API keys.")
        principal = self.match(token.strip())
        if principal is None:
            return _unauthorized(
                "The API key in the Authorization header is not accepted by this server.", error="invalid_token"
            )
        return principal

    def match(self, token: str) -> Principal | None:
        return match_key(self._principals, token)


def match_key(known: Iterable[tuple[bytes, Principal]], token: str) -> Principal | None:
    """Whose key `token` is, if any. Every key is compared, in constant time, and comparing fixed-length digests
    keeps even a key's length out of the response time: timing tells neither whether nor which key matched."""
    presented = key_digest(token)
    matched: Principal | None = None
    for digest, principal in known:
        if hmac.compare_digest(presented, digest):
            matched = principal
    return matched


def _unauthorized(detail: str, error: str | None = None) -> JSONResponse:
    challenge = f'Bearer error="{error}"' if error else "Bearer"
    return JSONResponse({"detail": detail}, status_code=401, headers={"WWW-Authenticate": challenge})
