"""Writing a turn's status change to the store on the workflow's behalf, then its final event."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from temporalio import activity
from temporalio.exceptions import ApplicationError

from domain.events import ErrorChunk, KeyedEvent, StreamError, TurnAwaitingInput, TurnComplete, chunk_of
from domain.turns import InferenceStep, Step, ToolExecutionStep, Turn
from observability.logs import log_turn_state
from observability.metrics import TURNS_ENDED
from store.repository import Store
from webhooks.dispatch import start_turn_deliveries
from workflows.contracts import (
    LOAD_STEPS_ACTIVITY,
    PAYLOAD_BUDGET_BYTES,
    SAVE_PROGRESS_ACTIVITY,
    LoadStepsRequest,
    LoadStepsResult,
    TurnOutcome,
    TurnProgress,
)


def _closing_event(progress: TurnProgress) -> Callable[[Turn], KeyedEvent] | None:
    """The pause's or the end's event, built from the turn as stored with this progress."""
    event, key = progress.event, progress.event_key
    if event is None or key is None:
        return None
    if event == "error":
        body = ErrorChunk(error=StreamError(message=progress.error or "")).model_dump(mode="json")
        return lambda _turn: KeyedEvent(key=key, body=body)
    payload = TurnComplete if event == "turn_complete" else TurnAwaitingInput
    return lambda turn: KeyedEvent(key=key, body=chunk_of(payload(turn=turn)).model_dump(mode="json"))


def _awaiting(progress: TurnProgress) -> list[str]:
    """What a pause waits for: its client calls (the output message's) and its approval requests."""
    calls = [call.call_id for call in progress.output_message.tool_calls] if progress.output_message else []
    return [*calls, *progress.awaiting]


async def save_progress(store: Store, progress: TurnProgress, first: Sequence[KeyedEvent] = ()) -> TurnOutcome | None:
    """Write a status change, after `first` (events of the writer's own), and log a pause or an end.

    The turn is stored before its final event exists, so no client sees a pause or an end that a
    read of the turn would not show. The event's turn comes from the store, keeping the workflow's
    inputs small however many steps the turn has. Returns the outcome of a turn that had ended
    already, which the store keeps, writing nothing; None when written."""
    pending = progress.pending
    try:
        ended = await store.turns.save_turn_progress(
            progress.turn_id,
            events=[*first, *pending.all_events()],
            new_steps=list(enumerate(pending.new_steps, start=pending.first_new_step)),
            status=progress.status,
            output_message=progress.output_message,
            completed_at=progress.completed_at,
            error=progress.error,
            closing_event=_closing_event(progress),
            awaiting=_awaiting(progress),
            on_deliveries=lambda: start_turn_deliveries(store.webhooks, progress.turn_id),
        )
    except LookupError as missing:
        raise ApplicationError(str(missing), type="TurnMissing", non_retryable=True) from missing
    if ended is not None:
        return TurnOutcome(turn_id=ended.turn_id, status=ended.status, steps=len(ended.steps), error=ended.error)
    if progress.event is not None:  # a pause or an end; other saves keep the status as it was
        log_turn_state(progress.turn_id, progress.session_id, progress.agent_id, progress.status)
        if progress.status.is_final:
            TURNS_ENDED.labels(progress.status.value).inc()
    return None


class TurnProgressActivities:
    def __init__(self, store: Store) -> None:
        self._store = store

    @activity.defn(name=SAVE_PROGRESS_ACTIVITY)
    async def save_turn_progress(self, progress: TurnProgress) -> TurnOutcome | None:
        return await save_progress(self._store, progress)

    @activity.defn(name=LOAD_STEPS_ACTIVITY)
    async def load_turn_steps(self, request: LoadStepsRequest) -> LoadStepsResult:
        """A continued turn's steps so far, for its new run."""
        turn = await self._store.turns.get_turn(request.session_id, request.turn_id)
        if turn is None:
            raise ApplicationError(
                f"Turn {request.turn_id} not found in the store", type="TurnMissing", non_retryable=True
            )
        result = LoadStepsResult(steps=turn.steps)
        if len(result.model_dump_json()) > PAYLOAD_BUDGET_BYTES:
            return LoadStepsResult(steps=[_without_contents(step) for step in turn.steps], contents_left_out=True)
        return result


def _without_contents(step: Step) -> Step:
    """The step as the workflow needs it after continue-as-new (its kind, calls and tools' names):
    texts and results are left out, to be read from the store (the API does so for live views)."""
    if isinstance(step, InferenceStep):
        return step.model_copy(update={"model_response": step.model_response.model_copy(update={"content": ""})})
    if isinstance(step, ToolExecutionStep):
        responses = [response.model_copy(update={"content": ""}) for response in step.tool_responses]
        return step.model_copy(update={"tool_responses": responses})
    return step
