"""Tool and shield catalogues the official client reads. Server-side toolgroups and shields are
not built yet, so the catalogues are empty and lookups of a named group or tool say so."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from api.errors import not_found
from domain.content import WireModel

router = APIRouter(tags=["tools"])


class ListResponse(WireModel):
    data: list[dict[str, Any]] = Field(default_factory=list)


class ToolInvocation(WireModel):
    tool_name: str
    kwargs: dict[str, Any] = Field(default_factory=dict)


@router.get("/tools", response_model=ListResponse)
async def list_tools(toolgroup_id: str | None = None) -> ListResponse:
    if toolgroup_id is not None:
        raise not_found("Toolgroup", toolgroup_id)
    return ListResponse()


@router.get("/toolgroups", response_model=ListResponse)
async def list_toolgroups() -> ListResponse:
    return ListResponse()


@router.post("/tool-runtime/invoke")
async def invoke_tool(body: ToolInvocation) -> None:
    raise not_found("Tool", body.tool_name)


@router.get("/shields", response_model=ListResponse)
async def list_shields() -> ListResponse:
    return ListResponse()
