"""A deterministic stand-in for a model, so the demo and the tests run with no network.

It is not an LLM. It follows three rules, checked in order:

1. If the conversation ends with tool results, it reports them: "Tool <name> returned: <content>."
2. If the last user message contains `call tool <name>` (optionally followed by a JSON object of
   arguments) and a tool of that name is offered, it calls that tool.
3. Otherwise it echoes: "You said: <last user message>".

With tool_choice "none" it never calls a tool; with "required" or a named tool and no phrase,
it calls the required tool (the first one offered for "required") with no arguments.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

from domain.content import ToolCall
from providers.base import ChatRequest, FinishPart, ReplyPart, TextPart, ToolCallPart

_CALL_PHRASE = re.compile(r"call tool\s+([A-Za-z0-9_.:-]+)", re.IGNORECASE)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _arguments_after(text: str, start: int) -> dict[str, Any]:
    rest = text[start:].lstrip()
    if not rest.startswith("{"):
        return {}
    try:
        value, _ = json.JSONDecoder().raw_decode(rest)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class OfflineModel:
    def _decide(self, request: ChatRequest) -> tuple[str, ToolCall | None]:
        messages = request.messages
        tool_names = [tool["function"]["name"] for tool in request.tools]
        tool_results: list[dict[str, Any]] = []
        for message in reversed(messages):
            if message["role"] != "tool":
                break
            tool_results.insert(0, message)
        if tool_results:
            names = {
                call["id"]: call["function"]["name"]
                for message in messages
                if message["role"] == "assistant"
                for call in message.get("tool_calls") or []
            }
            reports = [
                f"Tool {names.get(m['tool_call_id'], 'unknown')} returned: {_text(m['content'])}." for m in tool_results
            ]
            return " ".join(reports), None

        user_text = next((_text(m["content"]) for m in reversed(messages) if m["role"] == "user"), "")
        call_index = len([m for m in messages if m["role"] == "assistant"])
        choice = request.tool_choice
        if choice != "none" and tool_names:
            match = _CALL_PHRASE.search(user_text)
            if match and match.group(1) in tool_names:
                return "", self._call(match.group(1), _arguments_after(user_text, match.end()), call_index)
            if match:
                return f"I have no tool named {match.group(1)}; I can call: {', '.join(tool_names)}.", None
            if choice == "required":
                return "", self._call(tool_names[0], {}, call_index)
            if isinstance(choice, dict):
                return "", self._call(choice["function"]["name"], {}, call_index)
        return f"You said: {user_text}", None

    @staticmethod
    def _call(name: str, arguments: dict[str, Any], index: int) -> ToolCall:
        return ToolCall(call_id=f"call_offline_{index}_{name}", tool_name=name, arguments=arguments)

    async def stream(self, request: ChatRequest) -> AsyncIterator[ReplyPart]:
        text, call = self._decide(request)
        words = re.findall(r"\S+\s*", text)
        for word in words:
            yield TextPart(word)
        if call is not None:
            yield ToolCallPart(call)
        # Usage as a provider reports it, words standing for tokens: a response's `usage` is not null offline.
        prompt = sum(len(_text(message.get("content")).split()) for message in request.messages)
        yield FinishPart("end_of_turn", prompt_tokens=prompt, completion_tokens=len(words) + (call is not None))
