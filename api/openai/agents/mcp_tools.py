"""MCP tools on Agents API agents and sessions: `{"type": "mcp", "server_label", "transport": {"type": "http",
"server_url", "headers"?, "authorization"?}, "allowed_tools"?}`, run by the same turn workflow as the Responses
dialect's `mcp` tools (workflows/mcp_servers.py).

An agent is kept, unlike a Responses request, so its MCP credentials (`headers` and `authorization`) are sealed
with DA_CREDENTIALS_KEY the moment the agent is read, kept only as that ciphertext beside the tool, and never
shown: the Agent object shows the credential-free transport the SDK's `PersistedMcpTransport` describes. A turn
gets them the Responses way (agent_sessions/mcp_tools.py): re-sealed by server label into its `turn_credentials`
row, which the worker opens for each MCP activity and deletes when the turn ends; they never enter a workflow
input or its history.

`require_approval` (`"always"`, `"never"` or `{"always": [...], "never": [...]}`, as on a Responses `mcp` tool;
default `"always"`) says which calls wait for an `agent.session.input.mcp_approval_request_result`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_sessions.mcp_tools import SEALED
from api.openai.errors import invalid
from api.openai.responses.request import ApprovalFilter
from tool_runtime.credential_seal import CredentialSeal


class HttpTransport(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: Literal["http"]
    server_url: Annotated[str, Field(min_length=1, max_length=2048)]
    authorization: str | None = Field(default=None, repr=False)
    headers: dict[str, str] | None = Field(default=None, repr=False)


class McpToolParam(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: Literal["mcp"]
    server_label: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
    transport: dict[str, Any]
    allowed_tools: list[str] | None = None
    connection_origin: Literal["service", "environment"] | None = None
    credential_id: str | None = None
    request_metadata: dict[str, Any] | None = None
    required: bool | None = None
    require_approval: Literal["always", "never"] | ApprovalFilter | None = None


def _refuse(where: str, why: str) -> Exception:
    return invalid(f"{where}: {why}", "tools")


def stored_mcp_tool(raw: dict[str, Any], where: str, seal: CredentialSeal | None) -> dict[str, Any]:
    """The tool as it is stored: the Agent object's form, plus its credentials sealed (a 400 when the server
    cannot seal them, or the tool asks for what this server does not do)."""
    try:
        tool = McpToolParam.model_validate(raw)
    except ValidationError as error:
        first = error.errors()[0]
        raise _refuse(where, f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}.") from error
    if tool.transport.get("type") != "http":
        raise _refuse(where, "only transport type 'http' is supported (stdio servers need a hosted environment).")
    try:
        transport = HttpTransport.model_validate(tool.transport)
    except ValidationError as error:
        raise _refuse(where, f"transport: {error.errors()[0]['msg']}.") from error
    url = urlsplit(transport.server_url)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise _refuse(where, f"transport.server_url must be an http(s) URL, got {transport.server_url!r}.")
    if tool.credential_id is not None:
        raise _refuse(where, "vault credentials are not supported; give transport.authorization or headers.")
    if tool.connection_origin == "environment":
        raise _refuse(where, "connection_origin 'environment' needs an execution environment; use 'service'.")
    credentials = _as_headers(transport)
    sealed = None
    if credentials:
        if seal is None:
            raise _refuse(
                where,
                "the tool carries headers or authorization, but this server cannot hold credentials: its operator "
                "has not set DA_CREDENTIALS_KEY. Send the tool without them, or ask for the key.",
            )
        sealed = seal.seal({}, by_label={tool.server_label: credentials})
    rule = tool.require_approval
    approval = rule.model_dump(exclude_none=True) if isinstance(rule, ApprovalFilter) else rule or "always"
    return {
        "type": "mcp",
        "server_label": tool.server_label,
        "transport": {"type": "http", "server_url": transport.server_url, "headers": {}},
        "allowed_tools": tool.allowed_tools,
        "connection_origin": "service",
        "credential_id": None,
        "request_metadata": tool.request_metadata or {},
        "required": bool(tool.required),
        "require_approval": approval,
        **({SEALED: sealed} if sealed else {}),
    }


def _as_headers(transport: HttpTransport) -> dict[str, str]:
    """The headers the server needs: `headers`, plus `authorization` as a bearer token (as Responses sends it)."""
    found = dict(transport.headers or {})
    if transport.authorization:
        found["Authorization"] = f"Bearer {transport.authorization}"
    return found


def has_mcp_credentials(tools: list[dict[str, Any]] | None) -> bool:
    """Whether any MCP tool among these request tools carries headers or authorization."""
    for tool in tools or []:
        transport = tool.get("transport") if isinstance(tool, dict) and tool.get("type") == "mcp" else None
        if isinstance(transport, dict) and (transport.get("authorization") or transport.get("headers")):
            return True
    return False


def shown_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tools as the Agent and session objects show them: no sealed credentials."""
    return [{key: value for key, value in tool.items() if key != SEALED} for tool in tools]


def credential_seal(key: str | None) -> CredentialSeal | None:
    """The seal of DA_CREDENTIALS_KEY; None when the operator has not set one (MCP credentials are refused)."""
    return CredentialSeal(key) if key else None
