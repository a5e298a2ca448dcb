"""Carrying the MCP headers of a create-turn or resume request into the turn: each dialect seals them with
DA_CREDENTIALS_KEY before anything is recorded; they are kept in the turn's `turn_credentials` row until it ends."""

from __future__ import annotations

from api.services import Services


async def keep_mcp_headers(services: Services, turn_id: str, ciphertext: str | None) -> None:
    """Hold them for the turn (replacing what an earlier request of the turn brought) unless it has ended."""
    if ciphertext is not None:
        await services.store.turns.keep_turn_credentials(turn_id, ciphertext)
