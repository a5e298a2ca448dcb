"""Running a touchpoint's shields: one shield_call step."""

from __future__ import annotations

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.conversation import conversation
from activities.pending_writes import write_pending
from configuration.settings import Settings
from domain.content import content_as_text
from domain.events import KeyedEvent, StepStart, chunk_of
from domain.turns import SafetyViolation
from providers.base import ProviderRejected
from providers.registry import ModelRegistry
from providers.shields import llama_guard_violation, regex_violation
from store.repository import Store
from workflows.contracts import PROVIDER_REJECTED, RUN_SHIELDS_ACTIVITY, ShieldRequest, ShieldResult


class ShieldActivities:
    def __init__(self, store: Store, models: ModelRegistry, settings: Settings) -> None:
        self._store = store
        self._models = models
        self._settings = settings

    @activity.defn(name=RUN_SHIELDS_ACTIVITY)
    async def run_shields(self, request: ShieldRequest) -> ShieldResult:
        """The first violation found, in the order the agent lists its shields; none if all pass."""
        start = StepStart(step_type="shield_call", step_id=request.step_id, metadata={"touchpoint": request.touchpoint})
        own = KeyedEvent(key=f"{request.step_id}:start", body=chunk_of(start).model_dump(mode="json"))
        await write_pending(self._store, request.turn_id, request.pending, own)
        if request.texts_are_input:
            turn = await self._store.get_turn(request.session_id, request.turn_id)
            if turn is None:
                raise ApplicationError(f"Turn {request.turn_id} not found in the store", non_retryable=True)
            request = request.model_copy(update={"texts": [content_as_text(m.content) for m in turn.input_messages]})
        for shield_id in request.shield_ids:
            violation = await self._check(shield_id, request)
            if violation is not None:
                return ShieldResult(violation=violation)
        return ShieldResult()

    async def _check(self, shield_id: str, request: ShieldRequest) -> SafetyViolation | None:
        spec = self._settings.shields.get(shield_id)
        if spec is None:
            known = ", ".join(sorted(self._settings.shields)) or "none"
            message = f"Shield {shield_id!r} is not configured on this worker; configured: {known}"
            raise ApplicationError(message, type=PROVIDER_REJECTED, non_retryable=True)
        if spec.provider == "regex":
            return regex_violation(spec, request.texts)
        found = await conversation(self._store, request.session_id, request.turn_id, self._settings.max_history_bytes)
        try:
            return await llama_guard_violation(spec, self._models, found.messages, request.touchpoint)
        except ProviderRejected as rejected:
            raise ApplicationError(str(rejected), type=PROVIDER_REJECTED, non_retryable=True) from rejected
