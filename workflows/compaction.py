"""Compaction as durable steps: the `CompactContext` workflow behind `POST /v1/responses/compact`, and the
step a turn takes before its first model call when its context has outgrown its compaction threshold.

Both are one activity (activities/compaction.py) that asks the model for the summary and writes it under
a key, so a retry after a worker dies finds it written and a response gets exactly one compaction item.
Nothing large rides in a payload: the messages to summarise and the summary are in the store.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel

    from workflows.contracts import INFERENCE_HEARTBEAT_TIMEOUT, PROVIDER_REJECTED

SUMMARIZE_ACTIVITY = "write_compaction_summary"
COMPACT_TURN_ACTIVITY = "compact_turn_context"
COMPACTION_PATCH = "compaction-before-first-inference"
"""Marks the turns whose workflow code may take a compaction step (only turns that ask for it reach it)."""
COMPACTION_WORKFLOW_PREFIX = "compaction-"

_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=8,
    non_retryable_error_types=[PROVIDER_REJECTED],
)


class CompactionStart(BaseModel):
    compaction_id: str
    """The `compactions` row holding the messages to summarise (store/responses/compactions.py)."""


class CompactionDone(BaseModel):
    input_tokens: int
    output_tokens: int


class CompactTurnRequest(BaseModel):
    turn_id: str
    settings_id: str | None = None
    """A detached (Responses) turn's settings; None for a llama-stack turn, whose session is compacted."""
    session_id: str | None = None
    threshold: int
    """Estimated tokens (compaction/summary.py `estimate_tokens`) above which the context is compacted."""
    spend_session_id: str | None = None
    """Record what the summary cost in this session's spend ledger (TurnStart.spend_session_id)."""


class CompactTurnResult(BaseModel):
    compacted: bool
    estimated_tokens: int
    """The context's estimate before compaction."""


def compaction_workflow_id(compaction_id: str) -> str:
    return COMPACTION_WORKFLOW_PREFIX + compaction_id


@workflow.defn(name="CompactContext")
class CompactionWorkflow:
    """One `/responses/compact` request: the model writes the summary, durably (the API waits for it)."""

    @workflow.run
    async def run(self, start: CompactionStart) -> CompactionDone:
        done: CompactionDone = await workflow.execute_activity(
            SUMMARIZE_ACTIVITY,
            start,
            result_type=CompactionDone,
            summary="compaction · summary",
            start_to_close_timeout=timedelta(minutes=10),
            heartbeat_timeout=INFERENCE_HEARTBEAT_TIMEOUT,
            retry_policy=_RETRY,
        )
        return done


async def compact_turn(
    turn_id: str, settings_id: str | None, session_id: str | None, threshold: int, spend_session_id: str | None
) -> CompactTurnResult:
    """The turn's compaction step: summarise its prior context (a Responses turn's) or its session's earlier
    turns (a llama-stack turn's) if it is over `threshold`; a turn's workflow calls this once, before its
    first model call."""
    result: CompactTurnResult = await workflow.execute_activity(
        COMPACT_TURN_ACTIVITY,
        CompactTurnRequest(
            turn_id=turn_id,
            settings_id=settings_id,
            session_id=session_id,
            threshold=threshold,
            spend_session_id=spend_session_id,
        ),
        result_type=CompactTurnResult,
        summary=f"compaction · over {threshold} tokens?",
        start_to_close_timeout=timedelta(minutes=10),
        heartbeat_timeout=INFERENCE_HEARTBEAT_TIMEOUT,
        retry_policy=_RETRY,
    )
    return result
