"""Writing the workflow's pending steps and events, plus an activity's own first events."""

from __future__ import annotations

from domain.events import KeyedEvent
from observability.logs import log_turn_state
from store.repository import Store
from workflows.contracts import PendingWrites


async def write_pending(store: Store, turn_id: str, pending: PendingWrites, *own: KeyedEvent) -> None:
    await store.turns.save_turn_progress(
        turn_id,
        events=[*pending.all_events(), *own],
        new_steps=list(enumerate(pending.new_steps, start=pending.first_new_step)),
        status=pending.status,
    )
    if pending.status is not None:
        log_turn_state(turn_id, pending.session_id or "", pending.agent_id, pending.status)
