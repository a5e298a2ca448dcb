"""Open event streams per API key: a stream holds a slot from before its turn starts until it ends.

Counted in each API process. A request for a stream over the limit is refused with 429 before it
starts or resumes anything, so nothing is lost: the caller closes a stream (or asks without
`stream`) and retries.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import overload

from fastapi import HTTPException
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.types import Receive, Scope, Send

RETRY_AFTER_SECONDS = 1


class StreamSlots:
    def __init__(self, most_per_key: int) -> None:
        self._most = most_per_key
        self._open: Counter[str] = Counter()

    def take(self, key_id: str) -> Slot:
        """A slot for one stream of this key, or a 429 when it has the most it may have open."""
        if self._open[key_id] >= self._most:
            raise HTTPException(
                429,
                f"This API key already has {self._most} open event streams, the most allowed "
                "(DA_MAX_STREAMS_PER_KEY); close one, or ask without `stream`",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        self._open[key_id] += 1
        return Slot(lambda: self._release(key_id))

    def _release(self, key_id: str) -> None:
        self._open[key_id] -= 1
        if self._open[key_id] <= 0:
            del self._open[key_id]


class Slot:
    def __init__(self, release: Callable[[], None]) -> None:
        self._release = release
        self._held = True

    def release(self) -> None:
        if self._held:
            self._held = False
            self._release()

    @overload
    def hold_for(self, response: StreamingResponse) -> StreamingResponse: ...
    @overload
    def hold_for(self, response: JSONResponse) -> JSONResponse: ...
    @overload
    def hold_for(self, response: StreamingResponse | JSONResponse) -> StreamingResponse | JSONResponse: ...
    def hold_for(self, response: StreamingResponse | JSONResponse) -> StreamingResponse | JSONResponse:
        """Keep the slot while `response` streams (until the stream ends or its client goes)."""
        if not isinstance(response, StreamingResponse):
            self.release()
            return response
        return _SlotStream(response, self)


class _SlotStream(StreamingResponse):
    def __init__(self, inner: StreamingResponse, slot: Slot) -> None:
        # Takes over the inner response's body and headers as they are.
        self.__dict__.update(inner.__dict__)
        self._slot = slot

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._slot.release()
