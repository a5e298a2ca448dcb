"""Refusing requests addressed to a name the API does not serve, or sent by another site's page.

Without API keys anything that reaches the port may drive the API, and DNS rebinding lets a web
page reach a loopback port under its own name (`Host: evil.example:8321`). So without keys only
loopback names are served unless `DA_ALLOWED_HOSTS` lists others; with keys, any name (the key is
the guard) unless it is set. Independently, a browser request whose `Origin` is neither the API's
own nor in `DA_ALLOWED_ORIGINS` is refused: a page elsewhere must not use a local API on its
visitor's behalf. Callers that are not browsers send no Origin and are unaffected.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from api.guards.auth import OPEN_ROUTES
from api.guards.scopes import GUARDED_SCOPES, method_of, refuse
from configuration.settings import Settings

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
ANY = "*"


def _host_name(host: str) -> str:
    """The name part of a Host header or netloc: no port, no IPv6 brackets, lower case."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _origin(value: str) -> str:
    parts = urlsplit(value.strip().lower())
    return f"{parts.scheme}://{parts.netloc}"


class HostOriginCheck:
    def __init__(self, app: ASGIApp, settings: Callable[[], Settings]) -> None:
        self._app = app
        self._settings = settings

    @cached_property
    def _hosts(self) -> frozenset[str] | None:
        """The host names served; None: any."""
        settings = self._settings()
        configured = settings.allowed_hosts
        if not configured:
            return None if settings.key_entries() else frozenset(LOOPBACK_HOSTS)
        if ANY in configured:
            return None
        return frozenset(_host_name(host) for host in configured)

    @cached_property
    def _origins(self) -> frozenset[str]:
        return frozenset(_origin(origin) for origin in self._settings().allowed_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in GUARDED_SCOPES:
            await self._app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        refusal = None
        probe = (method_of(scope), scope["path"]) in OPEN_ROUTES  # orchestrators probe by IP; it reveals nothing
        if self._hosts is not None and not probe and _host_name(host) not in self._hosts:
            refusal = (
                f"This API does not serve the host name {_host_name(host)[:100]!r}. "
                "Use the address it listens on, or add the name to DA_ALLOWED_HOSTS."
            )
        elif (origin := headers.get("origin")) is not None and not self._origin_allowed(origin, host):
            refusal = (
                f"Requests from web pages at {origin[:100]!r} are not accepted; "
                "the API's operator can allow that origin with DA_ALLOWED_ORIGINS."
            )
        if refusal is None:
            await self._app(scope, receive, send)
            return
        await refuse(JSONResponse({"detail": refusal}, status_code=403), scope, receive, send)

    def _origin_allowed(self, origin: str, host: str) -> bool:
        origin = _origin(origin)
        if origin in self._origins or ANY in self._origins:
            return True
        # The API's own pages (e.g. /docs) send their own origin: same host and port.
        return urlsplit(origin).netloc == host.strip().lower()
