"""Model calls the API begins while their turn's workflow starts, for the inference activity to take over.

A foreground response's first model call is known once its rows are written (workflows/first_model_call.py),
yet the activity that makes it runs only after Temporal has persisted the workflow's start and the worker has
run its first task. When the API hosts the worker, it begins the call at once and the activity, running in
this process moments later, adopts it: the model hears of the request that much sooner.

Durability is unchanged. The call is a local activity's, which Temporal records only when it ends; until then
a crash loses it, begun early or not, and the next worker's attempt asks the model again. Nothing the early
call receives reaches a client or the store except through the activity that adopts it, which writes every
delta before a client sees it. The activity adopts only a call built from the very request it was given, only
in its first attempt; any call left unadopted (the workflow asked otherwise, its start failed, another worker
took it) is cancelled, which closes its connection to the provider.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from observability import metrics
from providers.base import ChatModel, ChatRequest, ReplyPart
from workflows.contracts import InferenceRequest, PendingWrites

log = logging.getLogger(__name__)

Built = tuple[ChatRequest, ChatModel, str]
"""The request to send, the model to send it to, and the configured model id (InferenceActivities._chat_request)."""
Builder = Callable[[InferenceRequest], Awaitable[Built]]

ADOPT_WITHIN_SECONDS = 30.0
"""An early call no activity adopted by then is cancelled. Eager start hands the workflow's first task to this
process with the start's reply, so the activity normally comes within milliseconds; a loaded machine may take
seconds."""
MOST_IN_FLIGHT = 512
"""Early calls at once; past that a response's call is made by its activity alone."""


def _shape(request: InferenceRequest) -> InferenceRequest:
    """What of a request decides the model request built from it: not its step id, the writes it carries,
    the end it may write, the ledger it records to nor the mark a steer would cut it by."""
    neutral = {
        "step_id": "",
        "pending": PendingWrites(),
        "ending": None,
        "spend_session_id": None,
        "steer_cut_key": None,
    }
    return request.model_copy(update=neutral)


_END = object()


@dataclass(eq=False)
class EarlyCall:
    """One model call begun early: its request once built, and the parts of the reply as they come."""

    request: InferenceRequest
    loop: asyncio.AbstractEventLoop
    built: asyncio.Future[Built | None] = field(init=False)
    _parts: asyncio.Queue[object] = field(init=False, default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = field(init=False, default=None)
    began: float = field(init=False, default_factory=time.monotonic)
    """When it was begun: the model call's metrics time it from then."""
    expiry: asyncio.TimerHandle | None = field(init=False, default=None)
    """Cancelled once the call is taken or dropped, so the loop does not hold its request until then."""

    def __post_init__(self) -> None:
        self.built = self.loop.create_future()

    async def run(self, build: Builder) -> None:
        made: Built | None = None
        try:
            made = await build(self.request)
        except Exception as error:  # the activity builds it again, and fails as it does
            log.info("early model call of turn %s not begun: %s", self.request.turn_id, error)
        finally:  # also when cancelled meanwhile: an adopter never waits for nothing
            self.built.set_result(made)
        if made is None:
            return
        chat, model, _model_id = made
        try:
            async for part in model.stream(chat):
                self._parts.put_nowait(part)
        except Exception as error:  # the adopting activity raises it as its own call would have
            self._parts.put_nowait(error)
            return
        self._parts.put_nowait(_END)

    def cancel(self) -> None:
        if self.task is not None and not self.task.done():
            self.loop.call_soon_threadsafe(self.task.cancel)

    def answering(self) -> bool:
        """Whether the reply has begun to arrive (a part or the call's end is waiting to be read)."""
        return not self._parts.empty()

    async def parts(self) -> AsyncIterator[ReplyPart]:
        """The reply, part by part; leaving early (an error, a cancel) cancels the call."""
        try:
            while True:
                part = await self._parts.get()
                if part is _END:
                    return
                if isinstance(part, Exception):
                    raise part
                yield part  # type: ignore[misc]
        finally:
            self.cancel()


class EarlyInference:
    """The early calls of this process, by turn. The API begins them; the inference activity takes them."""

    def __init__(self, adopt_within: float = ADOPT_WITHIN_SECONDS, most_in_flight: int = MOST_IN_FLIGHT) -> None:
        self._calls: dict[str, EarlyCall] = {}
        self._build: Builder | None = None
        self._adopt_within = adopt_within
        self._most = most_in_flight

    def serve(self, build: Builder) -> None:
        """Build early calls with `build`: the inference activity's own request builder, so a call begun early
        is the call the activity would make."""
        self._build = build

    def begin(self, request: InferenceRequest) -> None:
        """Begin the model call `request` (as workflows/first_model_call.py predicts it) on this loop."""
        if self._build is None or request.turn_id in self._calls or len(self._calls) >= self._most:
            return
        call = EarlyCall(request, asyncio.get_running_loop())
        call.task = asyncio.create_task(call.run(self._build))
        self._calls[request.turn_id] = call
        call.expiry = call.loop.call_later(self._adopt_within, self._expire, request.turn_id, call)

    def abandon(self, turn_id: str) -> None:
        """The turn's workflow will not run here (its start failed, or it had started already)."""
        call = self._calls.pop(turn_id, None)
        if call is not None:
            self._stop_expiry(call)
            call.cancel()
            metrics.EARLY_MODEL_CALLS.labels("abandoned").inc()

    @staticmethod
    def _stop_expiry(call: EarlyCall) -> None:
        if call.expiry is not None:
            call.loop.call_soon_threadsafe(call.expiry.cancel)

    def _expire(self, turn_id: str, call: EarlyCall) -> None:
        if self._calls.get(turn_id) is call:
            self.abandon(turn_id)

    async def adopt(self, request: InferenceRequest) -> tuple[Built, EarlyCall] | None:
        """The early call of this very request, with what it was built from; None if there is none (or it is
        not this request's: it is then cancelled). Only for an activity's first attempt."""
        call = self._calls.get(request.turn_id)
        if call is None:
            return None
        same = request.pending.no_steps_yet and _shape(request) == _shape(call.request)
        if not same or asyncio.get_running_loop() is not call.loop:
            self.abandon(request.turn_id)
            return None
        del self._calls[request.turn_id]
        self._stop_expiry(call)
        made = await call.built
        if made is None:
            metrics.EARLY_MODEL_CALLS.labels("abandoned").inc()
            return None
        metrics.EARLY_MODEL_CALLS.labels("adopted").inc()
        return made, call
