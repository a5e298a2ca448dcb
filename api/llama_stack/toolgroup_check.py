"""Refusing, before a turn runs, toolgroups that do not exist."""

from __future__ import annotations

from fastapi import HTTPException

from api.services import Services
from domain.agents import AgentToolGroup
from tool_runtime.catalog import split_toolgroup
from tool_runtime.web_search import NOT_CONFIGURED
from workflows.web_search_tool import WEB_SEARCH_TOOLGROUP


async def require_toolgroups(services: Services, tenant: str, toolgroups: list[AgentToolGroup]) -> None:
    wanted = {group_id for group_id, _, _ in map(split_toolgroup, toolgroups)}
    if WEB_SEARCH_TOOLGROUP in wanted and services.tools.web_search is None:
        raise HTTPException(400, f"Toolgroup {WEB_SEARCH_TOOLGROUP} is unavailable. {NOT_CONFIGURED}")
    missing = [
        group_id
        for group_id, _, _ in map(split_toolgroup, toolgroups)
        if await services.tools.group(tenant, group_id) is None
    ]
    if missing:
        known = [group.identifier for group in await services.tools.groups(tenant)]
        raise HTTPException(400, f"Unknown toolgroups {missing}; registered toolgroups: {known}")
