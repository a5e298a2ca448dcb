"""Writing a turn's steps, events and status to the store on the workflow's behalf."""

from __future__ import annotations

from temporalio import activity
from temporalio.exceptions import ApplicationError

from store.repository import Store
from workflows.contracts import SAVE_PROGRESS_ACTIVITY, TurnProgress


class TurnProgressActivities:
    def __init__(self, store: Store) -> None:
        self._store = store

    @activity.defn(name=SAVE_PROGRESS_ACTIVITY)
    async def save_turn_progress(self, progress: TurnProgress) -> None:
        try:
            await self._store.save_turn_progress(
                progress.turn_id,
                events=progress.events,
                new_steps=list(enumerate(progress.new_steps, start=progress.first_new_step)),
                status=progress.status,
                output_message=progress.output_message,
                completed_at=progress.completed_at,
                error=progress.error,
            )
        except LookupError as missing:
            raise ApplicationError(str(missing), type="TurnMissing", non_retryable=True) from missing
