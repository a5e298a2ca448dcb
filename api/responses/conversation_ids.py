"""Ids of the Conversations API: a prefix and 48 lowercase hex digits, as OpenAI's and OGX's look."""

from __future__ import annotations

import secrets


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(24)}"


def new_conversation_id() -> str:
    return new_id("conv")
