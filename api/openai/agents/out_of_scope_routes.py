"""Parts of the Agents API (beta) this server does not offer, answered with a 404 that says so (instead of
the llama-stack routes' "agent not found"). docs/agents-api.md lists them."""

from __future__ import annotations

from typing import NoReturn

from api.openai.agents.routing import beta_router
from api.openai.errors import OpenAIError

router = beta_router(tags=["agents (beta)"], include_in_schema=False)

_WHY = {
    "environments": "hosted environments, their files and templates need OpenAI's sandboxes",
    "subagents": "subagents are not supported",
    "traces": "session traces are not offered; each turn is a Temporal workflow (see the Temporal UI)",
    "artifacts": "artifacts are files of a hosted environment",
    "vaults": "vaults are not supported; give tools their credentials another way",
}
_METHODS = ["GET", "POST", "DELETE"]


def _refuse(part: str) -> NoReturn:
    raise OpenAIError(404, f"Not supported by this server: {_WHY[part]}.", None, "unsupported")


@router.api_route("/agents/environments", methods=_METHODS)
@router.api_route("/agents/environments/{rest:path}", methods=_METHODS)
async def environments() -> None:
    _refuse("environments")


@router.api_route("/agents/sessions/{session_id}/subagents", methods=_METHODS)
@router.api_route("/agents/sessions/{session_id}/subagents/{rest:path}", methods=_METHODS)
async def subagents() -> None:
    _refuse("subagents")


@router.api_route("/agents/sessions/{session_id}/traces", methods=_METHODS)
async def traces() -> None:
    _refuse("traces")


@router.api_route("/agents/sessions/{session_id}/artifacts", methods=_METHODS)
@router.api_route("/agents/sessions/{session_id}/artifacts/{rest:path}", methods=_METHODS)
async def artifacts() -> None:
    _refuse("artifacts")


@router.api_route("/vaults", methods=_METHODS)
@router.api_route("/vaults/{rest:path}", methods=_METHODS)
async def vaults() -> None:
    _refuse("vaults")
