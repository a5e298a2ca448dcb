"""A web search engine for the tests: the SearxNG JSON endpoint, Brave's and Tavily's search APIs, each at its
documented path and shape, answering from a fixed index. A query containing `fail` answers HTTP 500, as an
engine that is down does; `many` finds more pages than a search keeps, `huge` a reply larger than it reads.
And `searching_api`: an API with its own worker, configured to search on it."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.support.sandbox import sandboxed_runner
from tests.support.scripted_model import ThreadedServer
from tests.support.stack import Stack, free_port
from worker import build_worker

BRAVE_TOKEN = "brave-token-5d1e"
TAVILY_KEY = "tvly-key-93ab"
INDEX = [
    {
        "title": "Polyjuice potion - Wizarding facts",
        "url": "https://potions.example.org/polyjuice",
        "text": "Polyjuice boils at minus one hundred degrees.",
    },
    {
        "title": "Boiling points of common liquids",
        "url": "https://chemistry.example.com/boiling",
        "text": "Water boils at one hundred degrees Celsius at sea level.",
    },
    {
        "title": "Polyjuice in the news",
        "url": "https://news.example.net/polyjuice-shortage",
        "text": "A shortage of lacewing flies delays polyjuice brewing.",
    },
]
QUERIES: list[tuple[str, str]] = []
"""(engine, query) of every search received."""


MANY = 30
"""Hits for a query containing `many`, more than any search gives the model."""
HUGE_BYTES = 2 * 1024 * 1024
"""The size of the answer to a query containing `huge`, over the engine reply limit."""


def _found(query: str) -> list[dict[str, str]]:
    if "many" in query:
        return [{"title": f"Page {n}", "url": f"https://many.example.org/{n}", "text": "x" * 5000} for n in range(MANY)]
    if "huge" in query:
        return [{"title": "Huge", "url": "https://huge.example.org/", "text": "x" * HUGE_BYTES}]
    words = [word for word in query.lower().split() if not word.startswith(("(", "site:"))]
    return [hit for hit in INDEX if any(word in (hit["title"] + hit["text"]).lower() for word in words)]


def _refused(request: Request, engine: str, query: str) -> JSONResponse | None:
    QUERIES.append((engine, query))
    return JSONResponse({"error": "engine down"}, status_code=500) if "fail" in query else None


async def searxng(request: Request) -> JSONResponse:
    query = request.query_params.get("q", "")
    if request.query_params.get("format") != "json":
        return JSONResponse({"error": "format=json is required"}, status_code=403)
    refused = _refused(request, "searxng", query)
    results = [{"title": h["title"], "url": h["url"], "content": h["text"], "engine": "test"} for h in _found(query)]
    return refused or JSONResponse({"query": query, "number_of_results": len(results), "results": results})


async def brave(request: Request) -> JSONResponse:
    if request.headers.get("x-subscription-token") != BRAVE_TOKEN:
        return JSONResponse({"error": "unauthorized"}, status_code=401)
    query = request.query_params.get("q", "")
    count = int(request.query_params.get("count", "20"))
    results = [{"title": h["title"], "url": h["url"], "description": h["text"]} for h in _found(query)][:count]
    return _refused(request, "brave", query) or JSONResponse({"type": "search", "web": {"results": results}})


async def tavily(request: Request) -> JSONResponse:
    if request.headers.get("authorization") != f"Bearer {TAVILY_KEY}":
        return JSONResponse({"detail": {"error": "unauthorized"}}, status_code=401)
    body: dict[str, Any] = await request.json()
    query = str(body.get("query", ""))
    hits = _found(query)
    domains = body.get("include_domains") or []
    if domains:
        hits = [h for h in hits if any(d in h["url"] for d in domains)]
    results = [{"title": h["title"], "url": h["url"], "content": h["text"], "score": 0.9} for h in hits]
    return _refused(request, "tavily", query) or JSONResponse({"query": query, "results": results})


def start() -> ThreadedServer:
    app = Starlette(
        routes=[
            Route("/searxng/search", searxng),
            Route("/brave/res/v1/web/search", brave),
            Route("/tavily/search", tavily, methods=["POST"]),
        ]
    )
    return ThreadedServer(app, free_port()).start()


def engine_settings(server: ThreadedServer, engine: str) -> dict[str, Any]:
    """The DA_WEB_SEARCH_* settings (as Settings fields) that search on `server` with `engine`."""
    if engine == "searxng":
        return {"web_search_engine": "searxng", "web_search_url": f"{server.allowed_url}/searxng/search"}
    if engine == "brave":
        url = f"{server.allowed_url}/brave/res/v1/web/search"
        return {"web_search_engine": "brave", "web_search_url": url, "web_search_api_key": BRAVE_TOKEN}
    url = f"{server.allowed_url}/tavily/search"
    return {"web_search_engine": "tavily", "web_search_url": url, "web_search_api_key": TAVILY_KEY}


@contextmanager
def searching_api(stack: Stack, server: ThreadedServer, engine: str = "searxng") -> Iterator[str]:
    """An API on the stack's Temporal and store whose web search uses `engine` on `server`, with a worker of the
    same settings on a task queue of its own (the stack's worker has none configured); yields the API's URL."""
    settings = stack.settings.model_copy(
        update={"task_queue": f"search-{uuid.uuid4().hex[:8]}", **engine_settings(server, engine)}
    )

    async def started() -> tuple[Any, asyncio.Task[None]]:
        worker = build_worker(stack.client, settings, stack.store, sandboxed_runner())
        return worker, asyncio.create_task(worker.run())

    worker, task = stack.background.run(started())
    try:
        with stack.other_api(settings) as url:
            yield url
    finally:

        async def stopped() -> None:
            await worker.shutdown()
            await task

        stack.background.run(stopped())
