"""Telling this dialect's requests from the llama-stack dialect's on the same paths.

`POST /v1/agents`, `GET /v1/agents/{agent_id}` and more exist in both. The openai SDK sends
`OpenAI-Beta: agents=v1` with every Agents API call and llama-stack clients never do, so this dialect's
routes match only requests that carry it; a request without it falls through to the llama-stack routes,
which keep answering exactly as before. The routes are registered first, literal paths before
`{agent_id}` ones.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header
from fastapi.routing import APIRoute
from starlette.routing import Match
from starlette.types import Scope

from api.responses.errors import ERROR_RESPONSES

BETA_HEADER = b"openai-beta"


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
        str,
        Header(
            alias="OpenAI-Beta",
            description="`agents=v1`: the openai SDK sends it with every Agents API call",
            json_schema_extra={"enum": ["agents=v1"]},
        ),
    ],
) -> None:
    """Declares the header in the OpenAPI document; the route's match has already required it."""


def beta_router(**kwargs: Any) -> APIRouter:
    dependencies = [Depends(_beta_header)]
    return APIRouter(route_class=AgentsBetaRoute, responses=ERROR_RESPONSES, dependencies=dependencies, **kwargs)
