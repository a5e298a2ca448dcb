"""An OTLP/HTTP trace receiver for tests: what a collector would get, decoded and kept in memory.

It speaks the real protocol (protobuf `ExportTraceServiceRequest` POSTed to /v1/traces, gzip or
not), so the processes under test export exactly as they would to an OpenTelemetry Collector.
"""

from __future__ import annotations

import gzip
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from tests.support.processes import EVENT_SECONDS


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    service: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int
    start_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)
    links: list[tuple[str, str]] = field(default_factory=list)


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


class OtlpReceiver:
    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.requests = 0
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces":
                    self.send_error(404)
                    return
                receiver._take(ExportTraceServiceRequest.FromString(body))
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _take(self, request: ExportTraceServiceRequest) -> None:
        received = []
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    received.append(
                        ReceivedSpan(
                            name=span.name,
                            service=str(resource.get("service.name")),
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_span_id=span.parent_span_id.hex(),
                            kind=span.kind,
                            start_ns=span.start_time_unix_nano,
                            attributes={a.key: _value(a.value) for a in span.attributes},
                            links=[(link.trace_id.hex(), link.span_id.hex()) for link in span.links],
                        )
                    )
        with self._lock:
            self.requests += 1
            self.spans.extend(received)

    def wait_for(self, predicate: Any, what: str, seconds: float = EVENT_SECONDS) -> list[ReceivedSpan]:
        """The spans received so far, once `predicate(spans)` holds."""
        deadline = time.monotonic() + seconds
        while True:
            with self._lock:
                spans = list(self.spans)
            if predicate(spans):
                return spans
            if time.monotonic() > deadline:
                names = sorted({span.name for span in spans})
                raise AssertionError(f"{what} not received within {seconds:.0f} s; spans so far: {names}")
            time.sleep(0.1)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
