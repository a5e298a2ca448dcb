"""Ids of the Responses dialect.

Objects the API creates (responses, conversations, items a caller adds without an id) get random
ids. Items rendered from a turn's stored events get ids derived from what they were rendered from,
so every rendering of the same stored event — a GET, a replayed stream, a resumed stream served by
another API process, a conversation settled later — names the item the same way.
"""

from __future__ import annotations

import hashlib
import secrets


def _random(prefix: str) -> str:
    return prefix + secrets.token_hex(24)


def _derived(prefix: str, *parts: str) -> str:
    digest = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()
    return prefix + digest[:48]


def new_response_id() -> str:
    return _random("resp_")


def new_conversation_id() -> str:
    """`conv_` + 48 lowercase hex, the form OGX enforces and clients have seen."""
    return _random("conv_")


def new_message_id() -> str:
    return _random("msg_")


def new_function_call_id() -> str:
    return _random("fc_")


def new_function_call_output_id() -> str:
    return _random("fco_")


def new_approval_response_id() -> str:
    return _random("mcpa_")


def new_item_id(prefix: str = "item") -> str:
    """An item a caller added without an id: `prefix` is its kind's (`msg`, `fc`, …), `item` for the others."""
    return _random(f"{prefix}_")


def message_id(turn_id: str, step_id: str) -> str:
    """The message item of one inference (or shield) step of a turn."""
    return _derived("msg_", turn_id, step_id)


def function_call_id(turn_id: str, call_id: str) -> str:
    """The function_call item of a client call; call ids are the model's, unique within a turn."""
    return _derived("fc_", turn_id, call_id)


def mcp_call_id(turn_id: str, step_id: str, call_id: str) -> str:
    return _derived("mcp_", turn_id, step_id, call_id)


def file_search_call_id(turn_id: str, step_id: str, call_id: str) -> str:
    return _derived("fs_", turn_id, step_id, call_id)


def web_search_call_id(turn_id: str, step_id: str, call_id: str) -> str:
    return _derived("ws_", turn_id, step_id, call_id)


def mcp_list_tools_id(response_id: str, server_label: str, ordinal: int) -> str:
    """The `ordinal`-th listing of a server's tools within one response."""
    return _derived("mcpl_", response_id, server_label, str(ordinal))


def new_compaction_item_id() -> str:
    return _random("cmp_")


def compaction_item_id(turn_id: str) -> str:
    """The compaction item of a turn's compaction step (one per turn)."""
    return _derived("cmp_", turn_id, "compaction")


def code_interpreter_call_id(turn_id: str, step_id: str, call_id: str) -> str:
    return _derived("ci_", turn_id, step_id, call_id)


def shell_call_id(turn_id: str, step_id: str, call_id: str) -> str:
    return _derived("sh_", turn_id, step_id, call_id)


def shell_call_output_id(turn_id: str, step_id: str, call_id: str) -> str:
    return _derived("sho_", turn_id, step_id, call_id)
