"""Running the web search tool (workflows/web_search_tool.py: what the model is offered), for llama-stack's
`builtin::websearch` and the Responses `web_search` tool alike: `ToolCatalog.call` runs it on the search engine
the operator configured (search_engines.py).

A search answers the model with the hits as JSON (llama-stack's shape: `{"query", "top_k": [{title, url,
content}]}`), capped in count and in the length of each snippet, and records, in the tool response's
metadata, what a Responses client is shown: the query, the sources, and whether the search failed. An
engine that fails answers the model a tool error: the turn goes on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

ENGINE_SETTING = "DA_WEB_SEARCH_ENGINE"
NOT_CONFIGURED = (
    f"Web search is not configured on this server: an operator sets {ENGINE_SETTING} "
    "(searxng, brave or tavily) and its settings to enable it."
)
SNIPPET_CHARS = 1000
"""The most characters of one hit's text the model reads."""


@dataclass(frozen=True)
class WebHit:
    title: str
    url: str
    content: str


class SearchFailed(Exception):
    """The engine could not answer; the message says why, without the engine's key or internal addresses."""


class SearchEngine(Protocol):
    """One search backend: the hits for a query, at most `count`, best first. `domains`: when not empty,
    only hits on these domains (or their subdomains) are wanted; an engine that can filters at the source."""

    @property
    def name(self) -> str: ...

    async def search(self, query: str, count: int, domains: list[str]) -> list[WebHit]: ...


def on_domains(url: str, domains: list[str]) -> bool:
    host = (urlsplit(url).hostname or "").lower().rstrip(".")
    return any(host == d or host.endswith("." + d) for d in (d.lower().strip(".") for d in domains))


@dataclass(frozen=True)
class SearchOutcome:
    content: str
    is_error: bool
    record: dict[str, Any]
    """What the Responses dialect shows of the call (`web_search_call`): query, sources, status."""


@dataclass(frozen=True)
class WebSearch:
    engine: SearchEngine
    max_results: int

    async def run(self, arguments: dict[str, Any]) -> SearchOutcome:
        """`arguments`: the model's `query`, and the request's `allowed_domains` and `max_results` if any."""
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            return _failed("", "Error: web_search needs a non-empty string 'query'.")
        domains = [str(d) for d in arguments.get("allowed_domains") or []]
        count = min(self.max_results, int(arguments.get("max_results") or self.max_results))
        try:
            hits = await self.engine.search(query, count, domains)
        except SearchFailed as failure:
            return _failed(query, f"Error: the web search failed: {failure}")
        if domains:
            hits = [hit for hit in hits if on_domains(hit.url, domains)]
        hits = [hit for hit in hits if urlsplit(hit.url).scheme in ("http", "https")][:count]
        top_k = [{"title": h.title, "url": h.url, "content": h.content[:SNIPPET_CHARS]} for h in hits]
        record = {
            "query": query,
            "status": "completed",
            "sources": [{"type": "url", "url": h.url} for h in hits],
            "titles": {h.url: h.title for h in hits},
        }
        return SearchOutcome(json.dumps({"query": query, "top_k": top_k}), is_error=False, record=record)


def _failed(query: str, message: str) -> SearchOutcome:
    return SearchOutcome(message, is_error=True, record={"query": query, "status": "failed", "sources": []})
