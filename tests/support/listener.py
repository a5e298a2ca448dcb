"""A plain HTTP listener on 127.0.0.1 that records every request and how many body bytes it sent.

Refusal tests point a fetch at it and assert it saw nothing: a refused fetch must never leave.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from tests.support.scripted_model import ALLOWED_HOST

CHUNK = 64 * 1024


@dataclass
class Reply:
    status: int = 200
    content_type: str = "text/plain"
    body: bytes = b""
    location: str | None = None
    stream_bytes: int = 0
    """Send this many bytes chunked (no Content-Length) instead of `body`."""
    declared_length: int | None = None
    """Declare this Content-Length (and send at most `body`)."""


@dataclass
class Listener:
    routes: dict[str, Reply] = field(default_factory=dict)
    hits: list[str] = field(default_factory=list)
    sent_bytes: int = 0

    def __post_init__(self) -> None:
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        """By address: not allowlisted in the test stacks, so the outbound policy refuses it."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def allowed_url(self) -> str:
        return f"http://{ALLOWED_HOST}:{self.port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> Callable[..., http.server.BaseHTTPRequestHandler]:
        listener = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self._answer()

            def _answer(self) -> None:
                listener.hits.append(self.path)
                reply = listener.routes.get(self.path, Reply(status=404))
                self.send_response(reply.status)
                self.send_header("content-type", reply.content_type)
                if reply.location:
                    self.send_header("location", reply.location)
                if reply.stream_bytes:
                    self.send_header("transfer-encoding", "chunked")
                    self.end_headers()
                    self._stream(reply.stream_bytes)
                    return
                length = reply.declared_length if reply.declared_length is not None else len(reply.body)
                self.send_header("content-length", str(length))
                self.end_headers()
                self._send(reply.body)

            def _stream(self, total: int) -> None:
                chunk = b"x" * CHUNK
                try:
                    while total > 0:
                        part = chunk[: min(CHUNK, total)]
                        self._send(b"%x\r\n%s\r\n" % (len(part), part))
                        total -= len(part)
                    self._send(b"0\r\n\r\n")
                except OSError:
                    return  # the client hung up: what we wanted to see

            def _send(self, data: bytes) -> None:
                self.wfile.write(data)
                self.wfile.flush()
                listener.sent_bytes += len(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler
