"""`/v1/agents` of the Agents API (beta): saved agents, create / retrieve / update / list / delete."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import Body, Query

from agent_sessions.agent_snapshot import check_model
from agent_sessions.mcp_tools import check_mcp_urls
from agent_sessions.session_turns import new_id
from api.guards.tenancy import TenantDep
from api.openai.agents.mcp_tools import credential_seal
from api.openai.agents.routing import beta_router
from api.openai.agents.wire import AgentFields, agent_body, agent_object, parse, updated_agent_body
from api.openai.errors import OpenAIError, not_found
from api.openai.pages import list_page
from api.services import ServicesDep
from store.agent_sessions.sessions import BetaAgentRecord
from store.tenancy.quotas import QuotaReached

router = beta_router(tags=["agents (beta)"], include_in_schema=False)
"""Left out of the OpenAPI document: its paths and methods are the llama-stack dialect's, which the document
describes; docs/agents-api.md describes these."""


def _shown(record: BetaAgentRecord) -> dict[str, Any]:
    return agent_object(record.agent_id, record.body, record.created_at, record.updated_at)


def unknown_cursor(after: str) -> OpenAIError:
    return OpenAIError(
        404, f"No object with id '{after}' to list after; `after` takes the id of a listed one.", "after"
    )


@router.post("/agents")
async def create_agent(
    raw: Annotated[dict[str, Any], Body(description="agents.create parameters")],
    services: ServicesDep,
    tenant: TenantDep,
) -> Any:
    body = agent_body(parse(AgentFields, raw, "agent"), seal=credential_seal(services.settings.credentials_key))
    check_model(services, body["model"], "model")
    await check_mcp_urls(body, services.tools.outbound_policy)
    now = datetime.now(UTC)
    record = BetaAgentRecord(new_id("agent"), tenant, body, now, now)
    try:
        await services.store.agent_sessions.add_agent(record, services.settings.max_agents_per_tenant)
    except QuotaReached as quota:
        raise OpenAIError(409, str(quota), code="limit_reached") from None
    return _shown(record)


@router.get("/agents")
async def list_agents(
    services: ServicesDep,
    tenant: TenantDep,
    after: str | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    order: Literal["asc", "desc"] = "desc",
) -> Any:
    try:
        found, has_more = await services.store.agent_sessions.agents(tenant, after, limit, order)
    except LookupError:
        raise unknown_cursor(after or "") from None
    return list_page([_shown(record) for record in found], has_more)


@router.get("/agents/{agent_id}")
async def retrieve_agent(agent_id: str, services: ServicesDep, tenant: TenantDep) -> Any:
    record = await services.store.agent_sessions.agent(tenant, agent_id)
    if record is None:
        raise not_found("Agent", agent_id)
    return _shown(record)


@router.post("/agents/{agent_id}")
async def update_agent(
    agent_id: str,
    raw: Annotated[dict[str, Any], Body(description="agents.update parameters")],
    services: ServicesDep,
    tenant: TenantDep,
) -> Any:
    """Omitted fields stay as they are, `null` clears a field, `metadata` and `tools` replace."""
    current = await services.store.agent_sessions.agent(tenant, agent_id)
    if current is None:
        raise not_found("Agent", agent_id)
    seal = credential_seal(services.settings.credentials_key)
    changed = updated_agent_body(current.body, raw, seal)  # every check before the write
    check_model(services, changed["model"], "model")
    await check_mcp_urls(changed, services.tools.outbound_policy)
    record = await services.store.agent_sessions.update_agent(
        tenant, agent_id, lambda body: updated_agent_body(body, raw, seal), datetime.now(UTC)
    )
    if record is None:
        raise not_found("Agent", agent_id)
    return _shown(record)


@router.delete("/agents/{agent_id}")
async def delete_agent(agent_id: str, services: ServicesDep, tenant: TenantDep) -> Any:
    """Sessions made from the agent keep running: each holds its own snapshot of the agent."""
    if not await services.store.agent_sessions.delete_agent(tenant, agent_id):
        raise not_found("Agent", agent_id)
    return {"id": agent_id, "object": "agent.deleted", "deleted": True}
