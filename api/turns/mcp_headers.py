"""Carrying the MCP headers of a create-turn or resume request into the turn: sealed with
DA_CREDENTIALS_KEY before anything is recorded, kept in the turn's `turn_credentials` row until it ends."""

from __future__ import annotations

from fastapi import HTTPException

from api.llama_stack.provider_data import HEADER
from api.runtime import Runtime
from tool_runtime.catalog import McpHeaders
from tool_runtime.turn_credentials import CredentialSeal


def sealed(runtime: Runtime, headers: McpHeaders | None) -> str | None:
    """The request's MCP headers encrypted for the store; None when it brought none.
    A server without a key refuses them rather than run the turn without them."""
    if not headers:
        return None
    if runtime.settings.credentials_key is None:
        raise HTTPException(
            400,
            f"{HEADER} carries mcp_headers, but this server cannot hold credentials for a turn: its operator "
            "has not set DA_CREDENTIALS_KEY. Send the turn without them, or ask for the key to be configured.",
        )
    return CredentialSeal(runtime.settings.credentials_key).seal(headers)


async def keep(runtime: Runtime, turn_id: str, ciphertext: str | None) -> None:
    """Hold them for the turn (replacing what an earlier request of the turn brought) unless it has ended."""
    if ciphertext is not None:
        await runtime.store.keep_turn_credentials(turn_id, ciphertext)
