"""A stored agent's MCP tools as its session's turns use them: the servers the turn's plan names, their
credentials re-sealed for one turn, and the outbound policy's say on their URLs.

The stored form is the Agent object's (`{"type": "mcp", "server_label", "transport": {"type": "http",
"server_url"}, "allowed_tools", "require_approval", ...}`) plus the credentials sealed under `SEALED`; the
dialect (api/openai/agents/mcp_tools.py) makes it from the wire.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from agent_sessions.refusals import invalid
from domain.turn_settings import ApprovalPolicy, McpServer
from outbound.policy import OutboundPolicy, OutboundRefused
from tool_runtime.credential_seal import CredentialSeal, CredentialsUnreadable

SEALED = "sealed_credentials"
"""Where a stored MCP tool keeps its headers, sealed; never shown."""


def _mcp(agent: dict[str, Any]) -> list[dict[str, Any]]:
    return [tool for tool in agent.get("tools") or [] if tool.get("type") == "mcp"]


def _names(names: Any) -> list[str]:
    """A stored filter's tool names: `{"tool_names": [...]}`, or the older plain list."""
    if names is None:
        return []
    return list(names.get("tool_names") or []) if isinstance(names, dict) else list(names)


def approval_policy(rule: Any) -> ApprovalPolicy:
    """The stored `require_approval` (default "always"). A filter that names only the tools that always need
    approval lets the others run; one that names those that never do holds the rest."""
    if rule is None or rule == "always":
        return ApprovalPolicy(default=True)
    if rule == "never":
        return ApprovalPolicy(default=False)
    always, never = _names(rule.get("always")), _names(rule.get("never"))
    return ApprovalPolicy(default=not (always and not never), always=always, never=never)


def mcp_servers(agent: dict[str, Any], approval_timeout: timedelta | None = None) -> list[McpServer]:
    """The agent's MCP servers as the turn's plan names them (no credentials); their approvals wait at most
    `approval_timeout` (DA_APPROVAL_TIMEOUT)."""
    return [
        McpServer(
            label=tool["server_label"],
            url=tool["transport"]["server_url"],
            allowed_tools=tool.get("allowed_tools"),
            approval=approval_policy(tool.get("require_approval")).model_copy(update={"timeout": approval_timeout}),
        )
        for tool in _mcp(agent)
    ]


def turn_credentials(agent: dict[str, Any], key: str | None) -> str | None:
    """The agent's MCP credentials re-sealed as one turn's document (by server label); None without any.
    Refused (400) when the server can no longer open them (its DA_CREDENTIALS_KEY was removed or changed)."""
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
