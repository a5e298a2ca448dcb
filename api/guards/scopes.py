"""What the guards guard: HTTP requests and WebSocket upgrades alike.

A WebSocket upgrade is a GET carrying the same headers as any request (the openai SDK sends its
`Authorization: Bearer` key on it), so auth, host/origin and the rate limit judge it as one; only its refusal
travels differently: as the HTTP response the server sends instead of accepting the upgrade.
"""

from __future__ import annotations

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

GUARDED_SCOPES = frozenset({"http", "websocket"})


def method_of(scope: Scope) -> str:
    """The request's method; a WebSocket scope has none, its upgrade is a GET."""
    method: str = scope.get("method", "GET")
    return method


async def refuse(response: Response, scope: Scope, receive: Receive, send: Send) -> None:
    """Answer with `response`: for a WebSocket, instead of the upgrade (a server without the ASGI denial
    extension closes the handshake, which its client sees as 403)."""
    if scope["type"] == "websocket" and "websocket.http.response" not in scope.get("extensions", {}):
        await send({"type": "websocket.close", "code": 1008})
        return
    await response(scope, receive, send)
