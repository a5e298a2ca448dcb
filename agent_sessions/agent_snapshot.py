"""Which agent a session runs: a saved agent, inline fields over it, or inline fields alone, resolved into the
snapshot the session keeps (the stored agent body, as the Agent object shows it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_sessions.mcp_tools import check_mcp_urls
from agent_sessions.refusals import invalid, not_found
from agent_sessions.services import SessionServices


@dataclass(frozen=True)
class AgentChoice:
    """The agent a session is asked for, in the stored agent body's form (the dialect reads it off the wire)."""

    agent_id: str | None
    """A saved agent, whose fields the inline ones replace."""
    inline: dict[str, Any] | None = None
    """The fields given inline, and only those."""
    defaults: dict[str, Any] | None = None
    """The inline agent with every field, defaults filled in: what a session with no text format takes."""


def check_model(services: SessionServices, model: str | None, param: str) -> None:
    if not model:
        raise invalid("The session's agent needs a model: give agent.model or an agent_id.", param)
    if services.settings.model(model) is None:
        known = ", ".join(sorted(services.settings.models))
        raise invalid(
            f"The model '{model}' is not configured on this server; configured: {known}.", param, "model_not_found"
        )


async def resolve_agent(services: SessionServices, tenant: str, choice: AgentChoice) -> dict[str, Any]:
    """The session's agent snapshot: the saved agent's fields with the inline ones over them, checked against
    this server's models and outbound policy now."""
    body: dict[str, Any] = {}
    if choice.agent_id is not None:
        saved = await services.store.agent_sessions.agent(tenant, choice.agent_id)
        if saved is None:
            raise not_found("Agent", choice.agent_id)
        body = dict(saved.body)
    if choice.inline is not None:
        body |= choice.inline
        if not body.get("text"):
            body = (choice.defaults or {}) | body
    if choice.agent_id is None and choice.inline is None:
        raise invalid("Give the session an agent: an inline `agent` with a model, or an `agent_id`.", "agent")
    check_model(services, body.get("model"), "agent.model")
    await check_mcp_urls(body, services.tools.outbound_policy)
    body.pop("metadata", None)
    return body
