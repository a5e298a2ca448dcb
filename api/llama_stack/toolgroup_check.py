"""Refusing, before a turn runs, toolgroups that do not exist, and the code interpreter where this host has no
sandbox (nothing runs unsandboxed)."""

from __future__ import annotations

import asyncio

from fastapi import HTTPException

from api.services import Services
from code_sandbox.availability import SandboxUnavailable, configured_sandbox
from domain.agents import AgentToolGroup
from tool_runtime.catalog import split_toolgroup
from tool_runtime.web_search import NOT_CONFIGURED
from workflows.code_tools import CODE_INTERPRETER_TOOLGROUP
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
    if any(split_toolgroup(group)[0] == CODE_INTERPRETER_TOOLGROUP for group in toolgroups):
        try:
            await asyncio.to_thread(configured_sandbox, services.settings)
        except SandboxUnavailable as unavailable:
            raise HTTPException(400, f"{CODE_INTERPRETER_TOOLGROUP} cannot be used here: {unavailable}") from None
