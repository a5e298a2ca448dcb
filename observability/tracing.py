"""OpenTelemetry tracing, configured only by the standard `OTEL_*` variables.

Tracing is on when an exporter is named: `OTEL_EXPORTER_OTLP_ENDPOINT`,
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_TRACES_EXPORTER` (`otlp`, `console`), unless
`OTEL_SDK_DISABLED=true`. Otherwise nothing here imports OpenTelemetry: an untraced process pays
one environment lookup at start and one boolean test per turn.

A turn's ids travel as W3C baggage inside Temporal's headers (the interceptor's propagator), and a
span processor copies them onto every span of the turn, in every process. Outbound HTTP calls (the
model provider, MCP servers) get only `traceparent`, never the baggage: ids stay in-house.
"""

from __future__ import annotations

import atexit
import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from observability.turn_keys import AGENT_ID, SESSION_ID, TURN_ID

log = logging.getLogger(__name__)


_enabled = False


def tracing_requested(env: Mapping[str, str] = os.environ) -> bool:
    """Whether the OTEL_* variables ask for trace export."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporters == "none":
        return False
    return bool(exporters or env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def tracing_enabled() -> bool:
    return _enabled


def _exporters() -> list[Any]:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter

    protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    if protocol and protocol != "http/protobuf":
        log.warning("OTLP protocol %r is not supported; traces are sent as http/protobuf", protocol)
    exporters: list[Any] = []
    for name in (os.environ.get("OTEL_TRACES_EXPORTER") or "otlp").split(","):
        name = name.strip().lower()
        if name == "otlp":
            exporters.append(OTLPSpanExporter())
        elif name == "console":
            exporters.append(ConsoleSpanExporter())
        elif name:
            log.warning("OTEL_TRACES_EXPORTER %r is not supported (otlp, console); ignored", name)
    return exporters


def setup_tracing(service_name: str) -> bool:
    """Install the tracer provider and the HTTP client instrumentation once per process, if asked for."""
    global _enabled
    if _enabled or not tracing_requested():
        return _enabled
    from opentelemetry import propagate, trace
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    from observability.turn_attributes import TurnAttributes

    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME") or service_name})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(TurnAttributes())
    for exporter in _exporters():
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    if "OTEL_PROPAGATORS" not in os.environ:
        propagate.set_global_textmap(TraceContextTextMapPropagator())
    HTTPXClientInstrumentor().instrument()
    _instrument_httpx2()
    atexit.register(provider.shutdown)  # exports what is still buffered
    _enabled = True
    log.info("tracing on: spans of %s are exported", service_name)
    return True


def _instrument_httpx2() -> None:
    try:
        import httpx2  # noqa: F401  (the OpenAI and MCP SDKs' HTTP client)
    except ImportError:
        return
    from observability.httpx2_tracing import instrument_httpx2

    instrument_httpx2()


def temporal_interceptors() -> list[Any]:
    """Temporal's tracing interceptor for clients (and the workers built on them), when tracing is on."""
    if not _enabled:
        return []
    from temporalio.contrib.opentelemetry import TracingInterceptor

    return [TracingInterceptor()]


@contextmanager
def turn_context(turn_id: str, session_id: str | None, agent_id: str | None) -> Iterator[None]:
    """Mark the current span with the turn's ids and carry them, as baggage, into what starts inside.
    A detached turn has no session or agent: only its id is set."""
    if not _enabled:
        yield
        return
    from opentelemetry import baggage, context, trace

    given = {TURN_ID: turn_id, SESSION_ID: session_id, AGENT_ID: agent_id}
    ids = {key: value for key, value in given.items() if value is not None}
    trace.get_current_span().set_attributes(ids)
    current = context.get_current()
    for key, value in ids.items():
        current = baggage.set_baggage(key, value, current)
    token = context.attach(current)
    try:
        yield
    finally:
        context.detach(token)


def current_trace_carrier() -> dict[str, str] | None:
    """The current span's W3C trace context (`traceparent`), to join later requests of a turn to it."""
    if not _enabled:
        return None
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier)
    return carrier or None
