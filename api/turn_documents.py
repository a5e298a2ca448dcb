"""Documents attached to a turn become part of its last message, as in the reference server."""

from __future__ import annotations

from fastapi import HTTPException

from domain.agents import Document
from domain.content import InputMessage, TextContentItem, content_as_text


def _document_text(document: Document, index: int) -> str:
    if not document.mime_type.startswith("text/"):
        raise HTTPException(
            400, f"documents[{index}] has mime_type {document.mime_type!r}; only text/* documents are supported"
        )
    content = document.content
    if isinstance(content, dict) and "uri" in content:
        raise HTTPException(400, f"documents[{index}] is a URL; pass the document's text inline instead")
    if isinstance(content, str):
        return content
    try:
        return content_as_text(TextContentItem.model_validate(content) if isinstance(content, dict) else content)
    except ValueError as invalid:
        raise HTTPException(400, f"documents[{index}] content is neither text nor a text item") from invalid


def with_documents(messages: list[InputMessage], documents: list[Document]) -> list[InputMessage]:
    if not documents:
        return messages
    text = "\n".join(_document_text(document, index) for index, document in enumerate(documents))
    last = messages[-1]
    if isinstance(last.content, str):
        merged = last.model_copy(update={"content": last.content + text})
    else:
        items = last.content if isinstance(last.content, list) else [last.content]
        merged = last.model_copy(update={"content": [*items, TextContentItem(text=text)]})
    return [*messages[:-1], merged]
