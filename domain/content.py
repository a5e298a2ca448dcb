"""Messages, tool calls and tool responses."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class WireModel(BaseModel):
    """Base of every wire model: unknown keys are ignored, as the reference server does."""

    model_config = ConfigDict(extra="ignore")


class URL(WireModel):
    uri: str


class TextContentItem(WireModel):
    type: Literal["text"] = "text"
    text: str


class ImageData(WireModel):
    url: URL | None = None
    data: str | None = None


class ImageContentItem(WireModel):
    type: Literal["image"] = "image"
    image: ImageData


ContentItem = Annotated[TextContentItem | ImageContentItem, Field(discriminator="type")]
InterleavedContent = str | ContentItem | list[ContentItem]


def content_as_text(content: InterleavedContent | None) -> str:
    """The text of a content value; images are not text and are left out."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    items = content if isinstance(content, list) else [content]
    return "".join(item.text for item in items if isinstance(item, TextContentItem))


StopReason = Literal["end_of_turn", "end_of_message", "out_of_tokens"]


class ToolCall(WireModel):
    call_id: str
    tool_name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    arguments_json: str | None = None

    @model_validator(mode="after")
    def _fill_arguments_json(self) -> ToolCall:
        # Clients read either form; the async helper needs `arguments` as an object.
        if isinstance(self.arguments, str):
            try:
                parsed = json.loads(self.arguments)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                self.arguments = parsed
        if self.arguments_json is None and isinstance(self.arguments, dict):
            self.arguments_json = json.dumps(self.arguments)
        return self


class ToolResponse(WireModel):
    call_id: str = Field(min_length=1)
    tool_name: str
    content: InterleavedContent
    metadata: dict[str, Any] | None = None


class UserMessage(WireModel):
    role: Literal["user"] = "user"
    content: InterleavedContent
    context: InterleavedContent | None = None


class ToolResponseMessage(WireModel):
    role: Literal["tool"] = "tool"
    call_id: str
    content: InterleavedContent


class CompletionMessage(WireModel):
    role: Literal["assistant"] = "assistant"
    content: InterleavedContent = ""
    stop_reason: StopReason = "end_of_turn"
    tool_calls: list[ToolCall] = Field(default_factory=list)


InputMessage = Annotated[UserMessage | ToolResponseMessage, Field(discriminator="role")]


def with_appended_text(messages: list[InputMessage], text: str) -> list[InputMessage]:
    """The messages with `text` appended to the last one (how documents join a turn's input)."""
    last = messages[-1]
    if isinstance(last.content, str):
        merged = last.model_copy(update={"content": f"{last.content}\n{text}"})
    else:
        items = last.content if isinstance(last.content, list) else [last.content]
        merged = last.model_copy(update={"content": [*items, TextContentItem(text=text)]})
    return [*messages[:-1], merged]
