"""A session's `spend_control` as the Agents API shows and changes it.

The limit and the ledger live in the store (store/tenancy/spend.py); the turns of a session with spend control check it
before each model call (workflows/turn_steps/spend.py). Changing the limit wakes the turn held by it, which checks
again: a limit raised above what was spent, or removed, lets that same turn go on; spend is never reset.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from store.tenancy.spend import Event, SessionSpend, SpendStore
from workflows.contracts import SPEND_LIMIT_SIGNAL, turn_workflow_id


def spend_control_view(spend: SessionSpend) -> dict[str, Any]:
    """The wire's `spend_control`: the limit in whole US cents (null: none) and what was consumed, floored."""
    return {"limit": spend.limit_cents, "consumed": spend.consumed_cents}


def with_spend(session: dict[str, Any], spend: SessionSpend) -> dict[str, Any]:
    """The session object with its spend as the ledger has it."""
    return session | {"spend_control": spend_control_view(spend)}


async def change_spend_limit(
    client: Client,
    spend: SpendStore,
    session_id: str,
    limit_cents: int | None,
    resumed: tuple[str, Callable[[str], Event]] | None = None,
) -> tuple[SessionSpend, bool]:
    """Set (or with None remove) a session's limit and wake the turn waiting for it, which checks again; the
    `resumed` event is recorded with the change if it lets that turn go on (`SpendStore.set_limit`). Whether
    deliveries of it were recorded (start them)."""
    changed, recorded = await spend.set_limit(session_id, limit_cents, resumed)
    if changed.waiting_turn_id is not None:
        try:
            await client.get_workflow_handle(turn_workflow_id(changed.waiting_turn_id)).signal(SPEND_LIMIT_SIGNAL)
        except RPCError as error:
            # The turn ended meanwhile (cancelled while it waited): nothing waits any more.
            if error.status != RPCStatusCode.NOT_FOUND:
                raise
    return changed, recorded
