"""Keeping tool results within what a model and a Temporal payload can take.

A tool can return megabytes; Temporal refuses payloads over 2 MB and a model's context is far
smaller. Results beyond the limit are cut, with a marker saying how much was left out, so neither
the model nor an operator mistakes the cut for the whole.
"""

from __future__ import annotations

from domain.content import InterleavedContent, TextContentItem

MAX_TOOL_OUTPUT_CHARS = 256 * 1024


def truncate_text(text: str, limit: int = MAX_TOOL_OUTPUT_CHARS) -> str:
    if len(text) <= limit:
        return text
    omitted = len(text) - limit
    return f"{text[:limit]}\n[truncated by durable-agents: {omitted:,} of {len(text):,} characters omitted]"


def truncate_content(content: InterleavedContent, limit: int = MAX_TOOL_OUTPUT_CHARS) -> InterleavedContent:
    if isinstance(content, str):
        return truncate_text(content, limit)
    if isinstance(content, TextContentItem):
        return TextContentItem(text=truncate_text(content.text, limit))
    if isinstance(content, list):
        return [truncate_content(item, limit) for item in content]  # type: ignore[misc]
    return content
