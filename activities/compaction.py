"""The model writes a summary: for `/responses/compact` (a `compactions` row) or as a turn's compaction step.

Both write under a key before they answer, so an attempt retried after its worker died returns what the
first attempt wrote instead of asking the model again: one summary, one compaction item.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.conversation import conversation
from activities.heartbeat import heartbeating
from activities.spend import SpendLedger
from compaction.seal import CompactionSeal
from compaction.summary import CHARS_PER_TOKEN, MAX_SUMMARY_TOKENS, SUMMARY_INSTRUCTIONS, estimate_tokens, transcript
from domain.model_calls import ModelCall
from hosting.fault_points import AFTER_COMPACTION, crash_point
from providers import openai_format
from providers.base import ChatModel, ChatRequest, FinishPart, ProviderRejected, whole_text
from providers.registry import ModelRegistry
from store.repository import Store
from store.responses.compactions import TURN_COMPACTION_KEY
from workflows.compaction import (
    COMPACT_TURN_ACTIVITY,
    SUMMARIZE_ACTIVITY,
    CompactionDone,
    CompactionStart,
    CompactTurnRequest,
    CompactTurnResult,
)
from workflows.contracts import PROVIDER_REJECTED, runtime_event


def summary_request(model_name: str, messages: Sequence[dict[str, Any]]) -> ChatRequest:
    return ChatRequest(
        model=model_name,
        messages=[
            {"role": "system", "content": SUMMARY_INSTRUCTIONS},
            {"role": "user", "content": transcript(messages)},
        ],
        max_tokens=MAX_SUMMARY_TOKENS,
    )


@dataclass(frozen=True)
class Summary:
    text: str
    input_tokens: int
    output_tokens: int
    usage: FinishPart | None
    """The call as the provider reported it: a session's spend counts only reported tokens, as for inferences."""


async def summarize(model: ChatModel, model_name: str, messages: Sequence[dict[str, Any]]) -> Summary:
    """The model's summary of `messages`; token counts as the provider reported them, else estimated."""
    request = summary_request(model_name, messages)
    reply, reported = await whole_text(model, request)
    text = reply.strip()
    input_tokens = (reported.prompt_tokens if reported else None) or estimate_tokens(request.messages)
    output_tokens = (reported.completion_tokens if reported else None) or math.ceil(len(text) / CHARS_PER_TOKEN)
    return Summary(text=text, input_tokens=input_tokens, output_tokens=output_tokens, usage=reported)


def _gone(what: str) -> ApplicationError:
    return ApplicationError(f"{what} is not in the store (was it deleted?)", type=PROVIDER_REJECTED, non_retryable=True)


class CompactionActivities:
    def __init__(
        self, store: Store, models: ModelRegistry, seal: CompactionSeal | None, max_history_bytes: int
    ) -> None:
        self._store = store
        self._max_history_bytes = max_history_bytes
        self._compactions = store.compactions
        self._models = models
        self._seal = seal
        self._ledger = SpendLedger(store.spend, models)

    async def _summary(self, model_id: str, messages: list[dict[str, Any]]) -> Summary:
        try:
            model, model_name = self._models.resolve(model_id)
            async with heartbeating():
                return await summarize(model, model_name, messages)
        except ProviderRejected as rejected:
            raise ApplicationError(str(rejected), type=PROVIDER_REJECTED, non_retryable=True) from rejected

    def _priced(self, model_id: str, summary: Summary) -> ModelCall:
        cost = self._models.pricing(model_id).cost_microcents(summary.input_tokens, summary.output_tokens)
        return ModelCall(model_id, summary.input_tokens, summary.output_tokens, cost)

    @activity.defn(name=SUMMARIZE_ACTIVITY)
    async def write_summary(self, start: CompactionStart) -> CompactionDone:
        record = await self._compactions.get(start.compaction_id)
        if record is None:
            raise _gone(f"Compaction {start.compaction_id}")
        if record.summary is None:
            summary = await self._summary(record.model, record.source)
            await self._compactions.write_summary(
                start.compaction_id, summary.text, self._priced(record.model, summary), datetime.now(UTC)
            )
            record = await self._compactions.get(start.compaction_id)
            assert record is not None
        return CompactionDone(input_tokens=record.input_tokens or 0, output_tokens=record.output_tokens or 0)

    @activity.defn(name=COMPACT_TURN_ACTIVITY)
    async def compact_turn(self, request: CompactTurnRequest) -> CompactTurnResult:
        """Summarise the turn's prior context when the whole context (instructions, prior context, the turn's
        input) is estimated over the threshold. The summary is written as the turn's compaction event, which
        the inference reads in place of the prior context (activities/conversation.py) and which the
        Responses dialect shows as the response's compaction item; the newest input stays after it."""
        written = await self._compactions.turn_compaction(request.turn_id)
        if written is not None:
            return CompactTurnResult(compacted=True, estimated_tokens=int(written.get("estimated_tokens") or 0))
        if request.settings_id is None:
            return await self._compact_session(request)
        settings = await self._store.turns.turn_settings(request.settings_id)
        found = await self._store.turns.detached_context(request.turn_id)
        tenant = await self._store.turns.turn_tenant(request.turn_id)
        if settings is None or found is None or tenant is None:
            raise _gone(f"Turn {request.turn_id}")
        current, context = found
        prior = openai_format.context_messages(context)
        whole = [
            *openai_format.system_message(settings.instructions),
            *prior,
            *openai_format.turn_messages(current.input_messages, current.steps),
        ]
        estimated = estimate_tokens(whole)
        if estimated <= request.threshold or not prior:
            return CompactTurnResult(compacted=False, estimated_tokens=estimated)
        if self._seal is None:
            raise ApplicationError(
                "This worker cannot seal a compaction item: it has no DA_CREDENTIALS_KEY. Give every API and "
                "worker the same key.",
                type=PROVIDER_REJECTED,
                non_retryable=True,
            )
        summary = await self._summary(settings.model, prior)
        await self._record_spend(request, settings.model, summary)
        sealed = self._seal.seal(tenant, summary.text, "nothing")
        await self._write(request.turn_id, settings.model, summary, estimated, len(prior), sealed)
        return CompactTurnResult(compacted=True, estimated_tokens=estimated)

    async def _record_spend(self, request: CompactTurnRequest, model_id: str, summary: Summary) -> None:
        """Before the compaction is written: an attempt that dies in between summarises again, and its entry
        replaces this one, while once written no attempt summarises (or records) again."""
        if request.spend_session_id is not None and summary.usage is not None:
            key = f"{request.turn_id}:{TURN_COMPACTION_KEY}"
            await self._ledger.record(request.spend_session_id, request.turn_id, key, model_id, summary.usage)

    async def _write(
        self, turn_id: str, model_id: str, summary: Summary, estimated: int, replaced: int, sealed: str | None
    ) -> None:
        """The compaction event (the summary, and for a Responses turn its sealed item) and the summariser's
        usage (counted into the tenant's daily usage as it is written), written once under their keys."""
        compaction = runtime_event(
            TURN_COMPACTION_KEY,
            "compaction",
            summary=summary.text,
            estimated_tokens=estimated,
            replaced_messages=replaced,
            **({"encrypted_content": sealed} if sealed is not None else {}),
        )
        call = self._priced(model_id, summary)
        usage = runtime_event(
            f"{TURN_COMPACTION_KEY}:usage", "usage", step_id=TURN_COMPACTION_KEY, **call.event_fields()
        )
        await self._store.turns.save_turn_progress(turn_id, events=[compaction, usage])
        crash_point(AFTER_COMPACTION)

    async def _compact_session(self, request: CompactTurnRequest) -> CompactTurnResult:
        """A llama-stack turn: when the session's context (as its model call would read it) is over the
        threshold, the session's earlier turns in that context — and the summary standing for older ones —
        are summarised; the summary then stands for every turn before this one (activities/conversation.py)."""
        if request.session_id is None:
            raise _gone(f"Turn {request.turn_id}'s session")
        found = await conversation(
            self._store, request.session_id, request.turn_id, self._max_history_bytes, compaction=True
        )
        estimated = estimate_tokens(found.messages)
        if estimated <= request.threshold or not found.earlier:
            return CompactTurnResult(compacted=False, estimated_tokens=estimated)
        summary = await self._summary(found.agent_config.model, found.earlier)
        await self._record_spend(request, found.agent_config.model, summary)
        await self._write(
            request.turn_id, found.agent_config.model, summary, estimated, len(found.earlier), sealed=None
        )
        return CompactTurnResult(compacted=True, estimated_tokens=estimated)
