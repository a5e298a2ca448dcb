"""Documents attached to a turn become part of its last message, as in the reference server.

Inline documents are applied here; URL documents are fetched by the turn's workflow (an activity),
so a slow or failing server neither blocks the request nor is fetched twice.
"""

from __future__ import annotations

from fastapi import HTTPException

from domain.agents import Document
from domain.content import InputMessage, TextContentItem, content_as_text, with_appended_text


def _document_text(document: Document, index: int) -> str:
    if not document.mime_type.startswith("text/"):
        raise HTTPException(
            400, f"documents[{index}] has mime_type {document.mime_type!r}; only text/* documents are supported"
        )
    content = document.content
    if isinstance(content, str):
        return content
    try:
        return content_as_text(TextContentItem.model_validate(content) if isinstance(content, dict) else content)
    except ValueError as invalid:
        raise HTTPException(400, f"documents[{index}] content is neither text nor a text item") from invalid


def document_url(document: Document) -> str | None:
    """The URL of a document given as `{"uri": …}` or `{"type": "url", "uri": …}`, else None."""
    content = document.content
    if isinstance(content, dict) and isinstance(uri := content.get("uri"), str):
        return uri
    return None


def url_documents(documents: list[Document]) -> list[str]:
    urls = []
    for index, document in enumerate(documents):
        url = document_url(document)
        if url is None:
            continue
        if not url.startswith(("http://", "https://")):
            raise HTTPException(400, f"documents[{index}] has URL {url!r}; only http:// and https:// are fetched")
        if not document.mime_type.startswith("text/"):
            raise HTTPException(
                400, f"documents[{index}] has mime_type {document.mime_type!r}; only text/* is supported"
            )
        urls.append(url)
    return urls


def with_documents(messages: list[InputMessage], documents: list[Document]) -> list[InputMessage]:
    """The messages with the inline documents' text appended to the last one."""
    inline = [(index, d) for index, d in enumerate(documents) if document_url(d) is None]
    if not inline:
        return messages
    return with_appended_text(messages, "\n".join(_document_text(document, index) for index, document in inline))
