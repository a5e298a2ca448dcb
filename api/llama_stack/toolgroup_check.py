"""Refusing, before a turn runs, toolgroups that do not exist."""

from __future__ import annotations

from fastapi import HTTPException

from api.services import Services
from domain.agents import AgentToolGroup
from tool_runtime.catalog import split_toolgroup


async def require_toolgroups(services: Services, tenant: str, toolgroups: list[AgentToolGroup]) -> None:
    missing = [
        group_id
        for group_id, _, _ in map(split_toolgroup, toolgroups)
        if await services.tools.group(tenant, group_id) is None
    ]
    if missing:
        known = [group.identifier for group in await services.tools.groups(tenant)]
        raise HTTPException(400, f"Unknown toolgroups {missing}; registered toolgroups: {known}")
