"""A recorded webhook delivery (a failed attempt, a timer, the accepted one) replays on the current
workflow code, in the runner the worker uses and in Temporal's sandbox. A delivery can wait days between
attempts, so a change to workflows/webhook_delivery.py that old histories cannot replay fails here first:
guard it with `workflow.patched(...)` and record a new history beside this one (see tests/durability/test_replay.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory

from tests.support.replay import RUNNERS, replay_failure
from workflows.webhook_delivery import WebhookDeliveryWorkflow

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("path", HISTORIES, ids=[path.stem for path in HISTORIES])
def test_a_recorded_delivery_replays_without_nondeterminism(path: Path, runner: str) -> None:
    failure = replay_failure(WebhookDeliveryWorkflow, path, runner)
    assert failure is None, f"{path.name}: {failure}"


def test_the_recording_has_a_retry() -> None:
    kinds = [
        event.event_type for path in HISTORIES for event in WorkflowHistory.from_json("h", path.read_text()).events
    ]
    assert kinds.count(EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) >= 2
    assert EventType.EVENT_TYPE_TIMER_FIRED in kinds
