"""The items a caller may write into a conversation, accepted as liberally as OpenAI accepts them, and the
stored form every reader gets back.

Accepted: a message with or without `type` and with `content` as a string or as parts; `function_call`;
`function_call_output`; and any other Responses item type (`mcp_*`, `reasoning`, tool calls of hosted tools…)
as it comes, its fields unchecked. Stored: every item with an `id` (generated when absent) and
`status: "completed"` where its type has a status and the caller gave none; a string `content` becomes one
`input_text` part (`output_text` for the assistant), which typed clients expect.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, StringConstraints, Tag

from api.openai.responses.ids import new_item_id
from store.responses.conversations import Item

ItemId = Annotated[str, StringConstraints(min_length=1, max_length=128)]

_OWN_MODELS = ("message", "function_call", "function_call_output")
_NOT_STORABLE = ("item_reference",)
"""A reference names an item stored elsewhere; a conversation keeps items themselves."""

_ID_PREFIXES = {
    "message": "msg",
    "function_call": "fc",
    "function_call_output": "fco",
    "reasoning": "rs",
    "mcp_list_tools": "mcpl",
    "mcp_call": "mcp",
    "mcp_approval_request": "mcpr",
    "mcp_approval_response": "mcpa",
}
_WITH_STATUS = {
    "message",
    "function_call",
    "function_call_output",
    "reasoning",
    "mcp_call",
    "file_search_call",
    "web_search_call",
    "computer_call",
    "computer_call_output",
    "code_interpreter_call",
    "image_generation_call",
    "local_shell_call",
    "local_shell_call_output",
    "shell_call",
    "shell_call_output",
    "apply_patch_call",
    "apply_patch_call_output",
    "tool_search_call",
}
"""Item types whose OpenAI shape has a `status`."""


class _Open(BaseModel):
    """Unknown fields are kept: clients send fields this server has no use for, and expect them back."""

    model_config = ConfigDict(extra="allow")


class ContentPart(_Open):
    type: str = Field(min_length=1, description="input_text, input_image, input_file, output_text, refusal, …")


class MessageItem(_Open):
    type: Literal["message"] = "message"
    id: ItemId | None = None
    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[ContentPart]
    status: str | None = None


class FunctionCallItem(_Open):
    type: Literal["function_call"]
    id: ItemId | None = None
    call_id: str
    name: str
    arguments: str = Field(description="The call's arguments as a JSON string")
    status: str | None = None


class FunctionCallOutputItem(_Open):
    type: Literal["function_call_output"]
    id: ItemId | None = None
    call_id: str
    output: str | list[ContentPart]
    status: str | None = None


class OtherItem(_Open):
    """Any other Responses item type (mcp_call, mcp_list_tools, reasoning, …), stored as it comes."""

    type: str = Field(min_length=1, json_schema_extra={"not": {"enum": [*_OWN_MODELS, *_NOT_STORABLE]}})
    id: ItemId | None = None


def _kind(value: Any) -> str | None:
    """Which model reads an item: a `type`-less item with a `role` is a message, as OpenAI reads it."""
    if isinstance(value, BaseModel):
        value = {"type": getattr(value, "type", None)}
    if not isinstance(value, dict):
        return None
    kind = value.get("type")
    if kind is None:
        return "message" if "role" in value else None
    if not isinstance(kind, str) or kind in _NOT_STORABLE:
        return None
    return kind if kind in _OWN_MODELS else "other"


InputItem = Annotated[
    Annotated[MessageItem, Tag("message")]
    | Annotated[FunctionCallItem, Tag("function_call")]
    | Annotated[FunctionCallOutputItem, Tag("function_call_output")]
    | Annotated[OtherItem, Tag("other")],
    Discriminator(
        _kind,
        custom_error_type="invalid_item",
        custom_error_message="An item needs a `type` (message, function_call, function_call_output, mcp_call, …) "
        "or a `role`; item_reference cannot be stored",
    ),
]


def stored_item(item: MessageItem | FunctionCallItem | FunctionCallOutputItem | OtherItem) -> Item:
    """The item as it is kept and returned: with its id, its status and a message's content as parts."""
    body = item.model_dump(exclude_unset=True)
    kind = item.type
    if isinstance(item, MessageItem):
        body["content"] = _parts(item)
    item_id = item.id or new_item_id(_ID_PREFIXES.get(kind, "item"))
    if kind in _WITH_STATUS and body.get("status") is None:
        body["status"] = "completed"
    return Item(item_id, {"id": item_id, "type": kind, **{k: v for k, v in body.items() if k not in ("id", "type")}})


def _parts(message: MessageItem) -> list[dict[str, Any]]:
    if not isinstance(message.content, str):
        return [part.model_dump() for part in message.content]
    if message.role == "assistant":
        return [{"type": "output_text", "text": message.content, "annotations": []}]
    return [{"type": "input_text", "text": message.content}]
