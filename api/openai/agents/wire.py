"""The request bodies of this dialect as the `openai` SDK 3.54 sends them, and the agent object it parses.

Requests are read leniently where the SDK sends fields this server echoes but does not act on (service_tier,
reasoning, prompt_cache_options), and strictly where a field changes what runs: tools, environment, input.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from api.openai.agents.mcp_tools import shown_tools, stored_mcp_tool
from api.openai.errors import invalid
from tool_runtime.credential_seal import CredentialSeal

MAX_METADATA_PAIRS = 16
MAX_METADATA_KEY = 64
MAX_METADATA_VALUE = 512

UNSUPPORTED_TOOLS = {
    "computer_use": "computer use needs a hosted browser or desktop, which this server does not have",
    "web_search": "hosted web search is not offered by this server",
    "tool_search": "hosted tool search is not offered by this server",
    "programmatic_tool_calling": "programmatic tool calling needs a hosted environment",
    "automations": "the automations tool is not offered to agents by this server",
}


class Lenient(BaseModel):
    model_config = ConfigDict(extra="allow")


class FunctionToolParam(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: Literal["function"]
    name: Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.-]+$")]
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None
    defer_loading: bool | None = None


class TextParam(Lenient):
    format: dict[str, Any] | None = None
    verbosity: Literal["low", "medium", "high"] | None = None


class AgentFields(BaseModel):
    """What an agent is made of: the body of agents.create, and of an inline `agent` on a session."""

    model_config = ConfigDict(extra="ignore")
    model: str | None = None
    name: str | None = None
    instructions: str | None = None
    metadata: dict[str, str] | None = None
    tools: list[dict[str, Any]] | None = None
    reasoning: dict[str, Any] | None = None
    text: TextParam | None = None
    service_tier: str | None = None
    multi_agent: dict[str, Any] | None = None
    compaction: dict[str, Any] | None = None
    experimental: dict[str, Any] | None = None


def parse(model: type[BaseModel], raw: Any, where: str) -> Any:
    """`raw` as `model`, or a 400 naming the first field that does not fit."""
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        first = error.errors()[0]
        path = ".".join(str(part) for part in first["loc"])
        raise invalid(f"Invalid {where}: {path}: {first['msg']}.", path or None) from error


def check_metadata(metadata: dict[str, str] | None, param: str = "metadata") -> dict[str, str]:
    metadata = metadata or {}
    if len(metadata) > MAX_METADATA_PAIRS:
        raise invalid(f"{param} takes at most {MAX_METADATA_PAIRS} pairs; got {len(metadata)}.", param)
    for key, value in metadata.items():
        if len(key) > MAX_METADATA_KEY or len(value) > MAX_METADATA_VALUE:
            raise invalid(
                f"{param} keys are at most {MAX_METADATA_KEY} characters and values {MAX_METADATA_VALUE}.", param
            )
    return metadata


def check_tools(
    tools: list[dict[str, Any]] | None, param: str = "tools", seal: CredentialSeal | None = None
) -> list[dict[str, Any]]:
    """Function and MCP tools, normalised as the Agent object shows them (an MCP tool's credentials sealed
    with `seal`, refused without one); other kinds refused, saying why."""
    checked = []
    for index, tool in enumerate(tools or []):
        kind = tool.get("type") if isinstance(tool, dict) else None
        if kind in UNSUPPORTED_TOOLS:
            raise invalid(
                f"{param}[{index}]: tools of type '{kind}' are not supported: {UNSUPPORTED_TOOLS[kind]}.", param
            )
        if kind == "mcp":
            checked.append(stored_mcp_tool(tool, f"{param}[{index}]", seal))
            continue
        if kind != "function":
            raise invalid(
                f"{param}[{index}]: unknown tool type {kind!r}; this server supports 'function' and 'mcp'.", param
            )
        function = parse(FunctionToolParam, tool, f"{param}[{index}]")
        checked.append(
            {
                "type": "function",
                "name": function.name,
                "description": function.description or "",
                "parameters": function.parameters or {"type": "object", "properties": {}},
                "defer_loading": bool(function.defer_loading),
                **({"strict": function.strict} if function.strict is not None else {}),
            }
        )
    return checked


def agent_body(fields: AgentFields, model_required: bool = True, seal: CredentialSeal | None = None) -> dict[str, Any]:
    """The stored body of an agent made from these fields, defaults filled in as the Agent object shows them;
    `seal` seals its MCP tools' credentials (none are accepted without it)."""
    if model_required and not fields.model:
        raise invalid("model is required.", "model")
    text = fields.text.model_dump(exclude_none=True) if fields.text is not None else {}
    return {
        "model": fields.model,
        "name": fields.name,
        "instructions": fields.instructions,
        "metadata": check_metadata(fields.metadata),
        "tools": check_tools(fields.tools, seal=seal),
        "reasoning": fields.reasoning or {},
        "text": {"format": text.get("format") or {"type": "text"}, "verbosity": text.get("verbosity") or "medium"},
        "service_tier": fields.service_tier or "auto",
        "multi_agent": _multi_agent(fields.multi_agent),
        **({"compaction": fields.compaction} if fields.compaction is not None else {}),
        **({"experimental": fields.experimental} if fields.experimental is not None else {}),
    }


def _multi_agent(config: dict[str, Any] | None) -> dict[str, Any]:
    if config and config.get("enabled"):
        raise invalid("multi_agent: subagents are not supported by this server; leave it disabled.", "multi_agent")
    return {"enabled": False}


def updated_agent_body(body: dict[str, Any], raw: dict[str, Any], seal: CredentialSeal | None = None) -> dict[str, Any]:
    """An update: omitted fields unchanged, `null` clears, `metadata` and `tools` replace."""
    fields = parse(AgentFields, raw, "agent update")
    if "model" in raw and not raw["model"]:
        raise invalid("model cannot be cleared; give another model.", "model")
    cleared = agent_body(AgentFields(model=body["model"]), model_required=True)
    given = agent_body(fields.model_copy(update={"model": fields.model or body["model"]}), seal=seal)
    out = dict(body)
    for key in raw:
        if key in given:
            out[key] = given[key] if raw[key] is not None else cleared.get(key)
    return out


def timestamp(moment: datetime) -> int:
    return int(moment.timestamp())


def agent_object(agent_id: str, body: dict[str, Any], created_at: datetime, updated_at: datetime) -> dict[str, Any]:
    return {
        "id": agent_id,
        "object": "agent",
        "created_at": timestamp(created_at),
        "updated_at": timestamp(updated_at),
        **body,
        "tools": shown_tools(body.get("tools") or []),
    }


# --- sessions


class EnvironmentParam(Lenient):
    type: str


class SpendControlParam(BaseModel):
    model_config = ConfigDict(extra="forbid")
    limit: Annotated[int, Field(gt=0)] | None = None


class SessionCreate(BaseModel):
    """sessions.create's body (`stream` and `stream_options` read by the route)."""

    model_config = ConfigDict(extra="ignore")
    environment: EnvironmentParam | None = None
    agent: AgentFields | None = None
    agent_id: str | None = None
    input: str | list[dict[str, Any]] | None = None
    metadata: dict[str, str] | None = None
    spend_control: SpendControlParam | None = None
    review: str | None = None
    prompt_cache_options: dict[str, Any] | None = None
    vault_ids: list[str] | None = None
    stream: bool = False


class SessionUpdate(BaseModel):
    model_config = ConfigDict(extra="ignore")
    agent: AgentFields | None = None
    metadata: dict[str, str] | None = None
    prompt_cache_options: dict[str, Any] | None = None
    review: str | None = None
    spend_control: SpendControlParam | None = None


class InputEvents(BaseModel):
    model_config = ConfigDict(extra="ignore")
    events: Annotated[list[dict[str, Any]], Field(min_length=1, max_length=100)]
