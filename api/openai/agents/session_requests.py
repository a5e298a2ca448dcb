"""sessions.create's body in the session service's terms (agent_sessions/): the checks only the wire knows
(environment, metadata, vaults, review) and the inline agent read into its stored form."""

from __future__ import annotations

from typing import Any

from agent_sessions.agent_snapshot import AgentChoice
from agent_sessions.creation import NewSession
from agent_sessions.services import SessionServices
from api.openai.agents.mcp_tools import credential_seal
from api.openai.agents.wire import AgentFields, SessionCreate, agent_body, check_metadata, parse
from api.openai.errors import invalid

SUPPORTED_ENVIRONMENT = '{"type": "none"}'
OUT_OF_SCOPE_ENVIRONMENTS = {
    "openai_hosted": "hosted containers are OpenAI's own sandboxes",
    "self_hosted": "self-hosted environments need the Codex exec-server remote protocol",
}


def check_environment(environment: Any) -> None:
    if environment is None:
        raise invalid(f"environment is required; this server supports {SUPPORTED_ENVIRONMENT}.", "environment")
    kind = environment.type
    if kind == "none":
        return
    why = OUT_OF_SCOPE_ENVIRONMENTS.get(kind, "it is not an environment type this server knows")
    raise invalid(
        f"environment type '{kind}' is not supported on this server ({why}); use {SUPPORTED_ENVIRONMENT}.",
        "environment.type",
        "unsupported_environment",
    )


def agent_choice(services: SessionServices, agent_id: str | None, inline: AgentFields | None) -> AgentChoice:
    """The session's agent as the caller asked for it: a saved agent's id, inline fields (only those given
    replace the saved agent's), or both."""
    if inline is None:
        return AgentChoice(agent_id)
    filled = agent_body(inline, model_required=False, seal=credential_seal(services.settings.credentials_key))
    given = inline.model_fields_set
    chosen = {key: filled[key] for key in filled if key in given and getattr(inline, key, None) is not None}
    return AgentChoice(agent_id, chosen, filled)


def new_session(services: SessionServices, body: SessionCreate) -> NewSession:
    """A sessions.create body, checked as far as the wire goes (environment `none`)."""
    check_environment(body.environment)
    metadata = check_metadata(body.metadata)
    if body.vault_ids:
        raise invalid("vault_ids: vaults are not supported by this server; send no vault_ids.", "vault_ids")
    if body.review not in (None, "none"):
        raise invalid("review: only 'none' is supported by this server.", "review")
    return NewSession(
        agent=agent_choice(services, body.agent_id, body.agent),
        input=body.input,
        metadata=metadata,
        spend_limit=body.spend_control.limit if body.spend_control is not None else None,
        prompt_cache_options=body.prompt_cache_options,
    )


def parse_create(raw: dict[str, Any]) -> SessionCreate:
    body: SessionCreate = parse(SessionCreate, raw, "session")
    return body
