"""Spend control's activity side: the check a tracked turn makes before each model call
(workflows/turn_steps/spend.py), and the ledger every model call of a tracked turn is entered in."""

from __future__ import annotations

from temporalio import activity

from providers.base import FinishPart
from providers.registry import ModelRegistry
from store.tenancy.spend import SpendStore
from workflows.contracts import CHECK_SPEND_ACTIVITY, SpendCheck, SpendVerdict


class SpendActivities:
    def __init__(self, spend: SpendStore) -> None:
        self._spend = spend

    @activity.defn(name=CHECK_SPEND_ACTIVITY)
    async def check_session_spend(self, check: SpendCheck) -> SpendVerdict:
        """Whether the session's spend allows another model call; when not, the turn is recorded as the one
        waiting, so that raising the limit wakes it."""
        spend = await self._spend.check(check.session_id, check.turn_id)
        return SpendVerdict(
            allowed=not spend.reached, limit_cents=spend.limit_cents, consumed_cents=spend.consumed_cents
        )


class SpendLedger:
    """Enters what a model call of a tracked turn cost in its session's ledger: its inferences, its compaction
    summary and its `llama_guard` shield calls alike, each at its model's price (DA_MODELS `pricing`)."""

    def __init__(self, spend: SpendStore, models: ModelRegistry) -> None:
        self._spend = spend
        self._models = models

    async def record(self, session_id: str, turn_id: str, call_key: str, model_id: str, usage: FinishPart) -> None:
        """Before the turn may go on, so that its next spend check and the session's `consumed` include it.
        `call_key` names the call the same way in every attempt of its activity (at most 64 characters): a
        retried call replaces the entry of the attempt before, so each call is counted once."""
        input_tokens, output_tokens = usage.prompt_tokens or 0, usage.completion_tokens or 0
        cost = self._models.pricing(model_id).cost_microcents(input_tokens, output_tokens)
        await self._spend.record(session_id, turn_id, call_key, model_id, input_tokens, output_tokens, cost)
