"""A webhook receiver for the tests: a real HTTP server on loopback that records every delivery and
answers with the status codes a test scripts (200 once the script is used up)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request, Response
from openai import OpenAI

from tests.support.processes import EVENT_SECONDS
from tests.support.scripted_model import ThreadedServer
from tests.support.stack import free_port

_SDK = OpenAI(api_key="unused", base_url="http://unused")
"""Only its webhooks helpers are used: they verify locally, sending nothing."""


@dataclass(frozen=True)
class Delivery:
    headers: dict[str, str]
    body: bytes
    status: int
    """What the receiver answered."""

    def event(self, secret: str) -> Any:
        """The event as `client.webhooks.unwrap` verifies and parses it (raises on a bad signature)."""
        return _SDK.webhooks.unwrap(self.body, self.headers, secret=secret)

    def verifies_with(self, secret: str) -> bool:
        try:
            _SDK.webhooks.verify_signature(self.body, self.headers, secret=secret)
        except Exception:
            return False
        return True


class Receiver:
    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.deliveries: list[Delivery] = []
        self._statuses: deque[int] = deque()
        self.stalled = 0
        """Requests that arrived while the receiver stalled: never answered, never counted as deliveries."""
        self._released = threading.Event()
        self._released.set()
        self._lock = threading.Lock()
        self._server: ThreadedServer | None = None

    @property
    def url(self) -> str:
        return f"http://localhost:{self.port}/hook"

    def answer(self, *statuses: int) -> None:
        with self._lock:
            self._statuses = deque(statuses)

    def stall(self, stalling: bool = True) -> None:
        """Hold each request that arrives from now on unanswered, the sender left waiting, until `stall(False)`
        (then it is dropped): an attempt is in flight for as long as a test needs."""
        if stalling:
            self._released.clear()
        else:
            self._released.set()

    def start(self) -> Receiver:
        app = FastAPI()

        @app.post("/hook")
        async def hook(request: Request) -> Response:
            body = await request.body()
            if not self._released.is_set():
                self.stalled += 1
                await asyncio.to_thread(self._released.wait)
                return Response(status_code=503)
            with self._lock:
                status = self._statuses.popleft() if self._statuses else 200
                self.deliveries.append(Delivery(dict(request.headers), body, status))
            return Response(status_code=status)

        self._server = ThreadedServer(app, self.port).start()
        return self

    def stop(self) -> None:
        self._released.set()
        if self._server is not None:
            self._server.stop()
            self._server = None

    def wait_for(self, count: int, seconds: float = EVENT_SECONDS) -> list[Delivery]:
        deadline = time.monotonic() + seconds
        while len(self.deliveries) < count:
            assert time.monotonic() < deadline, f"{len(self.deliveries)} deliveries, not {count}, within {seconds} s"
            time.sleep(0.05)
        return list(self.deliveries)
