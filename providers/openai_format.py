"""Turns, tools and sampling parameters in the OpenAI chat-completions format."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from domain.content import (
    CompletionMessage,
    ImageContentItem,
    InputMessage,
    InterleavedContent,
    TextContentItem,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    content_as_text,
)
from domain.turn_settings import ContextMessage, FunctionTool, SystemMessage, TurnSettings
from domain.turns import InferenceStep, ShieldCallStep, Step, ToolExecutionStep
from workflows.contracts import ServerTool


def _user_content(content: InterleavedContent) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    items = content if isinstance(content, list) else [content]
    parts: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, TextContentItem):
            parts.append({"type": "text", "text": item.text})
        elif isinstance(item, ImageContentItem):
            url = item.image.url.uri if item.image.url else f"data:image/png;base64,{item.image.data}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


def _assistant(message: CompletionMessage, answered: set[str]) -> dict[str, Any]:
    result: dict[str, Any] = {"role": "assistant", "content": content_as_text(message.content)}
    # A call with no response (the turn hit max_infer_iters) would make the request invalid.
    calls = [call for call in message.tool_calls if call.call_id in answered]
    if calls:
        result["tool_calls"] = [
            {
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.tool_name, "arguments": call.arguments_json or "{}"},
            }
            for call in calls
        ]
    return result


def _tool_result(response: ToolResponse, called: set[str]) -> dict[str, Any]:
    """A result for a call the model made is a tool message; one for a call a client parsed from
    the model's text (ReAct) answers no tool_call, so it goes back as the user's message."""
    text = content_as_text(response.content)
    if response.call_id in called:
        return {"role": "tool", "tool_call_id": response.call_id, "content": text}
    return {"role": "user", "content": f"Result of {response.tool_name}: {text}"}


def turn_messages(input_messages: Sequence[InputMessage], steps: Sequence[Step]) -> list[dict[str, Any]]:
    """One turn as chat messages: its input, then what each step said, in order."""
    executed = {r.call_id for s in steps if isinstance(s, ToolExecutionStep) for r in s.tool_responses}
    answered = executed | {m.call_id for m in input_messages if isinstance(m, ToolResponseMessage)}
    called = {c.call_id for s in steps if isinstance(s, InferenceStep) for c in s.model_response.tool_calls}
    messages: list[dict[str, Any]] = []
    for message in input_messages:
        if isinstance(message, UserMessage):
            messages.append({"role": "user", "content": _user_content(message.content)})
        elif message.call_id not in executed:
            messages.append(
                {"role": "tool", "tool_call_id": message.call_id, "content": content_as_text(message.content)}
            )
    for step in steps:
        if isinstance(step, InferenceStep):
            reply = step.model_response
            if reply.tool_calls or content_as_text(reply.content):  # a reply a steer cut before it began is none
                messages.append(_assistant(reply, answered))
        elif isinstance(step, ToolExecutionStep):
            messages.extend(_tool_result(r, called) for r in step.tool_responses)
            messages.extend({"role": "user", "content": _user_content(m.content)} for m in step.followup_messages)
        elif isinstance(step, ShieldCallStep) and step.violation is not None:
            messages.append({"role": "assistant", "content": step.violation.user_message or ""})
    return messages


def context_messages(context: Sequence[ContextMessage]) -> list[dict[str, Any]]:
    """A detached turn's prior context. Calls left unanswered in it are dropped (a request with
    them would be invalid); results answer calls by id, as in the context the API built."""
    answered = {m.call_id for m in context if isinstance(m, ToolResponseMessage)}
    messages: list[dict[str, Any]] = []
    for message in context:
        if isinstance(message, UserMessage):
            messages.append({"role": "user", "content": _user_content(message.content)})
        elif isinstance(message, SystemMessage):
            messages.append({"role": "system", "content": content_as_text(message.content)})
        elif isinstance(message, CompletionMessage):
            messages.append(_assistant(message, answered))
        else:
            messages.append(
                {"role": "tool", "tool_call_id": message.call_id, "content": content_as_text(message.content)}
            )
    return messages


def function_tool_schema(tool: FunctionTool) -> dict[str, Any]:
    function: dict[str, Any] = {
        "name": tool.name,
        "parameters": tool.parameters or {"type": "object", "properties": {}},
    }
    if tool.description:
        function["description"] = tool.description
    if tool.strict is not None:
        function["strict"] = tool.strict
    return {"type": "function", "function": function}


def tool_choice(settings: TurnSettings) -> str | dict[str, Any]:
    choice = settings.tool_choice or "auto"
    if choice in ("auto", "required", "none"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def sampling(settings: TurnSettings) -> dict[str, Any]:
    """temperature, top_p, max_tokens and stop of the request; unset ones are left to the provider."""
    return {
        "temperature": settings.temperature,
        "top_p": settings.top_p,
        "max_tokens": settings.max_output_tokens,
        "stop": settings.stop,
    }


def response_format(settings: TurnSettings) -> dict[str, Any] | None:
    fmt = settings.response_format
    if not fmt or fmt.get("type") not in ("json_schema", "json_object"):
        return None
    return fmt


def system_message(instructions: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": instructions}] if instructions else []


def server_tool_schema(tool: ServerTool) -> dict[str, Any]:
    schema = tool.input_schema or {"type": "object", "properties": {}}
    function: dict[str, Any] = {"name": tool.name, "parameters": schema}
    if tool.description:
        function["description"] = tool.description
    return {"type": "function", "function": function}
