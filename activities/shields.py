"""Running a touchpoint's shields: one shield_call step."""

from __future__ import annotations

from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.conversation import conversation, detached_conversation
from activities.heartbeat import heartbeating
from activities.pending_writes import write_pending
from activities.spend import SpendLedger
from configuration.settings import Settings
from domain.content import content_as_text
from domain.events import KeyedEvent, StepStart, chunk_of
from domain.turns import SafetyViolation
from providers.base import ProviderRejected
from providers.registry import ModelRegistry
from providers.shields import llama_guard_verdict, regex_violation
from store.repository import Store
from workflows.contracts import PROVIDER_REJECTED, RUN_SHIELDS_ACTIVITY, ShieldRequest, ShieldResult


class ShieldActivities:
    def __init__(self, store: Store, models: ModelRegistry, settings: Settings) -> None:
        self._store = store
        self._models = models
        self._settings = settings
        self._ledger = SpendLedger(store.spend, models)

    @activity.defn(name=RUN_SHIELDS_ACTIVITY)
    async def run_shields(self, request: ShieldRequest) -> ShieldResult:
        """The first violation found, in the order the agent lists its shields; none if all pass."""
        start = StepStart(step_type="shield_call", step_id=request.step_id, metadata={"touchpoint": request.touchpoint})
        own = KeyedEvent(key=f"{request.step_id}:start", body=chunk_of(start).model_dump(mode="json"))
        await write_pending(self._store, request.turn_id, request.pending, own)
        if request.texts_are_input:
            turn = await self._store.turns.get_turn(request.session_id, request.turn_id)
            if turn is None:
                raise ApplicationError(f"Turn {request.turn_id} not found in the store", non_retryable=True)
            request = request.model_copy(update={"texts": [content_as_text(m.content) for m in turn.input_messages]})
        async with heartbeating():
            for index, shield_id in enumerate(request.shield_ids):
                violation = await self._check(index, shield_id, request)
                if violation is not None:
                    return ShieldResult(violation=violation)
        return ShieldResult()

    async def _check(self, index: int, shield_id: str, request: ShieldRequest) -> SafetyViolation | None:
        spec = self._settings.shields.get(shield_id)
        if spec is None:
            known = ", ".join(sorted(self._settings.shields)) or "none"
            message = f"Shield {shield_id!r} is not configured on this worker; configured: {known}"
            raise ApplicationError(message, type=PROVIDER_REJECTED, non_retryable=True)
        if spec.provider == "regex":
            return regex_violation(spec, request.texts)
        messages = await self._conversation(request)
        try:
            verdict = await llama_guard_verdict(spec, self._models, messages, request.touchpoint)
        except ProviderRejected as rejected:
            raise ApplicationError(str(rejected), type=PROVIDER_REJECTED, non_retryable=True) from rejected
        if request.spend_session_id is not None and verdict.usage is not None and spec.model is not None:
            # Keyed by the step and the shield's place in it: the same in every attempt of this activity.
            key = f"{request.step_id}:shield:{index}"
            await self._ledger.record(request.spend_session_id, request.turn_id, key, spec.model, verdict.usage)
        return verdict.violation

    async def _conversation(self, request: ShieldRequest) -> list[dict[str, Any]]:
        """What the guard judges: the turn's conversation as its model calls read it."""
        if request.settings_id is None:
            found = await conversation(
                self._store, request.session_id, request.turn_id, self._settings.max_history_bytes
            )
            return found.messages
        settings = await self._store.turns.turn_settings(request.settings_id)
        if settings is None:
            raise ApplicationError(f"Turn {request.turn_id}'s settings are not in the store", non_retryable=True)
        return await detached_conversation(self._store, request.turn_id, settings, compaction=True)
