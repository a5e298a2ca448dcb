"""One Responses WebSocket connection: its lanes (`stream_id`), the responses it made, how it sends events and
errors, and what its close stops (api/openai/responses/websocket_routes.py serves it)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from fastapi import HTTPException, WebSocket
from starlette.websockets import WebSocketDisconnect

from api.guards.tenancy import Principal
from api.knowledge import Knowledge
from api.openai.errors import error_type
from api.openai.responses import view
from api.openai.responses.create import Created
from api.openai.responses.response_routes import cancel_abandoned
from api.openai.responses.stream_events import event_data
from api.services import Services
from store.responses.responses import ResponseRecord

log = logging.getLogger(__name__)

STREAM_ID = re.compile(r"^[A-Za-z0-9_.-]{1,256}$")

GONE = (WebSocketDisconnect, RuntimeError, OSError)
"""What a send raises once the socket has closed (Starlette's, its server's)."""

Lane = str | None
"""A `stream_id`; None is the default lane."""


class ClientEventError(Exception):
    """A client event refused before it reached any response: answered with an `error` event."""

    def __init__(self, message: str, param: str | None = None, code: str | None = None, status: int = 400) -> None:
        super().__init__(message)
        self.status, self.param, self.code = status, param, code


def error_event(status: int, detail: Any, lane: Lane = None) -> dict[str, Any]:
    """The `error` event for a refusal: the HTTP status the same request would have had, the OpenAI error body."""
    if isinstance(detail, dict) and "message" in detail:
        error = {key: detail.get(key) for key in ("message", "type", "param", "code")}
    else:
        error = {"message": str(detail), "type": error_type(status), "param": None, "code": None}
    return with_lane({"type": "error", "status": status, "error": error}, lane)


def with_lane(data: dict[str, Any], lane: Lane) -> dict[str, Any]:
    """Named-lane events echo their `stream_id`; default-lane events carry none."""
    return data if lane is None else data | {"stream_id": lane}


class _ConnectionCounts:
    """Open connections per API key in this process (DA_MAX_WEBSOCKETS_PER_KEY)."""

    def __init__(self) -> None:
        self.open: Counter[str] = Counter()

    @contextlib.contextmanager
    def hold(self, key_id: str, most: int) -> Iterator[bool]:
        """True while the key may hold one more connection (then counted until the block ends)."""
        if self.open[key_id] >= most:
            yield False
            return
        self.open[key_id] += 1
        try:
            yield True
        finally:
            self.open[key_id] -= 1
            if self.open[key_id] <= 0:
                del self.open[key_id]


connections = _ConnectionCounts()
"""This process's count (the app's only one)."""


@dataclass
class Connection:
    """One client's socket: its lanes, and the responses it made (the cache continuations may name)."""

    websocket: WebSocket
    services: Services
    knowledge: Knowledge
    principal: Principal
    made: dict[str, Lane] = field(default_factory=dict)
    """Responses made on this connection (`store: false` ones included) → the lane that made them."""
    last_sequence: dict[str, int] = field(default_factory=dict)
    """Each response's last event number sent: control events about it carry it."""
    streaming: dict[str, ResponseRecord] = field(default_factory=dict)
    lanes: dict[Lane, asyncio.Queue[Callable[[], Awaitable[None]]]] = field(default_factory=dict)
    workers: list[asyncio.Task[None]] = field(default_factory=list)
    send_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def tenant(self) -> str:
        return self.principal.tenant

    async def send(self, data: dict[str, Any]) -> None:
        async with self.send_lock:
            await self.websocket.send_text(json.dumps(data, separators=(",", ":")))

    def enqueue(self, lane: Lane, work: Callable[[], Awaitable[None]]) -> None:
        """Run `work` on `lane` after everything queued there before it."""
        queue = self.lanes.get(lane)
        if queue is None:
            named = sum(1 for name in self.lanes if name is not None)
            if lane is not None and named >= self.services.settings.max_websocket_lanes:
                raise ClientEventError(
                    f"This connection already uses {named} named stream_ids, the most allowed "
                    "(DA_MAX_WEBSOCKET_LANES); reuse one or open another connection.",
                    "stream_id",
                    "websocket_stream_limit_reached",
                )
            queue = self.lanes[lane] = asyncio.Queue()
            self.workers.append(asyncio.get_running_loop().create_task(self._run_lane(lane, queue)))
        queue.put_nowait(work)

    async def _run_lane(self, lane: Lane, queue: asyncio.Queue[Callable[[], Awaitable[None]]]) -> None:
        while True:
            work = await queue.get()
            try:
                try:
                    await work()
                    continue
                except HTTPException as refused:
                    answer = error_event(refused.status_code, refused.detail, lane)
                except ClientEventError as refused:
                    answer = error_event(refused.status, error_detail(refused), lane)
                except GONE:
                    raise
                except Exception:
                    log.exception("a websocket response on lane %s failed", lane)
                    answer = error_event(500, "The server failed to run this event; it has been logged.", lane)
                await self.send(answer)
            except GONE as gone:  # the socket closed under a send
                log.debug("websocket lane %s stopped: %s", lane, gone)
                return

    async def stream(self, created: Created, lane: Lane) -> None:
        """Send the response's events, numbered as its HTTP stream numbers them, until it ends."""
        await self.stream_record(created.record, lane, created.after, created.new_turn)

    async def stream_record(
        self, record: ResponseRecord, lane: Lane, after: int | None = None, new_turn: bool = False
    ) -> None:
        """`stream` for a response whose segment's start is looked up (`after` None) rather than known."""
        self.made[record.response_id] = lane
        self.streaming[record.response_id] = record
        try:
            async for event in view.stream_events(self.services, record, None, after, new_turn):
                if event is None:
                    continue
                self.last_sequence[record.response_id] = event.sequence_number
                await self.send(with_lane(event_data(event), lane))
        finally:
            del self.streaming[record.response_id]

    def abandon(self) -> None:
        """The socket closed: stop its lanes, and the responses still running, as a closed HTTP stream does."""
        for worker in self.workers:
            worker.cancel()
        for record in list(self.streaming.values()):
            cancel_abandoned(self.services, record)


def error_detail(refused: ClientEventError) -> dict[str, Any]:
    return {"message": str(refused), "type": error_type(refused.status), "param": refused.param, "code": refused.code}


def lane_of(event: dict[str, Any]) -> Lane:
    stream_id = event.get("stream_id")
    if stream_id is None:
        return None
    if not isinstance(stream_id, str) or not STREAM_ID.match(stream_id):
        raise ClientEventError(
            "'stream_id' must be 1-256 ASCII letters, digits, '_', '-' or '.'.", "stream_id", "invalid_stream_id"
        )
    return stream_id
