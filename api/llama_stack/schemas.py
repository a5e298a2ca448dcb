"""Request and response bodies of the HTTP API (storage rows live in the `tables` modules of store/)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from domain.agents import AgentConfig, AgentToolGroup, Document, ToolConfig
from domain.content import InputMessage, ToolResponse, WireModel
from domain.turns import Step


class CreateAgentRequest(WireModel):
    agent_config: AgentConfig


class CreateAgentResponse(WireModel):
    agent_id: str


class CreateSessionRequest(WireModel):
    session_name: str = Field(max_length=1000)


class CreateSessionResponse(WireModel):
    session_id: str


class CreateTurnRequest(WireModel):
    messages: list[InputMessage] = Field(min_length=1)
    stream: bool | None = False
    documents: list[Document] | None = None
    toolgroups: list[AgentToolGroup] | None = None
    tool_config: ToolConfig | None = None


class ResumeTurnRequest(WireModel):
    tool_responses: list[ToolResponse] = Field(min_length=1)
    stream: bool | None = False


class StepResponse(WireModel):
    step: Step


class PaginatedResponse(WireModel):
    data: list[dict[str, Any]]
    has_more: bool
    url: str | None = None


class ListResponse(WireModel):
    data: list[dict[str, Any]] = Field(default_factory=list)


class ToolListResponse(ListResponse):
    unavailable: dict[str, str] = Field(default_factory=dict)
    """Toolgroups whose tools could not be listed (their MCP server failed), each with the reason."""
