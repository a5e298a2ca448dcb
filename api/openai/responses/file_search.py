"""The Responses `file_search` tool as this dialect shows it: the tool in a request, the `file_search_call` item of
a search the turn ran (activities/knowledge_search.py), and the `file_citation` annotations made from the markers
the model copies into its answer (knowledge/rag_results.py writes them before each passage)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from api.openai.responses import ids
from api.openai.responses.wire import FileSearchCallItem, FileSearchResult
from domain.content import ToolCall, ToolResponse
from knowledge.rag_results import CITATION


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class HybridSearchWeights(_Lenient):
    embedding_weight: float = Field(default=1.0, ge=0)
    text_weight: float = Field(default=1.0, ge=0)


class FileSearchRanking(_Lenient):
    ranker: str | None = None
    score_threshold: float = Field(default=0.0, ge=0.0, le=1.0)
    hybrid_search: HybridSearchWeights | None = None


class FileSearchTool(_Lenient):
    type: Literal["file_search"]
    vector_store_ids: list[str] = Field(min_length=1, max_length=20)
    max_num_results: int = Field(default=10, ge=1, le=50)
    filters: dict[str, Any] | None = None
    ranking_options: FileSearchRanking | None = None


def _queries(call: ToolCall) -> list[str]:
    arguments = call.arguments if isinstance(call.arguments, dict) else {}
    found = arguments.get("queries")
    queries = [str(query) for query in found] if isinstance(found, list) else []
    if isinstance(arguments.get("query"), str):
        queries.insert(0, arguments["query"])
    return queries


def file_search_call_item(
    turn_id: str, step_id: str, call: ToolCall, response: ToolResponse
) -> FileSearchCallItem | None:
    """The file_search_call item of a server step's call; None for any other call. Its results are shown
    when the request included them (the activity then recorded them)."""
    record = (response.metadata or {}).get("file_search")
    if not isinstance(record, dict):
        return None
    results = record.get("results")
    return FileSearchCallItem(
        id=ids.file_search_call_id(turn_id, step_id, call.call_id),
        queries=[str(query) for query in record.get("queries") or _queries(call)],
        status="failed" if record.get("status") == "failed" else "completed",
        results=[FileSearchResult.model_validate(result) for result in results] if results is not None else None,
    )


def running_file_search_item(turn_id: str, started: dict[str, Any]) -> FileSearchCallItem:
    call = ToolCall.model_validate(started.get("call") or {})
    return FileSearchCallItem(
        id=ids.file_search_call_id(turn_id, str(started.get("step_id", "")), call.call_id),
        queries=_queries(call),
        status="in_progress",
    )


def cited(text: str, searched: set[str]) -> tuple[str, list[dict[str, Any]]]:
    """The text without the citation markers that name a source the turn's searches returned (`searched`),
    and a `file_citation` annotation for each of a file, at the position in the shown text where its marker
    stood (knowledge/rag_results.py writes the markers the model copies). A marker naming nothing searched is
    left as the model wrote it, unannotated: no citation of a file no search found."""
    shown: list[str] = []
    annotations: list[dict[str, Any]] = []
    length = 0
    last = 0
    for found in CITATION.finditer(text):
        source, filename = found.group(1), found.group(2).strip()
        if source not in searched:
            continue
        before = text[last : found.start()]
        shown.append(before)
        length += len(before)
        if source.startswith("file-"):
            annotations.append({"type": "file_citation", "file_id": source, "filename": filename, "index": length})
        last = found.end()
    shown.append(text[last:])
    return "".join(shown), annotations


def showable_end(text: str, start: int) -> int:
    """Where the part of a message's text that can be shown ends: before a marker that may still be arriving."""
    opening = text.rfind("【", start)
    return len(text) if opening < 0 or "】" in text[opening:] else opening
