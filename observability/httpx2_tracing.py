"""Client spans for httpx2, the HTTP client of the OpenAI SDK and the MCP SDK.

OpenTelemetry's httpx instrumentation covers `httpx` only, and httpx2 has none of its own; this
wraps httpx2's async transport the same way: one CLIENT span per request, named by its method,
with the `traceparent` header injected. The span ends when the response's headers arrive (a
streamed body is read afterwards, inside the calling activity's span). `url.full` leaves out the
query and any credentials in the URL. Imported only when tracing is on.
"""

from __future__ import annotations

from typing import Any

import httpx2
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

_DEFAULT_PORTS = {"http": 80, "https": 443}


def _attributes(request: httpx2.Request) -> dict[str, Any]:
    url = request.url
    port = url.port or _DEFAULT_PORTS.get(url.scheme)
    shown_port = f":{url.port}" if url.port else ""
    attributes: dict[str, Any] = {
        "http.request.method": request.method,
        "server.address": url.host,
        "url.full": f"{url.scheme}://{url.host}{shown_port}{url.path}",
    }
    if port:
        attributes["server.port"] = port
    return attributes


def instrument_httpx2() -> None:
    transport = httpx2.AsyncHTTPTransport
    original = transport.handle_async_request
    if getattr(original, "_durable_agents_traced", False):
        return
    tracer = trace.get_tracer("durable_agents.httpx2")

    async def handle_async_request(self: httpx2.AsyncHTTPTransport, request: httpx2.Request) -> httpx2.Response:
        with tracer.start_as_current_span(
            request.method, kind=SpanKind.CLIENT, attributes=_attributes(request)
        ) as span:
            carrier: dict[str, str] = {}
            propagate.inject(carrier)
            for name, value in carrier.items():
                request.headers[name] = value
            response = await original(self, request)
            span.set_attribute("http.response.status_code", response.status_code)
            if response.status_code >= 500:
                span.set_status(Status(StatusCode.ERROR))
            return response

    handle_async_request._durable_agents_traced = True  # type: ignore[attr-defined]
    transport.handle_async_request = handle_async_request  # type: ignore[method-assign]
