"""Search results in the shapes the knowledge tools answer with: llama-stack's `knowledge_search` text (the
0.2.x RAG tool's, which the official client and its event logger print), and the Responses `file_search`
text, whose passages carry the citation markers a model copies into its answer (see `CITATION`).
"""

from __future__ import annotations

import re
from typing import Any

from knowledge.search import SearchResult

DEFAULT_TEMPLATE = "Result {index}\nContent: {chunk.content}\nMetadata: {metadata}\n"

CITATION = re.compile(r"【([A-Za-z0-9_.:-]{1,64})†([^【】\n]{0,256})】")
"""A citation marker, `【id†filename】`: written before each passage of a file_search answer, and copied by the
model after what it took from it. The id is a file's (`file-…`), or for chunks `vector-io/insert` put in a
vector DB, their document's. The Responses view takes out each marker naming a source a search of the turn
returned, and makes a file's a `file_citation` annotation; a marker naming nothing searched is the model's own
text and stays."""


def searched_sources(answer: str) -> set[str]:
    """The ids of the sources a file_search answer's passages came from (the markers it was written with)."""
    return {found.group(1) for found in CITATION.finditer(answer)}


def chunk_metadata(result: SearchResult) -> dict[str, Any]:
    """A chunk's metadata as llama-stack shows it: its own if it was inserted with some, else its file's."""
    if result.metadata is not None:
        return result.metadata
    return {
        "document_id": result.attributes.get("document_id", result.file_id),
        "file_id": result.file_id,
        "filename": result.filename,
        **{key: value for key, value in result.attributes.items() if key != "document_id"},
    }


def _render(template: str, index: int, result: SearchResult, metadata: dict[str, Any]) -> str:
    """The template's three placeholders filled in, by replacement: a caller's template is not a format string
    that could reach into the server's objects."""
    return (
        template.replace("{index}", str(index))
        .replace("{chunk.content}", result.text)
        .replace("{metadata}", str(metadata))
    )


def rag_answer(
    results: list[SearchResult], query: str, max_tokens: int, template: str = DEFAULT_TEMPLATE
) -> tuple[list[str] | None, dict[str, Any]]:
    """The knowledge_search answer's text items and metadata (`document_ids`, `chunks`, `scores`); None and
    empty metadata when nothing was found. Chunks are taken best first until `max_tokens` would be passed."""
    if not results:
        return None, {}
    texts = [f"knowledge_search tool found {len(results)} chunks:\nBEGIN of knowledge_search tool results.\n"]
    tokens = 0
    shown: list[SearchResult] = []
    for index, result in enumerate(results, start=1):
        metadata = chunk_metadata(result)
        tokens += int(metadata.get("token_count") or len(result.text) // 4)
        if tokens > max_tokens:
            break
        texts.append(_render(template, index, result, metadata))
        shown.append(result)
    texts.append("END of knowledge_search tool results.\n")
    texts.append(
        f'The above results were retrieved to help answer the user\'s query: "{query}". '
        "Use them as supported by your knowledge.\n"
    )
    metadata = {
        "document_ids": [chunk_metadata(result)["document_id"] for result in shown],
        "chunks": [result.text for result in shown],
        "scores": [result.score for result in shown],
    }
    return texts, metadata


_NOT_IN_MARKER = re.compile(r"[【】†\n]")


def marker(file_id: str, filename: str) -> str:
    return f"【{file_id}†{_NOT_IN_MARKER.sub(' ', filename)[:256]}】"


def file_search_answer(results: list[SearchResult], queries: list[str]) -> str:
    """What the model reads of a file_search call: each passage after its citation marker."""
    asked = "; ".join(f'"{query}"' for query in queries)
    if not results:
        return f"file_search found no passages for {asked}."
    passages = "\n".join(f"{marker(r.file_id, r.filename)} {r.text.strip()}" for r in results)
    return f"file_search found {len(results)} passages for {asked}:\n{passages}"
