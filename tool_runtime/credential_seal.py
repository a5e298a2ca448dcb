"""The MCP headers a turn's request brought, sealed for the store while the turn runs.

A turn's tool calls run in a worker, possibly another process and later (a paused turn resumes
hours after), so the headers must outlive the request; they must not enter a workflow's history or
any row in readable form. The API seals them (configuration/sealing.py) with DA_CREDENTIALS_KEY
into the turn's `turn_credentials` row; the worker opens them for each tool activity; the row is
deleted when the turn ends.
"""

from __future__ import annotations

from typing import Any

from configuration.sealing import Sealer, Unsealable
from store.repository import Store
from tool_runtime.catalog import McpHeaders


class CredentialsUnreadable(Exception):
    """A turn's sealed headers cannot be opened: the key is not the one that sealed them."""


UNREADABLE = (
    "The MCP credentials sent with this turn cannot be decrypted: {why}. The tool was not run. Give every API "
    "and worker the same DA_CREDENTIALS_KEY, then send the credentials again."
)


BY_LABEL = "mcp_server_labels"
"""Where a sealed document keeps the headers of MCP servers named in the request (Responses `mcp` tools),
by server label, beside the llama-stack ones by endpoint URI; no URI has this name."""


class CredentialSeal:
    def __init__(self, key: str) -> None:
        self._sealer = Sealer(key)

    def seal(self, headers: McpHeaders, by_label: McpHeaders | None = None) -> str:
        """`headers` by endpoint URI (llama-stack requests), `by_label` by MCP server label (Responses
        requests): one turn can hold several servers' headers either way."""
        document: dict[str, object] = {**headers, **({BY_LABEL: by_label} if by_label else {})}
        return self._sealer.seal_json(document)

    def open(self, sealed: str) -> McpHeaders:
        """The headers by endpoint URI."""
        return {uri: headers for uri, headers in self._document(sealed).items() if uri != BY_LABEL}

    def open_labels(self, sealed: str) -> McpHeaders:
        """The headers by MCP server label."""
        labels: McpHeaders = self._document(sealed).get(BY_LABEL, {})
        return labels

    def _document(self, sealed: str) -> dict[str, Any]:
        try:
            document: dict[str, Any] = self._sealer.open_json(sealed)
        except Unsealable:
            raise CredentialsUnreadable(
                UNREADABLE.format(why="this worker's DA_CREDENTIALS_KEY is not the key that encrypted them")
            ) from None
        return document


async def turn_headers(store: Store, seal: CredentialSeal | None, turn_id: str) -> McpHeaders | None:
    """The MCP headers the turn's latest create or resume request brought, if any (raises CredentialsUnreadable)."""
    sealed = await store.turns.turn_credentials(turn_id)
    if sealed is None:
        return None
    if seal is None:
        raise CredentialsUnreadable(UNREADABLE.format(why="this worker has no DA_CREDENTIALS_KEY"))
    return seal.open(sealed)


async def turn_label_headers(store: Store, seal: CredentialSeal | None, turn_id: str) -> McpHeaders:
    """The headers of the MCP servers the turn's requests named, by server label (raises CredentialsUnreadable)."""
    sealed = await store.turns.turn_credentials(turn_id)
    if sealed is None:
        return {}
    if seal is None:
        raise CredentialsUnreadable(UNREADABLE.format(why="this worker has no DA_CREDENTIALS_KEY"))
    return seal.open_labels(sealed)
