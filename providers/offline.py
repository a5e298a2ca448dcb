"""A deterministic stand-in for a model, so the demo and the tests run with no network.

It is not an LLM. It follows five rules, checked in order:

0. If it is asked to compact a conversation (the system message is compaction/summary.py's
   SUMMARY_INSTRUCTIONS), it summarises the transcript it is given: "Summary of <n> earlier messages.
   The user said: «<first 60 characters of a user line>»; …" with the last 8 user lines, and
   "(continues an earlier summary)" when the transcript holds one. Deterministic and bounded.
1. If the conversation ends with tool results, it reports them: "Tool <name> returned: <content>."
2. If the last user message contains `call tool <name>` (optionally followed by a JSON object of
   arguments) and a tool of that name is offered, it calls that tool.
3. If the last user message asks to look something up in the documents ("look up <words> in the documents",
   "search the documents for <words>", "what do the documents say about <words>"; also "files", "docs")
   and a search tool is offered (file_search, knowledge_search), it calls it with {"query": "<words>"}.
4. Otherwise it echoes: "You said: <last user message>".

With tool_choice "none" it never calls a tool; with "required" or a named tool and no phrase,
it calls the required tool (the first one offered for "required") with no arguments.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

from compaction.summary import SUMMARY_INSTRUCTIONS
from domain.content import ToolCall
from providers.base import ChatRequest, FinishPart, ReplyPart, TextPart, ToolCallPart

_CALL_PHRASE = re.compile(r"call tool\s+([A-Za-z0-9_.:-]+)", re.IGNORECASE)
_PLACES = r"(?:the|my|our|these|those) (?:documents?|docs|files?)"
_LOOKUP_PHRASE = re.compile(
    rf"(?:look up|search for|find)\s+(?P<a>.+?)\s+in {_PLACES}"
    rf"|search {_PLACES} for\s+(?P<b>.+?)\s*(?:[?.!]|$)"
    rf"|what do {_PLACES} say about\s+(?P<c>.+?)\s*(?:[?.!]|$)",
    re.IGNORECASE,
)
SEARCH_TOOLS = ("file_search", "knowledge_search")
_SUMMARY_USER_LINES = 8
_SUMMARY_LINE_CHARS = 60


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


def _words_to_look_up(text: str) -> str | None:
    found = _LOOKUP_PHRASE.search(text)
    if found is None:
        return None
    words = next(group for group in found.groups() if group is not None)
    return words.strip(" \t\"'“”") or None


def _summary(transcript: str) -> str:
    lines = transcript.splitlines()
    said = [line.removeprefix("User: ")[:_SUMMARY_LINE_CHARS] for line in lines if line.startswith("User: ")]
    text = f"Summary of {len(lines)} earlier messages."
    if any(line.startswith("Summary: ") for line in lines):
        text += " (continues an earlier summary)"
    if said:
        text += " The user said: " + "; ".join(f"«{line}»" for line in said[-_SUMMARY_USER_LINES:]) + "."
    return text


class OfflineModel:
    def _decide(self, request: ChatRequest) -> tuple[str, ToolCall | None]:
        messages = request.messages
        if messages and messages[0]["role"] == "system" and messages[0]["content"] == SUMMARY_INSTRUCTIONS:
            return _summary(_text(messages[-1]["content"])), None
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
            search = next((name for name in tool_names if name in SEARCH_TOOLS), None)
            if search is not None and (words := _words_to_look_up(user_text)):
                return "", self._call(search, {"query": words}, call_index)
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
