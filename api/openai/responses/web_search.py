"""The Responses `web_search` tool as this dialect shows it: the tool in a request (offered to the model while
its segment runs: workflows/web_search_tool.py; run by tool_runtime/web_search.py), the `web_search_call` item
of a search the turn ran, and the `url_citation` annotations of the result URLs the model's answer names."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from api.openai.responses import ids
from api.openai.responses.wire import WebSearchAction, WebSearchCallItem, WebSearchSource
from domain.content import ToolCall, ToolResponse
from workflows.contracts import WebSearchConfig

CONTEXT_RESULTS = {"low": 3, "medium": None, "high": None}
"""`search_context_size` → the most results a search gives the model (None: the operator's maximum)."""


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class WebSearchFilters(_Lenient):
    allowed_domains: list[str] | None = Field(default=None, max_length=100)


class UserLocation(_Lenient):
    type: Literal["approximate"] | None = None
    city: str | None = None
    country: str | None = None
    region: str | None = None
    timezone: str | None = None

    def located(self) -> bool:
        return any((self.city, self.country, self.region, self.timezone))


class WebSearchCallInput(_Lenient):
    """A web_search call of an earlier response, sent back as input (openai-agents does): the model reads the
    answer that used it, not the search again."""

    type: Literal["web_search_call"] = "web_search_call"
    id: str | None = None
    action: dict[str, Any] | None = None
    status: str | None = None


class WebSearchTool(_Lenient):
    type: Literal["web_search", "web_search_2025_08_26"]
    filters: WebSearchFilters | None = None
    search_context_size: Literal["low", "medium", "high"] | None = None
    user_location: UserLocation | None = None
    external_web_access: bool | None = None
    search_content_types: list[str] | None = None
    image_settings: dict[str, Any] | None = None

    def unsupported(self) -> str | None:
        """The field this server cannot honour, with why; None when it can run the tool as asked."""
        if set(self.search_content_types or []) - {"text"} or self.image_settings:
            return "search_content_types / image_settings: the search returns text results only"
        if self.user_location is not None and self.user_location.located():
            return "user_location: this server's search engines are not localised; omit the location fields"
        if self.external_web_access is False:
            return "external_web_access: false (a cache-only search) is not available; every search is live"
        return None

    def config(self) -> WebSearchConfig:
        """The tool as the turn runs it: what it narrows reaches every call, and the model cannot override it."""
        domains = self.filters.allowed_domains if self.filters is not None else None
        most = CONTEXT_RESULTS.get(self.search_context_size or "medium")
        return WebSearchConfig(allowed_domains=domains or None, max_results=most)


def _query(call: ToolCall) -> str:
    arguments = call.arguments if isinstance(call.arguments, dict) else {}
    query = arguments.get("query")
    return query if isinstance(query, str) else ""


def web_search_call_item(
    turn_id: str, step_id: str, call: ToolCall, response: ToolResponse
) -> WebSearchCallItem | None:
    """The web_search_call item of a server step's call, its sources shown (whether or not the request included
    `web_search_call.action.sources`: they are what its citations point at); None for any other call."""
    record = (response.metadata or {}).get("web_search")
    if not isinstance(record, dict):
        return None
    query = str(record.get("query") or _query(call))
    sources = [WebSearchSource(url=str(s.get("url", ""))) for s in record.get("sources") or [] if isinstance(s, dict)]
    return WebSearchCallItem(
        id=ids.web_search_call_id(turn_id, step_id, call.call_id),
        action=WebSearchAction(query=query, queries=[query] if query else [], sources=sources),
        status="failed" if record.get("status") == "failed" else "completed",
    )


def running_web_search_item(turn_id: str, started: dict[str, Any]) -> WebSearchCallItem:
    call = ToolCall.model_validate(started.get("call") or {})
    query = _query(call)
    return WebSearchCallItem(
        id=ids.web_search_call_id(turn_id, str(started.get("step_id", "")), call.call_id),
        action=WebSearchAction(query=query, queries=[query] if query else []),
        status="in_progress",
    )


def found_pages(response: ToolResponse) -> dict[str, str]:
    """URL → title of the pages a web search step found; empty for any other step."""
    record = (response.metadata or {}).get("web_search")
    titles = record.get("titles") if isinstance(record, dict) else None
    return {str(url): str(title) for url, title in titles.items()} if isinstance(titles, dict) else {}


def url_citations(text: str, pages: dict[str, str]) -> list[dict[str, Any]]:
    """A `url_citation` for each place the text names a page a search of the response found, in text order."""
    if not pages:
        return []
    pattern = re.compile("|".join(re.escape(url) for url in sorted(pages, key=len, reverse=True)))
    return [
        {
            "type": "url_citation",
            "start_index": found.start(),
            "end_index": found.end(),
            "url": found.group(),
            "title": pages[found.group()],
        }
        for found in pattern.finditer(text)
    ]
