"""Writing a summary: the request a model is sent, the token estimate that decides when, and the call.

The model is given the conversation as a transcript (one line per message: `User: …`, `Assistant: …`,
`Tool result: …`, `Summary: …` for an earlier summary), not as chat messages: a transcript needs no tool
definitions, and tool calls without their schemas are refused by some providers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from domain.runtime import SystemMessage
from providers.base import ChatModel, ChatRequest, FinishPart, TextPart

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


def summary_request(model_name: str, messages: Sequence[dict[str, Any]]) -> ChatRequest:
    return ChatRequest(
        model=model_name,
        messages=[
            {"role": "system", "content": SUMMARY_INSTRUCTIONS},
            {"role": "user", "content": transcript(messages)},
        ],
        max_tokens=MAX_SUMMARY_TOKENS,
    )


@dataclass(frozen=True)
class Summary:
    text: str
    input_tokens: int
    output_tokens: int


async def summarize(model: ChatModel, model_name: str, messages: Sequence[dict[str, Any]]) -> Summary:
    """The model's summary of `messages`; token counts as the provider reported them, else estimated."""
    request = summary_request(model_name, messages)
    parts: list[str] = []
    reported: FinishPart | None = None
    async for part in model.stream(request):
        if isinstance(part, TextPart):
            parts.append(part.text)
        elif isinstance(part, FinishPart):
            reported = part
    text = "".join(parts).strip()
    input_tokens = (reported.prompt_tokens if reported else None) or estimate_tokens(request.messages)
    output_tokens = (reported.completion_tokens if reported else None) or math.ceil(len(text) / CHARS_PER_TOKEN)
    return Summary(text=text, input_tokens=input_tokens, output_tokens=output_tokens)
