"""A span processor that stamps every span of a turn with its ids, taken from the context's baggage.

Imported only when tracing is on (it needs the OpenTelemetry SDK).
"""

from __future__ import annotations

from opentelemetry import baggage
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from observability.turn_keys import TURN_KEYS


class TurnAttributes(SpanProcessor):
    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        for key in TURN_KEYS:
            value = baggage.get_baggage(key, parent_context)
            if isinstance(value, str):
                span.set_attribute(key, value)

    def on_end(self, span: ReadableSpan) -> None:
        pass
