"""Telling this dialect's requests from the llama-stack dialect's on the same paths.

`POST /v1/agents`, `GET /v1/agents/{agent_id}` and more exist in both. The openai SDK sends
`OpenAI-Beta: agents=v1` with every Agents API call and llama-stack clients never do, so this dialect's
routes match only requests that carry it; a request without it falls through to the llama-stack routes,
which keep answering exactly as before. The routes are registered first, literal paths before
`{agent_id}` ones.

A client that omits the header still reaches this dialect where the request cannot be a llama-stack one
(`AgentsBetaByShape` then adds the header): a path under `/v1/agents/sessions`, `/automations` or
`/environments` (llama-stack agent ids are UUIDs; a path shaped as llama-stack's `…/{agent_id}/session…` stays
llama-stack's whatever the id), `/v1/agents/agent_…` (this dialect's ids), a `POST` to
`/v1/agents/{id}` (llama-stack has none), and a `POST /v1/agents` whose JSON body has agents.create fields
and no `agent_config` (which every llama-stack create sends).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header
from fastapi.routing import APIRoute
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.openai.agents.wire import AgentFields
from api.openai.errors import ERROR_RESPONSES

BETA_HEADER = b"openai-beta"
AGENTS_PATH = "/v1/agents"
_BETA_ONLY_PARTS = frozenset({"sessions", "automations", "environments"})
_LLAMA_STACK_AGENT_PARTS = frozenset({"session", "sessions"})
_AGENT_ID_PREFIX = "agent_"
"""What `new_id("agent")` (agent_sessions/session_turns.py) starts this dialect's agent ids with; llama-stack: UUIDs."""
_CREATE_FIELDS = frozenset(AgentFields.model_fields)


def is_agents_beta(scope: Scope) -> bool:
    """The request names the Agents API beta (`agents=v1`, possibly among other betas)."""
    for name, value in scope.get("headers") or ():
        if name == BETA_HEADER and any(part.strip().startswith(b"agents=") for part in value.split(b",")):
            return True
    return False


class AgentsBetaRoute(APIRoute):
    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] == "http" and not is_agents_beta(scope):
            return Match.NONE, {}
        return super().matches(scope)


async def _beta_header(
    openai_beta: Annotated[
        str | None,
        Header(
            alias="OpenAI-Beta",
            description="`agents=v1`: the openai SDK sends it with every Agents API call; paths only this"
            " dialect has are routed here without it",
        ),
    ] = None,
) -> None:
    """Declares the header in the OpenAPI document; the route's match (or AgentsBetaByShape) decided already."""


def beta_router(**kwargs: Any) -> APIRouter:
    dependencies = [Depends(_beta_header)]
    return APIRouter(route_class=AgentsBetaRoute, responses=ERROR_RESPONSES, dependencies=dependencies, **kwargs)


def _path_is_beta_only(method: str, path: str) -> bool:
    rest = path.removeprefix(f"{AGENTS_PATH}/")
    if rest == path:
        return False
    first, _, more = rest.partition("/")
    if first in _BETA_ONLY_PARTS:
        # Unless it is shaped as llama-stack's `/v1/agents/{agent_id}/session…`: this dialect's next segment is an
        # id of its own, never one of those words.
        return more.partition("/")[0] not in _LLAMA_STACK_AGENT_PARTS
    return bool(first) and not more and (first.startswith(_AGENT_ID_PREFIX) or method == "POST")


def _body_is_agents_create(body: bytes) -> bool:
    try:
        fields = json.loads(body)
    except ValueError:
        return False  # the llama-stack route answers it as before
    return isinstance(fields, dict) and "agent_config" not in fields and not _CREATE_FIELDS.isdisjoint(fields)


async def _read_body(receive: Receive) -> tuple[bytes, Receive]:
    """The whole request body, and a `receive` that hands it on to the route as if unread."""
    chunks: list[bytes] = []
    pending: list[Message] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client went away: the route sees that
            pending.append(message)
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    pending.insert(0, {"type": "http.request", "body": body, "more_body": False})

    async def replay() -> Message:
        return pending.pop(0) if pending else await receive()

    return body, replay


class AgentsBetaByShape:
    """Sends a request without `OpenAI-Beta: agents=v1` to this dialect where its path or body shows it can
    only be one (see the module docstring), by adding the header. Installed inside the body-size guard, so
    the one body it reads (`POST /v1/agents`) is already bounded."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not is_agents_beta(scope) and scope["path"].startswith(AGENTS_PATH):
            method, path = scope["method"], scope["path"]
            beta = _path_is_beta_only(method, path)
            if not beta and method == "POST" and path == AGENTS_PATH:
                body, receive = await _read_body(receive)
                beta = _body_is_agents_create(body)
            if beta:
                # In place: the outer error envelope (api/openai/errors.py) reads it when the answer starts.
                scope["headers"] = [*scope["headers"], (BETA_HEADER, b"agents=v1")]
        await self._app(scope, receive, send)
