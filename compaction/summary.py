"""Writing a summary: what the model is sent, and the token estimate that decides when (the call itself is
activities/compaction.py's).

The model is given the conversation as a transcript (one line per message: `User: …`, `Assistant: …`,
`Tool result: …`, `Summary: …` for an earlier summary), not as chat messages: a transcript needs no tool
definitions, and tool calls without their schemas are refused by some providers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from domain.turn_settings import SystemMessage

SUMMARY_INSTRUCTIONS = (
    "You compact conversations. Below is the transcript of a conversation between a user and an assistant. "
    "Write a concise summary that lets the assistant continue it without the transcript: the user's goals and "
    "questions, the facts, decisions and tool results established, and what is still open. Write only the summary."
)
"""The summariser's system message; the built-in offline model recognises it (providers/offline.py)."""

SUMMARY_PREFIX = "Summary of the earlier conversation: "
"""How a summary reads where the model sees it (a system message in place of what it replaced)."""


def summary_message(summary: str) -> SystemMessage:
    """The summary as the model reads it, in place of what it replaced."""
    return SystemMessage(content=SUMMARY_PREFIX + summary)


MAX_SUMMARY_TOKENS = 2048
CHARS_PER_TOKEN = 4
"""The token estimate's rule of thumb (English text, OpenAI's tokenizers): about four characters a token."""
MESSAGE_OVERHEAD_TOKENS = 4
"""Per message: its role and separators."""


def estimate_tokens(messages: Sequence[dict[str, Any]]) -> int:
    """Roughly how many tokens these chat messages take: characters / 4 of their text (tool calls' JSON
    included) plus a few per message. Counted here, not taken from a provider's reported usage, so the
    decision is made before the model is called and with any provider."""
    chars = 0
    for message in messages:
        chars += len(_text(message.get("content")))
        for call in message.get("tool_calls") or []:
            chars += len(json.dumps(call.get("function") or {}))
    return math.ceil(chars / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD_TOKENS * len(messages)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _line(message: dict[str, Any]) -> str:
    text = " ".join(_text(message.get("content")).split())
    role = message.get("role")
    if role == "user":
        return f"User: {text}"
    if role == "assistant":
        calls = [
            f"{(call.get('function') or {}).get('name')}({(call.get('function') or {}).get('arguments', '')})"
            for call in message.get("tool_calls") or []
        ]
        said = text + (f" [calls {', '.join(calls)}]" if calls else "")
        return f"Assistant: {said.strip()}"
    if role == "tool":
        return f"Tool result: {text}"
    if text.startswith(SUMMARY_PREFIX):
        return f"Summary: {text.removeprefix(SUMMARY_PREFIX)}"
    return f"Instructions: {text}"


def transcript(messages: Sequence[dict[str, Any]]) -> str:
    return "\n".join(_line(message) for message in messages)
