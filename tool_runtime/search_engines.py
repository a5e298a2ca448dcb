"""The web search backends, over their documented HTTP APIs, each request through the outbound policy:
a SearxNG instance's JSON endpoint, Brave Search and Tavily. Which one runs is the operator's choice
(DA_WEB_SEARCH_ENGINE), made when the tool catalog is composed; their keys come from the settings only."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

import httpx2

from configuration.settings import Settings
from outbound.http import Outbound, ReplyTooLarge
from outbound.policy import OutboundRefused
from tool_runtime.web_search import SearchEngine, SearchFailed, WebHit, WebSearch

log = logging.getLogger(__name__)

BRAVE_URL = "https://api.search.brave.com/res/v1/web/search"
TAVILY_URL = "https://api.tavily.com/search"


def _site_filter(query: str, domains: list[str]) -> str:
    return f"{query} ({' OR '.join(f'site:{d}' for d in domains)})" if domains else query


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _hits(items: Any, text_field: str) -> list[WebHit]:
    if not isinstance(items, list):
        raise SearchFailed("the search engine's answer has no list of results")
    return [
        WebHit(title=_text(item.get("title")), url=item["url"], content=_text(item.get(text_field)))
        for item in items
        if isinstance(item, dict) and isinstance(item.get("url"), str)
    ]


@dataclass(frozen=True)
class _Http:
    """One request to the engine, its reply read within the byte limit and parsed as JSON; every failure a
    SearchFailed whose message names the engine and the kind of failure (the details go to the log)."""

    outbound: Outbound
    max_reply_bytes: int

    async def json(self, engine: str, request: httpx2.Request) -> Any:
        incidents: list[Exception] = []
        try:
            async with self.outbound.client(self.max_reply_bytes, incidents=incidents) as client:
                response = await client.send(request)
        except (OutboundRefused, ReplyTooLarge) as refused:
            raise SearchFailed(f"{engine}: {refused}") from None
        except httpx2.HTTPError as error:
            if incidents:
                raise SearchFailed(f"{engine}: {incidents[0]}") from None
            log.warning("web search engine %s could not be reached: %r", engine, error)
            raise SearchFailed(f"{engine} could not be reached") from None
        if response.status_code != 200:
            raise SearchFailed(f"{engine} answered HTTP {response.status_code}")
        try:
            return json.loads(response.content)
        except ValueError:
            raise SearchFailed(f"{engine} did not answer JSON") from None


@dataclass(frozen=True)
class SearxngEngine:
    """A SearxNG instance's search endpoint with `format=json` (the instance must enable the JSON format)."""

    http: _Http
    url: str
    name: str = "searxng"

    async def search(self, query: str, count: int, domains: list[str]) -> list[WebHit]:
        params = {"q": _site_filter(query, domains), "format": "json"}
        answer = await self.http.json(self.name, httpx2.Request("GET", self.url, params=params))
        return _hits(answer.get("results") if isinstance(answer, dict) else None, "content")[:count]


@dataclass(frozen=True)
class BraveEngine:
    http: _Http
    api_key: str
    url: str = BRAVE_URL
    name: str = "brave"

    async def search(self, query: str, count: int, domains: list[str]) -> list[WebHit]:
        params = {"q": _site_filter(query, domains), "count": str(min(count, 20))}
        headers = {"Accept": "application/json", "X-Subscription-Token": self.api_key}
        answer = await self.http.json(self.name, httpx2.Request("GET", self.url, params=params, headers=headers))
        web = answer.get("web") if isinstance(answer, dict) else None
        return _hits(web.get("results", []) if isinstance(web, dict) else [], "description")[:count]


@dataclass(frozen=True)
class TavilyEngine:
    http: _Http
    api_key: str
    url: str = TAVILY_URL
    name: str = "tavily"

    async def search(self, query: str, count: int, domains: list[str]) -> list[WebHit]:
        body: dict[str, Any] = {"query": query, "max_results": min(count, 20)}
        if domains:
            body["include_domains"] = domains
        headers = {"Authorization": f"Bearer {self.api_key}"}
        answer = await self.http.json(self.name, httpx2.Request("POST", self.url, json=body, headers=headers))
        return _hits(answer.get("results") if isinstance(answer, dict) else None, "content")[:count]


def web_search_from(settings: Settings, outbound: Outbound) -> WebSearch | None:
    """The configured engine, or None when the operator configured none (the tool then answers a 400)."""
    http = _Http(outbound, settings.web_search_max_reply_bytes)
    key = settings.web_search_api_key or ""
    engine: SearchEngine
    match settings.web_search_engine:
        case None:
            return None
        case "searxng":
            assert settings.web_search_url is not None  # the settings refuse searxng without it
            engine = SearxngEngine(http, settings.web_search_url)
        case "brave":
            engine = BraveEngine(http, key, settings.web_search_url or BRAVE_URL)
        case "tavily":
            engine = TavilyEngine(http, key, settings.web_search_url or TAVILY_URL)
    return WebSearch(engine, settings.web_search_max_results)
