"""Agents: create, read, list, delete."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from functools import partial
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException

from api.guards.tenancy import TenantDep
from api.http.errors import not_found
from api.http.pagination import PageDep
from api.llama_stack.schemas import CreateAgentRequest, CreateAgentResponse, PaginatedResponse
from api.llama_stack.toolgroup_check import require_toolgroups
from api.services import Services, ServicesDep
from api.turns.deletion import delete_with_turns
from domain.agents import Agent, AgentConfig
from store.tenancy.quotas import QuotaReached

router = APIRouter(tags=["agents"])


async def check_agent_config(config: AgentConfig, services: Services, tenant: str) -> None:
    """Reject at creation what could only fail later, inside a turn."""
    if services.settings.model(config.model) is None:
        known = ", ".join(sorted(services.settings.models))
        raise HTTPException(400, f"Model {config.model!r} is not configured on this server; configured: {known}")
    ceiling = services.settings.max_infer_iters
    if (config.max_infer_iters or 0) > ceiling:
        raise HTTPException(
            400, f"agent_config.max_infer_iters may be at most {ceiling} on this server, got {config.max_infer_iters}"
        )
    await require_toolgroups(services, tenant, config.toolgroups or [])
    unknown = [
        s for s in [*(config.input_shields or []), *(config.output_shields or [])] if s not in services.settings.shields
    ]
    if unknown:
        shields = sorted(services.settings.shields) or "none"
        raise HTTPException(400, f"Unknown shields {unknown}; configured shields: {shields}")


async def existing_agent(
    services: ServicesDep,
    tenant: TenantDep,
    agent_id: str,
) -> Agent:
    """The caller's agent; another tenant's is as unknown as one that never existed."""
    agent = await services.store.turns.get_agent(tenant, agent_id)
    if agent is None:
        raise not_found("Agent", agent_id)
    return agent


AgentDep = Annotated[Agent, Depends(existing_agent)]


@router.post("/agents", response_model=CreateAgentResponse)
async def create_agent(
    services: ServicesDep,
    tenant: TenantDep,
    body: CreateAgentRequest,
) -> CreateAgentResponse:
    await check_agent_config(body.agent_config, services, tenant)
    agent = Agent(agent_id=str(uuid.uuid4()), agent_config=body.agent_config, created_at=datetime.now(UTC))
    try:
        await services.store.turns.create_agent(tenant, agent, services.settings.max_agents_per_tenant)
    except QuotaReached as quota:
        raise HTTPException(409, str(quota)) from None
    return CreateAgentResponse(agent_id=agent.agent_id)


@router.get("/agents", response_model=PaginatedResponse)
async def list_agents(services: ServicesDep, tenant: TenantDep, window: PageDep) -> PaginatedResponse:
    """The caller's agents, oldest first, a page at a time (`has_more` says whether another follows)."""
    page = await services.store.turns.list_agents(tenant, window.start_index, window.limit)
    return PaginatedResponse(
        data=[agent.model_dump(mode="json") for agent in page.items], has_more=page.has_more, url="/v1/agents"
    )


@router.get("/agents/{agent_id}", response_model=Agent)
async def get_agent(
    agent: AgentDep,
) -> Agent:
    return agent


@router.delete("/agents/{agent_id}", response_model=None)
async def delete_agent(
    agent: AgentDep,
    services: ServicesDep,
    tenant: TenantDep,
) -> None:
    """Delete the agent, its sessions and their turns; turns still running or awaiting input are stopped first."""
    unfinished = await services.store.turns.unfinished_turn_ids(agent.agent_id)
    delete = partial(services.store.turns.delete_agent, tenant, agent.agent_id)
    if not await delete_with_turns(services, f"Agent {agent.agent_id}", unfinished, delete):
        raise not_found("Agent", agent.agent_id)
