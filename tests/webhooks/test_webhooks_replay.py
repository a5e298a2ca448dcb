"""A recorded webhook delivery (a failed attempt, a timer, the accepted one) replays on the current
workflow code, in the runner the worker uses and in Temporal's sandbox. A delivery can wait days between
attempts, so a change to workflows/webhook_delivery.py that old histories cannot replay fails here first:
guard it with `workflow.patched(...)` and record a new history beside this one (see tests/test_replay.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from tests.support.sandbox import sandboxed_runner
from worker import workflow_runner
from workflows.webhook_delivery import WebhookDeliveryWorkflow

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))
RUNNERS = {"as_the_worker_runs_it": workflow_runner, "in_the_sandbox": sandboxed_runner}


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("path", HISTORIES, ids=[path.stem for path in HISTORIES])
def test_a_recorded_delivery_replays_without_nondeterminism(path: Path, runner: str) -> None:
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    replayer = Replayer(
        workflows=[WebhookDeliveryWorkflow], data_converter=pydantic_data_converter, workflow_runner=RUNNERS[runner]()
    )
    result = asyncio.run(replayer.replay_workflow(history, raise_on_replay_failure=False))
    assert result.replay_failure is None, f"{path.name}: {result.replay_failure}"


def test_the_recording_has_a_retry() -> None:
    kinds = [
        event.event_type for path in HISTORIES for event in WorkflowHistory.from_json("h", path.read_text()).events
    ]
    assert kinds.count(EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) >= 2
    assert EventType.EVENT_TYPE_TIMER_FIRED in kinds
