"""The MCP headers a turn's request brought, sealed for the store while the turn runs.

A turn's tool calls run in a worker, possibly another process and later (a paused turn resumes
hours after), so the headers must outlive the request; they must not enter a workflow's history or
any row in readable form. The API seals them with the configured Fernet key (DA_CREDENTIALS_KEY)
into the turn's `turn_credentials` row; the worker opens them for each tool activity; the row is
deleted when the turn ends.
"""

from __future__ import annotations

import json

from cryptography.fernet import Fernet, InvalidToken

from store.repository import Store
from tool_runtime.catalog import McpHeaders


class CredentialsUnreadable(Exception):
    """A turn's sealed headers cannot be opened: the key is not the one that sealed them."""


UNREADABLE = (
    "The MCP credentials sent with this turn cannot be decrypted: {why}. The tool was not run. Give every API "
    "and worker the same DA_CREDENTIALS_KEY, then send the credentials again."
)


class CredentialSeal:
    def __init__(self, key: str) -> None:
        self._fernet = Fernet(key)

    def seal(self, headers: McpHeaders) -> str:
        return self._fernet.encrypt(json.dumps(headers).encode()).decode()

    def open(self, sealed: str) -> McpHeaders:
        try:
            return json.loads(self._fernet.decrypt(sealed.encode()))
        except InvalidToken:
            raise CredentialsUnreadable(
                UNREADABLE.format(why="this worker's DA_CREDENTIALS_KEY is not the key that encrypted them")
            ) from None


async def turn_headers(store: Store, seal: CredentialSeal | None, turn_id: str) -> McpHeaders | None:
    """The MCP headers the turn's latest create or resume request brought, if any (raises CredentialsUnreadable)."""
    sealed = await store.turn_credentials(turn_id)
    if sealed is None:
        return None
    if seal is None:
        raise CredentialsUnreadable(UNREADABLE.format(why="this worker has no DA_CREDENTIALS_KEY"))
    return seal.open(sealed)
