"""What every chat model takes and yields. Requests and messages use the OpenAI chat format."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from domain.content import StopReason, ToolCall


@dataclass(frozen=True)
class ChatRequest:
    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    """None: the provider's default (parallel calls allowed)."""
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    stop: list[str] | None = None
    response_format: dict[str, Any] | None = None


@dataclass(frozen=True)
class TextPart:
    text: str


@dataclass(frozen=True)
class ToolCallPart:
    tool_call: ToolCall


@dataclass(frozen=True)
class FinishPart:
    stop_reason: StopReason
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    """Token usage, when the provider reports it."""


ReplyPart = TextPart | ToolCallPart | FinishPart


class ProviderRejected(Exception):
    """The provider refused the request (bad request, auth, unknown model): retrying cannot help."""


class ProviderUnavailable(Exception):
    """The provider failed in a way a later attempt may not (429, 5xx): Temporal retries the call."""


class ChatModel(Protocol):
    def stream(self, request: ChatRequest) -> AsyncIterator[ReplyPart]:
        """Yield text as it is generated, each tool call once complete, and a finish part last."""
        ...


async def whole_text(model: ChatModel, request: ChatRequest) -> tuple[str, FinishPart | None]:
    """A reply read to its end, for calls that need it whole (summaries, guard verdicts): its text, and its
    finish part if the provider sent one (usage comes with it)."""
    parts: list[str] = []
    finish: FinishPart | None = None
    async for part in model.stream(request):
        if isinstance(part, TextPart):
            parts.append(part.text)
        elif isinstance(part, FinishPart):
            finish = part
    return "".join(parts), finish
