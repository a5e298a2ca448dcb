"""The spend check a tracked turn makes before each model call (workflows/turn_steps/spend.py)."""

from __future__ import annotations

from temporalio import activity

from store.spend import SpendStore
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
