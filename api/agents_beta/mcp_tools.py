"""MCP tools on Agents API agents and sessions: `{"type": "mcp", "server_label", "transport": {"type": "http",
"server_url", "headers"?, "authorization"?}, "allowed_tools"?}`, run by the same turn workflow as the Responses
dialect's `mcp` tools (workflows/mcp_servers.py).

An agent is kept, unlike a Responses request, so its MCP credentials (`headers` and `authorization`) are sealed
with DA_CREDENTIALS_KEY the moment the agent is read, kept only as that ciphertext beside the tool, and never
shown: the Agent object shows the credential-free transport the SDK's `PersistedMcpTransport` describes. A turn
gets them the Responses way: re-sealed by server label into its `turn_credentials` row, which the worker opens for
each MCP activity and deletes when the turn ends; they never enter a workflow input or its history.

`require_approval` (`"always"`, `"never"` or `{"always": [...], "never": [...]}`, as on a Responses `mcp` tool;
default `"always"`) says which calls wait for an `agent.session.input.mcp_approval_request_result`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from api.responses.errors import invalid
from api.responses.plan import approval_policy
from api.responses.request import ApprovalFilter, McpTool
from domain.turn_settings import McpServer
from outbound.policy import OutboundPolicy, OutboundRefused
from tool_runtime.credential_seal import CredentialSeal, CredentialsUnreadable

SEALED = "sealed_credentials"
"""Where a stored MCP tool keeps its headers, sealed; never shown."""


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


def _mcp(agent: dict[str, Any]) -> list[dict[str, Any]]:
    return [tool for tool in agent.get("tools") or [] if tool.get("type") == "mcp"]


def mcp_servers(agent: dict[str, Any]) -> list[McpServer]:
    """The agent's MCP servers as the turn's plan names them (no credentials)."""
    servers = []
    for tool in _mcp(agent):
        rule = McpTool.model_validate(
            {"type": "mcp", "server_label": tool["server_label"], "server_url": tool["transport"]["server_url"]}
            | {"require_approval": tool.get("require_approval") or "always"}
        )
        servers.append(
            McpServer(
                label=tool["server_label"],
                url=tool["transport"]["server_url"],
                allowed_tools=tool.get("allowed_tools"),
                approval=approval_policy(rule),
            )
        )
    return servers


def turn_credentials(agent: dict[str, Any], key: str | None) -> str | None:
    """The agent's MCP credentials re-sealed as one turn's document (by server label); None without any.
    Raises a 400 when the server can no longer open them (its DA_CREDENTIALS_KEY was removed or changed)."""
    sealed = [tool[SEALED] for tool in _mcp(agent) if tool.get(SEALED)]
    if not sealed:
        return None
    if key is None:
        raise invalid(
            "The agent's MCP tools carry credentials, but this server has no DA_CREDENTIALS_KEY to open them.", "agent"
        )
    seal = CredentialSeal(key)
    by_label: dict[str, dict[str, str]] = {}
    try:
        for ciphertext in sealed:
            by_label |= seal.open_labels(ciphertext)
    except CredentialsUnreadable as unreadable:
        raise invalid(f"The agent's MCP credentials cannot be used: {unreadable}", "agent") from unreadable
    return seal.seal({}, by_label=by_label)


async def check_mcp_urls(agent: dict[str, Any], policy: OutboundPolicy) -> None:
    """Each MCP server is one the outbound policy allows (judged again at every connection)."""
    for tool in _mcp(agent):
        url = urlsplit(tool["transport"]["server_url"])
        try:
            await policy.check_url_host(url.hostname or "", url.port or (443 if url.scheme == "https" else 80))
        except OutboundRefused as refused:
            raise invalid(f"tools: MCP server {tool['server_label']!r}: {refused}", "tools") from refused


def credential_seal(key: str | None) -> CredentialSeal | None:
    """The seal of DA_CREDENTIALS_KEY; None when the operator has not set one (MCP credentials are refused)."""
    return CredentialSeal(key) if key else None
