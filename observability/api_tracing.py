"""Server spans for the API, and one trace per turn across its create and resume requests.

A turn's workflow keeps the trace its create request started (Temporal's interceptor carries it in
the workflow's headers), so the model calls after a pause are already part of it. The resume is a
separate HTTP request: when it arrives without a `traceparent` of its own, it is given the turn's,
recorded in the workflow's memo when the turn started, so the resume request's spans — and the
update it delivers — join the same trace, under the create request.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from observability.tracing import tracing_enabled

log = logging.getLogger(__name__)

RESUME_PATH = re.compile(r"^/v1/agents/[^/]+/session/[^/]+/turn/([^/]+)/resume$")
UNTRACED_PATHS = "/metrics$,/readyz$,/v1/health$"
"""Probes and scrapes: frequent, and of no interest in a trace."""

TraceLookup = Callable[[str], Awaitable[dict[str, str] | None]]


class JoinTurnTrace:
    """Outside the tracing middleware: gives a resume request its turn's trace context."""

    def __init__(self, app: ASGIApp, trace_of_turn: TraceLookup) -> None:
        self._app = app
        self._trace_of_turn = trace_of_turn

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and (match := RESUME_PATH.match(scope["path"])):
            headers = scope["headers"]
            if not any(name == b"traceparent" for name, _ in headers):
                carrier = await self._lookup(match.group(1))
                if carrier:
                    joined = [(key.encode("latin-1"), value.encode("latin-1")) for key, value in carrier.items()]
                    scope = {**scope, "headers": [*headers, *joined]}
        await self._app(scope, receive, send)

    async def _lookup(self, turn_id: str) -> dict[str, str] | None:
        try:
            return await self._trace_of_turn(turn_id)
        except Exception:  # the request goes on, in a trace of its own; the route reports real problems
            log.debug("trace context of turn %s not found", turn_id, exc_info=True)
            return None


def fastapi_native_telemetry_off() -> dict[str, Any]:
    """Arguments for FastAPI() that turn off its own telemetry (recent FastAPI versions trace requests
    themselves once a tracer provider is set). The OpenTelemetry instrumentation does it instead, on
    every FastAPI version, and lets a resume join its turn's trace; two would mean two spans per request."""
    if "telemetry" not in inspect.signature(FastAPI.__init__).parameters:
        return {}
    return {"telemetry": {"tracing": False, "metrics": False, "logs": False, "operation_spans": False}}


def instrument_api(app: FastAPI, trace_of_turn: TraceLookup) -> None:
    """Trace every request but probes, when tracing is on; resume requests join their turn's trace."""
    if not tracing_enabled():
        return
    from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

    # No spans per ASGI send/receive: a streamed turn would add one per SSE event.
    FastAPIInstrumentor.instrument_app(app, excluded_urls=UNTRACED_PATHS, exclude_spans=["receive", "send"])
    instrumented = app.build_middleware_stack
    app.build_middleware_stack = lambda: JoinTurnTrace(instrumented(), trace_of_turn)  # type: ignore[method-assign]
