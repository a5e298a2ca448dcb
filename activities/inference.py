"""One model call: assemble the conversation, stream the reply, record its progress events."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Sequence
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.conversation import conversation, detached_conversation
from activities.early_inference import EarlyInference
from activities.heartbeat import heartbeating
from activities.pending_writes import write_pending
from activities.spend import SpendLedger
from activities.turn_progress import save_progress
from domain.agents import agent_turn_settings
from domain.content import CompletionMessage, StopReason, ToolCall
from domain.events import KeyedEvent, StepProgress, StepStart, TextDelta, ToolCallDelta, chunk_of
from domain.model_calls import ModelCall
from domain.turn_settings import TurnSettings
from domain.turns import InferenceStep, TurnStatus
from hosting.fault_points import AFTER_TURN_END, crash_point
from observability import metrics
from providers import openai_format
from providers.base import ChatModel, ChatRequest, FinishPart, ProviderRejected, TextPart, ToolCallPart
from providers.registry import ModelRegistry
from store.repository import Store
from workflows import steps, turn_end
from workflows.contracts import (
    INFER_ACTIVITY,
    PAYLOAD_BUDGET_BYTES,
    PROVIDER_REJECTED,
    REPLY_TOO_LARGE,
    InferenceRequest,
    InferenceResult,
    PendingWrites,
    TurnEnding,
    TurnFinished,
    TurnProgress,
    runtime_event,
)
from workflows.knowledge_tools import FILE_SEARCH

_TICK = timedelta(microseconds=1)
"""A step's and a turn's times strictly increase, as the workflow's do (clients compare them)."""


def _too_large(size: int) -> ApplicationError:
    return ApplicationError(
        f"The model's reply is larger than {PAYLOAD_BUDGET_BYTES:,} bytes ({size:,} so far), more than a turn "
        "can carry; ask for a shorter answer (e.g. sampling_params.max_tokens).",
        type=REPLY_TOO_LARGE,
        non_retryable=True,
    )


def _usage_event(step_id: str, call: ModelCall) -> KeyedEvent:
    """The tokens one inference used, as the provider reported them, its model and their cost: a runtime event
    (the llama-stack stream skips it) that the Responses dialect sums into a response's `usage` and the store
    counts into the tenant's daily usage. Keyed by step, so an inference counts once however often its
    activity is retried."""
    return runtime_event(f"{step_id}:usage", "usage", step_id=step_id, **call.event_fields())


class _DeltaWriter:
    """Batches step_progress events: the first goes out at once, the rest at most every `interval`."""

    def __init__(
        self,
        store: Store,
        request: InferenceRequest,
        attempt: str,
        interval: float,
        already_streamed: str,
        after: Awaitable[None] | None = None,
        calls_streamed: Sequence[ToolCall] = (),
        lead: Sequence[KeyedEvent] = (),
    ) -> None:
        self._store = store
        self.steered = False
        """A steer of the response was accepted (InferenceRequest.steer_cut_key), seen when deltas were last written."""
        self._after: Awaitable[None] | None = after
        """The write of the step's start and the workflow's pending writes: deltas are stored after it."""
        self._lead = list(lead)
        """Or those events themselves, to write with the first deltas (a reply already there when the step began)."""
        self._request = request
        self._prefix = f"{request.step_id}:attempt{attempt}:delta"
        self._interval = interval
        self._pending: list[KeyedEvent] = []
        self._count = 0
        self._flushed_at = 0.0
        self._already = already_streamed
        self._calls_already = list(calls_streamed)
        self._text = ""
        self._text_body = self._body(TextDelta(text=""))
        """A text delta's event as the model dumps it, its text left to fill in: dumping each cost 65 µs."""

    def _body(self, delta: TextDelta | ToolCallDelta) -> dict[str, Any]:
        payload = StepProgress(step_type="inference", step_id=self._request.step_id, delta=delta)
        return chunk_of(payload).model_dump(mode="json")

    def _text_delta(self, text: str) -> dict[str, Any]:
        event = self._text_body["event"]
        payload = event["payload"]
        return {
            **self._text_body,
            "event": {**event, "payload": {**payload, "delta": {**payload["delta"], "text": text}}},
        }

    async def add_text(self, text: str) -> None:
        """Stream text, minus what an earlier attempt of this step already streamed: a retried call
        to a deterministic model then reads, to the client, as one uninterrupted answer."""
        before, self._text = len(self._text), self._text + text
        if not self._already.startswith(self._text[: len(self._already)]):
            await self.add(TextDelta(text=text))  # this attempt says something else: stream it as it comes
        elif len(self._text) > len(self._already):
            await self.add(TextDelta(text=self._text[max(before, len(self._already)) :]))

    async def add_call(self, call: ToolCall) -> None:
        """Stream a tool call, unless an earlier attempt of this step streamed the very same one."""
        if call in self._calls_already:
            self._calls_already.remove(call)
            return
        await self.add(ToolCallDelta(tool_call=call, parse_status="succeeded"))

    async def add(self, delta: TextDelta | ToolCallDelta) -> None:
        body = self._text_delta(delta.text) if isinstance(delta, TextDelta) else self._body(delta)
        self._pending.append(KeyedEvent(key=f"{self._prefix}:{self._count}", body=body))
        self._count += 1
        if time.monotonic() - self._flushed_at >= self._interval:
            await self.flush()

    def keep(self, event: KeyedEvent) -> None:
        """Write `event` with the next batch (after the deltas before it)."""
        self._pending.append(event)

    def take(self) -> list[KeyedEvent]:
        """The events not written yet, for the caller to write with its own (the writer forgets them)."""
        pending, self._lead, self._pending = [*self._lead, *self._pending], [], []
        return pending

    async def flush(self) -> None:
        if self._after is not None:
            await self._after
            self._after = None
        if self._lead or self._pending:
            await self._store.turns.save_turn_progress(self._request.turn_id, events=[*self._lead, *self._pending])
            self._lead, self._pending = [], []
            await self.steer_marked()
        self._flushed_at = time.monotonic()

    async def steer_marked(self) -> bool:
        """Whether a steer of the response is marked (InferenceRequest.steer_cut_key), read unless seen before."""
        if (cut_key := self._request.steer_cut_key) is not None and not self.steered:
            self.steered = await self._store.turns.event_id(self._request.turn_id, cut_key) is not None
        return self.steered


def _steered_event(step_id: str) -> KeyedEvent:
    """Marks the step's reply as cut by a steer: its response ends `incomplete` (reason "steered") with that text."""
    return runtime_event(f"{step_id}:steered", "steered", step_id=step_id)


STEER_POLL_SECONDS = 0.1
"""How often a local call whose model has said nothing yet reads whether a steer is marked."""


async def _unless_steered_first(reply: AsyncIterator[Any], writer: _DeltaWriter) -> AsyncIterator[Any]:
    """The reply's parts, or none if a steer is marked before the first: a local call holds the workflow task the
    steer waits for, so it cannot wait for a model that thinks for a while (the mark is read every 0.1 s until
    then, and at each write of deltas after)."""
    first = asyncio.ensure_future(anext(reply, None))
    try:
        while not (await asyncio.wait({first}, timeout=STEER_POLL_SECONDS))[0]:
            if await writer.steer_marked():
                return
        part = first.result()
    finally:
        if not first.done():
            first.cancel()
            await asyncio.gather(first, return_exceptions=True)  # a generator cannot close while it is read
            await _close(reply)
    if part is None:
        return
    yield part
    async for part in reply:
        yield part


async def _close(reply: AsyncIterator[Any]) -> None:
    """Stop a reply read only in part: the provider's stream is closed, so the model is not kept generating."""
    if isinstance(reply, AsyncGenerator):
        await reply.aclose()


def _answers_a_search(messages: list[dict[str, Any]]) -> bool:
    """The conversation ends with a file_search call's result."""
    if not messages or messages[-1].get("role") != "tool":
        return False
    call_id = messages[-1].get("tool_call_id")
    calls = [call for m in messages if m.get("role") == "assistant" for call in m.get("tool_calls") or []]
    return any(call.get("id") == call_id and call["function"]["name"] == FILE_SEARCH for call in calls)


class InferenceActivities:
    def __init__(
        self,
        store: Store,
        models: ModelRegistry,
        max_history_bytes: int,
        delta_interval: float = 0.02,
        early: EarlyInference | None = None,
    ) -> None:
        """`early`: the model calls the API of this process begins before their activity runs, to adopt."""
        self._store = store
        self._models = models
        self._max_history_bytes = max_history_bytes
        self._delta_interval = delta_interval
        self._ledger = SpendLedger(store.spend, models)
        self._early = early
        if early is not None:
            early.serve(self._chat_request)

    def _priced(self, model_id: str, finish: FinishPart) -> ModelCall:
        input_tokens, output_tokens = finish.prompt_tokens or 0, finish.completion_tokens or 0
        cost = self._models.pricing(model_id).cost_microcents(input_tokens, output_tokens)
        return ModelCall(model_id, input_tokens, output_tokens, cost)

    async def _streamed_before(self, request: InferenceRequest) -> tuple[str, list[ToolCall]]:
        """The text and the tool calls earlier attempts of this step streamed to clients."""
        events = await self._store.turns.events_with_key_prefix(request.turn_id, f"{request.step_id}:attempt")
        deltas = [event.body["event"]["payload"]["delta"] for event in events]
        text = "".join(delta.get("text", "") for delta in deltas if delta.get("type") == "text")
        calls = [ToolCall.model_validate(delta["tool_call"]) for delta in deltas if delta.get("type") == "tool_call"]
        return text, calls

    async def _chat_request(self, request: InferenceRequest) -> tuple[ChatRequest, ChatModel, str]:
        """The request to send, the model to send it to, and the configured model id (a metrics label):
        whatever the dialect, built from the turn's settings and its conversation."""
        settings, messages = await self._settings_and_messages(request)
        model, model_name = self._models.resolve(settings.model)
        choice = openai_format.tool_choice(settings)
        if settings.tool_choice == FILE_SEARCH and _answers_a_search(messages):
            choice = "auto"  # forced once: the model answers from the results rather than searching again
        tools = [openai_format.function_tool_schema(t) for t in settings.function_tools]
        tools += [openai_format.server_tool_schema(t) for t in request.server_tools]
        if choice == "none":
            tools = []
        chat = ChatRequest(
            model=model_name,
            messages=messages,
            tools=tools,
            tool_choice=choice if tools else None,
            parallel_tool_calls=None if settings.parallel_tool_calls or not tools else False,
            response_format=openai_format.response_format(settings),
            **openai_format.sampling(settings),
        )
        return chat, model, settings.model

    async def _settings_and_messages(self, request: InferenceRequest) -> tuple[TurnSettings, list[dict[str, Any]]]:
        """A llama-stack turn's settings are its agent's config with the turn's tool_config, its messages a
        window of its session; a detached turn's settings are its stored row, its messages its context."""
        if request.settings_id is None:
            found = await conversation(
                self._store,
                request.session_id,
                request.turn_id,
                self._max_history_bytes,
                request.agent_config,
                compaction=request.compaction,
            )
            return agent_turn_settings(found.agent_config, request.tool_config), found.messages
        settings = await self._store.turns.turn_settings(request.settings_id)
        if settings is None:
            raise ApplicationError(
                f"Turn {request.turn_id}'s settings {request.settings_id} are not in the store (was it deleted?)",
                type=PROVIDER_REJECTED,
                non_retryable=True,
            )
        first_model_call = request.pending.no_steps_yet
        messages = await detached_conversation(
            self._store, request.turn_id, settings, request.compaction, first_model_call
        )
        return settings, messages

    async def _answer_written(self, request: InferenceRequest) -> InferenceResult | None:
        """The answer an earlier attempt of this step wrote as the turn's end before its worker died:
        a retry returns it rather than asking the model again."""
        turn = await self._store.turns.get_turn(None, request.turn_id)
        if turn is None or turn.status != TurnStatus.COMPLETED or turn.completed_at is None:
            return None
        step = next((step for step in turn.steps if step.step_id == request.step_id), None)
        if not isinstance(step, InferenceStep) or step.completed_at is None:
            return None
        finished = TurnFinished(step_completed_at=step.completed_at, completed_at=turn.completed_at)
        return InferenceResult(message=step.model_response, finished=finished)

    async def _end_turn(
        self,
        request: InferenceRequest,
        ending: TurnEnding,
        message: CompletionMessage,
        output: CompletionMessage,
        deltas: list[KeyedEvent],
    ) -> TurnFinished | None:
        """Write the last deltas, the step, and the turn's end in one transaction; None if the turn had
        ended already (it keeps that end, and the workflow finds it when it writes its own)."""
        step_completed_at = max(datetime.now(UTC), ending.started_at + _TICK)
        completed_at = max(datetime.now(UTC), step_completed_at + _TICK)
        step = steps.inference(request.turn_id, request.step_id, ending.started_at, step_completed_at, message)
        progress = TurnProgress(
            turn_id=request.turn_id,
            session_id=request.session_id,
            pending=PendingWrites(first_new_step=ending.step_index, new_steps=[step], step_events=True),
            status=TurnStatus.COMPLETED,
            output_message=output,
            completed_at=completed_at,
            event_key=ending.event_key,
            event="turn_complete",
            agent_id=ending.agent_id,
        )
        if await save_progress(self._store, progress, first=deltas) is not None:
            return None
        crash_point(AFTER_TURN_END)
        return TurnFinished(step_completed_at=step_completed_at, completed_at=completed_at)

    async def _cut_before(self, request: InferenceRequest, own: KeyedEvent) -> InferenceResult | None:
        """A retried call whose response was steered while an earlier attempt streamed text ends with that text,
        the model not asked again; None when the steer came before any text (the call is made, and cut at its
        first token) or was not marked. A local call (TurnStart.cut_steering) marked before any text ends at once,
        with none. `own`: the step's start, written with the call's pending writes if no attempt wrote them."""
        if await self._store.turns.event_id(request.turn_id, request.steer_cut_key or "") is None:
            return None
        already, calls = await self._streamed_before(request)
        if calls or not (already or activity.info().is_local):
            return None
        await write_pending(self._store, request.turn_id, request.pending, own, _steered_event(request.step_id))
        return InferenceResult(message=CompletionMessage(content=already), cut_by_steer=True, steer_marked=True)

    async def _made_before(self, request: InferenceRequest) -> bool:
        """Whether an earlier execution of this step got as far as writing its start (written before any
        of its deltas and its end). A local activity's attempts are counted by the worker running it: after
        a crash the next worker's attempt is the first again."""
        return await self._store.turns.event_id(request.turn_id, f"{request.step_id}:start") is not None

    @activity.defn(name=INFER_ACTIVITY)
    async def infer(self, request: InferenceRequest) -> InferenceResult:
        info = activity.info()
        label = str(info.attempt)
        retried = info.attempt > 1 or (info.is_local and await self._made_before(request))
        if info.is_local and retried:
            # Attempt numbers repeat after a crash: its deltas' keys must not meet an earlier execution's.
            label = f"{info.attempt}-{uuid.uuid4().hex[:12]}"
        if request.ending is not None and retried and (written := await self._answer_written(request)):
            return written
        start = StepStart(step_type="inference", step_id=request.step_id)
        own = KeyedEvent(key=f"{request.step_id}:start", body=chunk_of(start).model_dump(mode="json"))
        # A first attempt reads the mark as it streams (_unless_steered_first, _DeltaWriter.flush), not here.
        if retried and request.steer_cut_key is not None and (cut_short := await self._cut_before(request, own)):
            return cut_short
        write = partial(write_pending, self._store, request.turn_id, request.pending, own)
        # New steps are part of the conversation: the request waits for their write. Otherwise the start is
        # written as the request goes out, while the model thinks: not competing with the conversation's
        # read and the request's sending, which the first token waits for.
        writing = asyncio.ensure_future(write()) if request.pending.new_steps else None
        adopted = None
        try:
            if writing is not None:
                await writing
            if self._early is not None and not retried:
                adopted = await self._early.adopt(request)
            if adopted is not None:
                (chat, model, model_id), early = adopted
                reply = early.parts()
            else:
                chat, model, model_id = await self._chat_request(request)
                reply = model.stream(chat)
            already, calls_already = await self._streamed_before(request) if retried else ("", [])
            lead: list[KeyedEvent] = []
            if writing is None and adopted is not None and adopted[1].answering() and request.pending.status is None:
                lead = [*request.pending.all_events(), own]  # the reply is here: one write with its first deltas
            else:
                writing = writing or asyncio.ensure_future(write())
            writer = _DeltaWriter(
                self._store, request, label, self._delta_interval, already, writing, calls_already, lead
            )
            text: list[str] = []
            calls: list[ToolCall] = []
            stop_reason: StopReason = "end_of_turn"
            finish: FinishPart | None = None
            cut = False
            size = 0
            parts = _unless_steered_first(reply, writer) if info.is_local and request.steer_cut_key else reply
            async with heartbeating():
                with metrics.model_call(model_id, adopted[1].began if adopted else None) as measured:
                    async for part in parts:
                        if isinstance(part, TextPart):
                            measured.first_token()
                            size += len(part.text.encode())
                            if size > PAYLOAD_BUDGET_BYTES:
                                raise _too_large(size)
                            text.append(part.text)
                            await writer.add_text(part.text)
                            if writer.steered and not calls:  # cut here: the response ends with what streamed
                                cut = True
                                writer.keep(_steered_event(request.step_id))
                                await _close(parts)
                                await _close(reply)
                                break
                        elif isinstance(part, ToolCallPart):
                            measured.first_token()
                            calls.append(part.tool_call)
                            await writer.add_call(part.tool_call)
                        elif isinstance(part, FinishPart):
                            stop_reason = part.stop_reason
                            finish = part
                            measured.usage(part.prompt_tokens, part.completion_tokens)
                            if part.prompt_tokens is not None or part.completion_tokens is not None:
                                writer.keep(_usage_event(request.step_id, self._priced(model_id, part)))
                    if writer.steered and finish is None and not text and not calls:  # cut before the first part
                        cut = True
                        writer.keep(_steered_event(request.step_id))
        except ProviderRejected as rejected:
            raise ApplicationError(str(rejected), type=PROVIDER_REJECTED, non_retryable=True) from rejected
        finally:
            if adopted is not None:  # a call adopted but not read to its end stops here
                adopted[1].cancel()
            if writing is not None and not writing.done():  # the call failed first: the write ends before the attempt
                await asyncio.gather(writing, return_exceptions=True)
        if writing is not None:
            await writing  # done by now; a failure of it is this attempt's
        if request.spend_session_id is not None and finish is not None:
            await self._ledger.record(request.spend_session_id, request.turn_id, request.step_id, model_id, finish)
        content = "".join(text)
        if cut and len(already) > len(content) and already.startswith(content):
            content = already  # an earlier attempt streamed more before its worker died: that is what was shown
        message = CompletionMessage(content=content, stop_reason=stop_reason, tool_calls=calls)
        # A call that may write the turn's end holds back when a steer is marked: the workflow takes the steer there.
        marked = cut or (request.ending is not None and await writer.steer_marked())
        result = InferenceResult(message=message, cut_by_steer=cut, steer_marked=marked)
        size = len(result.model_dump_json())
        output = turn_end.ending(message, request.ending.last_inference) if request.ending else None
        if request.ending is not None and output is not None and not marked and size <= PAYLOAD_BUDGET_BYTES:
            finished = await self._end_turn(request, request.ending, message, output, writer.take())
            if finished is not None:
                return result.model_copy(update={"finished": finished})
        await writer.flush()
        if size > PAYLOAD_BUDGET_BYTES:
            raise _too_large(size)
        return result
