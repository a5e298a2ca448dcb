"""How heavy and how quick each console page is in a real browser; prints one JSON line per page.

    .venv/bin/python -m bench.console_load [--loads 10]

Starts the stack as `make run` does (serve.py with the bench's model servers, in a temporary directory), pauses a
few turns so the inbox and the turn pages have something to show, then opens each console page in Debian's
headless Chromium (Playwright, as the console's tests drive it) with a cold cache `--loads` times. For each page:
the bytes transferred for the page and everything it loads (`transferred_kb`: the target is ≤ 200 KB for the
first page), and the time from navigation to DOMContentLoaded (`interactive_ms`, p50 and max: the target is
≤ 1 s on this machine). Nothing is fetched from outside the server; a request that is would be listed under
`foreign`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

import httpx

from bench.benchmark.stack import FAST_MODEL, EmbeddedStack
from bench.common import log

PAGES = (
    "/console/inbox",
    "/console/turns",
    "/console/playground",
    "/console/knowledge",
    "/console/webhooks",
    "/console/usage",
)
TOOL = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}


def _paused_responses(base_url: str, count: int) -> list[str]:
    """Responses waiting on a client tool: what the inbox lists."""
    made = []
    with httpx.Client(base_url=base_url, timeout=30) as client:
        for _ in range(count):
            body = {"model": FAST_MODEL, "input": "Use the tool, please.", "tools": [TOOL]}
            made.append(client.post("/v1/responses", json=body).raise_for_status().json()["id"])
        waiting = client.get("/v1/inbox", params={"limit": 100}).raise_for_status().json()["data"]
    log(f"{len(waiting)} responses wait in the inbox")
    return made


def _load(browser: Any, base_url: str, path: str) -> tuple[float, int, list[str]]:
    """One cold load of `path`: DOMContentLoaded ms, bytes transferred, requests to other origins."""
    context = browser.new_context(base_url=base_url)
    page = context.new_page()
    transferred, foreign = 0, []

    def finished(request: Any) -> None:
        nonlocal transferred
        sizes = request.sizes()
        transferred += sizes["responseBodySize"] + sizes["responseHeadersSize"]
        if not request.url.startswith(base_url):
            foreign.append(request.url)

    page.on("requestfinished", finished)
    page.goto(path, wait_until="load")
    timing = page.evaluate(
        "(() => { const [n] = performance.getEntriesByType('navigation');"
        " return n.domContentLoadedEventEnd - n.startTime; })()"
    )
    context.close()
    return float(timing), transferred, foreign


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loads", type=int, default=10, help="cold loads of each page")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    workdir = Path(tempfile.mkdtemp(prefix="da-bench-console-"))
    stack = EmbeddedStack(workdir)
    stack.start()
    try:
        _paused_responses(stack.api_url, 20)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path="/usr/bin/chromium",
                args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
            )
            for path in PAGES:
                loads = [_load(browser, stack.api_url, path) for _ in range(args.loads)]
                times = sorted(load[0] for load in loads)
                row = {
                    "page": path,
                    "transferred_kb": round(max(load[1] for load in loads) / 1024, 1),
                    "interactive_ms": {"p50": round(statistics.median(times), 1), "max": round(times[-1], 1)},
                    "loads": len(loads),
                    "foreign": sorted({url for load in loads for url in load[2]}),
                    "loadavg_1m": round(os.getloadavg()[0], 2),
                }
                print(json.dumps(row), flush=True)
            browser.close()
    finally:
        stack.stop()
        log(f"logs in {workdir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
