"""One model call: assemble the conversation, stream the reply, record its progress events."""

from __future__ import annotations

import time

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.conversation import conversation
from activities.heartbeat import heartbeating
from activities.pending_writes import write_pending
from domain.content import CompletionMessage, StopReason, ToolCall
from domain.events import KeyedEvent, StepProgress, StepStart, TextDelta, ToolCallDelta, chunk_of
from observability import metrics
from providers import openai_format
from providers.base import ChatRequest, FinishPart, ProviderRejected, TextPart, ToolCallPart
from providers.registry import ModelRegistry
from store.repository import Store
from workflows.contracts import INFER_ACTIVITY, PROVIDER_REJECTED, InferenceRequest, InferenceResult


class _DeltaWriter:
    """Batches step_progress events: the first goes out at once, the rest at most every `interval`."""

    def __init__(
        self, store: Store, request: InferenceRequest, attempt: int, interval: float, already_streamed: str
    ) -> None:
        self._store = store
        self._request = request
        self._prefix = f"{request.step_id}:attempt{attempt}:delta"
        self._interval = interval
        self._pending: list[KeyedEvent] = []
        self._count = 0
        self._flushed_at = 0.0
        self._already = already_streamed
        self._text = ""

    async def add_text(self, text: str) -> None:
        """Stream text, minus what an earlier attempt of this step already streamed: a retried call
        to a deterministic model then reads, to the client, as one uninterrupted answer."""
        before, self._text = len(self._text), self._text + text
        if not self._already.startswith(self._text[: len(self._already)]):
            await self.add(TextDelta(text=text))  # this attempt says something else: stream it as it comes
        elif len(self._text) > len(self._already):
            await self.add(TextDelta(text=self._text[max(before, len(self._already)) :]))

    async def add(self, delta: TextDelta | ToolCallDelta) -> None:
        payload = StepProgress(step_type="inference", step_id=self._request.step_id, delta=delta)
        self._pending.append(
            KeyedEvent(key=f"{self._prefix}:{self._count}", body=chunk_of(payload).model_dump(mode="json"))
        )
        self._count += 1
        if time.monotonic() - self._flushed_at >= self._interval:
            await self.flush()

    async def flush(self) -> None:
        if self._pending:
            await self._store.save_turn_progress(self._request.turn_id, events=self._pending)
            self._pending = []
        self._flushed_at = time.monotonic()


class InferenceActivities:
    def __init__(self, store: Store, models: ModelRegistry, delta_interval: float = 0.02) -> None:
        self._store = store
        self._models = models
        self._delta_interval = delta_interval

    async def _streamed_before(self, request: InferenceRequest) -> str:
        """The text earlier attempts of this step streamed to clients."""
        events = await self._store.events_with_key_prefix(request.turn_id, f"{request.step_id}:attempt")
        deltas = (event.body["event"]["payload"]["delta"] for event in events)
        return "".join(delta.get("text", "") for delta in deltas if delta.get("type") == "text")

    async def _chat_request(self, request: InferenceRequest, model_name: str) -> ChatRequest:
        config = request.agent_config
        messages = await conversation(self._store, request.session_id, request.turn_id, config.instructions)
        choice = openai_format.tool_choice(request.tool_config)
        tools = [openai_format.tool_schema(t) for t in config.client_tools or []]
        tools += [openai_format.server_tool_schema(t) for t in request.server_tools]
        if choice == "none":
            tools = []
        return ChatRequest(
            model=model_name,
            messages=messages,
            tools=tools,
            tool_choice=choice if tools else None,
            response_format=openai_format.response_format(config),
            **openai_format.sampling(config),
        )

    @activity.defn(name=INFER_ACTIVITY)
    async def infer(self, request: InferenceRequest) -> InferenceResult:
        start = StepStart(step_type="inference", step_id=request.step_id)
        own = KeyedEvent(key=f"{request.step_id}:start", body=chunk_of(start).model_dump(mode="json"))
        await write_pending(self._store, request.turn_id, request.pending, own)
        try:
            model, model_name = self._models.resolve(request.agent_config.model)
            chat = await self._chat_request(request, model_name)
            attempt = activity.info().attempt
            already = await self._streamed_before(request) if attempt > 1 else ""
            writer = _DeltaWriter(self._store, request, attempt, self._delta_interval, already)
            text: list[str] = []
            calls: list[ToolCall] = []
            stop_reason: StopReason = "end_of_turn"
            async with heartbeating():
                with metrics.model_call(request.agent_config.model) as measured:
                    async for part in model.stream(chat):
                        if isinstance(part, TextPart):
                            measured.first_token()
                            text.append(part.text)
                            await writer.add_text(part.text)
                        elif isinstance(part, ToolCallPart):
                            measured.first_token()
                            calls.append(part.tool_call)
                            await writer.add(ToolCallDelta(tool_call=part.tool_call, parse_status="succeeded"))
                        elif isinstance(part, FinishPart):
                            stop_reason = part.stop_reason
                            measured.usage(part.prompt_tokens, part.completion_tokens)
            await writer.flush()
        except ProviderRejected as rejected:
            raise ApplicationError(str(rejected), type=PROVIDER_REJECTED, non_retryable=True) from rejected
        return InferenceResult(
            message=CompletionMessage(content="".join(text), stop_reason=stop_reason, tool_calls=calls)
        )
