"""WebSocket mode of `/v1/responses`: the openai SDK's `client.responses.connect()` and
`client.beta.responses.connect()`.

One connection carries many responses. Each client event is one JSON text frame: `response.create` takes the
body of `POST /v1/responses` (streaming is implicit, `background` is refused) and answers with the same typed,
numbered events as the HTTP stream, rendered by the same code from the same stored events. Responses run FIFO per
lane (`stream_id`; none is the default lane), lanes interleave. A bad client event is answered with an `error`
event and the connection stays usable.

Continuation by `previous_response_id` reads the store as over HTTP; a `store: false` response is continuable only
on the connection that made it (the connection's cache), so after a reconnect it is `previous_response_not_found`.
A failed same-lane continuation evicts its parent from the cache. The upgrade passes the same guards as any
request (auth decides the tenant, host/origin, rate limit: api/guards/scopes.py).

`response.inject` and `response.steer` are answered by api/openai/responses/websocket_control.py.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, HTTPException, WebSocket
from starlette.responses import JSONResponse
from starlette.websockets import WebSocketState

from api.guards.tenancy import ANONYMOUS, Principal
from api.openai.errors import OpenAIError, invalid
from api.openai.responses import ids
from api.openai.responses.create import create, prior_context
from api.openai.responses.plan import check_mcp_urls, check_vector_stores
from api.openai.responses.request import parse_create, require_known_tool_choice
from api.openai.responses.response_routes import require_configured_model
from api.openai.responses.websocket_connection import (
    ClientEventError,
    Connection,
    Lane,
    connections,
    error_detail,
    error_event,
    lane_of,
)
from api.openai.responses.websocket_control import inject, steer
from api.services import Services

router = APIRouter(tags=["responses"])

WS_ONLY_FIELDS = ("type", "stream_id")


async def create_on_socket(connection: Connection, event: dict[str, Any], lane: Lane) -> None:
    """`response.create`: the checks and the create of `POST /v1/responses`, then its stream on the lane."""
    raw = {key: value for key, value in event.items() if key not in WS_ONLY_FIELDS}
    if raw.pop("stream", True) is not True:
        raise invalid("Over a WebSocket every response streams; leave 'stream' out.", "stream")
    if raw.get("background"):
        raise invalid("'background' is not supported over a WebSocket; use POST /v1/responses.", "background")
    services, tenant = connection.services, connection.tenant
    body = parse_create(raw | {"stream": True})
    require_known_tool_choice(body)
    require_configured_model(services, body.model)
    await check_mcp_urls(body, services.tools.outbound_policy)
    await check_vector_stores(body, tenant, connection.knowledge)
    previous = body.previous_response_id
    try:
        context = await prior_context(services, services.store.responses, tenant, body, connection.made)
        created = await create(
            services,
            tenant,
            ids.new_response_id(),
            body,
            context,
            keyed=False,
            steerable=True,
            key_id=connection.principal.key_id,
        )
    except HTTPException:
        if previous is not None and connection.made.get(previous, "") == lane:
            connection.made.pop(previous)  # a failed same-lane continuation evicts its parent
        raise
    await connection.stream(created, lane)


async def _dispatch(connection: Connection, text: str) -> None:
    try:
        event = json.loads(text)
    except ValueError:
        raise ClientEventError("A client event must be one JSON object per text frame.", None, "invalid_json") from None
    if not isinstance(event, dict):
        raise ClientEventError("A client event must be a JSON object with a 'type'.", "type")
    kind = event.get("type")
    if kind == "response.create":
        lane = lane_of(event)
        connection.enqueue(lane, lambda: create_on_socket(connection, event, lane))
    elif kind == "response.inject":
        await inject(connection, event)
    elif kind == "response.steer":
        await steer(connection, event)
    else:
        raise ClientEventError(
            f"Unknown client event type {str(kind)[:100]!r}; this socket takes 'response.create', "
            "'response.inject' and 'response.steer'.",
            "type",
            "unknown_event_type",
        )


@router.websocket("/responses")
async def responses_socket(websocket: WebSocket) -> None:
    services: Services = websocket.app.state.services
    principal: Principal = websocket.scope.get("state", {}).get("principal", ANONYMOUS)
    settings = services.settings
    with connections.hold(principal.key_id, settings.max_websockets_per_key) as admitted:
        if not admitted:
            await _deny(websocket, settings.max_websockets_per_key)
            return
        await websocket.accept()
        connection = Connection(websocket, services, websocket.app.state.knowledge, principal)
        try:
            await _serve(connection, settings.max_websocket_message_bytes)
        finally:
            connection.abandon()


async def _serve(connection: Connection, most_bytes: int) -> None:
    websocket = connection.websocket
    while websocket.client_state == WebSocketState.CONNECTED:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return
        text = message.get("text")
        try:
            if text is None:
                raise ClientEventError("Client events are JSON text frames; a binary frame was sent.", None)
            if len(text.encode()) > most_bytes:
                raise ClientEventError(
                    f"A client event may have at most {most_bytes} bytes (DA_MAX_WEBSOCKET_MESSAGE_BYTES).",
                    None,
                    "message_too_large",
                )
            await _dispatch(connection, text)
        except ClientEventError as refused:
            await connection.send(error_event(refused.status, error_detail(refused)))
        except OpenAIError as refused:
            await connection.send(error_event(refused.status_code, refused.detail))


async def _deny(websocket: WebSocket, most: int) -> None:
    refusal = JSONResponse(
        {"detail": f"This API key already has {most} open WebSockets, the most allowed (DA_MAX_WEBSOCKETS_PER_KEY)."},
        status_code=429,
        headers={"Retry-After": "1"},
    )
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        await websocket.send_denial_response(refusal)
    else:
        await websocket.close(code=1013)
